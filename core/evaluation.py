"""Scoring the engine against the benchmark's ground truth (the full and held-out reports).

`run_evaluation()` generates a benchmark into a temporary folder, moves its labels out of the
dataset folder before anything reads it, runs the whole pipeline (import into an isolated
in-memory SQLite database, reconcile, write `results.csv`, persist the run), and only then
reads the labels back and joins them to the results *as written*. The engine never sees the
labels: they are not in the folder it imports, and `core.engine` / `core.ingest` import
nothing from `core.benchmark` (a test checks both).

Definitions (docs/benchmark.md):
- A record is one entity in the ground truth, plus any entity the engine gave an outcome
  that the labels say should have none (those count in the full report only).
- An outcome is right when status, reason_code and the set of reason_codes equal the label,
  and, where either side names a spec fallback (fuzzy_utr, consolidated, no_bank_statement),
  the match_method too. accuracy = right / records.
- Exception detection counts a true positive when the engine reports an EXCEPTION with the
  label's primary reason_code. precision = TP / reported exceptions, recall = TP / labelled
  exceptions; a reported exception with the wrong code is both a false positive and a false
  negative.
- throughput = payments / pipeline seconds (import, reconcile, results.csv, persist), measured
  in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from core.benchmark import rules
from core.benchmark.cli import payments_count, seed_number
from core.benchmark.fees import INVOICE_FILE, INVOICE_TRUTH_FILE, PRICING_FILE
from core.benchmark.generator import (
    DEFAULT_AS_OF,
    GROUND_TRUTH_FILE,
    HELD_OUT,
    generate,
    read_ground_truth,
)
from core.books.pricing import PricingPlan

NONE = "(none)"
OUTCOME_FIELDS = ("status", "reason_code", "reason_codes", "match_method")

# The investigator's root-cause predictions: given the database and the run id, a frame with
# entity_type, entity_id, root_cause for (some of) the run's exceptions. Supplied by
# core.investigate; the evaluation scores it against the labels' root_cause.
RootCausePredictor = Callable[[sqlite3.Connection, int], pd.DataFrame]


@dataclass(frozen=True)
class CodeScore:
    """One reason code: how many entities carry it in the labels and in the engine's output,
    how many of those agree, and the engine's exposure for it (paise)."""

    expected: int
    reported: int
    correct: int
    precision: float | None
    recall: float | None
    exposure: int


@dataclass(frozen=True)
class ClassScore:
    """One exposure class: labelled and reported exceptions and the engine's exposure (paise)."""

    expected: int
    reported: int
    correct: int
    exposure: int


@dataclass(frozen=True)
class TypeScore:
    """One entity type (payment, refund, settlement, dispute, instant_settlement, ...):
    records, right outcomes and accuracy; labelled and reported exceptions and the true
    positives among them."""

    records: int
    correct: int
    accuracy: float
    expected_exceptions: int
    reported_exceptions: int
    true_positives: int


# Confidence bins of the reliability table: [low, high).
RELIABILITY_EDGES = (0.0, 0.5, 0.7, 0.85, 0.95, 1.01)


@dataclass(frozen=True)
class ReliabilityBin:
    """Answers whose confidence is in [low, high): how many, their mean confidence, and the
    share whose root cause equals the label (None when the bin is empty)."""

    low: float
    high: float
    answers: int
    mean_confidence: float | None
    accuracy: float | None


@dataclass(frozen=True)
class InvestigatorScore:
    """The investigator on the labelled exceptions of one split.

    labelled / correct: root causes named right. reliability: confidence bins against
    accuracy (is a 0.7 answer right about 70% of the time?). cites_entity / cites_amount /
    cites_counterparty: share of answers whose summary or recommendation names the entity,
    the money at stake, and who acts (Razorpay support, the bank, the customer, or a
    write-off in the books). by_scenario: scenario -> (labelled, correct). by_source: who
    gave the answers scored (a model's name, or "deterministic") -> how many; empty when
    only the rules answered.
    """

    labelled: int
    correct: int
    reliability: tuple[ReliabilityBin, ...]
    cites_entity: float | None
    cites_amount: float | None
    cites_counterparty: float | None
    by_scenario: dict[str, tuple[int, int]] = field(default_factory=dict)
    by_source: dict[str, int] = field(default_factory=dict)

    def who(self) -> str:
        """Who answered: 'deterministic', or the model and how often the rules stood in."""
        if not self.by_source:
            return "deterministic"
        said = ", ".join(f"{name} {count:,}" for name, count in sorted(self.by_source.items()))
        return f"as shown to a reviewer: {said}"

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.labelled if self.labelled else None


