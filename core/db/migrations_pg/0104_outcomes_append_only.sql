-- PostgreSQL twin of migrations/0104_outcomes_append_only.sql (same version, same resulting
-- schema). docs/postgres.md.
-- outcomes_entity_status (0070) is updated by every outcome a run writes; its readers use the
-- primary key (run_id, entity_type, entity_id) or the run's counts_json instead.
DROP INDEX IF EXISTS outcomes_entity_status;
