-- The investigator's evidence of a dispute or a transfer (core.db.investigate:
-- recon_rows_for_dispute, transfer_reversal_rows) finds the recon rows naming it by
-- dispute_id or transfer_id, which no index held: every recon row was read (a 1M-payment
-- database: 2.8 s for each transfer exception's evidence, 0.10 s for a dispute's; ten times
-- that at 10M). Few rows name either (2,398 and 400 of 932,087 at 1M), so the indexes are
-- partial: they hold those rows only, and `col = ?` lets SQLite use them
-- (docs/benchmark.md, "The investigator's evidence at 1M").
CREATE INDEX IF NOT EXISTS recon_rows_dispute ON recon_rows (dispute_id)
    WHERE dispute_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS recon_rows_transfer ON recon_rows (transfer_id)
    WHERE transfer_id IS NOT NULL;
