-- PostgreSQL twin of migrations/0021_outcomes_status_check.sql (same version, same resulting schema). docs/postgres.md.
-- SQLite rewrote the status check as ORs for speed; the rule is the same, and
-- PostgreSQL's IN check costs nothing, so nothing changes here.
SELECT 1;
