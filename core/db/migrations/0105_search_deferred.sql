-- The exception sync writes the queue-search documents of its rows itself, set-based
-- (core.db.review.write_search), instead of the per-row triggers of 0075: at 1M payments a
-- first sync opens 25,716 exceptions and writes as many "opened" events, and the trigger on
-- each event rewrote that exception's FTS5 document once more (4.6 CPU s of the sync).
-- While the sync's transaction holds a row in `exception_search_deferred` the insert and
-- note triggers stand aside; no other connection ever sees that row (it is inserted and
-- deleted inside the one transaction). The documents written are the same: ids as the
-- insert trigger makes them, notes '' followed by ' ' || note of each event in id order.
CREATE TABLE IF NOT EXISTS exception_search_deferred (
    deferred INTEGER PRIMARY KEY CHECK (deferred = 1)
);

DROP TRIGGER IF EXISTS exception_search_insert;
CREATE TRIGGER exception_search_insert AFTER INSERT ON exceptions
WHEN NOT EXISTS (SELECT 1 FROM exception_search_deferred)
BEGIN
    INSERT INTO exception_search (rowid, ids, notes) VALUES (
        new.id,
        new.entity_id || ' ' || coalesce(new.order_id, '') || ' ' || coalesce(new.utr, '') || ' '
        || coalesce(new.settlement_id, '') || ' '
        || coalesce((SELECT b.narration FROM bank_lines b
                     WHERE new.entity_type = 'bank_entry' AND b.id = new.entity_id), ''),
        ''
    );
END;

DROP TRIGGER IF EXISTS exception_search_note;
CREATE TRIGGER exception_search_note AFTER INSERT ON exception_events
WHEN new.note IS NOT NULL AND new.note != ''
  AND NOT EXISTS (SELECT 1 FROM exception_search_deferred)
BEGIN
    UPDATE exception_search SET notes = notes || ' ' || new.note WHERE rowid = new.exception_id;
END;