@dataclass(frozen=True)
class SplitReport:
    """The scores over one set of records (all, or the held-out split).

    records / matched / pending / exceptions: records, and the engine's outcomes among them.
    expected: the labels' counts by status. correct and accuracy: see the module docstring.
    precision, recall, true_positives, false_positives, false_negatives: exception detection.
    by_code / by_class: per reason code and per exposure class (every spec code, and every
    other code the labels or the engine name). by_pending: per pending reason (a CodeScore
    whose precision/recall are over PENDING outcomes). by_entity_type: per entity type.
    throughput: payments per
    second of the pipeline run that produced the results. root_cause_accuracy: share of
    labelled exceptions whose predicted root cause equals the label (None until an
    investigator is plugged in; see RootCausePredictor). investigator: its reliability
    table and usefulness checks, when the predictor reports confidence and citations.
    """

    records: int
    matched: int
    pending: int
    exceptions: int
    expected: dict[str, int]
    correct: int
    accuracy: float
    precision: float
    recall: float
    true_positives: int
    false_positives: int
    false_negatives: int
    by_code: dict[str, CodeScore]
    by_class: dict[str, ClassScore]
    throughput: float
    root_cause_accuracy: float | None = None
    by_pending: dict[str, CodeScore] = field(default_factory=dict)
    by_entity_type: dict[str, TypeScore] = field(default_factory=dict)
    investigator: InvestigatorScore | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# What every report says of itself, in text and in --json (honest metrics: the labels are
# the generator's, so a score is conformance to the spec, never production accuracy).
CAVEAT_LINES = (
    "Scored on the seeded SYNTHETIC benchmark: its labels come from how the data were",
    "generated. This measures conformance to the spec, not accuracy on production data.",
)


