"""The stored ledger (docs/books.md, "The stored ledger"): the receivable's events derived
once when the data change, so that a Books render reads small, month-scoped results.

`ledger_events` at 1M payments is 5M events and ~44 CPU s (20 of them reading the raw
tables). Everything the Books page shows needs only two compact forms of them:

- per IST day and line, the sum of the events (`days`): the month list, every opening,
  movement, closing and open-item balance, and the balance by day;
- the `unexplained` events summed per (day, entity) (`unexplained`): a month's residual
  drill-down, which takes the entities whose unexplained events up to the month's end do
  not cancel out, so it reads those with day before the next month's first.

`Ledger.events_for(month)` puts the two together as an event frame that `month_rollforward`,
`books_view` and `close_month` take as they take the full events, with the same result:
the sums by line are the same sums, and the drill-down groups by (day, entity) anyway.

`rebuild_ledger` stores both (migration 0099) with what they were derived from: the latest
completed run and the raw tables' version. `ledger_status` says whether the stored ledger is
current; a missing or stale one is never used (`ledger_for` computes today's instead).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.books.rollforward import (
    UNEXPLAINED,
    coded_parts,
    daily_balances,
    event_frame,
    exception_entities,
    is_coded,
    row_event_parts,
    row_events,
    settle_times,
    settlement_events,
    text_entities,
)
from core.books.store import months_of
from core.calendar import IST, IST_OFFSET_SECONDS, month_bounds
from core.dataset import Dataset
from core.db import books_ledger as sql
from core.db.books import exception_keys
from core.db.connection import transaction
from core.db.raw import read_dataset
from core.db.runs import latest_completed_run

# Bumped when what is stored changes meaning: an older ledger is then stale.
# 2: day lines count their events (migration 0100); 3: a regular settlement's draw of an
# instant settlement closes its advance instead of being an adjustment (docs/books.md);
# 4: a refund a settlement took stays taken when its status later reads failed;
# 5: a made transfer leaves at its created_at and a dispute's `amount_deducted` at its
# deduction, before any settlement carries their rows (transfers are read too);
# 6: a payment or refund Settled By a bank whose recon rows name no settlement is not
# Razorpay's (`rollforward.through_razorpay`), even with a row.
FORMAT = 6
Progress = Callable[[float, str], None]


def _quiet(fraction: float, text: str) -> None:
    """No progress shown."""


@dataclass(frozen=True)
class Ledger:
    """The compact ledger. days: (day, line, amount) for every IST day and line with an
    event; unexplained: (day, entity_type, entity_id, amount) of the `unexplained` events
    summed per day and entity (zero sums left out), those with day < `through` (None: all).
    day columns hold datetime.date, as `ledger_events` makes them."""

    days: pd.DataFrame
    unexplained: pd.DataFrame
    through: dt.date | None = None

    def months(self) -> list[str]:
        """The IST months with events, latest first (as `months_of`)."""
        return months_of(self.days)

    def daily(self) -> pd.DataFrame:
        """The balance by day (as `daily_balances` over every event)."""
        return daily_balances(self.days)

    def events_for(self, month: str) -> pd.DataFrame:
        """An event frame whose roll-forward of `month` (and of any earlier month) equals
        the full events': the day sums of every line but `unexplained`, and the unexplained
        events by (day, entity) up to the month's end."""
        _, following = month_bounds(month)
        if self.through is not None and following > self.through:
            raise ValueError(f"the ledger read holds unexplained events before {self.through}")
        days = self.days[self.days["line"] != UNEXPLAINED].assign(entity_type=None, entity_id=None)
        detail = self.unexplained[self.unexplained["day"] < following].assign(line=UNEXPLAINED)
        columns = ["day", "line", "entity_type", "entity_id", "amount"]
        if detail.empty:
            return days[columns].reset_index(drop=True)
        return pd.concat([days[columns], detail[columns]], ignore_index=True)


@dataclass(frozen=True)
class FullEvents:
    """Today's computation behind the same three questions: every event in memory."""

    events: pd.DataFrame

    def months(self) -> list[str]:
        return months_of(self.events)

    def daily(self) -> pd.DataFrame:
        return daily_balances(self.events)

    def events_for(self, month: str) -> pd.DataFrame:
        return self.events


