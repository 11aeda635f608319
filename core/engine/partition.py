"""The engine run by settlement windows (docs/engine.md, *Partitions*).

A window is a run of `days_per_window` consecutive settlement days (IST dates on which at
least one settlement was created). Every row of a Dataset is given to one window:

- Row tables (payments, refunds, recon rows, disputes, transfers) move in *components*:
  union-find over the keys the engine joins on (a recon row's entity_id, transfer_id,
  dispute_id and settlement_id; a dispute's payment_id; an entity's own id). A component
  that holds settlements belongs to the window of its earliest settlement's day; one
  without (payments still awaiting settlement, held rows) to the window of its earliest
  created day. So every checker that reads rows sees all the rows it would see in one run.
- The ledger (settlements, instant settlements and payouts, bank lines) is small (a few
  rows a day) and is what cross-day links need. A window reconciles its own ledger rows
  plus a HALO: every ledger row whose day is within `halo_days` of a day the window owns,
  and the whole exact-link component (UTR, fuzzy, consolidated, payout) of each. With
  `H` = the longest fallback window in calendar days, `halo_days = 3H + 1` bounds every
  chain `link_bank` reads (fuzzy: settlement -> credits up to H later -> settlements up
  to H earlier; consolidated: a day's credits, their fuzzy status, and other days whose
  window holds them), so each owned ledger row gets the outcome the single run gives.
- Each window is reconciled with `core.engine.reconcile.reconcile` and keeps only the
  outcomes of what it owns (halo rows are context, reconciled again by their owner).

`reconcile_partitioned` returns exactly the frame `reconcile` returns (tests prove it on
seeded benchmarks, the spec example and the independent datasets).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.books.pricing import PricingPlan
from core.calendar import WorkingCalendar, ist_dates
from core.dataset import TRANSFER_COLUMNS, Dataset
from core.engine.bank import BankLinks, link_bank
from core.engine.columns import IntArray, ints, lookup, text
from core.engine.context import Context
from core.engine.params import EngineParams

ROW_TABLES: tuple[str, ...] = ("payments", "refunds", "recon", "disputes", "transfers")
LEDGER_TABLES: tuple[str, ...] = ("settlements", "instant_settlements", "instant_payouts", "bank")
NO_DAY = np.iinfo(np.int64).min  # a ledger row with no date (a bank line without txn_date)
DEFAULT_DAYS_PER_WINDOW = 5
# A transfer no row names, added to a window without transfers when the dataset has some
# (the engine reads "no transfers file" from an empty table); `failed`, so no outcome.
SENTINEL_TRANSFER_ID = "\x00partition-sentinel"

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Placement:
    """Rows placed in windows: `row[i]` sits in `window[i]`, which reports its outcome
    when `own[i]`; sorted by window, then row."""

    row: IntArray
    window: IntArray
    own: np.ndarray


@dataclass(frozen=True)
class Assignment:
    """Where every row of one Dataset goes.

    starts: first IST day (days since 1970-01-01) of each window, ascending.
    rows: per row table, where its rows go (`Placement`: a row sits in its component's
        window, which reports its outcome, and a recon row also in its settlement's
        window as evidence; a payment also beside its disputes).
    ledger_owner: per ledger table, the window that reports each row's outcome (-1: none,
        for instant payouts, which have no outcome of their own).
    ledger_day: per ledger table, each row's IST day (NO_DAY when unknown).
    ledger_component: per ledger table, each row's exact-link component (ids shared across
        the four tables).
    halo_days: calendar days of ledger context around every day a window owns.
    has_transfers: the dataset has a transfers table (kept true in every window).
    """

    starts: IntArray
    rows: dict[str, Placement] = field(hash=False)
    ledger_owner: dict[str, IntArray] = field(hash=False)
    ledger_day: dict[str, IntArray] = field(hash=False)
    ledger_component: dict[str, IntArray] = field(hash=False)
    halo_days: int
    has_transfers: bool

    @property
    def windows(self) -> int:
        return len(self.starts)

    def window_rows(self, table: str, window: int) -> tuple[IntArray, np.ndarray]:
        """Positions (ascending) of the rows of `table` window `window` reconciles, and
        whether it reports each one's outcome."""
        placed = self.rows[table]
        lo, hi = np.searchsorted(placed.window, [window, window + 1])
        return placed.row[lo:hi], placed.own[lo:hi]