@dataclass(frozen=True)
class EvaluationReport:
    """One evaluation run.

    full / held_out: the two reports. confusion: labels (rows) against the engine's outcomes
    (columns) by outcome key (MATCHED, PENDING:<reason>, EXCEPTION:<code>, or "(none)" for
    no outcome). disagreements: every record whose outcome is not right, label beside
    outcome. timings: seconds per pipeline step. fingerprint: of the generated dataset.
    ambiguous: the investigator on the ambiguous cases alone (run with ambiguous=True).
    """

    payments: int
    seed: int
    as_of: str
    fingerprint: str
    full: SplitReport
    held_out: SplitReport
    confusion: pd.DataFrame
    disagreements: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)
    ambiguous: InvestigatorScore | None = None
    invoice: InvoiceScore | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `--json` shape: {"full": {...}, "held_out": {...}} plus the run's context and
        what the scores are of ("data", "caveat": the synthetic benchmark, not production)."""
        return {
            "data": "synthetic benchmark",
            "caveat": " ".join(CAVEAT_LINES),
            "invoice": None if self.invoice is None else asdict(self.invoice),
            "full": self.full.to_dict(),
            "held_out": self.held_out.to_dict(),
            "ambiguous": asdict(self.ambiguous) if self.ambiguous is not None else None,
            "payments": self.payments,
            "seed": self.seed,
            "as_of": self.as_of,
            "fingerprint": self.fingerprint,
            "timings": self.timings,
        }


def outcome_key(status: pd.Series, reason: pd.Series) -> pd.Series:
    """MATCHED / PENDING:<reason> / EXCEPTION:<code> / (none)."""
    key = status.where(status == rules.MATCHED, status + ":" + reason)
    return key.where(status != "", NONE)


def _codes(text: str) -> frozenset[str]:
    return frozenset(code for code in text.split(";") if code)


def _same_codes(left: pd.Series, right: pd.Series) -> pd.Series:
    """Whether two `;`-joined code lists hold the same codes (order aside)."""
    same = left == right
    differ = ~same
    if differ.any():
        same[differ] = left[differ].map(_codes) == right[differ].map(_codes)
    return same


def join_outcomes(outcomes: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """Labels beside outcomes, one row per entity in either (missing side = empty strings).

    `outcomes` needs entity_type, entity_id, status, reason_code, reason_codes, match_method,
    exposure_class and exposure_amount (as in results.csv); `truth` is ground_truth.csv.
    """
    engine = outcomes[
        ["entity_type", "entity_id", *OUTCOME_FIELDS, "exposure_class", "exposure_amount"]
    ].copy()
    for column in (*OUTCOME_FIELDS, "exposure_class"):
        engine[column] = engine[column].fillna("").astype(str)
    engine["exposure_amount"] = (
        pd.to_numeric(engine["exposure_amount"], errors="coerce").fillna(0).astype("int64")
    )
    engine = engine.rename(
        columns={c: f"engine_{c}" for c in (*OUTCOME_FIELDS, "exposure_class", "exposure_amount")}
    )
    labels = truth.rename(columns={c: f"label_{c}" for c in (*OUTCOME_FIELDS, "exposure_class")})
    joined = labels.merge(engine, on=["entity_type", "entity_id"], how="outer", indicator=True)
    text_columns = [c for c in joined.columns if c not in ("engine_exposure_amount", "_merge")]
    joined[text_columns] = joined[text_columns].fillna("").astype(str)
    joined["engine_exposure_amount"] = joined["engine_exposure_amount"].fillna(0).astype("int64")
    joined["labelled"] = joined["_merge"] != "right_only"
    joined = joined.drop(columns="_merge")
    same = (
        (joined["label_status"] == joined["engine_status"])
        & (joined["label_reason_code"] == joined["engine_reason_code"])
        & _same_codes(joined["label_reason_codes"], joined["engine_reason_codes"])
    )
    # `direct` (settled by someone else) is compared when the labels name it.
    fallback = joined["label_match_method"].isin(rules.LABELLED_METHODS) | joined[
        "engine_match_method"
    ].isin(rules.FALLBACK_METHODS)
    same &= ~fallback | (joined["label_match_method"] == joined["engine_match_method"])
    joined["correct"] = same
    joined["label_key"] = outcome_key(joined["label_status"], joined["label_reason_code"])
    joined["engine_key"] = outcome_key(joined["engine_status"], joined["engine_reason_code"])
    return joined.sort_values(["entity_type", "entity_id"], kind="stable").reset_index(drop=True)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def score(
    joined: pd.DataFrame, *, throughput: float, root_causes: pd.DataFrame | None = None
) -> SplitReport:
    """The report over the rows of `joined` (from join_outcomes)."""
    label_exc = joined["label_status"] == rules.EXCEPTION
    engine_exc = joined["engine_status"] == rules.EXCEPTION
    hit = label_exc & engine_exc & (joined["label_reason_code"] == joined["engine_reason_code"])
    tp = int(hit.sum())
    reported = int(engine_exc.sum())
    labelled = int(label_exc.sum())
    codes = list(rules.ALL_EXCEPTION_CODES)
    codes += sorted(
        (
            set(joined.loc[engine_exc, "engine_reason_code"])
            | set(joined.loc[label_exc, "label_reason_code"])
        )
        - set(codes)
    )
    by_code: dict[str, CodeScore] = {}
    for code in codes:
        expected = label_exc & (joined["label_reason_code"] == code)
        got = engine_exc & (joined["engine_reason_code"] == code)
        correct = int((expected & got).sum())
        by_code[code] = CodeScore(
            expected=int(expected.sum()),
            reported=int(got.sum()),
            correct=correct,
            precision=_ratio(correct, int(got.sum())),
            recall=_ratio(correct, int(expected.sum())),
            exposure=int(joined.loc[got, "engine_exposure_amount"].sum()),
        )
    classes = list(rules.EXPOSURE_CLASSES)
    classes += sorted(
        (
            set(joined.loc[engine_exc, "engine_exposure_class"])
            | set(joined.loc[label_exc, "label_exposure_class"])
        )
        - set(classes)
        - {""}
    )
    by_class: dict[str, ClassScore] = {}
    for name in classes:
        expected = label_exc & (joined["label_exposure_class"] == name)
        got = engine_exc & (joined["engine_exposure_class"] == name)
        by_class[name] = ClassScore(
            expected=int(expected.sum()),
            reported=int(got.sum()),
            correct=int((expected & got & hit).sum()),
            exposure=int(joined.loc[got, "engine_exposure_amount"].sum()),
        )
    label_pending = joined["label_status"] == rules.PENDING
    engine_pending = joined["engine_status"] == rules.PENDING
    reasons = list(rules.PENDING_REASONS)
    reasons += sorted(
        (
            set(joined.loc[label_pending, "label_reason_code"])
            | set(joined.loc[engine_pending, "engine_reason_code"])
        )
        - set(reasons)
    )
    by_pending: dict[str, CodeScore] = {}
    for reason in reasons:
        expected = label_pending & (joined["label_reason_code"] == reason)
        got = engine_pending & (joined["engine_reason_code"] == reason)
        correct = int((expected & got).sum())
        by_pending[reason] = CodeScore(
            expected=int(expected.sum()),
            reported=int(got.sum()),
            correct=correct,
            precision=_ratio(correct, int(got.sum())),
            recall=_ratio(correct, int(expected.sum())),
            exposure=0,
        )
    by_entity_type: dict[str, TypeScore] = {}
    for entity_type in sorted(set(joined["entity_type"])):
        mine = joined["entity_type"] == entity_type
        right = int((mine & joined["correct"]).sum())
        count = int(mine.sum())
        by_entity_type[entity_type] = TypeScore(
            records=count,
            correct=right,
            accuracy=right / count if count else 0.0,
            expected_exceptions=int((mine & label_exc).sum()),
            reported_exceptions=int((mine & engine_exc).sum()),
            true_positives=int((mine & hit).sum()),
        )
    records = len(joined)
    correct_count = int(joined["correct"].sum())
    return SplitReport(
        records=records,
        matched=int((joined["engine_status"] == rules.MATCHED).sum()),
        pending=int((joined["engine_status"] == rules.PENDING).sum()),
        exceptions=reported,
        expected={
            status.lower(): int((joined["label_status"] == status).sum())
            for status in (rules.MATCHED, rules.PENDING, rules.EXCEPTION)
        },
        correct=correct_count,
        accuracy=correct_count / records if records else 0.0,
        precision=tp / reported if reported else 1.0,
        recall=tp / labelled if labelled else 1.0,
        true_positives=tp,
        false_positives=reported - tp,
        false_negatives=labelled - tp,
        by_code=by_code,
        by_class=by_class,
        throughput=throughput,
        root_cause_accuracy=root_cause_accuracy(joined, root_causes),
        by_pending=by_pending,
        by_entity_type=by_entity_type,
        investigator=investigator_score(joined, root_causes),
    )


def root_cause_accuracy(joined: pd.DataFrame, predictions: pd.DataFrame | None) -> float | None:
    """Share of labelled exceptions whose predicted root cause equals the label's; an
    exception with no prediction counts as wrong. None when there are no predictions."""
    if predictions is None:
        return None
    exceptions = joined[joined["label_status"] == rules.EXCEPTION]
    if exceptions.empty:
        return None
    predicted = predictions[["entity_type", "entity_id", "root_cause"]].rename(
        columns={"root_cause": "predicted_root_cause"}
    )
    merged = exceptions.merge(predicted, on=["entity_type", "entity_id"], how="left")
    right = merged["predicted_root_cause"].fillna("") == merged["root_cause"]
    return float(right.mean())


USEFULNESS_COLUMNS = ("confidence", "cites_entity", "cites_amount", "cites_counterparty")


def investigator_score(
    joined: pd.DataFrame, predictions: pd.DataFrame | None
) -> InvestigatorScore | None:
    """Reliability and usefulness of the predictions on the labelled exceptions of `joined`
    (None unless the predictor reports confidence and the usefulness checks). An exception
    with no prediction counts as wrong, with confidence 0 and no citations."""
    if predictions is None or any(c not in predictions.columns for c in USEFULNESS_COLUMNS):
        return None
    exceptions = joined[joined["label_status"] == rules.EXCEPTION]
    columns = ["entity_type", "entity_id", "root_cause", *USEFULNESS_COLUMNS]
    if "source" in predictions.columns:
        columns.append("source")
    predicted = predictions[columns].rename(columns={"root_cause": "predicted_root_cause"})
    merged = exceptions.merge(predicted, on=["entity_type", "entity_id"], how="left")
    right = (merged["predicted_root_cause"].fillna("") == merged["root_cause"]).to_numpy()
    confidence = merged["confidence"].astype(float).fillna(0.0).to_numpy()
    bins = []
    for low, high in itertools.pairwise(RELIABILITY_EDGES):
        inside = (confidence >= low) & (confidence < high)
        count = int(inside.sum())
        bins.append(
            ReliabilityBin(
                low=low,
                high=min(high, 1.0),
                answers=count,
                mean_confidence=float(confidence[inside].mean()) if count else None,
                accuracy=float(right[inside].mean()) if count else None,
            )
        )

    def share(column: str) -> float | None:
        return float(merged[column].fillna(False).astype(bool).mean()) if len(merged) else None

    by_scenario: dict[str, tuple[int, int]] = {}
    for scenario, group in merged.assign(right=right).groupby("scenario", sort=True):
        by_scenario[str(scenario)] = (len(group), int(group["right"].sum()))
    sources = merged["source"].fillna("none").value_counts() if "source" in merged else None
    return InvestigatorScore(
        by_source={} if sources is None else {str(k): int(v) for k, v in sources.items()},
        labelled=len(merged),
        correct=int(right.sum()),
        reliability=tuple(bins),
        cites_entity=share("cites_entity"),
        cites_amount=share("cites_amount"),
        cites_counterparty=share("cites_counterparty"),
        by_scenario=by_scenario,
    )


def format_investigator(score: InvestigatorScore, where: str) -> list[str]:
    """The reliability table and usefulness checks, saying what they were measured on."""
    lines = [
        f"  investigator ({score.who()}) on {score.labelled:,} labelled exceptions: root cause "
        f"right {score.correct:,} ({_percent(score.accuracy).strip()})",
        f"  usefulness: names the entity {_percent(score.cites_entity).strip()}, the amount "
        f"{_percent(score.cites_amount).strip()}, who acts "
        f"{_percent(score.cites_counterparty).strip()}",
        f"  confidence reliability, measured on {where} (not production accuracy):",
        f"    {'confidence':<14}{'answers':>8}{'mean conf.':>12}{'accuracy':>10}",
    ]
    for b in score.reliability:
        mean = "-" if b.mean_confidence is None else f"{b.mean_confidence:.2f}"
        lines.append(
            f"    {f'[{b.low:.2f}, {b.high:.2f})':<14}{b.answers:>8,}{mean:>12}"
            f"{_percent(b.accuracy):>10}"
        )
    return lines


def confusion_by_code(joined: pd.DataFrame) -> pd.DataFrame:
    """Counts of labels (rows) against the engine's outcomes (columns), by outcome key."""
    table = pd.crosstab(joined["label_key"], joined["engine_key"])
    table.index.name = "label"
    table.columns.name = "engine"
    return table


