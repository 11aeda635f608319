"""Root-cause accuracy of the deterministic investigator against the benchmark's labels.

The ground truth labels every EXCEPTION entity with a root cause. For each EXCEPTION
outcome of a run that carries a label, the deterministic investigator gathers evidence
through the read-only tools and names a cause; accuracy is the share it names right.
Nothing is written. No model is asked: the figure is reproducible and free.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from core.db import connect
from core.db import investigate as db
from core.db.connection import page_size_of
from core.errors import ConfigError, InputError, Problem
from core.investigate.deterministic import explain
from core.investigate.evidence import gather
from core.investigate.result import Answer

if TYPE_CHECKING:
    from core.investigate.gemini import ClientConfig
from core.investigate.tools import EvidenceTools, run_context
from core.money import format_inr

REQUIRED_COLUMNS = ("entity_type", "entity_id", "root_cause")


@dataclass(frozen=True)
class CauseScore:
    """How often one labelled root cause was named: labelled, correct."""

    root_cause: str
    labelled: int
    correct: int


@dataclass(frozen=True)
class RootCauseAccuracy:
    """The deterministic investigator's score on one run.

    run_id: the run whose EXCEPTION outcomes were investigated (None: no completed run).
    labelled: EXCEPTION outcomes that carry a ground-truth root cause (investigated).
    correct: of those, how many the investigator named right. accuracy: correct /
    labelled (None when nothing was labelled). missed: labelled entities the run did not
    flag as exceptions. unlabelled: exceptions with no label (engine false positives).
    by_cause: per labelled root cause. confusions: (labelled, named, count), most first.
    """

    run_id: int | None
    labelled: int
    correct: int
    accuracy: float | None
    missed: int
    unlabelled: int
    by_cause: tuple[CauseScore, ...]
    confusions: tuple[tuple[str, str, int], ...]

    def lines(self) -> list[str]:
        """A short report for `evaluation.py` to print."""
        if self.accuracy is None:
            return [f"Root-cause accuracy: no labelled exceptions (run {self.run_id})"]
        out = [
            f"Root-cause accuracy (deterministic investigator, run {self.run_id}): "
            f"{self.correct}/{self.labelled} = {self.accuracy:.1%}"
            f" (missed by the engine: {self.missed}, unlabelled exceptions: {self.unlabelled})"
        ]
        for score in self.by_cause:
            share = score.correct / score.labelled if score.labelled else 0.0
            out.append(
                f"  {score.root_cause:<28} {score.correct:>5}/{score.labelled:<5} {share:>7.1%}"
            )
        for expected, named, count in self.confusions[:10]:
            out.append(f"  confused: {expected} named {named} x{count}")
        return out


def root_cause_accuracy(
    conn: sqlite3.Connection, ground_truth_frame: pd.DataFrame, *, run_id: int | None = None
) -> RootCauseAccuracy:
    """Score the deterministic root causes of a run (default: the latest completed one)
    against a frame with columns entity_type, entity_id, root_cause (empty: no label)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in ground_truth_frame.columns]
    if missing:
        raise InputError(
            [Problem("ground_truth", 0, c, "missing column the evaluation needs") for c in missing]
        )
    labels: dict[tuple[str, str], str] = {}
    for entity_type, entity_id, cause in ground_truth_frame[list(REQUIRED_COLUMNS)].itertuples(
        index=False
    ):
        if isinstance(cause, str) and cause.strip():
            labels[(str(entity_type), str(entity_id))] = cause.strip()

    with db.read_only(conn) as ro:
        run = db.get_run(ro, run_id) if run_id is not None else db.latest_completed_run(ro)
        if run is None:
            return RootCauseAccuracy(None, 0, 0, None, len(labels), 0, (), ())
        outcomes = db.exception_outcomes(ro, int(run["id"]))
        tools = EvidenceTools(ro, context=run_context(ro, int(run["id"])))
        labelled: Counter[str] = Counter()
        right: Counter[str] = Counter()
        confused: Counter[tuple[str, str]] = Counter()
        seen: set[tuple[str, str]] = set()
        unlabelled = 0
        for outcome in outcomes:
            key = (str(outcome["entity_type"]), str(outcome["entity_id"]))
            seen.add(key)
            expected = labels.get(key)
            if expected is None:
                unlabelled += 1
                continue
            named = explain(gather(tools, _as_record(outcome))).root_cause
            labelled[expected] += 1
            if named == expected:
                right[expected] += 1
            else:
                confused[(expected, named)] += 1
    total, correct = sum(labelled.values()), sum(right.values())
    return RootCauseAccuracy(
        run_id=int(run["id"]),
        labelled=total,
        correct=correct,
        accuracy=correct / total if total else None,
        missed=sum(1 for key in labels if key not in seen),
        unlabelled=unlabelled,
        by_cause=tuple(
            CauseScore(cause, labelled[cause], right[cause]) for cause in sorted(labelled)
        ),
        confusions=tuple((e, n, c) for (e, n), c in confused.most_common()),
    )


