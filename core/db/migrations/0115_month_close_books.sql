-- What a month's close keeps besides its roll-forward (docs/books.md section 4, "What a close
-- keeps"): the newest import in the data at the close, the month's balance by day and its
-- journal as they stood, so the Books page, `journal` and the close report show a closed
-- month as closed, and the next open month's journal carries what arrived later as
-- prior-period adjustment vouchers. Closes made before this migration keep none of it.
ALTER TABLE month_closes ADD COLUMN through_import_id INTEGER;  -- NULL: closed before 0115

CREATE TABLE month_close_books (
    month        TEXT    PRIMARY KEY REFERENCES month_closes (month),
    daily_json   TEXT    NOT NULL,  -- the month's days of the balance by day, as at the close
    journal      BLOB    NOT NULL,  -- its vouchers (ledger keys, paise): zlib-compressed JSON
    vouchers     INTEGER NOT NULL   -- how many
);
