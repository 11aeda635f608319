-- Identity and roles; four-eyes approvals of large write-offs.

-- One row per person, keyed by the verified email the identity provider vouches for.
-- A person who leaves is deactivated, never deleted: the audit trail keeps naming them.
CREATE TABLE users (
    email       TEXT    PRIMARY KEY,
    role        TEXT    NOT NULL CHECK (role IN ('viewer', 'reviewer', 'approver', 'admin')),
    active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    added_by    TEXT    NOT NULL,
    added_at    INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TRIGGER users_no_delete BEFORE DELETE ON users
BEGIN
    SELECT RAISE(ABORT, 'users are deactivated, never deleted');
END;

-- A write-off above the four-eyes threshold waits here for a second person.
CREATE TABLE approvals (
    id            INTEGER PRIMARY KEY,
    exception_id  INTEGER NOT NULL REFERENCES exceptions (id),
    resolution    TEXT    NOT NULL,
    amount        INTEGER NOT NULL,
    note          TEXT    NOT NULL,
    maker         TEXT    NOT NULL,
    version       INTEGER NOT NULL,  -- the exception's version the maker decided on
    status        TEXT    NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'approved', 'rejected')),
    checker       TEXT,
    checker_note  TEXT,
    request_id    TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    decided_at    INTEGER
);

-- At most one pending approval per exception.
CREATE UNIQUE INDEX approvals_one_pending ON approvals (exception_id) WHERE status = 'pending';

CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
BEGIN
    SELECT RAISE(ABORT, 'approvals are decided, never deleted');
END;

-- A decided approval stays decided.
CREATE TRIGGER approvals_decided_once BEFORE UPDATE ON approvals
WHEN OLD.status != 'pending'
BEGIN
    SELECT RAISE(ABORT, 'an approval is decided once');
END;