PREDICTION_COLUMNS = (
    *REQUIRED_COLUMNS,
    "confidence",
    "cites_entity",
    "cites_amount",
    "cites_counterparty",
)
# Who acts on the advice: Razorpay, the bank, the customer, or the books (a write-off).
COUNTERPARTY = re.compile(r"\b(Razorpay|bank|customer|Write off)\b", re.IGNORECASE)


def predict_root_causes(conn: sqlite3.Connection, run_id: int) -> pd.DataFrame:
    """The deterministic investigator's answer for every EXCEPTION outcome of a run, as a
    frame: entity_type, entity_id, root_cause, confidence, and the usefulness checks
    (`usefulness`). It reads no labels: the evaluation joins them afterwards
    (`core.evaluation.run_evaluation(root_cause_predictor=...)`)."""
    rows: list[tuple[Any, ...]] = []
    with db.read_only(conn) as ro:
        tools = EvidenceTools(ro, context=run_context(ro, run_id))
        for outcome in db.exception_outcomes(ro, run_id):
            answer = explain(gather(tools, _as_record(outcome)))
            rows.append(
                (
                    str(outcome["entity_type"]),
                    str(outcome["entity_id"]),
                    answer.root_cause,
                    answer.confidence,
                    *usefulness(answer, outcome),
                )
            )
    frame = pd.DataFrame(rows, columns=list(PREDICTION_COLUMNS))
    for column in REQUIRED_COLUMNS:
        frame[column] = frame[column].astype("string")
    return frame.astype({"confidence": float})


def predict_with_model(
    conn: sqlite3.Connection, run_id: int, *, client_config: ClientConfig | None = None
) -> pd.DataFrame:
    """The investigator as a reviewer meets it, model included: every exception of the run
    investigated through `core.investigate.investigate` (the model's answer where it passed
    every check, else the rules'), as `predict_root_causes`'s frame plus `source` (the
    model's name, or "deterministic"). Asks the model once per exception (the cache
    aside): with a real key this costs tokens. `client_config`: default from the
    environment (GEMINI_API_KEY)."""
    from core.investigate.gemini import ClientConfig as Config
    from core.investigate.service import investigate

    config = client_config if client_config is not None else Config.from_env()
    if not config.api_key:
        raise ConfigError("scoring the model needs GEMINI_API_KEY (or LLM_API_KEY) set")
    rows: list[tuple[Any, ...]] = []
    with db.read_only(conn) as ro:
        found = db.exceptions_of_run(ro, run_id)
        outcomes = {
            (str(o["entity_type"]), str(o["entity_id"])): o
            for o in db.exception_outcomes(ro, run_id)
        }
    # The investigator writes its cache, breaker and audit as it would for a reviewer: on a
    # file copy of the evaluated database (SQLite's backup API), which is left untouched.
    with tempfile.TemporaryDirectory(prefix="razorrecon-evaluation-") as folder:
        copy = connect(Path(folder) / "investigated.sqlite", page_size=page_size_of(conn))
        try:
            conn.backup(copy)
            shown_all = [
                (row, investigate(copy, int(row["id"]), client_config=config, actor="evaluation"))
                for row in found
            ]
        finally:
            copy.close()
    for row, shown in shown_all:
        key = (str(row["entity_type"]), str(row["entity_id"]))
        answer = Answer(
            root_cause=shown.root_cause,
            confidence=shown.confidence,
            summary=shown.summary,
            recommendation=shown.recommendation,
            requires_human_review=shown.requires_human_review,
            citations=shown.citations,
        )
        checks = usefulness(answer, outcomes.get(key, row))
        rows.append((*key, shown.root_cause, shown.confidence, *checks, shown.source))
    frame = pd.DataFrame(rows, columns=[*PREDICTION_COLUMNS, "source"])
    for column in (*REQUIRED_COLUMNS, "source"):
        frame[column] = frame[column].astype("string")
    return frame.astype({"confidence": float})


def usefulness(answer: Answer, exception: Mapping[str, Any]) -> tuple[bool, bool, bool]:
    """Does the answer name the entity, the money at stake (the difference, else the
    amount), and who acts? Checked on the summary and recommendation a reviewer reads."""
    text = f"{answer.summary}\n{answer.recommendation}"
    entity = str(exception.get("entity_id") or "") in text
    stake = [abs(int(exception.get(k) or 0)) for k in ("difference", "actual_amount")]
    stake += [abs(int(exception.get("expected_amount") or 0))]
    wanted = next((v for v in stake if v), 0)
    amount = wanted == 0 or format_inr(wanted) in text
    counterparty = COUNTERPARTY.search(answer.recommendation) is not None
    return entity, amount, counterparty


def _as_record(outcome: dict[str, Any]) -> dict[str, Any]:
    """An outcome row in the shape of an exception record (no exception id: no related
    exceptions are looked up, which keeps the score independent of review state)."""
    record = dict(outcome)
    record["last_run_id"] = record.pop("run_id", None)
    return record
