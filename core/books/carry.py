"""The stored ledger carried forward by `import-day` (docs/engine.md, "The Books ledger
after import-day"): the day's change applied to the stored sums, not the whole history
derived again.

Every event of the receivable belongs to one *family* (core.books.rollforward): a payment
or refund with its recon rows, any other recon row on its own, a settlement (its payout
against the net of the settled rows that name it), an instant payout. A family's events
read only its own rows, the settlement times, the lost disputes and its exception flag.
So when a day's rows arrive, the families they can change are found (the day's keys, the
owners of its recon rows before and after, the rows of a settlement whose time changed or
of a dispute that was or is no longer lost, the entities whose flag the new run changed),
their events are derived twice, from the data before the day with the base run's flags
and from the data after with the new run's, and the difference is added to the stored
sums. Those sums are linear in the events, so the result is what a full derivation gives,
row for row (a day line keeps its event count, migration 0100, so a line whose events all
went away is deleted; an entity sum that reaches zero is deleted, as a derivation drops it).

It is done only when the stored ledger was current for the base run and the data before
the day: same format, derived from the base run, no import since but this day's, no raw
change but this import's (`changed` reads 0 or this import's mark, migration 0100) and, on
SQLite, exactly the day's new rows inserted since (a rowid count). Otherwise nothing is
written and the ledger stays stale, as before.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.books.ledger import FORMAT, Sums, ledger_status, partial_sums
from core.books.rollforward import (
    event_frame,
    row_event_parts,
    settle_times,
    settlement_events,
)
from core.columns import text
from core.dataset import Dataset
from core.db import books_ledger as sql
from core.db.books import exception_keys
from core.db.connection import transaction
from core.db.runs import get_run, update_timings

# The Dataset attribute of each watched raw table (core.db.raw.RAW_TABLES).
_ATTRIBUTES = {
    "payments": "payments",
    "refunds": "refunds",
    "settlements": "settlements",
    "recon_rows": "recon",
    "instant_settlements": "instant_settlements",
    "instant_payouts": "instant_payouts",
    "disputes": "disputes",
    "transfers": "transfers",
}
Flags = frozenset[tuple[str, str]]


def _among(column: pa.Array, values: Iterable[str]) -> np.ndarray:
    """Which entries of a text column are among `values` (one Arrow `is_in`)."""
    pool = list(values) if isinstance(values, (set, frozenset)) else list(set(values))
    if not pool or len(column) == 0:
        return np.zeros(len(column), dtype=np.bool_)
    found = pc.is_in(column, value_set=pa.array(pool, type=pa.large_string()))
    return np.asarray(found.fill_null(False), dtype=np.bool_)


def _texts(series: pd.Series) -> set[str]:
    return {str(v) for v in series.dropna().astype(str)}


@dataclass(frozen=True)
class _Recon:
    """One version's recon table with its key columns as Arrow text, read once."""

    frame: pd.DataFrame
    key: pa.Array
    entity: pa.Array
    settlement: pa.Array
    dispute: pa.Array
    is_payment: np.ndarray
    is_refund: np.ndarray
    is_transfer: np.ndarray

    @staticmethod
    def of(frame: pd.DataFrame) -> _Recon:
        kind = frame["type"].astype(str)
        return _Recon(
            frame=frame,
            key=text(frame["row_key"]),
            entity=text(frame["entity_id"]),
            settlement=text(frame["settlement_id"]),
            dispute=text(frame["dispute_id"]),
            is_payment=(kind == "payment").to_numpy(dtype=np.bool_),
            is_refund=(kind == "refund").to_numpy(dtype=np.bool_),
            is_transfer=(kind == "transfer").to_numpy(dtype=np.bool_),
        )


@dataclass(frozen=True)
class Families:
    """The keys of every family the day can change (closed: every recon row of a payment
    or refund in it is in it, and the owner of every recon row in it, before and after)."""

    payments: frozenset[str]
    refunds: frozenset[str]
    row_keys: frozenset[str]
    settlements: frozenset[str]
    payouts: frozenset[str]
    # A transfer with its `transfer` rows, a dispute with every row naming it (ledger
    # FORMAT 5: their events read their rows).
    transfers: frozenset[str] = frozenset()
    disputes: frozenset[str] = frozenset()


def _moved_times(before: pd.Series, after: pd.Series) -> set[str]:
    """Settlement ids whose payout time differs (or exists on one side only)."""
    both = pd.concat([before.rename("a"), after.rename("b")], axis=1)
    same = (both["a"] == both["b"]) | (both["a"].isna() & both["b"].isna())
    return {str(i) for i in both.index[~same.to_numpy(dtype=np.bool_)]}