def _day_numbers(unix_seconds: IntArray) -> IntArray:
    result: IntArray = ist_dates(unix_seconds).astype(np.int64)
    return result


def _bank_day_numbers(bank: pd.DataFrame) -> IntArray:
    dates = pc.cast(text(bank["txn_date"]).cast(pa.string()), pa.date32())
    days = dates.cast(pa.int32()).cast(pa.int64()).fill_null(NO_DAY)
    result: IntArray = np.asarray(days.to_numpy(zero_copy_only=False), dtype=np.int64)
    return result


def settlement_windows(
    dataset: Dataset, days_per_window: int = DEFAULT_DAYS_PER_WINDOW
) -> IntArray:
    """First IST day (days since epoch) of each window: the settlement days (regular and
    instant settlements' created dates), taken `days_per_window` at a time. A dataset with
    no settlement is one window. Reusable by incremental runs: a day d belongs to window
    `window_of_days(starts, d)`."""
    if days_per_window < 1:
        raise ValueError("days_per_window must be at least 1")
    days = np.concatenate(
        [
            _day_numbers(ints(dataset.settlements["created_at"])),
            _day_numbers(ints(dataset.instant_settlements["created_at"])),
        ]
    )
    unique = np.unique(days)
    if len(unique) == 0:
        return np.zeros(1, dtype=np.int64)
    result: IntArray = unique[::days_per_window].astype(np.int64)
    return result


def window_of_days(starts: IntArray, days: IntArray) -> IntArray:
    """The window of each day: the last window starting on or before it (days before the
    first window, and NO_DAY, go to window 0)."""
    found = np.searchsorted(starts, days, side="right") - 1
    result: IntArray = np.clip(found, 0, len(starts) - 1).astype(np.int64)
    return result


def components(size: int, left: IntArray, right: IntArray) -> IntArray:
    """Connected components of an undirected graph on `size` nodes with edges
    (left[i], right[i]): each node's label is the smallest node of its component.
    Hooking by minimum and pointer jumping, whole-array (no Python loop per edge)."""
    labels = np.arange(size, dtype=np.int64)
    if len(left) == 0:
        return labels
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    while True:
        lu, lv = labels[left], labels[right]
        differ = lu != lv
        if not differ.any():
            return labels
        lu, lv = lu[differ], lv[differ]
        low = np.minimum(lu, lv)
        np.minimum.at(labels, lu, low)
        np.minimum.at(labels, lv, low)
        while True:
            jumped = labels[labels]
            if np.array_equal(jumped, labels):
                break
            labels = jumped


class _Keys:
    """Dense node numbers for the string keys of several namespaces."""

    def __init__(self) -> None:
        self.chunks: list[pa.Array] = []
        self.namespace: list[str] = []

    def add(self, namespace: str, values: pd.Series | pa.Array) -> int:
        self.chunks.append(text(values))
        self.namespace.append(namespace)
        return len(self.chunks) - 1

    def encode(self, blank_is_key: bool = False) -> tuple[list[IntArray], int]:
        """Per chunk, each value's node (-1 for null or blank, or with `blank_is_key` for
        null or empty only); and the node count."""
        codes: list[IntArray] = [np.zeros(0, dtype=np.int64)] * len(self.chunks)
        total = 0
        for name in dict.fromkeys(self.namespace):
            members = [i for i, n in enumerate(self.namespace) if n == name]
            joined = pa.chunked_array([self.chunks[i] for i in members], type=pa.large_string())
            trimmed = joined if blank_is_key else pc.utf8_trim_whitespace(joined)
            blank = pc.equal(trimmed, "").fill_null(True)
            encoded = pc.dictionary_encode(joined).combine_chunks()
            indices = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
            indices = np.where(np.asarray(blank.to_numpy(zero_copy_only=False)), -1, indices)
            indices = np.where(indices >= 0, indices + total, -1).astype(np.int64)
            total += len(encoded.dictionary)
            start = 0
            for i in members:
                codes[i] = indices[start : start + len(self.chunks[i])]
                start += len(self.chunks[i])
        return codes, total