@dataclass(frozen=True)
class PipelineRun:
    """What one pipeline run produced: the results file, the run id, seconds per step."""

    results_csv: Path
    run_id: int
    timings: dict[str, float]
    payments: int


def run_pipeline(
    conn: sqlite3.Connection, dataset_dir: Path, as_of: int, results_csv: Path
) -> PipelineRun:
    """The path `python -m core reconcile DIR --out results.csv --db DB` takes (core.pipeline):
    import and reconcile the folder, write results.csv, store the dataset and the run, sync
    the exception queue. Timed per step."""
    from core.engine import EngineParams, write_results_csv
    from core.pipeline import load_folder, reconcile_loaded, store_folder_run

    began = time.perf_counter()
    # The merchant's contracted pricing, when the folder states one (the benchmark does):
    # the run checks every fee against it (FEE_OVERCHARGED), as a stored plan would.
    plans = read_pricing_plan(dataset_dir / PRICING_FILE)
    folder_run = reconcile_loaded(load_folder(dataset_dir), EngineParams(), as_of, plans)
    timings = {
        "import": float(folder_run.timings["load_s"]),
        "reconcile": float(folder_run.timings["reconcile_s"]),
    }
    step = time.perf_counter()
    write_results_csv(folder_run.outcomes, results_csv)
    timings["results_csv"] = time.perf_counter() - step
    step = time.perf_counter()
    stored = store_folder_run(conn, folder_run, source="benchmark")
    timings["persist"] = time.perf_counter() - step
    timings["pipeline"] = time.perf_counter() - began
    return PipelineRun(results_csv, stored.run_id, timings, len(folder_run.dataset.payments))