def _lost(dataset: Dataset) -> set[str]:
    disputes = dataset.disputes
    if len(disputes) == 0:
        return set()
    return _texts(disputes.loc[disputes["status"].astype(str) == "lost", "id"])


def affected_families(
    before: Dataset,
    after: Dataset,
    day: Dataset,
    changed_flags: set[tuple[str, str]],
    start: Families | None = None,
) -> Families:
    """The families whose events may differ between `before` and `after` (= `before` with
    `day` upserted), given the entities whose exception flag changed. `start`, when given,
    is `day_families(before, after, day)` (found earlier, e.g. while the run was stored):
    the closure then continues from it with the flagged entities alone."""
    flagged = {kind: {i for k, i in changed_flags if k == kind} for kind in _KINDS}
    versions = [_Recon.of(before.recon), _Recon.of(after.recon)]
    seeds = [
        _among(v.key, flagged["recon_row"]) | _among(v.entity, flagged["recon_row"])
        for v in versions
    ]
    if start is not None:  # a closed set: every row its keys reach is in it already
        found = _Found(
            set(start.payments),
            set(start.refunds),
            set(start.row_keys),
            set(start.transfers),
            set(start.disputes),
        )
        probed = [found.copy() for _ in versions]
        found.payments |= flagged["payment"]
        found.refunds |= flagged["refund"]
        found.transfers |= flagged["transfer"]
        found.disputes |= flagged["dispute"]
        found = _closure(versions, seeds, found, probed)
        settlements = set(start.settlements) | flagged["settlement"]
        return Families(
            frozenset(found.payments),
            frozenset(found.refunds),
            frozenset(found.keys),
            frozenset(settlements),
            start.payouts,
            frozenset(found.transfers),
            frozenset(found.disputes),
        )
    moved = _moved_times(settle_times(before), settle_times(after))
    disputes = _lost(before) ^ _lost(after)
    day_keys = _texts(day.recon["row_key"]) if len(day.recon) else set()
    in_day = [_among(v.key, day_keys) for v in versions]
    seeds = [
        seed | day_rows | _among(v.settlement, moved) | _among(v.dispute, disputes)
        for v, seed, day_rows in zip(versions, seeds, in_day, strict=True)
    ]
    payments = (_texts(day.payments["id"]) if len(day.payments) else set()) | flagged["payment"]
    refunds = (_texts(day.refunds["id"]) if len(day.refunds) else set()) | flagged["refund"]
    transfers = (_texts(day.transfers["id"]) if len(day.transfers) else set()) | flagged["transfer"]
    day_disputes = _texts(day.disputes["id"]) if len(day.disputes) else set()
    disputes = day_disputes | set(disputes) | flagged["dispute"]
    probed = [_Found(set(day_keys), set(), set(), set(), set()) for _ in versions]
    found = _closure(versions, seeds, _Found(payments, refunds, set(), transfers, disputes), probed)
    payments, refunds, keys = found.payments, found.refunds, found.keys
    # A settlement's events change when its time, its flag or a row naming it changes.
    settlements = set(moved) | flagged["settlement"]
    for name in ("settlements", "instant_settlements"):
        frame = getattr(day, name)
        settlements |= _texts(frame["id"]) if len(frame) else set()
    for v, day_rows in zip(versions, in_day, strict=True):
        settlements |= _texts(v.frame.loc[day_rows, "settlement_id"])
    payouts = _texts(day.instant_payouts["id"]) if len(day.instant_payouts) else set()
    return Families(
        frozenset(payments),
        frozenset(refunds),
        frozenset(keys),
        frozenset(settlements),
        frozenset(payouts),
        frozenset(found.transfers),
        frozenset(found.disputes),
    )


def day_families(before: Dataset, after: Dataset, day: Dataset) -> Families:
    """The families the day's rows change whatever the flags (`affected_families` with no
    changed flag): what a day's run can find before its outcomes are stored."""
    return affected_families(before, after, day, set())


@dataclass
class _Found:
    """The keys a closure has reached (or a version was probed with): payments, refunds,
    row keys, transfers and disputes."""

    payments: set[str]
    refunds: set[str]
    keys: set[str]
    transfers: set[str]
    disputes: set[str]

    def copy(self) -> _Found:
        return _Found(
            set(self.payments),
            set(self.refunds),
            set(self.keys),
            set(self.transfers),
            set(self.disputes),
        )

    def size(self) -> tuple[int, ...]:
        return tuple(
            len(x) for x in (self.payments, self.refunds, self.keys, self.transfers, self.disputes)
        )