# Which keys join rows into one unit (docs/engine.md, *Shared with the partitioner*): per
# row table, (column, namespace) pairs; values of one namespace are one key space ("E":
# payment, refund and transfer ids, which recon rows name by entity_id; "D": dispute ids).
KeyJoins = dict[str, tuple[tuple[str, str], ...]]
# The partitioner's: identity keys only (a settlement's rows meet it in its own window; a
# dispute's payment is placed beside it separately, in `assign`).
PARTITION_JOINS: KeyJoins = {
    "recon": (("entity_id", "E"), ("transfer_id", "E"), ("dispute_id", "D")),
    "payments": (("id", "E"),),
    "refunds": (("id", "E"),),
    "transfers": (("id", "E"),),
    "disputes": (("id", "D"),),
}


def row_families(
    tables: dict[str, pd.DataFrame], joins: KeyJoins = PARTITION_JOINS, blank_is_key: bool = False
) -> tuple[dict[str, IntArray], int]:
    """Each row's family: the connected components of rows joined by a shared key (a
    null or blank value is no key; with `blank_is_key` only null and empty are none),
    over the tables and (column, namespace) pairs of `joins`. Returns per table each
    row's label, and the label count (labels < count; a row with no key is a family of its
    own). The one definition of a family: the partitioner (`assign`, PARTITION_JOINS) and
    the incremental runs (core.engine.incremental.FAMILY_JOINS, a superset) both call it."""
    keys = _Keys()
    chunk_of: dict[str, list[int]] = {}
    for table, pairs in joins.items():
        frame = tables[table]
        chunk_of[table] = [keys.add(namespace, frame[column]) for column, namespace in pairs]
    codes, n_keys = keys.encode(blank_is_key)
    # Nodes: every key, then one per row of each table with several key columns (a table
    # with one key column takes its key's component: no node of its own).
    node_start: dict[str, int] = {}
    total = n_keys
    lefts: list[IntArray] = []
    rights: list[IntArray] = []
    for table, chunks in chunk_of.items():
        if len(chunks) < 2:
            continue
        size = len(tables[table])
        node_start[table] = total
        row_node = total + np.arange(size, dtype=np.int64)
        total += size
        for chunk in chunks:
            key = codes[chunk]
            has = key >= 0
            lefts.append(row_node[has])
            rights.append(key[has])
    no_edges = np.zeros(0, dtype=np.int64)
    labels = components(
        total,
        np.concatenate(lefts) if lefts else no_edges,
        np.concatenate(rights) if rights else no_edges,
    )
    fresh = total
    rows: dict[str, IntArray] = {}
    for table, chunks in chunk_of.items():
        size = len(tables[table])
        if table in node_start:
            start = node_start[table]
            rows[table] = labels[start : start + size]
            continue
        # An entity whose own id is blank is a family of its own (numbered past all).
        key = codes[chunks[0]] if chunks else np.full(size, -1, dtype=np.int64)
        own = fresh + np.arange(size, dtype=np.int64)
        fresh += size
        rows[table] = np.where(key >= 0, labels[np.maximum(key, 0)], own)
    return rows, fresh


def _row_components(dataset: Dataset) -> tuple[dict[str, IntArray], int]:
    """Component of every row-table row: `row_families` with PARTITION_JOINS (entity ids
    and transfer ids in one namespace, dispute ids in another). Settlement ids are not
    joined: a settlement's rows meet it in its own window (their home)."""
    return row_families({table: getattr(dataset, table) for table in ROW_TABLES})


def ledger_links(dataset: Dataset, params: EngineParams, as_of: int) -> BankLinks | None:
    """The single run's bank links, computed on the ledger alone (link_bank reads no row
    table); None without a bank statement."""
    ledger = Dataset(
        settlements=dataset.settlements,
        bank=dataset.bank,
        has_bank_statement=dataset.has_bank_statement,
        instant_settlements=dataset.instant_settlements,
        instant_payouts=dataset.instant_payouts,
    )
    if not dataset.has_bank_statement:
        return None
    return link_bank(Context.build(ledger, params, as_of))