def compact(events: pd.DataFrame) -> Ledger:
    """The compact form of `ledger_events`' frame (all days)."""
    return combine([partial_sums(events)])


# Asia/Kolkata has kept +05:30 since 1945: an event's IST day is
# (ts + IST_OFFSET_SECONDS) // 86400 days after 1970-01-01.
_EPOCH = dt.date(1970, 1, 1)


@dataclass(frozen=True)
class Sums:
    """Part of a ledger: per (IST day number, line) and per (day number, entity) of the
    `unexplained` events, the sums of some events (zero sums kept: `combine` drops them
    after adding every part)."""

    days: pd.DataFrame
    unexplained: pd.DataFrame


def partial_sums(events: pd.DataFrame) -> Sums:
    """`events` (EVENT_COLUMNS; a `day` column is not read) summed per day number and line,
    and their `unexplained` ones per day number and entity: numpy day numbers and line
    codes, so no datetime.date or str object is made per event (5M at 1M payments)."""
    days, day, codes, lines = _day_sums(events)
    return Sums(days=days, unexplained=group_detail(unexplained_events(events, day, codes, lines)))


def _day_sums(events: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, pd.Index]:
    """`partial_sums`' days, and each event's day number and line code (of the lines)."""
    day = (events["ts"].to_numpy(np.int64) + IST_OFFSET_SECONDS) // 86_400
    amount = events["amount"].to_numpy(np.int64)
    if isinstance(events["line"].dtype, pd.CategoricalDtype):  # codes made with the events
        codes = events["line"].cat.codes.to_numpy(np.int64)
        lines = events["line"].cat.categories
    else:
        codes, lines = pd.factorize(events["line"], sort=False)
    width = max(len(lines), 1)
    # (day, line) numbered densely from the first day: counted and summed by position
    # (integer adds, no hash of 5M keys).
    first = int(day.min()) if len(day) else 0
    slot = (day - first) * width + codes
    size = int(slot.max()) + 1 if len(slot) else 0
    counts = np.bincount(slot, minlength=size).astype(np.int64)
    sums = np.zeros(size, dtype=np.int64)
    np.add.at(sums, slot, amount)
    keys = np.flatnonzero(counts)
    days = pd.DataFrame(
        {
            "day": keys // width + first,
            "line": np.asarray(lines, dtype=object)[keys % width],
            "amount": sums[keys],
            "events": counts[keys],
        }
    )
    return days, day, codes, pd.Index(lines)


def unexplained_events(
    events: pd.DataFrame, day: np.ndarray, codes: np.ndarray, lines: pd.Index | np.ndarray
) -> pd.DataFrame:
    """The `unexplained` events of `events` as (day, entity_type, entity_id, amount), day
    numbers given (`day`), lines as `codes` of `lines`. The entity columns stay the events'
    own (Arrow) text: ~1.8M events at 1M payments, which as Python str objects would cost
    memory and the hashing of objects."""
    where = np.flatnonzero(np.asarray(lines, dtype=object) == UNEXPLAINED)
    hit = np.flatnonzero(codes == where[0]) if len(where) else np.zeros(0, dtype=np.int64)
    return pd.DataFrame(
        {
            "day": day[hit],
            "entity_type": events["entity_type"].array.take(hit),
            "entity_id": events["entity_id"].array.take(hit),
            "amount": events["amount"].to_numpy(np.int64)[hit],
        }
    )


def _text_codes(values: pd.Series) -> tuple[np.ndarray, int]:
    """Each text value's code (equal texts, and missing values, share one) and how many
    codes: one Arrow dictionary encoding, no Python object per value."""
    column = pa.array(values.array)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    codes = np.asarray(encoded.indices, dtype=np.int64)
    return codes, max(len(encoded.dictionary), 1)


