-- PostgreSQL twin of migrations/0010_raw_unique_keys.sql (same version, same resulting schema). docs/postgres.md.
-- SQLite rebuilt the raw tables so their keys are NOT NULL columns with a UNIQUE index
-- of their own (droppable for a bulk load); PostgreSQL alters them in place.

ALTER TABLE payments DROP CONSTRAINT payments_pkey;
ALTER TABLE payments ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX payments_id ON payments (id);

ALTER TABLE refunds DROP CONSTRAINT refunds_pkey;
ALTER TABLE refunds ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX refunds_id ON refunds (id);

ALTER TABLE settlements DROP CONSTRAINT settlements_pkey;
ALTER TABLE settlements ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX settlements_id ON settlements (id);

ALTER TABLE recon_rows DROP CONSTRAINT recon_rows_pkey;
ALTER TABLE recon_rows ALTER COLUMN row_key SET NOT NULL;
CREATE UNIQUE INDEX recon_rows_key ON recon_rows (row_key);

ALTER TABLE bank_lines DROP CONSTRAINT bank_lines_pkey;
ALTER TABLE bank_lines ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX bank_lines_id ON bank_lines (id);