def _ledger_components(dataset: Dataset, links: BankLinks | None) -> dict[str, IntArray]:
    """Exact-link components over settlements, instant settlements, payouts and lines."""
    m = len(dataset.settlements)
    i = len(dataset.instant_settlements)
    p = len(dataset.instant_payouts)
    b = len(dataset.bank)
    base_i, base_p, base_b = m, m + i, m + i + p
    lefts: list[IntArray] = []
    rights: list[IntArray] = []
    owner = lookup(
        dataset.instant_payouts["instant_settlement_id"], dataset.instant_settlements["id"]
    )
    has = owner >= 0
    lefts.append(base_p + np.flatnonzero(has))
    rights.append(base_i + owner[has])
    if links is not None:
        line = np.asarray(links.line, dtype=np.int64)
        linked = np.flatnonzero(line >= 0)
        lefts.append(base_b + linked)
        rights.append(line[linked])
        for ln, members in links.line_settlements.items():
            lefts.append(np.full(len(members), base_b + int(ln), dtype=np.int64))
            rights.append(np.asarray(members, dtype=np.int64))
        payout = links.line_payout
        if payout is not None:
            to_payout = np.flatnonzero(np.asarray(payout) >= 0)
            lefts.append(base_b + to_payout)
            rights.append(base_p + np.asarray(payout, dtype=np.int64)[to_payout])
    labels = components(m + i + p + b, np.concatenate(lefts), np.concatenate(rights))
    return {
        "settlements": labels[:m],
        "instant_settlements": labels[base_i:base_p],
        "instant_payouts": labels[base_p:base_b],
        "bank": labels[base_b:],
    }


def halo_days(dataset: Dataset, params: EngineParams) -> int:
    """3H + 1 calendar days, H the longest fallback window (settlement day to its last
    working day for a credit) over the dataset's settlements."""
    days = ist_dates(ints(dataset.settlements["created_at"]))
    if len(days) == 0:
        return 1
    calendar = WorkingCalendar(params.calendar.holidays)
    ends = calendar.add_working_days_array(days, params.window_days)
    span = int((ends.astype(np.int64) - days.astype(np.int64)).max())
    return 3 * max(span, 0) + 1


def _placements(rows: IntArray, windows: IntArray, own: np.ndarray) -> Placement:
    """(row, window, own) triples without repeats, sorted by window then row; a row placed
    twice in one window keeps own=True if either placement owns it."""
    table = pd.DataFrame({"window": windows, "row": rows, "own": own.astype(bool)})
    table = table.sort_values(["window", "row", "own"], ascending=[True, True, False])
    table = table.drop_duplicates(["window", "row"], keep="first")
    return Placement(
        row=table["row"].to_numpy(dtype=np.int64),
        window=table["window"].to_numpy(dtype=np.int64),
        own=table["own"].to_numpy(dtype=bool),
    )


