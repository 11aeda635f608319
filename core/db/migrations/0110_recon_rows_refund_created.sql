-- The Books page's GST figures for a month (core.db.raw.read_month_dataset, "gst") read
-- the refund recon rows created in the month, wherever they were settled. No index held
-- recon rows by date: that one condition read every recon row (a 1M-payment database:
-- 0.08-0.17 s warm for 18,407 of 932,087 rows, all 192 MiB of the table; ten times that at
-- 10M, growing with the history, not the month). Refund rows are few (46,279 at 1M), so the
-- index is partial: 600 KiB at 1M, built in 0.9 s, one entry written per refund row
-- stored. `type = 'refund'` is written literally in the query so both databases use it.
CREATE INDEX IF NOT EXISTS recon_rows_refund_created ON recon_rows (created_at)
    WHERE type = 'refund';
