-- Each raw row carries the keyed MAC its writer computed (core.rowmac): `audit verify`
-- recomputes it and names a row edited or inserted outside every audited import, sync
-- and webhook (an independent attacker, round 3, F2; docs/review.md "Raw tables changed
-- by hand"). NULL on rows stored before this migration: verify names them until the data
-- is imported again with replace. No trigger: the writers compute it (an INSERT trigger
-- would cost SQLite its fast table-to-table copy).
ALTER TABLE payments ADD COLUMN row_mac TEXT;
ALTER TABLE refunds ADD COLUMN row_mac TEXT;
ALTER TABLE settlements ADD COLUMN row_mac TEXT;
ALTER TABLE recon_rows ADD COLUMN row_mac TEXT;
ALTER TABLE bank_lines ADD COLUMN row_mac TEXT;
ALTER TABLE instant_settlements ADD COLUMN row_mac TEXT;
ALTER TABLE instant_payouts ADD COLUMN row_mac TEXT;
ALTER TABLE disputes ADD COLUMN row_mac TEXT;
ALTER TABLE transfers ADD COLUMN row_mac TEXT;
