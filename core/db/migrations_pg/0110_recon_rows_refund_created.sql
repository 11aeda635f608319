-- PostgreSQL twin of migrations/0110_recon_rows_refund_created.sql: the refund recon rows
-- created in a month (the Books page's GST figures, core.db.raw.read_month_dataset) found
-- by a partial index instead of a scan of every recon row.
CREATE INDEX IF NOT EXISTS recon_rows_refund_created ON recon_rows (created_at)
    WHERE type = 'refund';
