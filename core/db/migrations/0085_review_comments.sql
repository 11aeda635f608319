-- Comments and attachments on an exception (core.review.comments).
--
-- A comment is a person's note in the exception's thread: who (the signed-in identity),
-- when (Unix seconds), the text, and the history event (exception_events, action
-- 'commented', with the request id) written with it in the same transaction; that event is
-- what makes a commented exception "touched" (never AUTO_CLEARED: core.review.sync).
-- An attachment is a small file stored in the database with its comment: a sanitised
-- name (no path), an allowlisted media type sniffed from its bytes, its size and SHA-256.
-- The size cap (RAZORRECON_MAX_ATTACHMENT_KB) and the per-exception count
-- (RAZORRECON_MAX_ATTACHMENTS) are settings checked by core before anything is written;
-- the checks below are the database's own last line (a hard ceiling of 32 MiB a file).
--
-- Both tables are append-only, like the audit trail: a comment is answered by another
-- comment, never edited or deleted.

CREATE TABLE review_comments (
    id            INTEGER PRIMARY KEY,
    exception_id  INTEGER NOT NULL REFERENCES exceptions (id),
    event_id      INTEGER NOT NULL UNIQUE REFERENCES exception_events (id),
    request_id    TEXT    NOT NULL UNIQUE,
    author        TEXT    NOT NULL CHECK (length(author) BETWEEN 1 AND 200),
    created_at    INTEGER NOT NULL,
    body          TEXT    NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
    body_sha256   TEXT    NOT NULL CHECK (length(body_sha256) = 64)
);

CREATE INDEX review_comments_exception ON review_comments (exception_id, id);

CREATE TABLE review_attachments (
    id            INTEGER PRIMARY KEY,
    exception_id  INTEGER NOT NULL REFERENCES exceptions (id),
    comment_id    INTEGER NOT NULL REFERENCES review_comments (id),
    author        TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    filename      TEXT    NOT NULL CHECK (
        length(filename) BETWEEN 1 AND 120
        AND instr(filename, '/') = 0
        AND instr(filename, char(92)) = 0
        AND substr(filename, 1, 1) <> '.'
    ),
    media_type    TEXT    NOT NULL CHECK (media_type IN (
        'application/pdf',
        'image/png',
        'image/jpeg',
        'text/csv',
        'text/plain',
        'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
        'message/rfc822'
    )),
    size          INTEGER NOT NULL CHECK (size BETWEEN 1 AND 33554432),
    sha256        TEXT    NOT NULL CHECK (length(sha256) = 64),
    content       BLOB    NOT NULL CHECK (typeof(content) = 'blob' AND length(content) = size)
);

CREATE INDEX review_attachments_exception ON review_attachments (exception_id, id);
CREATE INDEX review_attachments_comment ON review_attachments (comment_id, id);

CREATE TRIGGER review_comments_no_update BEFORE UPDATE ON review_comments
BEGIN
    SELECT RAISE(ABORT, 'review_comments is append-only');
END;

CREATE TRIGGER review_comments_no_delete BEFORE DELETE ON review_comments
BEGIN
    SELECT RAISE(ABORT, 'review_comments is append-only');
END;

CREATE TRIGGER review_attachments_no_update BEFORE UPDATE ON review_attachments
BEGIN
    SELECT RAISE(ABORT, 'review_attachments is append-only');
END;

CREATE TRIGGER review_attachments_no_delete BEFORE DELETE ON review_attachments
BEGIN
    SELECT RAISE(ABORT, 'review_attachments is append-only');
END;
