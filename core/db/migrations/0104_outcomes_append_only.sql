-- Stored runs append their outcomes: drop the one index on outcomes that every row of a run
-- goes into out of the table's order. `outcomes_entity_status (run_id, entity_type, status)`
-- (0070) put each run's rows in three status regions per entity type, so every insert was a
-- seek into the middle of that index: ~1.5-2 CPU s of the ~4.5 s that copying an incremental
-- run's ~900,000 carried outcomes costs at 1M, and as much again for a full run's writes
-- (docs/engine.md, "Stored incremental runs"; docs/benchmark.md, "Incremental runs", sixth
-- round). Its readers keep their plans without it: a run's bank_entry outcomes are a range of
-- the primary key (run_id, entity_type, entity_id), and the run summary's counts per entity
-- type and status come from the run's counts_json (core.db.views.outcome_counts).
DROP INDEX IF EXISTS outcomes_entity_status;