def _closure(
    versions: list[_Recon],
    seeds: list[np.ndarray],
    found: _Found,
    probed: list[_Found],
) -> _Found:
    """The payments, refunds, row keys, transfers and disputes reached from the rows
    `seeds` and the sets given, over both versions: a row is in once its key, its payment's,
    refund's or transfer's id (by entity_id) or its dispute's id is; a row in brings its
    owner and its dispute in. Each version is probed only with what was found since its
    last probe (`probed`: what it was probed with already, every row those reach being in):
    `is_in` of a union is the union of `is_in`s and the sets only grow, so it reaches the
    rows probing with every key each round would, and stops at the same fixpoint."""
    hits = [np.zeros(len(v.key), dtype=np.bool_) for v in versions]
    pending = list(seeds)
    while True:
        grown = False
        for i, v in enumerate(versions):
            done = probed[i]
            reached = (
                pending[i]
                | _among(v.key, found.keys - done.keys)
                | (v.is_payment & _among(v.entity, found.payments - done.payments))
                | (v.is_refund & _among(v.entity, found.refunds - done.refunds))
                | (v.is_transfer & _among(v.entity, found.transfers - done.transfers))
                | _among(v.dispute, found.disputes - done.disputes)
            )
            pending[i] = np.zeros(len(v.key), dtype=np.bool_)
            probed[i] = found.copy()
            fresh = reached & ~hits[i]
            if not fresh.any():
                continue
            hits[i] |= fresh
            rows = v.frame[["row_key", "entity_id", "dispute_id"]][fresh]
            size = found.size()
            found.keys |= _texts(rows["row_key"])
            found.payments |= _texts(rows.loc[v.is_payment[fresh], "entity_id"])
            found.refunds |= _texts(rows.loc[v.is_refund[fresh], "entity_id"])
            found.transfers |= _texts(rows.loc[v.is_transfer[fresh], "entity_id"])
            found.disputes |= _texts(rows["dispute_id"])
            grown = grown or found.size() != size
        if not grown:
            return found


_KINDS = ("payment", "refund", "recon_row", "settlement", "transfer", "dispute")


def _pick(frame: pd.DataFrame, column: str, values: frozenset[str]) -> pd.DataFrame:
    if len(frame) == 0:
        return frame
    return frame[_among(text(frame[column]), values)]


def _rows_sum(recon: pd.DataFrame, times: pd.Series, settlements: frozenset[str]) -> pd.Series:
    """Per settlement in `settlements`, the net of the settled rows naming it (as
    `row_event_parts` sums it over every row)."""
    named = _pick(recon, "settlement_id", settlements & {str(i) for i in times.index})
    net = named["credit"].astype(np.int64) - named["debit"].astype(np.int64)
    return net.groupby(named["settlement_id"].astype(str)).sum().astype(np.int64)


def family_sums(dataset: Dataset, families: Families, flags: Flags) -> tuple[Sums, int]:
    """The sums of the events of `families` in `dataset` (and their number)."""
    times = settle_times(dataset)
    rows = Dataset(
        payments=_pick(dataset.payments, "id", families.payments),
        refunds=_pick(dataset.refunds, "id", families.refunds),
        recon=_pick(dataset.recon, "row_key", families.row_keys),
        # Every dispute a picked row names is among the families' (the closure), so the
        # lost ones are known; a dispute's deduction is its own family's event.
        disputes=_pick(dataset.disputes, "id", families.disputes),
        transfers=_pick(dataset.transfers, "id", families.transfers),
    )
    parts: list[pd.DataFrame] = []
    row_event_parts(rows, flags, times, parts.append)
    paid = Dataset(
        settlements=_pick(dataset.settlements, "id", families.settlements),
        instant_settlements=_pick(dataset.instant_settlements, "id", families.settlements),
        instant_payouts=_pick(dataset.instant_payouts, "id", families.payouts),
    )
    parts.append(
        settlement_events(paid, _rows_sum(dataset.recon, times, families.settlements), flags)
    )
    events = event_frame(parts)
    return partial_sums(events), len(events)


