"""A run's summary (`core.views.runs.RunSummary`) made by the command that stores the run,
from the frames it holds, so the first Overview after `reconcile --db`, `import-day`, the
Data page's Reconcile or a streamed build reads it from `app_run_summaries` instead of
scanning the run (docs/benchmark.md, "The run summary stored by the commands"). A streamed
build computes the parts window by window and adds them up (`combine`).

`compute_run_summary`'s three reads of the whole run (the captured payments, the PENDING
outcomes by reason, the payments per settlement) are computed here from the payments frame
and the outcome frame(s) on a worker thread (`summary_ahead`); what reads a few rows (the
settlements' totals and days, the run's bank credits, its stored counts) is read in SQL by
`store_summary_ahead`, with the data version, in the transaction that stores the summary.
Figures are integer paise, summed as int64: no float anywhere.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core import columns
from core.db import views as db
from core.db.connection import transaction
from core.views.common import Total
from core.views.runs import DayMatchRate, PendingLine, assemble_summary, summary_json


@dataclass(frozen=True)
class SummaryAhead:
    """The parts of a run's summary that read the whole run, from memory.

    captured: the captured payments (as `captured_totals`); pending_lines: the PENDING
    outcomes per entity type and reason, sorted by both (as `pending_by_reason`);
    by_settlement: (settlement id, payment outcomes, of them MATCHED) per settlement id of
    the payment outcomes that name one, sorted by id (`match_rate_by_settlement_day`'s
    inner query)."""

    captured: Total
    pending_lines: tuple[PendingLine, ...]
    by_settlement: tuple[tuple[str, int, int], ...]
    # Captured payments in another currency without a base_amount, counted in `captured`
    # at 0: store_summary_ahead adds their first payment recon row's amount (read in SQL).
    unpriced: tuple[str, ...] = ()


def _add_part(
    frame: pd.DataFrame,
    mask: Any,
    pending: dict[tuple[Any, Any], list[int]],
    settled: dict[str, list[int]],
) -> None:
    """Add the rows of `frame` chosen by `mask` (None: all) to the PENDING lines and the
    payments per settlement. Only the few PENDING rows are copied; the payments are grouped
    by settlement id over the whole column with 0/1 weights (no copy of ~1M ids)."""
    chosen = np.ones(len(frame), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    kind, status = columns.arrow(frame["entity_type"]), columns.arrow(frame["status"])
    waiting = pa.array(chosen & columns.equals(status, "PENDING"))
    lines = (
        pa.table(
            {
                "entity_type": kind.filter(waiting),
                "reason_code": columns.arrow(frame["reason_code"]).filter(waiting),
                "expected_amount": columns.arrow(frame["expected_amount"]).filter(waiting),
            }
        )
        .group_by(["entity_type", "reason_code"])
        .aggregate([("expected_amount", "sum"), ([], "count_all")])
    )
    for row in lines.to_pylist():
        into = pending.setdefault((row["entity_type"], row["reason_code"]), [0, 0])
        into[0] += int(row["count_all"])
        into[1] += int(row["expected_amount_sum"] or 0)
    settlement = columns.arrow(frame["settlement_id"])
    valid = np.asarray(pc.is_valid(settlement), dtype=bool)
    paid = chosen & columns.equals(kind, "payment") & valid
    matched = paid & columns.equals(status, "MATCHED")
    per_settlement = (
        pa.table(
            {
                "settlement_id": settlement,
                "n": pa.array(paid.view(np.int8)),
                "m": pa.array(matched.view(np.int8)),
            }
        )
        .group_by("settlement_id")
        .aggregate([("n", "sum"), ("m", "sum")])
    )
    for row in per_settlement.to_pylist():
        if row["settlement_id"] is None or not row["n_sum"]:
            continue  # no payment outcome of this run names it
        into = settled.setdefault(str(row["settlement_id"]), [0, 0])
        into[0] += int(row["n_sum"])
        into[1] += int(row["m_sum"])


def _key(value: Any) -> tuple[bool, str]:
    """Text in byte order (code points: UTF-8 keeps their order), NULL first (SQLite's)."""
    return (value is not None, "" if value is None else str(value))


def captured_total(payments: pd.DataFrame) -> tuple[Total, tuple[str, ...]]:
    """`captured_totals` of a payments frame: captured, or status captured or refunded; in
    INR paise (a payment in another currency at its `base_amount`); and the ids of those
    in another currency without one, counted at 0 here (their recon rows are looked up
    when the summary is stored, store_summary_ahead)."""
    chosen = columns.captured(payments)
    foreign = columns.foreign(payments["currency"])
    base = payments["base_amount"].astype("Int64")
    inr = np.where(
        foreign,
        base.fillna(0).to_numpy(dtype=np.int64),
        payments["amount"].to_numpy(dtype=np.int64),
    )
    unpriced = chosen & foreign & base.isna().to_numpy(dtype=bool)
    ids = tuple(str(i) for i in payments["id"].to_numpy()[unpriced])
    total = Total(count=int(chosen.sum()), paise=int(inr[chosen].sum(dtype=np.int64)))
    return total, ids


def summary_ahead(
    payments: pd.DataFrame | None, outcomes: Sequence[tuple[pd.DataFrame, Any]]
) -> SummaryAhead:
    """The whole-run parts of the summary of a run whose raw payments are `payments` and
    whose outcomes are the rows of `outcomes` ((frame, bool mask or None) pairs: an
    incremental run's fresh rows and the carried rows of its base run's frame, without
    building the whole frame). payments None: no captured payment (a part of a run read
    window by window, whose payments are counted apart; `combine` adds the parts)."""
    pending: dict[tuple[Any, Any], list[int]] = {}
    settled: dict[str, list[int]] = {}
    for frame, mask in outcomes:
        _add_part(frame, mask, pending, settled)
    captured, unpriced = (Total(0, 0), ()) if payments is None else captured_total(payments)
    return _assembled(captured, pending, settled, unpriced)


def combine(parts: Iterable[SummaryAhead]) -> SummaryAhead:
    """The parts of one run's summary computed apart (each window's rows of a streamed
    build, every row of the run in exactly one part) added up: captured totals summed,
    PENDING lines summed per (entity type, reason), payments summed per settlement id (a
    settlement's payments may fall in more than one window); sorted as `summary_ahead`."""
    count = paise = 0
    pending: dict[tuple[Any, Any], list[int]] = {}
    settled: dict[str, list[int]] = {}
    unpriced: list[str] = []
    for part in parts:
        count += part.captured.count
        paise += part.captured.paise
        unpriced += part.unpriced
        for line in part.pending_lines:
            into = pending.setdefault((line.entity_type, line.reason), [0, 0])
            into[0] += line.count
            into[1] += line.paise
        for settlement_id, n, m in part.by_settlement:
            into = settled.setdefault(settlement_id, [0, 0])
            into[0] += n
            into[1] += m
    return _assembled(Total(count, paise), pending, settled, tuple(unpriced))


def _assembled(
    captured: Total,
    pending: dict[tuple[Any, Any], list[int]],
    settled: dict[str, list[int]],
    unpriced: tuple[str, ...] = (),
) -> SummaryAhead:
    """The summed parts in the order the SQL reads give them: PENDING lines by entity type
    then reason (byte order, NULL first), settlements by id."""
    lines = tuple(
        PendingLine(str(kind), reason, count, paise)
        for (kind, reason), (count, paise) in sorted(
            pending.items(), key=lambda item: (_key(item[0][0]), _key(item[0][1]))
        )
    )
    return SummaryAhead(
        captured=captured,
        pending_lines=lines,
        by_settlement=tuple((sid, n, m) for sid, (n, m) in sorted(settled.items())),
        unpriced=tuple(sorted(unpriced)),
    )


def match_rate(
    by_settlement: Sequence[tuple[str, int, int]], days: dict[str, str]
) -> tuple[DayMatchRate, ...]:
    """`match_rate_by_settlement_day` from the payments per settlement and the stored
    settlements' IST days (id -> day): settlements not stored are left out, as the join."""
    per_day: dict[str, list[int]] = {}
    for settlement_id, payments, matched in by_settlement:
        day = days.get(settlement_id)
        if day is None:
            continue
        into = per_day.setdefault(day, [0, 0])
        into[0] += payments
        into[1] += matched
    return tuple(DayMatchRate(day, n, m) for day, (n, m) in sorted(per_day.items()))


def store_summary_ahead(
    conn: sqlite3.Connection, run_id: int, ahead: SummaryAhead, import_id: int
) -> bool:
    """Store the completed run's summary from `ahead` (computed from the raw tables as they
    stood once import `import_id` was stored), under the data version read in the same
    writing transaction; stored only while `import_id` is still the latest import (no
    import, a webhook's, came after it: the tables would hold rows the summary has not
    counted). Whether it was stored."""
    with transaction(conn):
        version = db.data_version(conn)
        if version.rpartition(":")[2] != str(int(import_id)):
            return False
        days = {str(r["id"]): str(r["day"]) for r in db.settlement_days(conn)}
        priced = db.first_payment_row_amounts(conn, ahead.unpriced)
        captured = Total(ahead.captured.count, ahead.captured.paise + sum(priced.values()))
        summary = assemble_summary(
            conn,
            run_id,
            captured=captured,
            captured_unpriced=len(ahead.unpriced) - len(priced),
            pending_lines=ahead.pending_lines,
            match_rate=match_rate(ahead.by_settlement, days),
        )
        db.put_run_summary(conn, run_id, version, int(time.time()), summary_json(summary))
    return True
