-- PostgreSQL twin of migrations/0098_bulk_maintenance.sql. docs/postgres.md, "Statistics and
-- index builds after bulk loads".
--
-- The app role owns no table, so it may neither ANALYZE (owner only on PostgreSQL 15) nor
-- drop and create indexes. These SECURITY DEFINER functions, owned by the role running the
-- migrations, do exactly those two things for a fixed list of tables and nothing else:
-- a table name is checked against the list (never SQL text), search_path is fixed with
-- pg_temp last, EXECUTE is revoked from PUBLIC and granted to razorrecon_app only. The
-- audit trail (audit_log, exception_events, action_requests, review_comments,
-- review_attachments) is on no list: a call naming it is refused.
--
-- razorrecon_analyze(t)         ANALYZE one raw table, outcomes or exceptions.
-- razorrecon_drop_indexes(t)    payments, recon_rows or outcomes: drop its indexes that
--                               back no constraint, remembering their definitions; only
--                               inside a writing unit (the caller holds WRITE_LOCK).
-- razorrecon_build_indexes(t)   build them again from the remembered definitions.
-- A transaction that drops and does not build cannot commit: a deferred constraint trigger
-- on the remembered definitions refuses the commit, and the rollback restores the indexes.

CREATE TABLE razorrecon_index_rebuilds (
    table_name TEXT NOT NULL,
    index_name TEXT PRIMARY KEY,
    definition TEXT NOT NULL
);
-- 0090's default privileges would give the app role this table: it holds SQL text that
-- razorrecon_build_indexes runs as the owner, so only the owner may touch it.
REVOKE ALL ON razorrecon_index_rebuilds FROM PUBLIC;
REVOKE ALL ON razorrecon_index_rebuilds FROM razorrecon_app;

CREATE FUNCTION razorrecon_refuse_unbuilt_index() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM public.razorrecon_index_rebuilds WHERE index_name = NEW.index_name)
    THEN
        RAISE EXCEPTION 'index % of % was dropped for a bulk load and not built again',
            NEW.index_name, NEW.table_name USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER razorrecon_index_rebuilds_built
    AFTER INSERT ON razorrecon_index_rebuilds DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse_unbuilt_index();

CREATE FUNCTION razorrecon_analyze(target TEXT) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF target IS NULL OR target NOT IN ('payments', 'refunds', 'settlements',
            'recon_rows', 'bank_lines', 'instant_settlements', 'instant_payouts', 'disputes',
            'transfers', 'outcomes', 'exceptions') THEN
        RAISE EXCEPTION 'razorrecon_analyze: % is not a table it may analyse', target
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    EXECUTE format('ANALYZE public.%I', target);
END
$$;

CREATE FUNCTION razorrecon_drop_indexes(target TEXT) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    r record;
    dropped integer := 0;
BEGIN
    IF target IS NULL OR target NOT IN ('payments', 'recon_rows', 'outcomes') THEN
        RAISE EXCEPTION 'razorrecon_drop_indexes: % is not a table whose indexes it may drop',
            target USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- core.db.backend.WRITE_LOCK (0x52525752495445) as pg_locks shows a bigint key.
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE locktype = 'advisory'
            AND pid = pg_catalog.pg_backend_pid() AND granted
            AND classid = 5395031 AND objid = 1380537413 AND objsubid = 1) THEN
        RAISE EXCEPTION 'razorrecon_drop_indexes: only inside a writing unit (the write lock)'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    FOR r IN
        SELECT c.relname AS name, pg_catalog.pg_get_indexdef(i.indexrelid) AS definition
        FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = pg_catalog.format('public.%I', target)::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.indexrelid)
        ORDER BY c.relname
    LOOP
        INSERT INTO public.razorrecon_index_rebuilds (table_name, index_name, definition)
            VALUES (target, r.name, r.definition);
        EXECUTE pg_catalog.format('DROP INDEX public.%I', r.name);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END
$$;

CREATE FUNCTION razorrecon_build_indexes(target TEXT) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    r record;
    built integer := 0;
BEGIN
    IF target IS NULL OR target NOT IN ('payments', 'recon_rows', 'outcomes') THEN
        RAISE EXCEPTION 'razorrecon_build_indexes: % is not a table whose indexes it may build',
            target USING ERRCODE = 'insufficient_privilege';
    END IF;
    FOR r IN
        SELECT b.index_name, b.definition FROM public.razorrecon_index_rebuilds b
        WHERE b.table_name = razorrecon_build_indexes.target ORDER BY b.index_name
    LOOP
        EXECUTE r.definition;
        DELETE FROM public.razorrecon_index_rebuilds WHERE index_name = r.index_name;
        built := built + 1;
    END LOOP;
    RETURN built;
END
$$;

REVOKE ALL ON FUNCTION razorrecon_refuse_unbuilt_index() FROM PUBLIC;
REVOKE ALL ON FUNCTION razorrecon_analyze(TEXT) FROM PUBLIC;
REVOKE ALL ON FUNCTION razorrecon_drop_indexes(TEXT) FROM PUBLIC;
REVOKE ALL ON FUNCTION razorrecon_build_indexes(TEXT) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION razorrecon_analyze(TEXT) TO razorrecon_app;
GRANT EXECUTE ON FUNCTION razorrecon_drop_indexes(TEXT) TO razorrecon_app;
GRANT EXECUTE ON FUNCTION razorrecon_build_indexes(TEXT) TO razorrecon_app;