def assign(
    dataset: Dataset,
    params: EngineParams,
    as_of: int,
    days_per_window: int = DEFAULT_DAYS_PER_WINDOW,
) -> Assignment:
    """Give every row of `dataset` to its settlement windows (module docstring)."""
    starts = settlement_windows(dataset, days_per_window)
    component, size = _row_components(dataset)
    s_day = _day_numbers(ints(dataset.settlements["created_at"]))
    i_day = _day_numbers(ints(dataset.instant_settlements["created_at"]))
    s_window = window_of_days(starts, s_day)
    i_window = window_of_days(starts, i_day)
    # A recon row's home: the window of the settlement (regular or instant) it names.
    rec = dataset.recon
    regular = lookup(rec["settlement_id"], dataset.settlements["id"])
    instant = lookup(rec["settlement_id"], dataset.instant_settlements["id"])
    home = np.where(
        regular >= 0,
        s_window[np.maximum(regular, 0)] if len(s_window) else -1,
        np.where(instant >= 0, i_window[np.maximum(instant, 0)] if len(i_window) else -1, -1),
    ).astype(np.int64)
    # A component's owner: its rows' earliest home, else the window of its earliest day.
    big = np.iinfo(np.int64).max
    first_home = np.full(size, big, dtype=np.int64)
    housed = home >= 0
    np.minimum.at(first_home, component["recon"][housed], home[housed])
    created_day = np.full(size, big, dtype=np.int64)
    for table in ROW_TABLES:
        column = getattr(dataset, table)["created_at"]
        known = ~column.isna().to_numpy(dtype=bool)
        days = _day_numbers(ints(column))
        np.minimum.at(created_day, component[table][known], days[known])
    by_day = window_of_days(starts, np.where(created_day < big, created_day, 0))
    owner = np.where(first_home < big, first_home, np.where(created_day < big, by_day, 0))
    placements: dict[str, Placement] = {}
    for table in ROW_TABLES:
        n = len(getattr(dataset, table))
        positions = np.arange(n, dtype=np.int64)
        windows = [owner[component[table]]]
        rows = [positions]
        owns = [np.ones(n, dtype=bool)]
        if table == "recon":  # a row also sits in its settlement's window, as its evidence
            rows.append(positions[housed])
            windows.append(home[housed])
            owns.append(owner[component[table]][housed] == home[housed])
        if table == "payments" and len(dataset.disputes):
            # A dispute shows its payment's order_id: the payment sits beside it too.
            paid = lookup(dataset.disputes["payment_id"], dataset.payments["id"])
            has = paid >= 0
            rows.append(paid[has])
            windows.append(owner[component["disputes"]][has])
            owns.append(np.zeros(int(has.sum()), dtype=bool))
        placements[table] = _placements(
            np.concatenate(rows), np.concatenate(windows), np.concatenate(owns)
        )

    links = ledger_links(dataset, params, as_of)
    bank_day = _bank_day_numbers(dataset.bank)
    payout_day = _day_numbers(
        np.where(
            dataset.instant_payouts["processed_at"].isna().to_numpy(dtype=bool),
            ints(dataset.instant_payouts["created_at"]),
            ints(dataset.instant_payouts["processed_at"]),
        )
    )
    ledger_owner = {
        "settlements": s_window.astype(np.int64),
        "instant_settlements": i_window.astype(np.int64),
        "instant_payouts": np.full(len(dataset.instant_payouts), -1, dtype=np.int64),
        "bank": np.where(bank_day == NO_DAY, 0, window_of_days(starts, bank_day)).astype(np.int64),
    }
    return Assignment(
        starts=starts,
        rows=placements,
        ledger_owner=ledger_owner,
        ledger_day={
            "settlements": s_day,
            "instant_settlements": i_day,
            "instant_payouts": payout_day,
            "bank": bank_day,
        },
        ledger_component=_ledger_components(dataset, links),
        halo_days=halo_days(dataset, params),
        has_transfers=len(dataset.transfers) > 0,
    )


def ledger_selection(
    owner: dict[str, IntArray],
    day: dict[str, IntArray],
    component: dict[str, IntArray],
    halo: int,
    window: int,
    context: dict[str, IntArray] | None = None,
) -> dict[str, IntArray]:
    """Positions of the ledger rows window `window` reconciles: the rows it owns, every
    row dated within `halo` days of an owned row's day, the settlements its recon rows
    name (`context`: positions per table), and their whole exact-link components
    (instant settlements bring their payouts the same way)."""
    anchors = np.unique(
        np.concatenate([day[t][(owner[t] == window) & (day[t] != NO_DAY)] for t in LEDGER_TABLES])
    )
    chosen: dict[str, np.ndarray] = {}
    for t in LEDGER_TABLES:
        near = np.zeros(len(day[t]), dtype=bool)
        if len(anchors):
            at = np.searchsorted(anchors, day[t])
            after = anchors[np.minimum(at, len(anchors) - 1)]
            before = anchors[np.maximum(at - 1, 0)]
            gap = np.minimum(np.abs(after - day[t]), np.abs(day[t] - before))
            near = (day[t] != NO_DAY) & (gap <= halo)
        chosen[t] = near | (owner[t] == window)
        if context is not None and t in context:
            chosen[t][context[t]] = True
    touched = np.unique(np.concatenate([component[t][chosen[t]] for t in LEDGER_TABLES]))
    return {
        t: np.flatnonzero(chosen[t] | np.isin(component[t], touched)).astype(np.int64)
        for t in LEDGER_TABLES
    }