def read_pricing_plan(path: Path) -> tuple[PricingPlan, ...]:
    """The plan in a `pricing_plan.json` (core.benchmark.fees.write_plan), as version 1;
    none when there is no such file."""
    if not path.exists():
        return ()
    document = json.loads(path.read_text(encoding="utf-8"))
    rules_text = json.dumps(document["rules"])
    return (
        PricingPlan.from_json(
            1, int(document["effective_from"]), int(document["gst_bp"]), rules_text
        ),
    )


@dataclass(frozen=True)
class InvoiceScore:
    """The planted tax-invoice difference and what the GST tie-out found for its month."""

    month: str
    planted_fee: int
    planted_gst: int
    found_fee: int | None
    found_gst: int | None

    @property
    def found(self) -> bool:
        return (self.found_fee, self.found_gst) == (self.planted_fee, self.planted_gst)


def score_invoice(
    conn: sqlite3.Connection, dataset_dir: Path, truth_path: Path
) -> InvoiceScore | None:
    """Tie the folder's tax invoice out against the stored data (core.books.gst) and compare
    its difference with the planted one; None when the benchmark wrote no invoice."""
    from core.books.gst import parse_invoice_file, tie_out
    from core.db.raw import read_dataset

    invoice_path = dataset_dir / INVOICE_FILE
    if not invoice_path.exists() or not truth_path.exists():
        return None
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    invoice = parse_invoice_file(invoice_path, str(truth["month"]))
    result = tie_out(read_dataset(conn), invoice.month, invoice)
    return InvoiceScore(
        month=invoice.month,
        planted_fee=int(truth["fee_difference"]),
        planted_gst=int(truth["gst_difference"]),
        found_fee=result.invoice_fee_difference,
        found_gst=result.invoice_gst_difference,
    )


