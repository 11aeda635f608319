"""The held-out evaluation of a benchmark run (the Evaluation page, the Overview's
accuracy): scored once against the labels the cold start kept, then read from
`app_evaluations`."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.db import views as db
from core.views.common import SYNTHETIC_SOURCES

LABELS_FILE = "ground_truth.csv"
LABELS_META = "benchmark.json"  # beside the labels: the as-of they were written for
EVALUATION_FORMAT = 2

DATASET_FOLDER_SUFFIX = ".benchmark"


def dataset_folder(path: str) -> Path:
    """Where the cold start keeps the generated benchmark: `dataset/` and, beside it (never
    inside the folder the importer reads), the labels `ground_truth.csv`."""
    return Path(f"{path}{DATASET_FOLDER_SUFFIX}")


@dataclass(frozen=True)
class Accuracy:
    """Headline held-out figures for the Overview: name -> formatted value, and a caption."""

    metrics: dict[str, str]
    caption: str


@dataclass(frozen=True)
class EvaluationReport:
    """The Evaluation page, for one run of the benchmark scored against its labels.

    headline: name -> formatted held-out figure. caption: what was scored. by_code:
    per-reason-code table of the held-out split (display strings). confusion: long format,
    columns 'Ground truth', 'Engine', 'Count' (held-out split, non-zero cells). notes:
    what a reader should know (e.g. disagreements). full: the same headline over every label.
    """

    headline: dict[str, str]
    caption: str
    by_code: pd.DataFrame
    confusion: pd.DataFrame
    full: dict[str, str]
    notes: tuple[str, ...] = ()


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def labels_path(conn: sqlite3.Connection) -> Path | None:
    """Where the cold start kept the benchmark's labels for this database, if anywhere."""
    file = db.database_file(conn)
    return dataset_folder(file) / LABELS_FILE if file else None


def compute_evaluation(
    conn: sqlite3.Connection, run_id: int, labels: Path
) -> dict[str, Any] | None:
    """Score the run's stored outcomes against the labels; the JSON-ready report."""
    run = db.run_by_id(conn, run_id)
    if run is None or run["source"] not in SYNTHETIC_SOURCES or not labels.exists():
        return None
    meta = labels.with_name(LABELS_META)
    if meta.exists() and json.loads(meta.read_text(encoding="utf-8"))["as_of"] != run["as_of"]:
        return None  # the labels describe the benchmark at its own as-of, not this run's
    # Imported here: scoring runs once per run (then it is read from app_evaluations).
    from core.benchmark import HELD_OUT, read_ground_truth
    from core.evaluation import confusion_by_code, join_outcomes, score

    truth = read_ground_truth(labels)
    joined = join_outcomes(db.outcomes_frame(conn, run_id), truth)
    held = joined[joined["split"] == HELD_OUT]
    reports = {
        "held_out": score(held, throughput=0.0),
        "full": score(joined, throughput=0.0),
    }
    confusion = confusion_by_code(held)
    cells = [
        {"Ground truth": _short(label), "Engine": _short(engine), "Count": int(count)}
        for label, engine, count in confusion.stack()
        .reset_index()
        .itertuples(index=False, name=None)
        if int(count)
    ]
    codes = [
        {
            "Reason code": code,
            "Labelled": s.expected,
            "Reported": s.reported,
            "Correct": s.correct,
            "Precision": _percent(s.precision),
            "Recall": _percent(s.recall),
        }
        for code, s in reports["held_out"].by_code.items()
        if s.expected or s.reported
    ]
    wrong = held[~held["correct"]]
    return {
        "format": EVALUATION_FORMAT,
        "run_id": run_id,
        "split": {name: _headline(r) for name, r in reports.items()},
        "records": {name: int(r.records) for name, r in reports.items()},
        "by_code": codes,
        "confusion": cells,
        "wrong": [
            f"{r.entity_type} {r.entity_id}: labelled {r.label_key}, engine said {r.engine_key}"
            for r in wrong.head(20).itertuples()
        ],
    }


def _short(key: object) -> str:
    """'EXCEPTION:AMOUNT_MISMATCH' -> 'AMOUNT_MISMATCH'; 'PENDING:ON_HOLD' -> 'pending ON_HOLD'."""
    text = str(key)
    if text.startswith("EXCEPTION:"):
        return text.removeprefix("EXCEPTION:")
    return "pending " + text.removeprefix("PENDING:") if text.startswith("PENDING:") else text


def _headline(report: Any) -> dict[str, str]:
    return {
        "Accuracy": _percent(report.accuracy),
        "Precision": _percent(report.precision),
        "Recall": _percent(report.recall),
        "Records": f"{report.records:,}",
    }


def store_evaluation(conn: sqlite3.Connection, run_id: int, labels: Path) -> bool:
    """Compute and keep the run's evaluation; False when there is nothing to score."""
    report = compute_evaluation(conn, run_id, labels)
    if report is None:
        return False
    digest = hashlib.sha256(labels.read_bytes()).hexdigest()
    db.put_evaluation(conn, run_id, digest, int(time.time()), json.dumps(report))
    return True


def _evaluation_json(conn: sqlite3.Connection, run_id: int) -> dict[str, Any] | None:
    cached = db.get_evaluation(conn, run_id)
    if cached is None:
        labels = labels_path(conn)
        if labels is None or not store_evaluation(conn, run_id, labels):
            return None
        cached = db.get_evaluation(conn, run_id)
        assert cached is not None
    data: dict[str, Any] = json.loads(cached["report_json"])
    return data if data.get("format") == EVALUATION_FORMAT else None


def evaluation_report(conn: sqlite3.Connection, run_id: int) -> EvaluationReport | None:
    """None when there are no held-out labels (data other than the benchmark)."""
    data = _evaluation_json(conn, run_id)
    if data is None:
        return None
    held, total = data["records"]["held_out"], data["records"]["full"]
    return EvaluationReport(
        headline=data["split"]["held_out"],
        caption=(
            f"Run #{run_id} scored against the benchmark's labels: the held-out split "
            f"({held:,} of {total:,} labelled entities). An outcome is right when its status, "
            "reason code, every listed code and any fallback match method equal the label."
        ),
        by_code=pd.DataFrame(data["by_code"]),
        confusion=pd.DataFrame(data["confusion"], columns=["Ground truth", "Engine", "Count"]),
        full=data["split"]["full"],
        notes=tuple(data["wrong"]),
    )


def heldout_accuracy(conn: sqlite3.Connection, run_id: int) -> Accuracy | None:
    data = _evaluation_json(conn, run_id)
    if data is None:
        return None
    held = data["records"]["held_out"]
    return Accuracy(
        metrics=data["split"]["held_out"],
        caption=(
            f"Held-out split of the synthetic benchmark ({held:,} labelled entities), run "
            f"#{run_id}. Benchmark accuracy, not production accuracy."
        ),
    )
