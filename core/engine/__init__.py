"""The reconciliation engine (spec sections 4-7): set-based, deterministic, configurable.

`reconcile(dataset, params, as_of)` gives every entity exactly one outcome;
`write_results_csv` writes spec section 7's file; `persist_run` stores a run and its
outcomes. See docs/engine.md for the decisions taken where the spec is silent.
"""

from core.dataset import OUTCOME_COLUMNS, RESULT_COLUMNS
from core.db.runs import RunRecord, discard_stale_runs, latest_completed_run
from core.engine.params import EngineParams
from core.engine.persist import persist_run
from core.engine.reconcile import reconcile
from core.engine.results import counts, summary_lines, write_results_csv

__all__ = [
    "OUTCOME_COLUMNS",
    "RESULT_COLUMNS",
    "EngineParams",
    "RunRecord",
    "counts",
    "discard_stale_runs",
    "latest_completed_run",
    "persist_run",
    "reconcile",
    "summary_lines",
    "write_results_csv",
]