def read_results(path: Path) -> pd.DataFrame:
    """results.csv as written, every column a string (empty = "")."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def run_evaluation(
    payments: int = 5000,
    seed: int = 42,
    as_of: str | None = None,
    *,
    root_cause_predictor: RootCausePredictor | None = None,
    work_dir: str | Path | None = None,
    money_model: bool = True,
    ambiguous: bool = False,
) -> EvaluationReport:
    """Generate, run the pipeline in an in-memory database, then score against the labels.

    work_dir: keep the dataset, labels and results.csv there (default: a temporary folder
    removed afterwards). money_model: generate with Razorpay's money model beyond the spec
    (docs/benchmark.md) too. ambiguous: also plant the combined-fault cases for the
    investigator (core/benchmark/ambiguous.py).
    """
    from core.db import connect, migrate

    with tempfile.TemporaryDirectory(prefix="razorrecon-eval-") as scratch:
        root = Path(work_dir) if work_dir is not None else Path(scratch)
        dataset_dir = root / "dataset"
        started = time.perf_counter()
        generated = generate(
            dataset_dir,
            payments=payments,
            seed=seed,
            as_of=as_of,
            money_model=money_model,
            ambiguous=ambiguous,
        )
        generate_seconds = time.perf_counter() - started
        # The labels leave the dataset folder before the importer opens it.
        labels_path = root / GROUND_TRUTH_FILE
        shutil.move(str(generated.ground_truth), labels_path)
        invoice_truth = root / INVOICE_TRUTH_FILE
        if (dataset_dir / INVOICE_TRUTH_FILE).exists():
            shutil.move(str(dataset_dir / INVOICE_TRUTH_FILE), invoice_truth)
        conn = connect(":memory:")
        try:
            migrate(conn)
            run = run_pipeline(conn, dataset_dir, generated.as_of, root / "results.csv")
            predictions = root_cause_predictor(conn, run.run_id) if root_cause_predictor else None
            invoice = score_invoice(conn, dataset_dir, invoice_truth)
        finally:
            conn.close()
        # Only now, with results.csv written and the run stored, are the labels read.
        truth = read_ground_truth(labels_path)
        joined = join_outcomes(read_results(run.results_csv), truth)
    throughput = run.payments / run.timings["pipeline"] if run.timings["pipeline"] else 0.0
    timings = {"generate": generate_seconds, **run.timings}
    held = joined[joined["split"] == HELD_OUT]
    wrong = joined[~joined["correct"]]
    return EvaluationReport(
        payments=payments,
        seed=seed,
        as_of=generated.as_of_iso,
        fingerprint=generated.fingerprint,
        full=score(joined, throughput=throughput, root_causes=predictions),
        held_out=score(held, throughput=throughput, root_causes=predictions),
        confusion=confusion_by_code(joined),
        disagreements=wrong[
            [
                "entity_type",
                "entity_id",
                "split",
                "scenario",
                "label_status",
                "label_reason_code",
                "label_reason_codes",
                "label_match_method",
                "engine_status",
                "engine_reason_code",
                "engine_reason_codes",
                "engine_match_method",
            ]
        ].reset_index(drop=True),
        timings=timings,
        ambiguous=investigator_score(
            joined[joined["scenario"].str.startswith(AMBIGUOUS_SCENARIO)], predictions
        )
        if ambiguous
        else None,
        invoice=invoice,
    )


AMBIGUOUS_SCENARIO = "payment/ambiguous_"


def format_ambiguous(report: EvaluationReport) -> str:
    """The investigator on the ambiguous cases: accuracy per scenario, usefulness, and the
    reliability table, labelled as measured on the synthetic benchmark."""
    score = report.ambiguous
    if score is None:
        return ""
    lines = [
        "AMBIGUOUS CASES (combined faults, labelled by construction in "
        "core/benchmark/ambiguous.py;",
        f"  {report.payments:,} payments, seed {report.seed}; SYNTHETIC, not production data)",
        *format_investigator(score, "the ambiguous cases of the SYNTHETIC benchmark"),
        f"    {'scenario':<44}{'labelled':>9}{'right':>7}",
    ]
    for scenario, (labelled, right) in score.by_scenario.items():
        lines.append(f"    {scenario:<44}{labelled:>9,}{right:>7,}")
    return "\n".join(lines)


def _percent(value: float | None) -> str:
    return "   -  " if value is None else f"{100 * value:6.2f}%"


def format_split(title: str, report: SplitReport) -> str:
    """A plain-text report for one split."""
    from core.money import format_inr

    lines = [
        title,
        f"  records {report.records:,}   matched {report.matched:,}   "
        f"pending {report.pending:,}   exceptions {report.exceptions:,}",
        f"  accuracy {_percent(report.accuracy)}  ({report.correct:,} of {report.records:,} right)",
        f"  exception detection: precision {_percent(report.precision)}  "
        f"recall {_percent(report.recall)}  false positives {report.false_positives:,}  "
        f"false negatives {report.false_negatives:,}",
        f"  throughput {report.throughput:,.0f} payments/s (measured in this run)",
        "  root-cause accuracy "
        + (
            "not measured (no investigator plugged in)"
            if report.root_cause_accuracy is None
            else _percent(report.root_cause_accuracy)
        ),
        *(
            format_investigator(report.investigator, "this split of the SYNTHETIC benchmark")
            if report.investigator is not None
            else []
        ),
        "",
        f"  {'reason code':<34}{'labelled':>9}{'reported':>9}{'right':>7}"
        f"{'precision':>10}{'recall':>9}  {'exposure':>18}",
    ]
    for code, s in report.by_code.items():
        if not (s.expected or s.reported):
            continue
        lines.append(
            f"  {code:<34}{s.expected:>9,}{s.reported:>9,}{s.correct:>7,}"
            f"{_percent(s.precision):>10}{_percent(s.recall):>9}  {format_inr(s.exposure):>18}"
        )
    pending = [(r, s) for r, s in report.by_pending.items() if s.expected or s.reported]
    if pending:
        lines += ["", f"  {'pending reason':<34}{'labelled':>9}{'reported':>9}{'right':>7}"]
        for reason, s in pending:
            lines.append(f"  {reason:<34}{s.expected:>9,}{s.reported:>9,}{s.correct:>7,}")
    if report.by_entity_type:
        lines += [
            "",
            f"  {'entity type':<34}{'records':>9}{'right':>7}{'accuracy':>10}"
            f"{'exc. labelled':>15}{'reported':>9}{'right':>7}",
        ]
        for name, t in report.by_entity_type.items():
            lines.append(
                f"  {name:<34}{t.records:>9,}{t.correct:>7,}{_percent(t.accuracy):>10}"
                f"{t.expected_exceptions:>15,}{t.reported_exceptions:>9,}{t.true_positives:>7,}"
            )
    lines += [
        "",
        f"  {'exposure class':<34}{'labelled':>9}{'reported':>9}{'right':>7}  {'exposure':>37}",
    ]
    for name, c in report.by_class.items():
        exposure = format_inr(c.exposure)
        lines.append(f"  {name:<34}{c.expected:>9,}{c.reported:>9,}{c.correct:>7,}  {exposure:>37}")
    return "\n".join(lines)


def format_report(report: EvaluationReport) -> str:
    steps = "  ".join(f"{k} {v:.2f}s" for k, v in report.timings.items())
    head = [
        f"RazorRecon evaluation: {report.payments:,} payments, seed {report.seed}, "
        f"as of {report.as_of}",
        f"dataset fingerprint {report.fingerprint[:16]}…   {steps}",
        *CAVEAT_LINES,
        "",
    ]
    body = [format_split("FULL", report.full), "", format_split("HELD-OUT (20%)", report.held_out)]
    if report.invoice is not None:
        from core.money import format_inr

        i = report.invoice
        body += [
            "",
            f"tax invoice {i.month}: planted difference {format_inr(i.planted_fee)} "
            f"(GST {format_inr(i.planted_gst)}); the GST tie-out finds "
            + (
                "no invoice difference"
                if i.found_fee is None
                else f"{format_inr(i.found_fee)} (GST {format_inr(i.found_gst or 0)})"
            )
            + (": found" if i.found else ": NOT found"),
        ]
    if len(report.disagreements):
        body += ["", f"disagreements ({len(report.disagreements)}; first 20):"]
        body.append(report.disagreements.head(20).to_string(index=False))
    return "\n".join(head + body)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="evaluation.py",
        description="Generate the benchmark, reconcile it in an in-memory database, and score "
        "the outcomes against the ground truth (full and held-out reports).",
    )
    parser.add_argument(
        "--payments", type=payments_count, default=5000, help="payments (default 5000)"
    )
    parser.add_argument("--seed", type=seed_number, default=42, help="seed (default 42)")
    parser.add_argument(
        "--as-of", default=None, metavar="ISO", help=f"as-of instant (default {DEFAULT_AS_OF})"
    )
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    parser.add_argument(
        "--ambiguous",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also score the investigator on a second dataset with combined-fault cases",
    )
    parser.add_argument(
        "--investigator",
        choices=("rules", "model"),
        default="rules",
        help="score the deterministic investigator (default), or the investigator as a "
        "reviewer meets it, model first (needs GEMINI_API_KEY; one request per exception)",
    )
    parser.add_argument(
        "--money-model",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="plant Razorpay's money model beyond the spec too (disputes, transfers, ...)",
    )
    args = parser.parse_args(argv)
    from core.errors import RazorReconError

    try:
        from core.investigate.evaluation import predict_root_causes, predict_with_model

        predictor = predict_with_model if args.investigator == "model" else predict_root_causes
        report = run_evaluation(
            args.payments,
            args.seed,
            args.as_of,
            root_cause_predictor=predictor,
            money_model=args.money_model,
        )
        hard = None
        if args.ambiguous:
            hard = run_evaluation(
                args.payments,
                args.seed,
                args.as_of,
                root_cause_predictor=predictor,
                money_model=args.money_model,
                ambiguous=True,
            )
    except RazorReconError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        data = report.to_dict()
        data["ambiguous"] = hard.to_dict()["ambiguous"] if hard is not None else None
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(format_report(report))
        if hard is not None:
            print("\n" + format_ambiguous(hard))
    return 0
