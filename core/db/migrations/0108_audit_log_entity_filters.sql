-- The Audit page lists the trail newest first (`ORDER BY seq DESC LIMIT n`) filtered by
-- actor, action, entity type and entity id (core.db.audit.query_rows / count_rows). The
-- index of 0001 on (entity_type, entity_id) served neither entity filter alone: with an
-- entity type, SQLite sought it and then sorted every matching entry, payloads included
-- (0.040-0.17 s for 100 rows at 1M, load 3-11, where 25,716 of 25,717 entries are
-- 'exception'; ~20x the entries at 10M); with an entity id alone, it read the whole trail
-- (0.005-0.018 s at 1M).
-- One column each instead: an index's key is followed by the rowid (seq), so for
-- `col = ?` its entries are already in seq order; SQLite walks them backwards and stops
-- after the page's rows (0.0003 s; an id alone 0.00004 s). The entity id's index also
-- serves type and id together (the review history of one exception: an id's few entries,
-- checked for the type), and entity_type's the Audit filter's distinct types (index-only,
-- as 0103's). One index more on every append: inserting a 1M run's 25,717 entries wrote
-- 1% more WAL (+222 kB of 17.8 MB); its CPU time moved within the runs' spread (medians
-- -0.04 to +0.04 s of 0.25-0.55 s; docs/benchmark.md, "The Audit page's entity filters").
-- Indexes only: the append-only triggers refuse changes to rows.
DROP INDEX IF EXISTS audit_log_entity;
CREATE INDEX IF NOT EXISTS audit_log_entity_type ON audit_log (entity_type);
CREATE INDEX IF NOT EXISTS audit_log_entity_id ON audit_log (entity_id);