def group_detail(detail: pd.DataFrame) -> pd.DataFrame:
    """`detail.groupby(["day", "entity_type", "entity_id"], as_index=False, sort=False,
    dropna=False).agg(amount=("amount", "sum"))` (day int64, the entity columns text):
    the same frame, grouped by integer codes. The groups come in the order of their first
    row, each named by its first row's key (pandas' groupby spends most of its time on the
    monotonic check and the factorizing of Arrow text)."""
    if len(detail) == 0 or not all(
        isinstance(detail[c].array, pd.arrays.ArrowStringArray)
        for c in ("entity_type", "entity_id")
    ):
        return detail.groupby(
            ["day", "entity_type", "entity_id"], as_index=False, sort=False, dropna=False
        ).agg(amount=("amount", "sum"))
    day = detail["day"].to_numpy(np.int64)
    kinds, width = _text_codes(detail["entity_type"])
    ids, count = _text_codes(detail["entity_id"])
    rows, sums = _summed(day, kinds * count + ids, width * count, detail["amount"])
    return pd.DataFrame(
        {
            "day": day[rows],
            "entity_type": detail["entity_type"].array.take(rows),
            "entity_id": detail["entity_id"].array.take(rows),
            "amount": sums,
        }
    )


def _summed(
    day: np.ndarray, entity: np.ndarray, entities: int, amount: pd.Series | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct (day, entity code below `entities`), in the order of their first row:
    that first row and the sum of `amount`."""
    first = int(day.min())
    if (int(day.max()) - first + 1) * entities < 2**62:
        key = (day - first) * entities + entity
    else:  # too wide for one int64: the pairs numbered first (each number below len(day))
        key = pd.factorize(day, sort=False)[0] * len(day) + pd.factorize(entity, sort=False)[0]
    # Hash-factorized int keys: groups numbered in the order of their first row.
    group, keys = pd.factorize(key, sort=False)
    rows = np.full(len(keys), len(day), dtype=np.int64)
    np.minimum.at(rows, group, np.arange(len(day)))
    sums = np.zeros(len(keys), dtype=np.int64)
    np.add.at(sums, group, np.asarray(amount, dtype=np.int64))
    return rows, sums


def _space(dictionary: pa.Array, known: list[pa.Array]) -> int:
    """The position in `known` of a dictionary of the same texts in the same order (their
    codes name the same ids; the same buffers compare in a microsecond), `dictionary`
    appended when there is none."""
    for position, seen in enumerate(known):
        if seen.equals(dictionary):
            return position
    known.append(dictionary)
    return len(known) - 1


def nonzero_detail(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The groups of `group_detail` over the parts' unexplained events together whose sum
    is not zero, in no set order (`combine` sorts them). A part's entity_id may be
    `coded`: when each entity type's events are all coded by one dictionary, or all in one
    text part, the (type, code) pairs are the keys (no text hashed but the types and the
    text parts') and only the surviving groups' ids are made text; else every part is
    made text and grouped by `group_detail`."""
    given, parts = parts, [p for p in parts if len(p)]
    if not parts:
        return _nonzero(group_detail(pd.concat([text_entities(p) for p in given])))
    types = pd.concat([p["entity_type"] for p in parts], ignore_index=True)
    kinds, width = _text_codes(types)
    bounds = np.cumsum([0, *(len(p) for p in parts)])
    spaces: dict[object, int] = {}  # a code space -> its first global code
    owner: dict[int, object] = {}  # an entity type's code -> its code space
    dictionaries: list[pa.Array] = []
    ids: list[np.ndarray] = []
    count = 0
    for k, part in enumerate(parts):
        if is_coded(part["entity_id"]):
            codes, dictionary = coded_parts(part["entity_id"])
            space: object = ("coded", _space(dictionary, dictionaries))
            size = len(dictionary)
        else:
            codes, size = _text_codes(part["entity_id"])
            space = ("text", k)
        for kind in np.unique(kinds[bounds[k] : bounds[k + 1]]).tolist():
            if owner.setdefault(kind, space) != space:  # two spaces name one type's ids
                text = pd.concat([text_entities(p) for p in parts], ignore_index=True)
                return _nonzero(group_detail(text))
        if space not in spaces:
            spaces[space] = count
            count += size
        ids.append(codes + spaces[space])
    day = np.concatenate([p["day"].to_numpy(np.int64) for p in parts])
    amount = np.concatenate([p["amount"].to_numpy(np.int64) for p in parts])
    rows, sums = _summed(day, kinds * count + np.concatenate(ids), width * count, amount)
    live = np.flatnonzero(sums)
    rows, sums = rows[live], sums[live]
    part_of = np.searchsorted(bounds, rows, side="right") - 1
    found = [
        text_entities(parts[k].iloc[rows[part_of == k] - bounds[k]]).assign(
            amount=sums[part_of == k]
        )
        for k in np.unique(part_of).tolist()
    ]
    if not found:
        return text_entities(parts[0].iloc[:0])
    return pd.concat(found, ignore_index=True)


def _nonzero(detail: pd.DataFrame) -> pd.DataFrame:
    return detail[detail["amount"] != 0].reset_index(drop=True)


def combine(parts: list[Sums]) -> Ledger:
    """The ledger of every part's events together: the sums added up across parts, the
    zero entity sums left out, day numbers made dates (one per distinct day)."""
    detail = pd.concat([p.unexplained for p in parts], ignore_index=True)
    if len(parts) > 1:
        detail = group_detail(detail)
    return _ledger(_added_days([p.days for p in parts]), detail)


def _added_days(parts: list[pd.DataFrame]) -> pd.DataFrame:
    days = pd.concat(parts, ignore_index=True)
    if len(parts) > 1:
        days = days.groupby(["day", "line"], as_index=False, sort=False).agg(
            amount=("amount", "sum"), events=("events", "sum")
        )
    return days


def _ledger(days: pd.DataFrame, detail: pd.DataFrame) -> Ledger:
    """The ledger of the summed days and entity sums (zero ones still in)."""
    days = days.sort_values(["day", "line"], ignore_index=True)
    detail = detail[detail["amount"] != 0]
    detail = detail.sort_values(["day", "entity_type", "entity_id"], ignore_index=True)
    return Ledger(
        days=_typed(_as_dates(days)[["day", "line", "amount", "events"]]),
        unexplained=_typed(_as_dates(detail)[["day", "entity_type", "entity_id", "amount"]]),
    )


def _as_dates(frame: pd.DataFrame) -> pd.DataFrame:
    numbers = frame["day"].to_numpy(np.int64)
    unique = {int(n): _EPOCH + dt.timedelta(days=int(n)) for n in np.unique(numbers)}
    dates = pd.Series([unique[int(n)] for n in numbers], index=frame.index, dtype=object)
    return frame.assign(day=dates)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.reset_index(drop=True)
    out["amount"] = out["amount"].astype(np.int64)
    if "events" in out:
        out["events"] = out["events"].astype(np.int64)
    return out


def _dates(text: pd.Series) -> pd.Series:
    """ISO date texts -> datetime.date objects (one parse per distinct day)."""
    unique = {value: dt.date.fromisoformat(value) for value in pd.unique(text)}
    return text.map(unique).astype(object)


@dataclass(frozen=True)
class LedgerStatus:
    """Whether the stored ledger may be used, and if not, why (one sentence)."""

    current: bool
    reason: str
    run_id: int | None = None
    built_at: int | None = None
    events: int = 0


def ledger_status(conn: sqlite3.Connection) -> LedgerStatus:
    """The stored ledger is current when it was built by this format, from the latest
    completed run, from the raw tables as they stand (their version), and no raw row was
    changed since (the triggers of migration 0099). A handful of indexed reads."""
    with transaction(conn, immediate=False):
        state = sql.ledger_state(conn)
        run = latest_completed_run(conn)
        version = sql.source_version(conn)
    if state is None:
        return LedgerStatus(False, "The books have not been derived from the data yet.")
    stamp = {"run_id": state["run_id"], "built_at": state["built_at"], "events": state["events"]}
    latest = None if run is None else run.id
    if state["format"] != FORMAT:
        reason = "The stored books were derived by an older version of RazorRecon."
    elif state["source_version"] == "":
        reason = "The books are being derived from the data (or a rebuild stopped half-way)."
    elif state["changed"]:
        reason = "Raw data were changed since the books were derived (a sync, webhook or edit)."
    elif state["source_version"] != version:
        reason = "Data were imported since the books were derived."
    elif state["run_id"] != latest:
        reason = (
            f"Run #{latest} completed after the books were derived (from run #{state['run_id']})."
        )
    else:
        return LedgerStatus(True, "current", **stamp)
    return LedgerStatus(False, reason, **stamp)


@dataclass(frozen=True)
class Derived:
    """The ledger computed from the raw tables, and what it was computed from."""

    ledger: Ledger
    events: int
    run_id: int | None
    version: str


@dataclass(frozen=True)
class InMemory:
    """The raw tables as they stand, already in memory: `dataset` is the whole stored data
    (a replacing import just stored it, or a run just read all of it) and `version` is
    `source_version` read when that was so, inside `mark_building` (so a raw change from
    then on leaves the ledger stale)."""

    dataset: Dataset
    version: str


@dataclass(frozen=True)
class Windows:
    """The raw tables as a streamed run's window store holds them (core.engine.distributed:
    each row table's rows owned once across the windows, the ledger tables whole), the
    store the raw tables were just replaced from; `version` as for `InMemory`."""

    root: Path
    count: int
    version: str


@dataclass(frozen=True)
class Computed:
    """The ledger already being derived on a worker thread (`derive_in_memory`), from the
    whole stored data in memory and a run's outcomes (the exceptions it flags), while that
    run is stored. `pending` gives `ledger_of`'s (Ledger, events); `version` as for
    `InMemory`; `run_id`: the stored run whose outcomes were given (set once it has an id,
    `for_run`). The run's stored exceptions are those outcomes' EXCEPTION rows, so this is
    the ledger `InMemory` derives after the run; if the worker failed, storing it raises
    before anything is written and the ledger stays stale (marked by `mark_building`)."""

    pending: Future[tuple[Ledger, int]]
    version: str
    run_id: int | None = None

    def for_run(self, run_id: int) -> Computed:
        """This derivation, recorded against the run `run_id` (the outcomes' run)."""
        return replace(self, run_id=run_id)


Source = InMemory | Windows | Computed


def derive_in_memory(dataset: Dataset, outcomes: pd.DataFrame) -> tuple[Ledger, int]:
    """`ledger_of(dataset, exception_entities(outcomes))`: what a `Computed`'s worker runs,
    on the whole stored data and the outcomes of the run being stored (their EXCEPTION rows
    are what `exception_keys` reads back once the run is stored)."""
    return ledger_of(dataset, exception_entities(outcomes))


def mark_building(conn: sqlite3.Connection) -> str:
    """Mark the ledger as being built and read the raw tables' version, in one transaction:
    the caller holds (or is about to read whole) the data of this version, and any raw
    change from here on marks the ledger changed (migration 0099's triggers)."""
    with transaction(conn):
        sql.begin_build(conn, now=int(time.time()), format_version=FORMAT)
        return sql.source_version(conn)


def _flagged(conn: sqlite3.Connection) -> tuple[int | None, frozenset[tuple[str, str]]]:
    with transaction(conn, immediate=False):
        run = latest_completed_run(conn)
        flagged = exception_keys(conn, run.id) if run is not None else frozenset()
    return (None if run is None else run.id), flagged


def ledger_of(dataset: Dataset, flagged: frozenset[tuple[str, str]]) -> tuple[Ledger, int]:
    """`compact(ledger_events(dataset, flagged))` and the number of events, without the
    per-event dates `ledger_events` adds, and without ever holding every event in one
    frame: each part of the row events is summed by day as it is made, and its unexplained
    events kept (a payment's or refund's ids as their codes), to be grouped by entity once
    (`nonzero_detail`), not once per part and again across parts."""
    days: list[pd.DataFrame] = []
    detail: list[pd.DataFrame] = []
    counted = [0]

    def add(part: pd.DataFrame) -> None:
        events = event_frame([part], keep_codes=True)
        counted[0] += len(events)
        if len(events):
            summed, day, codes, lines = _day_sums(events)
            days.append(summed)
            detail.append(unexplained_events(events, day, codes, lines))

    rows_sum = row_event_parts(dataset, flagged, settle_times(dataset), add)
    add(settlement_events(dataset, rows_sum, flagged))
    if not days:
        return combine([partial_sums(event_frame([]))]), counted[0]
    ledger = _ledger(_added_days(days), nonzero_detail(detail))
    return ledger, counted[0]


def derive_ledger(
    conn: sqlite3.Connection, progress: Progress = _quiet, source: Source | None = None
) -> Derived:
    """Today's computation (`stored_events`: the raw tables and the latest completed run's
    exceptions), in its compact form. The version and run are read first, so data that
    arrive meanwhile leave what it is stored under older than the data (stale), never newer.
    `source`: the raw tables from memory or from a window store instead of a read."""
    if isinstance(source, Windows):
        return _derive_by_windows(conn, source, progress)
    if isinstance(source, Computed):
        if source.run_id is None:
            raise ValueError("a ledger derived from a run's outcomes names no run")
        progress(0.45, "Deriving the receivable's events")
        ledger, count = source.pending.result()  # the worker's error, if it failed
        return Derived(ledger, count, source.run_id, source.version)
    if source is None:
        with transaction(conn, immediate=False):
            version = sql.source_version(conn)
    else:
        version = source.version
    run_id, flagged = _flagged(conn)
    if source is None:
        progress(0.1, "Reading the raw tables")
        dataset = read_dataset(conn)
    else:
        dataset = source.dataset
    progress(0.45, "Deriving the receivable's events")
    ledger, count = ledger_of(dataset, flagged)
    del dataset
    return Derived(ledger, count, run_id, version)


def _derive_by_windows(conn: sqlite3.Connection, source: Windows, progress: Progress) -> Derived:
    run_id, flagged = _flagged(conn)
    ledger, count = ledger_by_windows(source.root, source.count, flagged, progress)
    return Derived(ledger, count, run_id, source.version)


def ledger_by_windows(
    root: Path,
    windows: int,
    flagged: frozenset[tuple[str, str]],
    progress: Progress = _quiet,
) -> tuple[Ledger, int]:
    """`ledger_of` the whole data of a window store, read window by window (docs/books.md).
    Each window's row events (its owned payments, refunds, recon rows and disputes, with
    the whole settlement tables for the settlement times) are summed; the settled rows'
    net per settlement is added up across windows; then the settlement tables' events
    once. Exact: a row family (every row sharing an entity, dispute or transfer key) sits
    in one window, and an entity's events read only its family's rows and the times."""
    from core.engine.distributed import read_ledger, read_owned_rows

    ledger = read_ledger(root)
    whole = Dataset(
        settlements=ledger["settlements"],
        instant_settlements=ledger["instant_settlements"],
        instant_payouts=ledger["instant_payouts"],
    )
    times = settle_times(whole)
    parts: list[Sums] = []
    sums: list[pd.Series] = []
    count = 0
    for k in range(windows):
        owned = read_owned_rows(root, k)
        window = Dataset(
            payments=owned["payments"],
            refunds=owned["refunds"],
            recon=owned["recon"],
            disputes=owned["disputes"],
            transfers=owned["transfers"],
            settlements=whole.settlements,
            instant_settlements=whole.instant_settlements,
            instant_payouts=whole.instant_payouts,
        )
        del owned
        events, rows_sum = row_events(window, flagged, times)
        del window
        parts.append(partial_sums(events))
        sums.append(rows_sum)
        count += len(events)
        del events
        progress(0.8 * (k + 1) / windows, f"Deriving the events: window {k + 1} of {windows}")
    rows_sum = (
        pd.concat(sums).groupby(level=0).sum().astype(np.int64)
        if sums
        else pd.Series(dtype=np.int64)
    )
    events = settlement_events(whole, rows_sum, flagged)
    parts.append(partial_sums(events))
    count += len(events)
    progress(0.85, "Summing the windows by day")
    return combine(parts), count


def data_key(conn: sqlite3.Connection) -> str:
    """What a ledger computed for one session is kept under: the raw tables' version, the
    latest completed run and the stored ledger's state (its `changed` mark)."""
    with transaction(conn, immediate=False):
        state = sql.ledger_state(conn)
        run = latest_completed_run(conn)
        version = sql.source_version(conn)
    return f"{version} | run {None if run is None else run.id} | {state}"


def rebuild_ledger(
    conn: sqlite3.Connection, progress: Progress = _quiet, source: Source | None = None
) -> LedgerStatus:
    """Derive the ledger (`derive_ledger`) and store it. Marks the ledger as being built
    first, so a raw change while it computes leaves it stale, never silently current
    (with a `source`, its `mark_building` did)."""
    if source is None:
        with transaction(conn):
            sql.begin_build(conn, now=int(time.time()), format_version=FORMAT)
    derived = derive_ledger(conn, progress, source)
    progress(0.9, "Storing the books")
    days = derived.ledger.days
    detail = derived.ledger.unexplained
    with transaction(conn):
        sql.finish_build(
            conn,
            run_id=derived.run_id,
            version=derived.version,
            events=derived.events,
            days=zip(
                [d.isoformat() for d in days["day"]],
                days["line"].astype(str).tolist(),
                days["amount"].astype(np.int64).tolist(),
                days["events"].astype(np.int64).tolist(),
                strict=True,
            ),
            unexplained=zip(
                [d.isoformat() for d in detail["day"]],
                detail["entity_type"].astype(str).tolist(),
                detail["entity_id"].astype(str).tolist(),
                detail["amount"].astype(np.int64).tolist(),
                strict=True,
            ),
        )
    progress(1.0, "Done")
    return ledger_status(conn)


def stored_months(conn: sqlite3.Connection) -> list[str]:
    """The months of the stored ledger, latest first (the caller checked it is current)."""
    return stored_ledger(conn, None).months()


def fallback_months(conn: sqlite3.Connection) -> list[str]:
    """The months to offer while the stored ledger is not current: those it held, and every
    month from the first to the last payment (two index seeks), latest first."""
    months = set(stored_months(conn))
    first, last = sql.payment_span(conn)
    if first is not None and last is not None:
        day = dt.datetime.fromtimestamp(first, tz=IST).date().replace(day=1)
        end = dt.datetime.fromtimestamp(last, tz=IST).date()
        while day <= end:
            months.add(f"{day.year:04d}-{day.month:02d}")
            day = month_bounds(f"{day.year:04d}-{day.month:02d}")[1]
    return sorted(months, reverse=True)


def stored_ledger(conn: sqlite3.Connection, month: str | None) -> Ledger:
    """The stored ledger as read for `month` (its unexplained events up to the month's end;
    None: only the days). Two reads: the day lines (a few thousand rows) and a range of
    the unexplained events on their day index."""
    with transaction(conn, immediate=False):
        days = sql.read_days(conn)
        if month is None:
            through = dt.date.min
            detail = pd.DataFrame(columns=list(sql.UNEXPLAINED_COLUMNS))
        else:
            _, through = month_bounds(month)
            detail = sql.read_unexplained(conn, through.isoformat())
    days["day"] = _dates(days["day"].astype(str))
    detail["day"] = _dates(detail["day"].astype(str))
    days["amount"] = days["amount"].astype(np.int64)
    days["events"] = days["events"].astype(np.int64)
    detail["amount"] = detail["amount"].astype(np.int64)
    days = days.sort_values(["day", "line"], ignore_index=True)
    return Ledger(days=days, unexplained=detail.reset_index(drop=True), through=through)


def ledger_for(conn: sqlite3.Connection, month: str) -> Ledger:
    """The ledger for `month`: the stored one when current, else today's computation (never
    a stale stored one)."""
    if ledger_status(conn).current:
        return stored_ledger(conn, month)
    return derive_ledger(conn).ledger


def rebuild_after_run(
    conn: sqlite3.Connection, progress: Progress | None = None, source: Source | None = None
) -> float:
    """`rebuild_ledger` right after a full run completes (the hooks in core.pipeline and
    core.streamed); the seconds it took, for the run's timings. `progress` is fed from its
    last steps (0.97 to 1.0), after the run's summary.

    An incremental run (`import-day` carrying a base run forward) does not call it:
    deriving the whole ledger again costs ~45 CPU s at 1M payments, far over a day's run.
    It adds the day's change instead (core.books.carry.carry_ledger_forward), when the
    ledger was current before the day; else the ledger names why it is stale (fail closed)
    until a full run, or an admin, derives it again.

    `source`: the raw tables already in memory (`InMemory`) or in the streamed run's window
    store (`Windows`), instead of reading them again (~20 CPU s at 1M payments)."""
    began = time.perf_counter()
    if progress is None:
        rebuild_ledger(conn, source=source)
    else:
        report = progress
        rebuild_ledger(conn, lambda f, m: report(0.97 + 0.03 * f, f"Books: {m}"), source)
    return round(time.perf_counter() - began, 3)