@dataclass(frozen=True)
class Owned:
    """The outcomes a window reports: entity ids (Arrow large_string) by entity type.
    Everything else it reconciles is context, reported by its own window."""

    ids: dict[str, pa.Array] = field(hash=False)


def _take(frame: pd.DataFrame, positions: IntArray) -> pd.DataFrame:
    if len(positions) == len(frame) and np.array_equal(positions, np.arange(len(frame))):
        return frame
    return frame.iloc[positions].reset_index(drop=True)


def _ids(frame: pd.DataFrame, mask: np.ndarray, column: str = "id") -> pa.Array:
    values = text(frame[column]).filter(pa.array(np.asarray(mask, dtype=bool)))
    return pc.unique(values.drop_null())


def named_settlements(recon: pd.DataFrame, ledger: dict[str, pd.DataFrame]) -> dict[str, IntArray]:
    """Positions of the settlements and instant settlements a window's recon rows name
    (context: a row naming a known settlement is settled, and shows its UTR)."""
    named = pc.unique(text(recon["settlement_id"]).drop_null())
    result: dict[str, IntArray] = {}
    for table in ("settlements", "instant_settlements"):
        found = pc.is_in(text(ledger[table]["id"]), value_set=named).fill_null(False)
        result[table] = np.flatnonzero(found.to_numpy(zero_copy_only=False)).astype(np.int64)
    return result


def build_window(
    rows: dict[str, pd.DataFrame],
    own: dict[str, np.ndarray],
    ledger: dict[str, pd.DataFrame],
    owned_ledger: dict[str, np.ndarray],
    *,
    has_bank_statement: bool,
    has_transfers: bool,
) -> tuple[Dataset, Owned]:
    """A window's Dataset from its row tables and its ledger selection, and what it
    reports: `own[t]` / `owned_ledger[t]` mark, per row, whether this window reports it."""
    transfers = rows["transfers"]
    if has_transfers and len(transfers) == 0:
        sentinel: dict[str, list[Any]] = {name: [None] for name in TRANSFER_COLUMNS}
        sentinel.update(
            id=[SENTINEL_TRANSFER_ID],
            amount=[0],
            status=["failed"],
            on_hold=[False],
            created_at=[0],
        )
        transfers = pd.DataFrame(sentinel).astype(TRANSFER_COLUMNS)
    dataset = Dataset(
        payments=rows["payments"],
        refunds=rows["refunds"],
        recon=rows["recon"],
        disputes=rows["disputes"],
        transfers=transfers,
        settlements=ledger["settlements"],
        instant_settlements=ledger["instant_settlements"],
        instant_payouts=ledger["instant_payouts"],
        bank=ledger["bank"],
        has_bank_statement=has_bank_statement,
    )
    recon_ids = _ids(rows["recon"], own["recon"], "entity_id")
    ids = {
        "payment": _ids(rows["payments"], own["payments"]),
        "refund": _ids(rows["refunds"], own["refunds"]),
        # Without a transfers file a transfer's outcome is named by its recon rows.
        "transfer": pa.concat_arrays(
            [_ids(rows["transfers"], own["transfers"]).cast(pa.large_string()), recon_ids]
        ),
        "dispute": _ids(rows["disputes"], own["disputes"]),
        "recon_row": recon_ids,
        "settlement": _ids(ledger["settlements"], owned_ledger["settlements"]),
        "instant_settlement": _ids(
            ledger["instant_settlements"], owned_ledger["instant_settlements"]
        ),
        "bank_entry": _ids(ledger["bank"], owned_ledger["bank"]),
    }
    return dataset, Owned(ids)


