"""Daily loads cut from a generated benchmark dataset, for the incremental-run tests.

A row arrives on its IST day (payments, refunds, settlements, disputes, transfers, instant
settlements and payouts by `created_at`; recon rows by `settled_at`, else `created_at`;
bank lines by `txn_date`), possibly days late; a correction arrives first with a wrong
value and later with the right one (same key).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np
import pandas as pd

from core.calendar import IST_OFFSET_SECONDS, ist_dates
from core.dataset import DATASET_TABLES, Dataset
from core.engine.incremental import TABLE_KEYS
from core.ingest.tables import DATASET_FIELD, TABLES

DAY = 86_400


@dataclass(frozen=True)
class Load:
    """One day's load: its rows and the as-of it is reconciled at (end of its IST day)."""

    day: Dataset
    as_of: int


def arrival_days(table: str, frame: pd.DataFrame) -> np.ndarray:
    """Each row's IST arrival day as days since the epoch."""
    if table == "bank":
        days = pd.to_datetime(frame["txn_date"]).to_numpy().astype("datetime64[D]")
    else:
        when = frame["created_at"]
        if table == "recon":
            when = frame["settled_at"].fillna(frame["created_at"]).fillna(0)
        days = ist_dates(when.to_numpy(dtype=np.int64))
    return days.astype(np.int64)


def corrupt(
    table: str, frame: pd.DataFrame, rng: np.random.Generator, dataset: Dataset
) -> pd.DataFrame:
    """A wrong version of each row (same key): amounts, statuses, UTRs, settlement ids."""
    wrong = frame.copy()
    if len(wrong) == 0:
        return wrong
    kind = rng.integers(0, 3, len(wrong))
    if table == "payments":
        wrong.loc[kind == 0, "amount"] += 1_000
        wrong.loc[kind == 1, "status"] = "failed"
        wrong.loc[kind == 2, "fee"] = wrong.loc[kind == 2, "fee"].fillna(0) + 7
    elif table == "refunds":
        wrong.loc[kind == 0, "amount"] += 500
        wrong.loc[kind != 0, "status"] = "pending"
    elif table == "settlements":
        wrong.loc[kind == 0, "utr"] = wrong.loc[kind == 0, "utr"].fillna("") + "9"
        wrong.loc[kind == 1, "amount"] += 100
        wrong.loc[kind == 2, "status"] = "created"
    elif table == "recon":
        wrong.loc[kind == 0, "credit"] -= 100
        wrong.loc[kind == 1, "amount"] += 100
        others = dataset.settlements["id"].to_numpy(dtype=object)
        if len(others):
            moved = others[rng.integers(0, len(others), int((kind == 2).sum()))]
            wrong.loc[kind == 2, "settlement_id"] = moved
    elif table == "bank":
        wrong.loc[kind == 0, "credit"] += 100
        for column in ("reference", "narration"):
            wrong.loc[kind == 1, column] = wrong.loc[kind == 1, column].fillna("") + "7"
        wrong.loc[kind == 2, "utr"] = pd.NA
        wrong.loc[kind == 2, "reference"] = "NOREF"
    elif table == "disputes":
        wrong["status"] = "open"
    elif table == "transfers":
        wrong["amount"] += 1
    return wrong.astype(frame.dtypes.to_dict())


# Columns the API carries and the Dashboard's reports lack (docs/ingest.md, "Switching
# layouts"): a day downloaded from the Dashboard holds only their default or null.
DASHBOARD_LACKS: dict[str, tuple[str, ...]] = {
    "payments": ("base_amount", "card_network", "card_type", "card_international", "card_sub_type"),
    "refunds": ("base_amount",),
    "recon": ("on_hold", "payment_id", "notes"),
    "transfers": ("status", "recipient_settlement_id"),
}
# A Transfers report has no Status: a new transfer reads as processed (the importer's guess).
_GUESSED = {("transfers", "status"): "processed"}


def in_dashboard_layout(day: Dataset) -> Dataset:
    """The day as the Dashboard's reports give it: the columns they lack hold what the
    importer fills in for a missing column, and `absent` names them."""
    specs = {DATASET_FIELD[kind]: spec for kind, spec in TABLES.items()}
    frames: dict[str, pd.DataFrame] = {}
    for table, columns in DASHBOARD_LACKS.items():
        frame = getattr(day, table).copy()
        defaults = {c.name: c.default for c in specs[table].columns}
        for column in columns:
            value = _GUESSED.get((table, column), defaults.get(column))
            frame[column] = pd.Series([value] * len(frame), dtype=frame[column].dtype)
        frames[table] = frame
    return replace(day, **frames, absent=MappingProxyType(DASHBOARD_LACKS))


def daily_loads(
    dataset: Dataset,
    as_of: int,
    *,
    days: int,
    late_share: float,
    bank_late_share: float,
    correction_share: float,
    resend_share: float,
    seed: int,
    dashboard_share: float = 0.0,
) -> list[Load]:
    """Everything up to `days` days before as_of in one first load, then one load per IST
    day; rows late by 1-3 days at the given shares; corrections (a wrong version first, the
    right one 1-3 loads later) and identical re-sends; each load after the first in the
    Dashboard's layout (`in_dashboard_layout`) at `dashboard_share`."""
    rng = np.random.default_rng(seed)
    last = int(ist_dates(np.array([as_of], dtype=np.int64))[0].astype(np.int64))
    first = last - days  # load 0: every row up to this day
    n = days + 1
    loads: list[dict[str, list[pd.DataFrame]]] = [{t: [] for t in DATASET_TABLES} for _ in range(n)]
    for table in DATASET_TABLES:
        frame: pd.DataFrame = getattr(dataset, table)
        if len(frame) == 0:  # an empty table stays empty (with its columns) in every load
            for tables in loads:
                tables[table].append(frame)
            continue
        bucket = np.clip(arrival_days(table, frame) - first, 0, n - 1)
        share = bank_late_share if table == "bank" else late_share
        late = rng.random(len(frame)) < share
        bucket = np.minimum(bucket + late * rng.integers(1, 4, len(frame)), n - 1)
        corrected = (rng.random(len(frame)) < correction_share) & (bucket < n - 1)
        resent = (rng.random(len(frame)) < resend_share) & (bucket < n - 1)
        right_at = np.minimum(bucket + rng.integers(1, 4, len(frame)), n - 1)
        wrong = corrupt(table, frame[corrected], rng, dataset)
        for i in range(n):
            loads[i][table].append(frame[(bucket == i) & ~corrected])
            loads[i][table].append(wrong[bucket[corrected] == i])
            loads[i][table].append(frame[corrected & (right_at == i)])
            loads[i][table].append(frame[resent & (right_at == i)])
    result = []
    for i, tables in enumerate(loads):
        frames = {
            t: pd.concat(parts, ignore_index=True).drop_duplicates(TABLE_KEYS[t], keep="last")
            for t, parts in tables.items()
        }
        day_end = (first + i + 1) * DAY - IST_OFFSET_SECONDS - 1
        day = Dataset(
            **{t: f.reset_index(drop=True) for t, f in frames.items()},
            has_bank_statement=dataset.has_bank_statement,
        )
        if dashboard_share and i and rng.random() < dashboard_share:
            day = in_dashboard_layout(day)
        result.append(Load(day=day, as_of=min(day_end, as_of) if i == n - 1 else day_end))
    return result