def _difference(new: Sums, old: Sums) -> Sums:
    """new − old per (day, line) (amount and events) and per (day, entity); unchanged
    keys left out."""

    def minus(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
        return frame.assign(**{c: -frame[c].astype(np.int64) for c in columns})

    days = pd.concat([new.days, minus(old.days, ["amount", "events"])], ignore_index=True)
    days = days.groupby(["day", "line"], as_index=False, sort=True).agg(
        amount=("amount", "sum"), events=("events", "sum")
    )
    days = days[(days["amount"] != 0) | (days["events"] != 0)]
    detail = pd.concat([new.unexplained, minus(old.unexplained, ["amount"])], ignore_index=True)
    detail = detail.groupby(
        ["day", "entity_type", "entity_id"], as_index=False, sort=True, dropna=False
    ).agg(amount=("amount", "sum"))
    detail = detail[detail["amount"] != 0]
    return Sums(days=days.reset_index(drop=True), unexplained=detail.reset_index(drop=True))


def _iso(numbers: pd.Series) -> list[str]:
    dates = pd.to_datetime(numbers.to_numpy(np.int64), unit="D")
    return [str(d) for d in dates.strftime("%Y-%m-%d")]


def _parts(version: str) -> dict[str, str]:
    """'imports 3:7; payments 120; ...' -> {'imports': '3:7', 'payments': '120', ...}."""
    out: dict[str, str] = {}
    for part in version.split("; "):
        name, _, value = part.partition(" ")
        out[name] = value
    return out


def _why_not(
    conn: sqlite3.Connection,
    before: Dataset,
    after: Dataset,
    base_run_id: int | None,
    import_id: int | None,
) -> str | None:
    """Why the stored ledger cannot be carried over this day (None: it can): it must have
    been current for the base run and the data before the day (see the module's text)."""
    state = sql.ledger_state(conn)
    if state is None or state["format"] != FORMAT or state["source_version"] == "":
        return "no complete ledger of this format"
    if base_run_id is None or state["run_id"] != base_run_id:
        return "the ledger was not derived from the base run"
    stored = _parts(state["source_version"])
    built_top = int(stored.get("imports", "0:0").split(":")[1])
    newer = sql.imports_after(conn, built_top)
    if newer and newer != [import_id]:
        return "another import arrived since the ledger was derived"
    allowed = {0} | ({newer[0] + 1} if newer else set())
    if state["changed"] not in allowed:
        return "raw data were changed since the ledger was derived"
    if sql.has_rowids(conn):
        for table, attribute in _ATTRIBUTES.items():
            inserted = len(getattr(after, attribute)) - len(getattr(before, attribute))
            if sql.rows_after(conn, table, int(stored.get(table, "-1"))) != inserted:
                return f"rows were inserted into {table} behind the engine's back"
    return None


@dataclass(frozen=True)
class Carried:
    """What `carry_ledger_forward` did: `reason` why it did nothing, or the families and
    stored lines it changed, and the seconds it took."""

    current: bool
    reason: str
    families: int = 0
    day_lines: int = 0
    unexplained: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Change:
    """The ledger's change over a day: the families (`affected_families`), the sums of
    their events after less before (`_difference`) and the change in the event count,
    for the flags they were found with."""

    old_flags: Flags
    new_flags: Flags
    families: Families
    sums: Sums
    events: int


def ledger_change(
    before: Dataset,
    after: Dataset,
    day: Dataset,
    old_flags: Flags,
    new_flags: Flags,
    start: Families | None = None,
) -> Change:
    """The change the day and the new run's flags make to the ledger (`start`: as
    `affected_families`'s). Reads the frames alone."""
    families = affected_families(before, after, day, set(old_flags ^ new_flags), start)
    new, new_count = family_sums(after, families, new_flags)
    old, old_count = family_sums(before, families, old_flags)
    sums = _difference(new, old)
    return Change(old_flags, new_flags, families, sums, new_count - old_count)


@dataclass(frozen=True)
class Started:
    """Work for `carry_ledger_forward` done on a thread while the day's run is stored: the
    day's families (`day_families`, from `start_carry`), then, once the run's outcomes
    are stored, the whole change for its flags (`continue_carry`: None before)."""

    families: Future[Families]
    change: Future[Change] | None = None


def start_carry(
    conn: sqlite3.Connection,
    pool: Executor,
    *,
    before: Dataset,
    after: Dataset,
    day: Dataset,
    base_run_id: int | None,
) -> Started | None:
    """Start finding the day's families on `pool` (they read the frames alone, no
    database), or None when the stored ledger will not be carried to this day's run anyway
    (no complete ledger of this format, or not derived from `base_run_id`).
    `carry_ledger_forward(..., started=)` still makes every check before it uses them."""
    if base_run_id is None:
        return None
    state = sql.ledger_state(conn)
    if state is None or state["format"] != FORMAT or state["source_version"] == "":
        return None
    if state["run_id"] != base_run_id:
        return None
    return Started(pool.submit(day_families, before, after, day))


def continue_carry(
    conn: sqlite3.Connection,
    pool: Executor,
    started: Started,
    *,
    before: Dataset,
    after: Dataset,
    day: Dataset,
    base_run_id: int,
    run_id: int,
) -> Started:
    """Once run `run_id`'s outcomes are stored (its exceptions need not be synced yet),
    start computing the ledger's change on `pool` from the day's families and the two
    runs' flags (read here). `carry_ledger_forward` uses it only when it reads the same
    flags."""
    old_flags = exception_keys(conn, base_run_id)
    new_flags = exception_keys(conn, run_id)
    return carry_with_flags(
        pool, started, before=before, after=after, day=day, flags=lambda: (old_flags, new_flags)
    )


def carry_with_flags(
    pool: Executor,
    started: Started,
    *,
    before: Dataset,
    after: Dataset,
    day: Dataset,
    flags: Callable[[], tuple[Flags, Flags]],
) -> Started:
    """`continue_carry` with the two runs' flags from `flags()` (called on `pool`), e.g.
    taken from the engine's frames before the run is stored, so the change is computed
    while the run is written. `carry_ledger_forward` reads the stored flags and uses the
    change only when they are the same."""

    def change() -> Change:
        old_flags, new_flags = flags()
        start = started.families.result()
        return ledger_change(before, after, day, old_flags, new_flags, start)

    return Started(started.families, pool.submit(change))


def carry_ledger_forward(
    conn: sqlite3.Connection,
    *,
    before: Dataset,
    after: Dataset,
    day: Dataset,
    base_run_id: int | None,
    run_id: int,
    import_id: int | None,
    started: Started | None = None,
) -> Carried:
    """After `import-day` stored run `run_id` over `after` (`before` with `day` upserted, the
    raw tables as import `import_id` left them; `base_run_id` the run it carried forward),
    bring the stored ledger current by the day's change alone, when it was current before
    the day (else leave it stale). The seconds are added to the run's timings
    (`books_ledger_s`). `started`: `start_carry`'s for the same frames, whose day's
    families the closure continues from (the same families, found while the run was
    stored)."""
    began = (time.perf_counter(), time.process_time())
    if ledger_status(conn).current:  # a full run derived it already
        return Carried(True, "current")
    with transaction(conn, immediate=False):
        reason = _why_not(conn, before, after, base_run_id, import_id)
        old_flags = exception_keys(conn, base_run_id) if reason is None and base_run_id else None
        new_flags = exception_keys(conn, run_id)
    if reason is not None or old_flags is None:
        return _done(conn, run_id, began, Carried(False, reason or "no base run"))
    ahead = None if started is None or started.change is None else started.change.result()
    if ahead is not None and (ahead.old_flags, ahead.new_flags) == (old_flags, new_flags):
        found = ahead
    else:
        start = None if started is None else started.families.result()
        found = ledger_change(before, after, day, old_flags, new_flags, start)
    families, change = found.families, found.sums
    with transaction(conn):
        reason = _why_not(conn, before, after, base_run_id, import_id)
        if reason is not None:
            return _done(conn, run_id, began, Carried(False, reason))
        days, detail = change.days, change.unexplained
        sql.apply_change(
            conn,
            days=zip(
                _iso(days["day"]),
                days["line"].astype(str).tolist(),
                days["amount"].astype(np.int64).tolist(),
                days["events"].astype(np.int64).tolist(),
                strict=True,
            ),
            unexplained=list(
                zip(
                    _iso(detail["day"]),
                    detail["entity_type"].astype(str).tolist(),
                    detail["entity_id"].astype(str).tolist(),
                    detail["amount"].astype(np.int64).tolist(),
                    strict=True,
                )
            ),
            run_id=run_id,
            version=sql.source_version(conn),
            events=found.events,
            now=int(time.time()),
        )
    size = len(families.payments) + len(families.refunds) + len(families.row_keys)
    size += len(families.settlements) + len(families.payouts)
    size += len(families.transfers) + len(families.disputes)
    done = Carried(True, "current", size, len(days), len(detail))
    return _done(conn, run_id, began, done)


def _done(
    conn: sqlite3.Connection, run_id: int, began: tuple[float, float], carried: Carried
) -> Carried:
    seconds = round(time.perf_counter() - began[0], 3)
    cpu = round(time.process_time() - began[1], 3)
    run = get_run(conn, run_id)
    if run is not None:
        timings = {**(run.timings or {}), "books_ledger_s": seconds, "books_ledger_cpu_s": cpu}
        update_timings(conn, run_id, timings)
    return Carried(
        carried.current,
        carried.reason,
        carried.families,
        carried.day_lines,
        carried.unexplained,
        seconds,
    )
