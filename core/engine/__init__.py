"""The reconciliation engine (spec sections 4-7): set-based, deterministic, configurable.

`reconcile(dataset, params, as_of)` gives every entity exactly one outcome;
`write_results_csv` writes spec section 7's file; `persist_run` stores a run and its
outcomes. See docs/engine.md for the decisions taken where the spec is silent.
"""

from core.engine.params import EngineParams
from core.engine.part import OUTCOME_COLUMNS, RESULT_COLUMNS
from core.engine.reconcile import reconcile

__all__ = ["OUTCOME_COLUMNS", "RESULT_COLUMNS", "EngineParams", "reconcile"]
