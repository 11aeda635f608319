-- Ingest: column mappings a user saved for a bank statement layout we do not recognise.
-- One row per saved version: the latest version of a signature is the one used, older
-- versions stay as the record of what imports used before (each save is also in the audit
-- trail). `signature` is the header row normalised (core.ingest.headers.header_signature)
-- and joined with '|'; `header_json` the header cells as the file wrote them;
-- `fields_json` [[field, header name], ...].

CREATE TABLE bank_mappings (
    id          INTEGER PRIMARY KEY,
    signature   TEXT    NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    name        TEXT    NOT NULL,
    header_json TEXT    NOT NULL,
    fields_json TEXT    NOT NULL,
    saved_at    INTEGER NOT NULL,
    saved_by    TEXT    NOT NULL,
    UNIQUE (signature, version)
);
