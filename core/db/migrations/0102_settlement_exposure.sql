-- Settlement page: the picker ranks settlements by their open exceptions' exposure
-- (core.db.views.settlement_choices: sum(exposure_amount) of the open statuses, grouped by
-- settlement_id). exceptions_status_created (0070) finds the open rows but holds no
-- settlement_id, so every open exception was read from the table: at 257k open exceptions
-- (a 10M database) 0.96 CPU s a render; with this covering index, read from the index
-- alone, 0.13 CPU s (docs/benchmark.md, "The streamed build's raw tables and outcomes").
CREATE INDEX IF NOT EXISTS exceptions_open_settlement
    ON exceptions (status, settlement_id, exposure_amount);
