-- PostgreSQL twin of migrations/0101_exception_totals.sql: the same table of totals per
-- status, exposure class, reason code and IST day of the entity's creation, kept by
-- statement-level triggers that read the statement's transition tables (one aggregated
-- upsert a statement, whatever the number of rows: a first sync's INSERT of 25k exceptions
-- is one statement). The function serves the three triggers, each with its own transition
-- tables, as in the PostgreSQL manual's example "Auditing with Transition Tables"
-- (https://www.postgresql.org/docs/15/plpgsql-trigger.html). A TRUNCATE (owner only) empties
-- the totals. While a transaction holds the row of `exception_totals_deferred` the triggers
-- stand aside for the exceptions numbered above its `after_id`, which that transaction adds
-- set-based before it commits (core.db.page_reads.begin_totals_deferred /
-- end_totals_deferred).
CREATE TABLE IF NOT EXISTS exception_totals (
    status          TEXT    NOT NULL,
    exposure_class  TEXT    NOT NULL,
    reason_code     TEXT    NOT NULL,
    dated           INTEGER NOT NULL CHECK (dated IN (0, 1)),
    created_day     BIGINT  NOT NULL,
    n               BIGINT  NOT NULL,
    exposure        BIGINT  NOT NULL,
    PRIMARY KEY (status, exposure_class, reason_code, dated, created_day)
);

CREATE TABLE IF NOT EXISTS exception_totals_deferred (
    deferred INTEGER PRIMARY KEY CHECK (deferred = 1),
    after_id BIGINT  NOT NULL
);

DELETE FROM exception_totals;
INSERT INTO exception_totals
    (status, exposure_class, reason_code, dated, created_day, n, exposure)
SELECT status, exposure_class, reason_code, (entity_created_at IS NOT NULL)::int,
       coalesce((entity_created_at + 19800) / 86400, 0), count(*), sum(exposure_amount)
FROM exceptions
GROUP BY 1, 2, 3, 4, 5;

CREATE OR REPLACE FUNCTION exception_totals_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    -- Exceptions above it are added by the deferring transaction itself (NULL: none).
    deferred_after BIGINT := (SELECT after_id FROM exception_totals_deferred);
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM exception_totals;
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO exception_totals AS t
            (status, exposure_class, reason_code, dated, created_day, n, exposure)
        SELECT status, exposure_class, reason_code, (entity_created_at IS NOT NULL)::int,
               coalesce((entity_created_at + 19800) / 86400, 0),
               count(*), sum(exposure_amount)
        FROM exception_totals_new
        WHERE deferred_after IS NULL OR id <= deferred_after
        GROUP BY 1, 2, 3, 4, 5
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (status, exposure_class, reason_code, dated, created_day)
        DO UPDATE SET n = t.n + excluded.n, exposure = t.exposure + excluded.exposure;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO exception_totals AS t
            (status, exposure_class, reason_code, dated, created_day, n, exposure)
        SELECT status, exposure_class, reason_code, dated, created_day, sum(n), sum(exposure)
        FROM (
            SELECT status, exposure_class, reason_code, (entity_created_at IS NOT NULL)::int,
                   coalesce((entity_created_at + 19800) / 86400, 0),
                   -1, -exposure_amount
            FROM exception_totals_old
            WHERE deferred_after IS NULL OR id <= deferred_after
            UNION ALL
            SELECT status, exposure_class, reason_code, (entity_created_at IS NOT NULL)::int,
                   coalesce((entity_created_at + 19800) / 86400, 0),
                   1, exposure_amount
            FROM exception_totals_new
            WHERE deferred_after IS NULL OR id <= deferred_after
        ) AS delta (status, exposure_class, reason_code, dated, created_day, n, exposure)
        GROUP BY 1, 2, 3, 4, 5
        HAVING sum(n) <> 0 OR sum(exposure) <> 0
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (status, exposure_class, reason_code, dated, created_day)
        DO UPDATE SET n = t.n + excluded.n, exposure = t.exposure + excluded.exposure;
    ELSE  -- DELETE
        INSERT INTO exception_totals AS t
            (status, exposure_class, reason_code, dated, created_day, n, exposure)
        SELECT status, exposure_class, reason_code, (entity_created_at IS NOT NULL)::int,
               coalesce((entity_created_at + 19800) / 86400, 0),
               -count(*), -sum(exposure_amount)
        FROM exception_totals_old
        WHERE deferred_after IS NULL OR id <= deferred_after
        GROUP BY 1, 2, 3, 4, 5
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (status, exposure_class, reason_code, dated, created_day)
        DO UPDATE SET n = t.n + excluded.n, exposure = t.exposure + excluded.exposure;
    END IF;
    -- Totals that fell to nothing leave (only the old rows' keys can have).
    DELETE FROM exception_totals AS t
    WHERE t.n = 0
      AND (t.status, t.exposure_class, t.reason_code, t.dated, t.created_day) IN (
          SELECT status, exposure_class, reason_code, (entity_created_at IS NOT NULL)::int,
               coalesce((entity_created_at + 19800) / 86400, 0)
          FROM exception_totals_old);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS exception_totals_insert ON exceptions;
CREATE TRIGGER exception_totals_insert AFTER INSERT ON exceptions
    REFERENCING NEW TABLE AS exception_totals_new
    FOR EACH STATEMENT EXECUTE FUNCTION exception_totals_apply();

DROP TRIGGER IF EXISTS exception_totals_update ON exceptions;
CREATE TRIGGER exception_totals_update AFTER UPDATE ON exceptions
    REFERENCING OLD TABLE AS exception_totals_old NEW TABLE AS exception_totals_new
    FOR EACH STATEMENT EXECUTE FUNCTION exception_totals_apply();

DROP TRIGGER IF EXISTS exception_totals_delete ON exceptions;
CREATE TRIGGER exception_totals_delete AFTER DELETE ON exceptions
    REFERENCING OLD TABLE AS exception_totals_old
    FOR EACH STATEMENT EXECUTE FUNCTION exception_totals_apply();

DROP TRIGGER IF EXISTS exception_totals_truncate ON exceptions;
CREATE TRIGGER exception_totals_truncate AFTER TRUNCATE ON exceptions
    FOR EACH STATEMENT EXECUTE FUNCTION exception_totals_apply();
