-- PostgreSQL twin of migrations/0105_search_deferred.sql: while the exception sync's
-- transaction holds the row of `exception_search_deferred`, the search triggers of 0075 stand
-- aside for new exceptions and new events, and the sync writes the documents set-based
-- (core.db.review.write_search). The ids trigger on UPDATE is unchanged.
CREATE TABLE IF NOT EXISTS exception_search_deferred (
    deferred INTEGER PRIMARY KEY CHECK (deferred = 1)
);

CREATE OR REPLACE FUNCTION exception_search_on_exception() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM exception_search_deferred) THEN
            INSERT INTO exception_search (id, ids, notes)
            VALUES (NEW.id, exception_search_ids_of(NEW), '');
        END IF;
    ELSIF coalesce(OLD.order_id, '') <> coalesce(NEW.order_id, '')
       OR coalesce(OLD.utr, '') <> coalesce(NEW.utr, '')
       OR coalesce(OLD.settlement_id, '') <> coalesce(NEW.settlement_id, '') THEN
        UPDATE exception_search SET ids = exception_search_ids_of(NEW) WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION exception_search_on_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM exception_search_deferred) THEN
        UPDATE exception_search SET notes = notes || ' ' || NEW.note WHERE id = NEW.exception_id;
    END IF;
    RETURN NULL;
END
$$;
