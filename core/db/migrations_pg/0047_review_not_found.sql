-- PostgreSQL twin of migrations/0047_review_not_found.sql (same version, same resulting schema;
-- INTEGER is BIGINT: paise and Unix seconds outgrow 32 bits). docs/postgres.md.

-- "Needs review: no longer found". A run that no longer finds an exception a person has
-- touched (assigned, escalated, investigated or commented on) does not AUTO_CLEAR it: the
-- status stays (so it counts as open) and not_found_run_id names that run, until a person
-- resolves or reopens it, or a later run finds it again (core.review.sync).
ALTER TABLE exceptions ADD COLUMN not_found_run_id BIGINT;
