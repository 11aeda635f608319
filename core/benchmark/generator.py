"""`generate()`: a seeded benchmark dataset and, kept apart, its ground truth.

The dataset folder holds exactly the five files the importer reads (spec section 2), plus
with money_model the four optional ones (instant settlements, payouts, disputes, transfers);
`ground_truth.csv` sits beside them and no importer or engine code opens it. The same
(payments, seed, as_of, faults, bank_statement) always gives byte-identical files; the
default `as_of` is fixed (DEFAULT_AS_OF) so that the default benchmark is reproducible.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from core.benchmark import bank, dashboard, fees, files, labels, money, world
from core.benchmark.ids import IdFactory
from core.calendar import IST
from core.dataset import BANK_FILE
from core.errors import ConfigError

DEFAULT_AS_OF = "2026-06-30T23:59:59+05:30"
GROUND_TRUTH_FILE = "ground_truth.csv"
HELD_OUT_SHARE = 0.2
DEVELOPMENT = "development"
HELD_OUT = "held_out"
GROUND_TRUTH_COLUMNS = (*labels.LABEL_COLUMNS[:-1], "split", labels.LABEL_COLUMNS[-1])
# Independent random streams, so that changing one part of the story leaves the others be.
STREAMS = (
    "calendar",
    "payments",
    "faults",
    "refunds",
    "rows",
    "settlements",
    "bank",
    "files",
    "split",
    "ids",
)
LAYOUTS = ("api", "dashboard", "dashboard-xlsx")
# The money model's own streams (drawn only with money_model=True, so the default dataset is
# unchanged): entities, and ids.
MONEY_STREAM_KEY = 20261201
MONEY_FILES: dict[str, tuple[str, ...]] = {
    "instant_settlements.csv": (
        "id",
        "entity",
        "amount_requested",
        "amount_settled",
        "amount_pending",
        "amount_reversed",
        "fees",
        "tax",
        "currency",
        "status",
        "created_at",
    ),
    "instant_settlement_payouts.csv": (
        "id",
        "entity",
        "instant_settlement_id",
        "amount",
        "amount_settled",
        "fees",
        "tax",
        "utr",
        "status",
        "created_at",
        "processed_at",
        "reversed_at",
    ),
    "disputes.csv": (
        "id",
        "entity",
        "payment_id",
        "amount",
        "currency",
        "amount_deducted",
        "status",
        "phase",
        "reason_code",
        "respond_by",
        "created_at",
    ),
    "transfers.csv": (
        "id",
        "entity",
        "source",
        "recipient",
        "amount",
        "currency",
        "amount_reversed",
        "status",
        "on_hold",
        "on_hold_until",
        "recipient_settlement_id",
        "created_at",
    ),
}


@dataclass(frozen=True)
class GeneratedBenchmark:
    """What `generate` wrote.

    out_dir: the dataset folder. payments / seed / as_of (Unix seconds) / as_of_iso / faults /
    bank_statement: the parameters that fix the data. files: the dataset files written (names
    inside out_dir). ground_truth: path of the labels. fingerprint: sha256 over the dataset
    files' names and bytes (not the labels). counts: rows per file and labels per split.
    seconds: wall time of the generation.
    """

    out_dir: Path
    payments: int
    seed: int
    as_of: int
    as_of_iso: str
    faults: bool
    bank_statement: bool
    money_model: bool
    layout: str
    files: tuple[str, ...]
    ground_truth: Path
    fingerprint: str
    counts: Mapping[str, int]
    seconds: float


def parse_as_of(value: str | int | dt.datetime | None) -> int:
    """An as-of instant as Unix seconds; ISO text without an offset is IST."""
    if value is None:
        value = DEFAULT_AS_OF
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        moment = value
    else:
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError as exc:
            raise ConfigError(f"as-of: not an ISO 8601 date-time: {value!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=IST)
    return int(moment.timestamp())


def assign_split(scenario: pd.Series, rng: np.random.Generator) -> np.ndarray:
    """development / held_out, 80/20 within each scenario; every scenario with two or more
    entities has at least one in each split.
    """
    codes, _ = pd.factorize(scenario, sort=True)
    n = len(codes)
    counts = np.bincount(codes)
    held = np.where(counts >= 2, np.clip(np.round(counts * HELD_OUT_SHARE), 1, counts - 1), 0)
    order = np.lexsort((rng.random(n), codes))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sorted_codes = codes[order]
    rank = np.arange(n) - starts[sorted_codes]
    split = np.empty(n, dtype=object)
    split[order] = np.where(rank < held[sorted_codes], HELD_OUT, DEVELOPMENT)
    return split


def fingerprint(out_dir: Path, names: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(name.encode() + b"\0")
        with open(out_dir / name, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def generate(
    out_dir: str | Path,
    payments: int = 5000,
    seed: int = 42,
    as_of: str | int | dt.datetime | None = None,
    *,
    faults: bool = True,
    bank_statement: bool = True,
    money_model: bool = True,
    layout: str = "api",
    ambiguous: bool = False,
    wide: bool = False,
) -> GeneratedBenchmark:
    """Write a benchmark dataset into `out_dir` and its labels into `out_dir/ground_truth.csv`.

    faults=False plants no faults: every entity is then MATCHED or PENDING. bank_statement=False
    writes no statement, so processed settlements are matched with `no_bank_statement`.
    money_model=True also plants Razorpay's money model beyond the spec (international
    payments and refunds, settled-by-others, released holds, disputes, Route transfers,
    instant settlements; docs/benchmark.md) and writes the four optional files.
    layout "dashboard" / "dashboard-xlsx" writes the files as Razorpay Dashboard reports
    (rupees, IST dates, display headers; CSV or one workbook per file).
    ambiguous=True also plants combined faults for the investigator's evaluation
    (core/benchmark/ambiguous.py). wide=True (API layout only) writes every column Razorpay's
    exports carry, filled (core/benchmark/wide.py); the labels are the same.
    """
    started = time.perf_counter()
    if payments < world.MIN_PAYMENTS:
        raise world.GenerationError(f"at least {world.MIN_PAYMENTS} payments are needed")
    if payments > world.MAX_PAYMENTS:
        raise world.GenerationError(f"at most {world.MAX_PAYMENTS:,} payments")
    if layout not in LAYOUTS:
        raise ConfigError(f"layout: one of {', '.join(LAYOUTS)}, not {layout!r}")
    if wide and layout != "api":
        raise ConfigError("--wide writes the API layout only")
    as_of_ts = parse_as_of(as_of)
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    streams = dict(
        zip(
            STREAMS,
            (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(STREAMS))),
            strict=True,
        )
    )
    ids = IdFactory(streams["ids"])
    ids.take(bank.NOISE_NUMBER)

    calendar = world.build_calendar(as_of_ts, streams["calendar"])
    # With the money model some of the payments are its own (international, held, ...).
    own = money.added_payments(payments, faults) if money_model else 0
    pays = world.build_payments(payments - own, calendar, ids, streams["payments"])
    world.plant_payment_faults(pays, calendar, ids, streams["faults"], faults)
    if faults:  # fee overcharges against the plan (core.benchmark.fees), their own stream
        fees.plant_overcharges(pays, np.random.default_rng([seed, fees.FEES_STREAM_KEY]))
    if ambiguous:
        from core.benchmark import ambiguous as cases

        cases.plant(pays, calendar, np.random.default_rng([seed, cases.STREAM_KEY]))
    refunds = world.build_refunds(pays, calendar, ids, streams["refunds"], faults)
    rows, planted = world.build_recon_rows(pays, refunds, calendar, ids, streams["rows"], faults)
    mm: money.MoneyModel | None = None
    if money_model:
        mm_rng, mm_id_rng = (
            np.random.default_rng(s)
            for s in np.random.SeedSequence([seed, MONEY_STREAM_KEY]).spawn(2)
        )
        mm_ids = IdFactory(mm_id_rng, taken=ids.taken)
        rows, mm = money.plant(pays, rows, calendar, mm_ids, mm_rng, faults, payments)
    world.balance_debits(rows, calendar)
    settlements = world.build_settlements(
        rows, calendar, ids, streams["settlements"], faults, bank_statement
    )
    if mm is not None:
        money.finish(mm, rows, settlements, calendar, mm_ids, mm_rng, faults, bank_statement)
    statement = None
    if bank_statement:
        lines = bank.build_lines(settlements, calendar, ids, streams["bank"], faults)
        if mm is not None:
            lines += mm.bank_lines
        statement = bank.render(lines, calendar, streams["bank"])

    file_rng = streams["files"]
    counts = {
        files.PAYMENTS_FILE: files.write_payments(
            pays, target, file_rng, mm.payments if mm is not None else None
        ),
        files.REFUNDS_FILE: files.write_refunds(
            refunds, pays, target, mm.refunds if mm is not None else None
        ),
        files.SETTLEMENTS_FILE: files.write_settlements(settlements, target),
        files.RECON_FILE: files.write_recon(rows, settlements, calendar, target, file_rng),
    }
    if wide:
        from core.benchmark.wide import widen

        widen(target, seed)
    for name in MONEY_FILES:
        (target / name).unlink(missing_ok=True)
    if mm is not None:
        entity = {
            "instant_settlements.csv": "settlement.ondemand",
            "instant_settlement_payouts.csv": "settlement.ondemand_payout",
            "disputes.csv": "dispute",
            "transfers.csv": "transfer",
        }
        tables = {
            "instant_settlements.csv": mm.instant_settlements,
            "instant_settlement_payouts.csv": mm.instant_payouts,
            "disputes.csv": mm.disputes,
            "transfers.csv": mm.transfers,
        }
        for name, columns in MONEY_FILES.items():
            records = [{**r, "entity": entity[name]} for r in tables[name]]
            counts[name] = files.write_records(records, columns, target / name)
    if statement is not None:
        bank.write(statement, target)
        counts[BANK_FILE] = len(statement.lines)
    else:
        (target / BANK_FILE).unlink(missing_ok=True)

    settlement_frame, bank_frame = labels.settlement_labels(settlements, statement)
    truth = pd.concat(
        [
            frame
            for frame in (
                labels.payment_labels(pays, calendar),
                labels.refund_labels(refunds, pays),
                labels.recon_row_labels(planted),
                # With the money model the transfers file lists these transfers and labels them.
                labels.transfer_labels(planted) if mm is None else pd.DataFrame(),
                settlement_frame,
                bank_frame,
                labels.money_model_labels(mm) if mm is not None else pd.DataFrame(),
            )
            if len(frame)
        ],
        ignore_index=True,
    )
    truth = fees.add_labels(truth, fees.overcharged_ids(pays))
    truth = truth.sort_values(["entity_type", "entity_id"], kind="stable").reset_index(drop=True)
    truth["split"] = assign_split(truth["scenario"], streams["split"])
    truth = truth[list(GROUND_TRUTH_COLUMNS)]
    truth_path = target / GROUND_TRUTH_FILE
    files.write_frame(truth, truth_path)
    counts["labels"] = len(truth)
    counts["labels_held_out"] = int((truth["split"] == HELD_OUT).sum())

    names = tuple(counts_name for counts_name in counts if counts_name.endswith(".csv"))
    fees.write_plan(target, fees.plan_start(as_of_ts))
    fees.write_invoice(target, target, as_of_ts, planted=faults)
    for name in dashboard.LAYOUTS:
        (target / name).with_suffix(".xlsx").unlink(missing_ok=True)
    if layout != "api":
        renamed = dashboard.rewrite(target, names, xlsx=layout == "dashboard-xlsx")
        counts = {
            **{new: counts[old] for old, new in zip(names, renamed, strict=True)},
            **{k: v for k, v in counts.items() if not k.endswith(".csv")},
        }
        names = renamed
    return GeneratedBenchmark(
        out_dir=target,
        payments=payments,
        seed=seed,
        as_of=as_of_ts,
        as_of_iso=dt.datetime.fromtimestamp(as_of_ts, tz=IST).isoformat(),
        faults=faults,
        bank_statement=bank_statement,
        money_model=money_model,
        layout=layout,
        files=names,
        ground_truth=truth_path,
        fingerprint=fingerprint(target, names),
        counts=counts,
        seconds=time.perf_counter() - started,
    )


def read_ground_truth(path: str | Path) -> pd.DataFrame:
    """The labels file as written by `generate` (every column a string; empty = "")."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)
