"""Read models for the app's pages: everything a page shows, computed here or in SQL.

One module per page area, imported by name (`from core.views import queue`); this package
re-exports nothing, so every arrow between a page and its read model is a real import:

- `common`: totals, exposure classes, IST text, the as-of a read defaults to, the data
  mark cached reads are keyed by
- `runs`: the latest run, its cached summary, holdings, recent runs, the latest sync's changes
- `summary_ahead`: that summary made by a command that stores a run (`reconcile --db`,
  `import-day`) from the frames it holds, and stored with the run
- `overview`: the Overview page (live exposure, ageing, status counts)
- `queue`: the exception queue, its options, its first item, one reviewer's work, the CSV
  export
- `exception`: one exception, its history and evidence
- `settlement`: one settlement's decomposition and checks
- `evaluation`: the held-out evaluation of a benchmark run

Pages ask these functions and render the answer; they never query or aggregate. Figures
that depend only on a run's outcomes (captured, settled, credited, pending, match rate by
settlement day) are computed once per run and cached in `app_run_summaries`; figures that
move with review actions (open exceptions, exposure, ageing, the queue) are read live with
indexed SQL, so a page stays fast with a million payments.
"""
