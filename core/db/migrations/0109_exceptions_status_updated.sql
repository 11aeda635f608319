-- Exceptions queue sorted by "updated" (core.db.views.queue_page: updated_at DESC, id).
-- queue_page picks a page's ids from an index holding the filter's status and the sort key,
-- then reads those rows alone; updated_at was in no index, so this one sort still read every
-- open exception whole to order it. At 1M payments (25,716 open) page 1 and the last page
-- took 0.05-0.25 s without this index, 0.004-0.04 s with it, read from it alone. Its cost:
-- 0.013-0.018 s to build at 1M (440 KiB); a write of updated_at moves the row's entry
-- (rewriting all 25,716 rows' updated_at: 0.03-0.10 s -> 0.09-0.28 s; a sync rewrites only
-- the rows whose facts changed, a review action one) (docs/benchmark.md, "The Exceptions
-- queue's pages at 1M").
CREATE INDEX IF NOT EXISTS exceptions_status_updated ON exceptions (status, updated_at);
