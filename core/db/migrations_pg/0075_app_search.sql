-- PostgreSQL twin of migrations/0075_app_search.sql (same version). docs/postgres.md.
-- Queue search document per exception (id = exceptions.id), kept in step by triggers as in
-- SQLite. SQLite indexes it with FTS5 trigram; here it is a plain table (searched with
-- ILIKE; a pg_trgm index is left to the operator, as that extension must be installed).
CREATE TABLE exception_search (
    id     BIGINT PRIMARY KEY,
    ids    TEXT NOT NULL,
    notes  TEXT NOT NULL DEFAULT ''
);

CREATE FUNCTION exception_search_ids_of(e exceptions) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT e.entity_id || ' ' || coalesce(e.order_id, '') || ' ' || coalesce(e.utr, '') || ' '
        || coalesce(e.settlement_id, '') || ' '
        || coalesce((SELECT b.narration FROM bank_lines b
                     WHERE e.entity_type = 'bank_entry' AND b.id = e.entity_id LIMIT 1), '')
$$;

INSERT INTO exception_search (id, ids, notes)
SELECT e.id, exception_search_ids_of(e),
       coalesce((SELECT string_agg(v.note, ' ' ORDER BY v.id) FROM exception_events v
                 WHERE v.exception_id = e.id AND v.note IS NOT NULL), '')
FROM exceptions e;

CREATE FUNCTION exception_search_on_exception() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO exception_search (id, ids, notes)
        VALUES (NEW.id, exception_search_ids_of(NEW), '');
    ELSIF coalesce(OLD.order_id, '') <> coalesce(NEW.order_id, '')
       OR coalesce(OLD.utr, '') <> coalesce(NEW.utr, '')
       OR coalesce(OLD.settlement_id, '') <> coalesce(NEW.settlement_id, '') THEN
        UPDATE exception_search SET ids = exception_search_ids_of(NEW) WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER exception_search_insert AFTER INSERT ON exceptions
    FOR EACH ROW EXECUTE FUNCTION exception_search_on_exception();
CREATE TRIGGER exception_search_ids AFTER UPDATE OF order_id, utr, settlement_id ON exceptions
    FOR EACH ROW EXECUTE FUNCTION exception_search_on_exception();

CREATE FUNCTION exception_search_on_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE exception_search SET notes = notes || ' ' || NEW.note WHERE id = NEW.exception_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER exception_search_note AFTER INSERT ON exception_events
    FOR EACH ROW WHEN (NEW.note IS NOT NULL AND NEW.note <> '')
    EXECUTE FUNCTION exception_search_on_note();
