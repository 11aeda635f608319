-- Queue search: case-insensitive substring over an exception's ids (payment / refund /
-- settlement id, order id, UTR), its bank line's narration and every note written on it.
-- An FTS5 index with the trigram tokenizer (any 3+ character substring, case folded),
-- kept in step by triggers; rowid = exceptions.id. Shorter terms use LIKE (core.db.views).
CREATE VIRTUAL TABLE IF NOT EXISTS exception_search USING fts5(
    ids, notes, tokenize = 'trigram'
);

INSERT INTO exception_search (rowid, ids, notes)
SELECT e.id,
       e.entity_id || ' ' || coalesce(e.order_id, '') || ' ' || coalesce(e.utr, '') || ' '
       || coalesce(e.settlement_id, '') || ' '
       || coalesce((SELECT b.narration FROM bank_lines b
                    WHERE e.entity_type = 'bank_entry' AND b.id = e.entity_id), ''),
       coalesce((SELECT group_concat(v.note, ' ') FROM exception_events v
                 WHERE v.exception_id = e.id AND v.note IS NOT NULL), '')
FROM exceptions e;

CREATE TRIGGER exception_search_insert AFTER INSERT ON exceptions
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

CREATE TRIGGER exception_search_ids AFTER UPDATE OF order_id, utr, settlement_id ON exceptions
WHEN coalesce(old.order_id, '') != coalesce(new.order_id, '')
  OR coalesce(old.utr, '') != coalesce(new.utr, '')
  OR coalesce(old.settlement_id, '') != coalesce(new.settlement_id, '')
BEGIN
    UPDATE exception_search SET ids =
        new.entity_id || ' ' || coalesce(new.order_id, '') || ' ' || coalesce(new.utr, '') || ' '
        || coalesce(new.settlement_id, '') || ' '
        || coalesce((SELECT b.narration FROM bank_lines b
                     WHERE new.entity_type = 'bank_entry' AND b.id = new.entity_id), '')
    WHERE rowid = new.id;
END;

CREATE TRIGGER exception_search_note AFTER INSERT ON exception_events
WHEN new.note IS NOT NULL AND new.note != ''
BEGIN
    UPDATE exception_search SET notes = notes || ' ' || new.note WHERE rowid = new.exception_id;
END;
