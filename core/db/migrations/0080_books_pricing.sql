-- Contracted pricing (issue 14, docs/books.md): the merchant's plan, one row per version.
-- A version is never changed: a new price is a new version with its own effective_from.
-- rules_json: [{"method", "percent_bp", "fixed_paise"}]; gst_bp: GST in basis points (1800).
CREATE TABLE pricing_plans (
    version         INTEGER PRIMARY KEY,
    effective_from  INTEGER NOT NULL,   -- Unix seconds: payments captured from then on
    gst_bp          INTEGER NOT NULL,
    rules_json      TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    created_by      TEXT    NOT NULL,
    request_id      TEXT    NOT NULL UNIQUE  -- a repeated request finds its version
);
