-- The Overview's figures as stored totals, kept by the database itself: count and exposure
-- of the exceptions per status, exposure class, reason code and IST day of the entity's
-- creation (`created_day` = (entity_created_at + 19800) / 86400; `dated` 0 and day 0 when
-- the entity has no date). Status counts, exposure by class and code, and the ageing at a
-- run's as-of are sums over a few thousand rows instead of passes over every exception
-- (core.db.views, core.db.page_reads; docs/benchmark.md "10M in the app, third round").
-- The ageing's buckets move with the as-of, so they are not stored: whole days fall in one
-- bucket, and the one day a bucket edge cuts is split exactly by an index range.
--
-- Row triggers keep the totals through every INSERT, DELETE and UPDATE of the five columns,
-- whoever writes (a sync, a decision, a reopening, a hand-made fix behind the app's back).
-- A bulk writer may defer the exceptions numbered above a mark (the largest id before it
-- inserts): while its transaction holds the row of `exception_totals_deferred`, the
-- triggers stand aside for those rows, and before it commits it adds them, as they are
-- then, in one INSERT ... SELECT ... GROUP BY (core.db.page_reads.begin_totals_deferred /
-- end_totals_deferred; the pattern of 0105). Rows at or below the mark keep their triggers.
CREATE TABLE IF NOT EXISTS exception_totals (
    status          TEXT    NOT NULL,
    exposure_class  TEXT    NOT NULL,
    reason_code     TEXT    NOT NULL,
    dated           INTEGER NOT NULL CHECK (dated IN (0, 1)),
    created_day     INTEGER NOT NULL,
    n               INTEGER NOT NULL,
    exposure        INTEGER NOT NULL,
    PRIMARY KEY (status, exposure_class, reason_code, dated, created_day)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS exception_totals_deferred (
    deferred INTEGER PRIMARY KEY CHECK (deferred = 1),
    after_id INTEGER NOT NULL
);

DELETE FROM exception_totals;
INSERT INTO exception_totals
    (status, exposure_class, reason_code, dated, created_day, n, exposure)
SELECT status, exposure_class, reason_code, entity_created_at IS NOT NULL,
       coalesce((entity_created_at + 19800) / 86400, 0), count(*), sum(exposure_amount)
FROM exceptions
GROUP BY 1, 2, 3, 4, 5;

DROP TRIGGER IF EXISTS exception_totals_insert;
CREATE TRIGGER exception_totals_insert AFTER INSERT ON exceptions
WHEN NOT EXISTS (SELECT 1 FROM exception_totals_deferred WHERE new.id > after_id)
BEGIN
    INSERT INTO exception_totals
        (status, exposure_class, reason_code, dated, created_day, n, exposure)
    VALUES (new.status, new.exposure_class, new.reason_code, new.entity_created_at IS NOT NULL,
            coalesce((new.entity_created_at + 19800) / 86400, 0), 1, new.exposure_amount)
    ON CONFLICT (status, exposure_class, reason_code, dated, created_day)
    DO UPDATE SET n = n + 1, exposure = exposure + excluded.exposure;
END;

DROP TRIGGER IF EXISTS exception_totals_delete;
CREATE TRIGGER exception_totals_delete AFTER DELETE ON exceptions
WHEN NOT EXISTS (SELECT 1 FROM exception_totals_deferred WHERE old.id > after_id)
BEGIN
    UPDATE exception_totals SET n = n - 1, exposure = exposure - old.exposure_amount
    WHERE status = old.status AND exposure_class = old.exposure_class
      AND reason_code = old.reason_code AND dated = (old.entity_created_at IS NOT NULL)
      AND created_day = coalesce((old.entity_created_at + 19800) / 86400, 0);
    DELETE FROM exception_totals
    WHERE status = old.status AND exposure_class = old.exposure_class
      AND reason_code = old.reason_code AND dated = (old.entity_created_at IS NOT NULL)
      AND created_day = coalesce((old.entity_created_at + 19800) / 86400, 0) AND n = 0;
END;

DROP TRIGGER IF EXISTS exception_totals_update;
CREATE TRIGGER exception_totals_update
AFTER UPDATE OF status, exposure_class, reason_code, exposure_amount, entity_created_at
ON exceptions
WHEN (old.status IS NOT new.status OR old.exposure_class IS NOT new.exposure_class
      OR old.reason_code IS NOT new.reason_code
      OR old.exposure_amount IS NOT new.exposure_amount
      OR old.entity_created_at IS NOT new.entity_created_at)
  AND NOT EXISTS (SELECT 1 FROM exception_totals_deferred WHERE old.id > after_id)
BEGIN
    UPDATE exception_totals SET n = n - 1, exposure = exposure - old.exposure_amount
    WHERE status = old.status AND exposure_class = old.exposure_class
      AND reason_code = old.reason_code AND dated = (old.entity_created_at IS NOT NULL)
      AND created_day = coalesce((old.entity_created_at + 19800) / 86400, 0);
    DELETE FROM exception_totals
    WHERE status = old.status AND exposure_class = old.exposure_class
      AND reason_code = old.reason_code AND dated = (old.entity_created_at IS NOT NULL)
      AND created_day = coalesce((old.entity_created_at + 19800) / 86400, 0) AND n = 0;
    INSERT INTO exception_totals
        (status, exposure_class, reason_code, dated, created_day, n, exposure)
    VALUES (new.status, new.exposure_class, new.reason_code, new.entity_created_at IS NOT NULL,
            coalesce((new.entity_created_at + 19800) / 86400, 0), 1, new.exposure_amount)
    ON CONFLICT (status, exposure_class, reason_code, dated, created_day)
    DO UPDATE SET n = n + 1, exposure = exposure + excluded.exposure;
END;