def window_dataset(dataset: Dataset, assignment: Assignment, window: int) -> tuple[Dataset, Owned]:
    """Window `window`'s Dataset (its rows, their evidence, its ledger and the halo) and
    what it reports."""
    rows: dict[str, pd.DataFrame] = {}
    own: dict[str, np.ndarray] = {}
    for table in ROW_TABLES:
        positions, owns = assignment.window_rows(table, window)
        rows[table] = _take(getattr(dataset, table), positions)
        own[table] = owns
    picked = ledger_selection(
        assignment.ledger_owner,
        assignment.ledger_day,
        assignment.ledger_component,
        assignment.halo_days,
        window,
        named_settlements(rows["recon"], {t: getattr(dataset, t) for t in LEDGER_TABLES}),
    )
    ledger = {t: _take(getattr(dataset, t), picked[t]) for t in LEDGER_TABLES}
    owned = {t: assignment.ledger_owner[t][picked[t]] == window for t in LEDGER_TABLES}
    return build_window(
        rows,
        own,
        ledger,
        owned,
        has_bank_statement=dataset.has_bank_statement,
        has_transfers=assignment.has_transfers,
    )


def keep_owned(outcomes: pd.DataFrame, owned: Owned) -> pd.DataFrame:
    """The outcomes a window reports; the rest it reconciled as context."""
    kind = text(outcomes["entity_type"])
    ids = text(outcomes["entity_id"])
    keep = np.zeros(len(outcomes), dtype=bool)
    for entity_type, mine in owned.ids.items():
        of_type = np.asarray(pc.equal(kind, entity_type).fill_null(False).to_numpy(False))
        if of_type.any():
            found = pc.is_in(ids, value_set=mine.cast(pa.large_string())).fill_null(False)
            keep |= of_type & np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)
    return outcomes[keep].reset_index(drop=True)


def combine(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Windows' outcomes as one frame, sorted as `reconcile` sorts (entity_type, then
    entity_id, byte order)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        raise ValueError("no outcomes to combine")
    joined = pd.concat(frames, ignore_index=True)
    table = pa.table(
        {
            "entity_type": text(joined["entity_type"]),
            "entity_id": text(joined["entity_id"]),
        }
    )
    order = pc.sort_indices(
        table, sort_keys=[("entity_type", "ascending"), ("entity_id", "ascending")]
    ).to_numpy()
    return joined.take(order).reset_index(drop=True)


def reconcile_window(
    dataset: Dataset,
    owned: Owned,
    params: EngineParams,
    as_of: int,
    pricing: tuple[PricingPlan, ...] = (),
    threads: int | None = None,
) -> pd.DataFrame:
    """Reconcile one window's Dataset and keep what it owns. `threads`: the engine's
    threads (None: its default; a Dask worker that is already one of several passes 1)."""
    from core.engine.reconcile import ENGINE_THREADS, reconcile

    chosen = ENGINE_THREADS if threads is None else threads
    return keep_owned(reconcile(dataset, params, as_of, pricing, threads=chosen), owned)


def reconcile_partitioned(
    dataset: Dataset,
    params: EngineParams,
    as_of: int,
    pricing: tuple[PricingPlan, ...] = (),
    days_per_window: int = DEFAULT_DAYS_PER_WINDOW,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """`reconcile`, window by window, in this process: the same frame. `progress(done,
    total)` is called after each window."""
    assignment = assign(dataset, params, as_of, days_per_window)
    frames = []
    for window in range(assignment.windows):
        sub, owned = window_dataset(dataset, assignment, window)
        frames.append(reconcile_window(sub, owned, params, as_of, pricing))
        if progress is not None:
            progress(window + 1, assignment.windows)
    return combine(frames)


__all__ = [
    "DEFAULT_DAYS_PER_WINDOW",
    "Assignment",
    "Owned",
    "assign",
    "build_window",
    "combine",
    "components",
    "halo_days",
    "keep_owned",
    "ledger_selection",
    "named_settlements",
    "reconcile_partitioned",
    "reconcile_window",
    "settlement_windows",
    "window_dataset",
    "window_of_days",
]
