-- PostgreSQL twin of migrations/0109_exceptions_status_updated.sql (measured there, on
-- SQLite at 1M payments: the "updated" sort's page 0.05-0.25 s -> 0.004-0.04 s): the queue's
-- "updated" sort picks its page's ids from this index instead of ordering every open
-- exception. Its cost here: an update that changes updated_at and no other indexed column
-- (a comment, the sync's "no longer found" mark, a fact other than exposure_amount) is no
-- longer heap-only (HOT), so it adds entries to the table's other indexes too (not measured).
CREATE INDEX IF NOT EXISTS exceptions_status_updated ON exceptions (status, updated_at);
