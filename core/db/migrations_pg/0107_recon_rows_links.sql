-- PostgreSQL twin of migrations/0107_recon_rows_links.sql: the recon rows naming a dispute
-- or a transfer (the investigator's evidence) found by partial indexes instead of a scan.
CREATE INDEX IF NOT EXISTS recon_rows_dispute ON recon_rows (dispute_id)
    WHERE dispute_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS recon_rows_transfer ON recon_rows (transfer_id)
    WHERE transfer_id IS NOT NULL;
