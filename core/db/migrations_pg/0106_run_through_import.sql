-- Which data a run reconciled, exactly (docs/engine.md, "Carrying a run forward"): every
-- import with an id up to through_import_id was in the data the run read, and none after
-- it. import-day carries the latest run forward only when no import came after this id.
-- It replaces a comparison of the imports' whole seconds with the run's started_at, under
-- which an import stored in the second a run started counted as reconciled by that run.
-- NULL: a run stored before this column (the seconds are all that is known of it).
ALTER TABLE runs ADD COLUMN through_import_id INTEGER;
