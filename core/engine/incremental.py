"""Incremental runs: re-reconcile only what a day's new rows (and the passage of time) can
change, carry every other outcome forward from the previous run (docs/engine.md,
*Incremental runs*).

API (pure: no SQL, no files):

- `merge_rows(stored, day) -> (merged, replaced)`: the day's rows upserted into the stored
  dataset by key (a row with a stored key replaces it: a correction), and the stored
  versions the day replaced.
- `plan_incremental(merged, day, replaced, previous, params, as_of) -> Plan`: the affected
  set (`Plan.keep`: the outcome keys to decide again) and the sub-dataset that decides
  them exactly (`Plan.subset`).
- `reconcile_incremental(...) -> IncrementalResult`: the plan, the engine over the
  sub-dataset, and the previous run's outcomes for everything else; identical to
  `reconcile(merged, ...)` (tests/test_engine_incremental.py proves it on random daily
  loads).
- `needs_full_run(stored, merged, ...) -> str | None`: why an incremental run cannot be
  trusted (a global switch of the engine flipped), else None.
- `build_state(dataset) -> IncrementalState`: each row's family (`core.engine.partition.
  row_families` over FAMILY_JOINS) and a fingerprint index of family keys, made after a
  full run; `reconcile_incremental(..., state=)` uses it for the closure and returns the
  next day's (`IncrementalResult.state`). Outcomes are the same with or without it.

Why the affected set is enough. An outcome depends on (docs/engine.md):
- a payment, refund, transfer, dispute or unknown recon row: the rows of its *family*
  (the entity, its recon rows by entity_id, refunds and disputes and transfers of the
  payment, dispute rows by dispute_id; see `_family_keys`), the settlements those rows
  name (existence and UTR only), the instant settlements, the calendar and as_of;
- a settlement: its own row, every recon row naming it (the sum), the credits linked to
  it, and, through `fuzzy_utr` / `consolidated`, every *fallback candidate* (settlements
  no credit carries the UTR of, credits linked to no UTR);
- a bank credit: its line, the settlement(s) it is linked to, the fallback candidates.
So the affected set is the closure of: every key the day's rows (new and replaced
versions) carry; every outcome of the previous run the as-of can move (a settlement's or
credit's: any status but MATCHED; a family's: PENDING, or an EXCEPTION with
MISSING_RECONCILIATION_RECORD or REFUND_REVERSAL_MISSING, see `_Previous`) or that was
matched by a fallback; every fallback candidate; the families whose rows name a settlement
the day changed; and the settlements and credits linked, in the previous run or now, to
anything affected. A MATCHED outcome (or family exception) outside it saw none of its
inputs change and does not depend on as_of.
The sub-dataset adds what those outcomes read: every recon row of an affected settlement,
the settlements affected rows name, and, so that UTR links and fallback candidates come
out as in the full dataset, each included settlement's and credit's linked counterparts.
Outcomes the engine gives the sub-dataset's other rows (a recon row read for a sum
without its payment looks unknown) are dropped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.books.pricing import PricingPlan
from core.dataset import DATASET_TABLES, OUTCOME_COLUMNS, RECON_COLUMNS, Dataset
from core.engine.bank import BankLinks, link_bank
from core.engine.columns import BoolArray, IntArray, ints, lookup, text
from core.engine.context import Context
from core.engine.params import EngineParams
from core.engine.part import M_UTR
from core.engine.partition import KeyJoins, row_families
from core.engine.reconcile import reconcile

# Each table's key: a day's row with a stored key replaces the stored row.
TABLE_KEYS: dict[str, str] = {
    "payments": "id",
    "refunds": "id",
    "settlements": "id",
    "recon": "row_key",
    "bank": "id",
    "instant_settlements": "id",
    "instant_payouts": "id",
    "disputes": "id",
    "transfers": "id",
}
# Family key columns per table. Ids of payments, refunds and transfers share one namespace
# (a recon row names any of them by entity_id); dispute ids get a prefix of their own.
DISPUTE_PREFIX = "\x00dispute:"
FAMILY_COLUMNS: dict[str, tuple[str, ...]] = {
    "payments": ("id",),
    "refunds": ("id", "payment_id"),
    "recon": ("entity_id", "payment_id", "transfer_id", "dispute_id"),
    "disputes": ("id", "payment_id"),
    "transfers": ("id", "source"),
}


def _is_dispute_key(table: str, column: str) -> bool:
    return (table == "recon" and column == "dispute_id") or (table == "disputes" and column == "id")


# The same joins for `core.engine.partition.row_families`, the one definition of a family
# (the partitioner calls it with its own, narrower PARTITION_JOINS): "D" is the dispute
# namespace (DISPUTE_PREFIX here), "E" every other id.
FAMILY_JOINS: KeyJoins = {
    table: tuple((column, "D" if _is_dispute_key(table, column) else "E") for column in names)
    for table, names in FAMILY_COLUMNS.items()
}
FAMILY_ENTITY_TYPES = ("payment", "refund", "recon_row", "transfer")
FALLBACK_METHODS = ("fuzzy_utr", "consolidated")
# The codes the as-of moves an entity to once overdue: an entity with no recon row, and a
# failed refund a settlement debited whose money has not come back.
TIMED_CODES: tuple[str, ...] = ("MISSING_RECONCILIATION_RECORD", "REFUND_REVERSAL_MISSING")
_TIMED = "|".join(TIMED_CODES)  # a regular expression: either code
_EMPTY = pa.scalar("", pa.large_string())


@dataclass(frozen=True)
class Plan:
    """What an incremental run decides again.

    subset: the sub-dataset the engine reconciles. keep: the outcome keys taken from that
    run (entity_type -> entity ids); every other key keeps the previous run's outcome.
    stats: counts for the run's report (affected entities per kind, sub-dataset rows).
    """

    subset: Dataset
    keep: dict[str, pa.Array]
    stats: dict[str, int] = field(default_factory=dict)
    members: dict[str, BoolArray] = field(default_factory=dict)


@dataclass(frozen=True)
class IncrementalState:
    """What one run leaves the next incremental run: every family-table row's family (the
    connected components of FAMILY_JOINS, `core.engine.partition.row_families`) in one
    dataset, and that dataset's row keys in order, so a later run can check its stored
    rows are the same rows in the same places (`matches`).

    keys: table -> its rows' keys (TABLE_KEYS), in row order. joined: table -> the
    FAMILY_JOINS columns the families were computed from. family: table -> each row's
    family label (every label < families). key_print, key_family: the index from a family
    key to its family: a 64-bit fingerprint of every key a row carries (`_fingerprints`;
    dispute ids with DISPUTE_PREFIX), sorted, and the family of each (two keys with one
    fingerprint only make a looked-up family set larger, never smaller). Made by
    `build_state(dataset)` (after a full run) or returned by `reconcile_incremental(...,
    state=...)` for the merged dataset. Immutable: the arrays are never written after
    construction."""

    keys: dict[str, pa.ChunkedArray] = field(hash=False)
    family: dict[str, IntArray] = field(hash=False)
    families: int
    joined: dict[str, tuple[pa.ChunkedArray, ...]] = field(hash=False)
    key_print: npt.NDArray[np.uint64] = field(hash=False)
    key_family: IntArray = field(hash=False)

    def families_of(self, seeds: pa.Array) -> BoolArray:
        """Per family label: does one of `seeds` (family keys) belong to it."""
        prints = np.sort(_fingerprints(seeds))  # sorted probes: cache-friendly searches
        low = np.searchsorted(self.key_print, prints, side="left")
        high = np.searchsorted(self.key_print, prints, side="right")
        counts = high - low
        first = np.repeat(low - (np.cumsum(counts) - counts), counts)
        entries = first + np.arange(int(counts.sum()), dtype=np.int64)
        affected = np.zeros(self.families, dtype=bool)
        affected[self.key_family[entries]] = True
        return affected

    def matches(self, merged: Dataset, day: Dataset, replaced: Dataset) -> bool:
        """True when this state describes the stored dataset `merged` was made of (by
        `merge_rows(stored, day)`): the same rows (keys, in order, and no more: merged adds
        exactly the day's new keys after them) with the same join columns, except the
        rows the day replaced."""
        for table, keys in self.keys.items():
            frame: pd.DataFrame = getattr(merged, table)
            new = getattr(day, table)
            added = len(_new_keys(new, table, replaced)) if len(new) else 0
            if len(frame) - added != len(keys) or len(self.family[table]) != len(keys):
                return False
            now = _keys(frame, table).slice(0, len(keys))
            if not now.equals(keys):
                return False
            columns = [_chunks(frame[c]).slice(0, len(keys)) for c, _ in FAMILY_JOINS[table]]
            if all(a.equals(b) for a, b in zip(columns, self.joined[table], strict=True)):
                continue
            if len(getattr(replaced, table)) == 0:
                return False
            # Corrected rows differ by design: compare the others.
            other = pc.invert(pc.is_in(keys, value_set=_keys(new, table).combine_chunks()))
            for a, b in zip(columns, self.joined[table], strict=True):
                if not a.filter(other).equals(b.filter(other)):
                    return False
        return True


def build_state(dataset: Dataset) -> IncrementalState:
    """The state a full run over `dataset` leaves for the next incremental run."""
    tables = {table: getattr(dataset, table) for table in FAMILY_JOINS}
    family, families = row_families(tables, FAMILY_JOINS, blank_is_key=True)
    keys = {table: _keys(frame, table) for table, frame in tables.items()}
    prints, labels = _key_entries(_family_columns_of(tables), family)
    order = np.argsort(prints, kind="stable")
    return IncrementalState(
        keys=keys,
        family=family,
        families=families,
        joined=_joined(tables),
        key_print=prints[order],
        key_family=labels[order],
    )


def state_arrays(state: IncrementalState) -> dict[str, pa.Array]:
    """The state as three flat arrays, for a snapshot file (core.snapshots): `family`
    (every family table's labels, FAMILY_JOINS order, one after another), `key_print`
    and `key_family`. The keys and join columns are not written: they are the dataset's
    own columns, which the snapshot holds beside it (`state_from_arrays`)."""
    family = [state.family[t] for t in FAMILY_JOINS]
    return {
        "family": pa.array(np.concatenate([np.zeros(0, np.int64), *family]), pa.int64()),
        "key_print": pa.array(state.key_print, pa.uint64()),
        "key_family": pa.array(state.key_family, pa.int64()),
    }


def state_from_arrays(
    dataset: Dataset, families: int, arrays: dict[str, pa.Array | pa.ChunkedArray]
) -> IncrementalState | None:
    """The state `state_arrays` wrote for `dataset` (the snapshot's own dataset), or None
    when the arrays cannot describe it (sizes, labels out of range, an unsorted index):
    a run then goes without a state, exactly, as after a full run from the tables."""
    tables = {table: getattr(dataset, table) for table in FAMILY_JOINS}

    def ints_of(name: str, dtype: type) -> npt.NDArray[Any] | None:
        values = arrays.get(name)
        if values is None or values.null_count:
            return None
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=dtype)

    labels = ints_of("family", np.int64)
    key_print = ints_of("key_print", np.uint64)
    key_family = ints_of("key_family", np.int64)
    if labels is None or key_print is None or key_family is None:
        return None
    sizes = [len(frame) for frame in tables.values()]
    if len(labels) != sum(sizes) or len(key_print) != len(key_family) or families < 0:
        return None
    for values in (labels, key_family):
        if len(values) and (values.min() < 0 or values.max() >= families):
            return None
    if len(key_print) > 1 and bool((key_print[1:] < key_print[:-1]).any()):
        return None
    bounds = np.cumsum([0, *sizes])
    family = {t: labels[bounds[i] : bounds[i + 1]] for i, t in enumerate(tables)}
    return IncrementalState(
        keys={table: _keys(frame, table) for table, frame in tables.items()},
        family=family,
        families=int(families),
        joined=_joined(tables),
        key_print=key_print,
        key_family=key_family,
    )


def _joined(tables: dict[str, pd.DataFrame]) -> dict[str, tuple[pa.ChunkedArray, ...]]:
    return {t: tuple(_chunks(tables[t][c]) for c, _ in FAMILY_JOINS[t]) for t in FAMILY_JOINS}


def _key_entries(
    columns: dict[str, tuple[int, list[_KeyColumn]]], family: dict[str, IntArray]
) -> tuple[npt.NDArray[np.uint64], IntArray]:
    """(fingerprint, family) of every key every row carries, unsorted."""
    prints: list[npt.NDArray[np.uint64]] = [np.zeros(0, dtype=np.uint64)]
    labels: list[IntArray] = [np.zeros(0, dtype=np.int64)]
    for name, (_, keys) in columns.items():
        for column in keys:
            prints.append(_fingerprints(column.keys))
            labels.append(family[name] if column.rows is None else family[name][column.rows])
    return np.concatenate(prints), np.concatenate(labels)


_MIX = tuple(
    np.uint64(v)
    for v in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x27D4EB2F165667C5)
)


def _fingerprints(values: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.uint64]:
    """A 64-bit fingerprint of each string (non-null) from its length and its first,
    middle and last 8 bytes, read from Arrow's buffers in numpy (as core.ingest.convert's
    duplicate check does). Equal strings get equal fingerprints; unequal ones may share
    one, which only makes a family lookup find more families (never fewer)."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [np.zeros(0, dtype=np.uint64)]
    for chunk in chunks:
        if not pa.types.is_large_string(chunk.type):
            chunk = chunk.cast(pa.large_string())
        if len(chunk) == 0:
            continue
        _, offsets_buffer, data_buffer = chunk.buffers()
        offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[
            chunk.offset : chunk.offset + len(chunk) + 1
        ]
        base = int(offsets[0])
        data = np.zeros(int(offsets[-1]) - base + 8, dtype=np.uint8)
        if data_buffer is not None:
            data[: len(data) - 8] = np.frombuffer(data_buffer, dtype=np.uint8)[
                base : int(offsets[-1])
            ]
        # Every (unaligned) 8-byte little-endian word: words[p] holds bytes p..p+7.
        words = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
        starts = offsets[:-1] - base
        lengths = offsets[1:] - offsets[:-1]
        short = np.minimum(lengths, 7).astype(np.uint64) * np.uint64(8)
        mask = np.where(lengths >= 8, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << short) - 1)
        first = words[starts] & mask
        middle = np.where(lengths > 16, words[starts + np.maximum(lengths - 8, 0) // 2], 0)
        last = np.where(lengths > 8, words[starts + np.maximum(lengths - 8, 0)], 0)
        mixed = (
            first * _MIX[0]
            ^ middle.astype(np.uint64) * _MIX[1]
            ^ last.astype(np.uint64) * _MIX[2]
            ^ lengths.astype(np.uint64) * _MIX[3]
        )
        mixed ^= mixed >> np.uint64(31)
        parts.append(mixed * _MIX[1])
    return np.concatenate(parts)


@dataclass(frozen=True)
class IncrementalResult:
    """plan: what was re-reconciled; stats: plan.stats plus `reconciled` (outcomes decided
    again) and `carried_forward` (outcomes taken from the previous run); cpu_seconds: this
    process's CPU seconds per step (plan, reconcile of the sub-dataset, carry forward: the
    key mask that splits the previous run), state: the next run's IncrementalState (for the
    merged dataset) when one was given.
    fresh, carried: the outcomes decided again (sorted as `reconcile` sorts) and which rows
    of `previous` (the previous run's frame) were carried forward, so a store can copy
    carried rows from the previous run instead of writing them (None after a full run).
    `outcomes`, the full frame (as `reconcile` over the merged dataset gives it), is built
    from those three on first use and kept: a run that stores or snapshots only the split
    never allocates the ~1M-row frame (docs/engine.md, *The carried frame on demand*)."""

    plan: Plan
    stats: dict[str, int]
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    state: IncrementalState | None = None
    fresh: pd.DataFrame | None = field(default=None, compare=False)
    carried: BoolArray | None = field(default=None, compare=False)
    previous: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    whole: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def outcomes(self) -> pd.DataFrame:
        """The full outcome frame: the full run's own (`whole`), else the fresh rows merged
        among the carried previous ones (built once, on first use)."""
        if self.whole is not None:
            return self.whole
        if self.fresh is None or self.carried is None or self.previous is None:
            raise ValueError("an incremental result without its outcomes or their parts")
        return _combined(self.fresh, self.previous, self.carried)

    def outcome_count(self) -> int:
        """len(outcomes), without building the frame."""
        if self.whole is not None:
            return len(self.whole)
        if self.fresh is None or self.carried is None:
            raise ValueError("an incremental result without its outcomes or their parts")
        return len(self.fresh) + int(self.carried.sum())


# --- merging a day's rows -------------------------------------------------------------


def _chunks(series: pd.Series) -> pa.ChunkedArray:
    """A column as Arrow without joining its chunks (a frame merged from stored and new rows
    has two: joining them would copy every string); text as large_string."""
    if hasattr(series.array, "__arrow_array__"):
        converted = pa.array(series.array)  # the ChunkedArray itself for Arrow-backed text
    else:
        converted = pa.array(series.to_numpy())
    array = converted if isinstance(converted, pa.ChunkedArray) else pa.chunked_array([converted])
    if pa.types.is_string(array.type):
        array = array.cast(pa.large_string())
    return array


def _keys(frame: pd.DataFrame, attribute: str) -> pa.ChunkedArray:
    return _chunks(frame[TABLE_KEYS[attribute]])


def _rows(frame: pd.DataFrame, chosen: BoolArray) -> pd.DataFrame:
    """frame[chosen], filtering each Arrow column chunk by chunk (pandas' boolean indexing
    takes by position, which joins the chunks first)."""
    if chosen.all():
        return frame.reset_index(drop=True)
    mask = pa.array(chosen)
    columns: dict[str, object] = {}
    for name in frame.columns:
        series = frame[name]
        if hasattr(series.array, "__arrow_array__") and hasattr(series.dtype, "__from_arrow__"):
            kept = pc.filter(_chunks(series), mask)
            columns[name] = series.dtype.__from_arrow__(kept)
        else:
            columns[name] = series.to_numpy()[chosen]
    return pd.DataFrame(columns, columns=frame.columns)


def _mask(found: pa.Array | pa.ChunkedArray) -> BoolArray:
    result: BoolArray = np.asarray(
        found.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool
    )
    return result


def merge_rows(stored: Dataset, day: Dataset) -> tuple[Dataset, Dataset]:
    """The day's rows upserted into `stored` by key (TABLE_KEYS), as the raw tables' upsert
    does; and `replaced`, the stored rows the day's rows replace (corrections). A replaced
    row keeps its stored values of the columns the day does not carry (`day.absent`), as
    the upsert leaves them (core.db.raw._upsert_clause)."""
    merged: dict[str, Any] = {}  # Dataset frames, by field
    replaced: dict[str, Any] = {}
    for attribute in DATASET_TABLES:
        old: pd.DataFrame = getattr(stored, attribute)
        new: pd.DataFrame = getattr(day, attribute)
        if len(new) == 0:
            merged[attribute] = old
            replaced[attribute] = old.iloc[0:0]
            continue
        # The last row of a key in the day wins, as repeated upserts would have it.
        new = new[~new[TABLE_KEYS[attribute]].duplicated(keep="last").to_numpy()]
        new = new.astype(old.dtypes.to_dict())
        # Each stored key's position among the day's keys: the day's (small) set is
        # hashed, the stored keys probed chunk by chunk (never joined: no copy).
        found = pc.index_in(_keys(old, attribute), value_set=_keys(new, attribute).combine_chunks())
        at = found.fill_null(-1).to_numpy().astype(np.int64)
        hit = at >= 0
        replaced[attribute] = _rows(old, hit)
        absent = day.absent_columns(attribute)
        if absent and hit.any():
            new = _kept_stored(new, old, absent, at[hit], np.flatnonzero(hit))
        if not hit.any():
            merged[attribute] = pd.concat([old, new], ignore_index=True)
            continue
        # A correction takes its stored row's place (an upsert updates the row in place,
        # so the raw tables keep its rowid); rows with new keys come after.
        added = np.ones(len(new), dtype=bool)
        added[at[hit]] = False
        positions = np.arange(len(old), dtype=np.int64)
        positions[hit] = len(old) + at[hit]
        positions = np.concatenate([positions, len(old) + np.flatnonzero(added)])
        merged[attribute] = _take(pd.concat([old, new], ignore_index=True), positions)
    has_bank = stored.has_bank_statement or day.has_bank_statement
    return (
        Dataset(**merged, has_bank_statement=has_bank),
        Dataset(**replaced, has_bank_statement=stored.has_bank_statement),
    )


def _kept_stored(
    new: pd.DataFrame,
    old: pd.DataFrame,
    absent: Iterable[str],
    rows: IntArray,
    stored_rows: IntArray,
) -> pd.DataFrame:
    """`new` with its rows at `rows` given the `absent` columns' values of the stored rows
    at `stored_rows` (the rows they replace)."""
    new = new.reset_index(drop=True)
    columns: dict[str, Any] = {name: new[name] for name in new.columns}
    for name in absent:
        values = new[name].to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
        stored = old[name].iloc[stored_rows]
        values[rows] = stored.to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
        columns[name] = pd.Series(values, dtype=old[name].dtype)
    return pd.DataFrame(columns, columns=new.columns)


def _take(frame: pd.DataFrame, positions: IntArray) -> pd.DataFrame:
    """frame's rows at `positions`, each Arrow column joined once and taken (a take over
    chunks is far slower)."""
    order = pa.array(positions, type=pa.int64())
    columns: dict[str, object] = {}
    for name in frame.columns:
        series = frame[name]
        if hasattr(series.array, "__arrow_array__") and hasattr(series.dtype, "__from_arrow__"):
            joined = _chunks(series).combine_chunks()
            columns[name] = series.dtype.__from_arrow__(pa.chunked_array([joined.take(order)]))
        else:
            columns[name] = series.to_numpy()[positions]
    return pd.DataFrame(columns, columns=frame.columns)


def _new_keys(frame: pd.DataFrame, attribute: str, replaced: Dataset) -> pa.Array:
    """The day's keys of one table that were not stored before (rows it added)."""
    keys = _unique([_keys(frame, attribute)])
    old = _keys(getattr(replaced, attribute), attribute)
    return keys.filter(pc.invert(pc.is_in(keys, value_set=old.combine_chunks())))


def needs_full_run(stored: Dataset, merged: Dataset) -> str | None:
    """Why this day cannot be reconciled incrementally (a switch of the whole engine flips),
    else None: the first bank statement (bank checks start for every settlement) or the
    first transfers file (transfer rows stop being outcomes of their own)."""
    if stored.has_bank_statement != merged.has_bank_statement:
        return "the first bank statement arrived: every settlement's bank check changes"
    if (len(stored.transfers) == 0) != (len(merged.transfers) == 0):
        return "the first transfers arrived: transfer rows are judged differently"
    return None


def pricing_fingerprint(pricing: tuple[PricingPlan, ...]) -> str:
    """A stable hash of the pricing plans a run used ('none' without plans)."""
    if not pricing:
        return "none"
    text_ = json.dumps([repr(plan) for plan in pricing], sort_keys=True)
    return hashlib.sha256(text_.encode()).hexdigest()


# --- the affected set -----------------------------------------------------------------


def _present_keys(values: pa.Array | pa.ChunkedArray, prefix: str = "") -> pa.ChunkedArray:
    """Non-blank values as large_string, `prefix` prepended."""
    array = pa.chunked_array([values]) if isinstance(values, pa.Array) else values
    if not pa.types.is_large_string(array.type):
        array = array.cast(pa.large_string())
    blank = pc.equal(pc.utf8_trim_whitespace(array), "").fill_null(True)
    array = array.filter(pc.invert(blank))
    if prefix:
        array = pc.binary_join_element_wise(pa.scalar(prefix, pa.large_string()), array, _EMPTY)
    return array


@dataclass(frozen=True)
class _KeyColumn:
    """One family key column of a table: its present keys and the rows holding them (rows
    None: every row has one, in order). Sparse columns (payment_id, transfer_id,
    dispute_id of recon rows) are kept compact so the closure probes only set values."""

    keys: pa.ChunkedArray
    rows: IntArray | None

    def row_mask(self, hits: BoolArray, size: int) -> BoolArray:
        if self.rows is None:
            return hits
        mask = np.zeros(size, dtype=bool)
        mask[self.rows[hits]] = True
        return mask

    def keys_of(self, chosen: BoolArray) -> pa.ChunkedArray:
        picked = chosen if self.rows is None else chosen[self.rows]
        return self.keys.filter(pa.array(picked))


def _key_column(values: pa.ChunkedArray, prefix: str) -> _KeyColumn:
    # Empty and null are no key (a blank of spaces would only make a bigger family).
    present = _mask(pc.greater(pc.binary_length(values), 0))
    rows = None if present.all() else np.flatnonzero(present).astype(np.int64)
    keys = values if rows is None else values.filter(pa.array(present))
    if prefix:
        keys = pc.binary_join_element_wise(pa.scalar(prefix, pa.large_string()), keys, _EMPTY)
    return _KeyColumn(keys=keys, rows=rows)


def _family_columns(ds: Dataset) -> dict[str, tuple[int, list[_KeyColumn]]]:
    """Per family table: its row count and key columns (dispute ids prefixed)."""
    return _family_columns_of({table: getattr(ds, table) for table in FAMILY_COLUMNS})


def _family_columns_of(tables: dict[str, pd.DataFrame]) -> dict[str, tuple[int, list[_KeyColumn]]]:
    columns: dict[str, tuple[int, list[_KeyColumn]]] = {}
    for attribute, names in FAMILY_COLUMNS.items():
        frame = tables[attribute]
        keys = []
        for name in names:
            dispute = _is_dispute_key(attribute, name)
            keys.append(_key_column(_chunks(frame[name]), DISPUTE_PREFIX if dispute else ""))
        columns[attribute] = (len(frame), keys)
    return columns


def _family_keys(ds: Dataset) -> pa.Array:
    """Every family key the rows of `ds` carry (the day's rows, or their replaced versions)."""
    return _unique([c.keys for _, keys in _family_columns(ds).values() for c in keys])


def _unique(pieces: Iterable[pa.Array | pa.ChunkedArray]) -> pa.Array:
    """The distinct values of all pieces, as one large_string array."""
    arrays: list[pa.Array] = []
    for piece in pieces:
        chunks = piece.chunks if isinstance(piece, pa.ChunkedArray) else [piece]
        arrays += [c.cast(pa.large_string()) for c in chunks if len(c)]
    if not arrays:
        return pa.array([], type=pa.large_string())
    return pc.unique(pa.concat_arrays(arrays))


def _close_families(
    columns: dict[str, tuple[int, list[_KeyColumn]]], seeds: pa.Array
) -> tuple[pa.Array, dict[str, BoolArray]]:
    """The family keys reachable from `seeds` (a row carrying one key brings all of its
    keys), and per table the rows in those families."""
    members = {name: np.zeros(size, dtype=bool) for name, (size, _) in columns.items()}
    # A table with one key column (payments) brings no key it was not found by: its rows
    # are resolved once, at the end, instead of probed on every pass.
    linking = {name: entry for name, entry in columns.items() if len(entry[1]) > 1}
    known = seeds
    frontier = seeds
    while len(frontier):
        found: list[pa.ChunkedArray] = []
        for name, (size, keys) in linking.items():
            hit = np.zeros(size, dtype=bool)
            for column in keys:
                hit |= column.row_mask(_mask(pc.is_in(column.keys, value_set=frontier)), size)
            fresh = hit & ~members[name]
            if not fresh.any():
                continue
            members[name] |= fresh
            found += [column.keys_of(fresh) for column in keys]
        new = _unique(found)
        frontier = new.filter(pc.invert(pc.is_in(new, value_set=known))) if len(new) else new
        known = _unique([known, frontier])
    for name, (size, keys) in columns.items():
        if name not in linking:
            members[name] = keys[0].row_mask(_mask(pc.is_in(keys[0].keys, value_set=known)), size)
    return known, members


def _close_with_state(
    columns: dict[str, tuple[int, list[_KeyColumn]]], seeds: pa.Array, state: IncrementalState
) -> tuple[pa.Array, dict[str, BoolArray], int]:
    """`_close_families` with the previous run's families: the families of the seeds (one
    lookup in the state's key index), all their rows, and every row the day added.
    Closed: a stored row shares keys only with rows of its own family (the state's
    components), and every key of a day's row (new or replaced version) is a seed.
    Returns the keys of those rows (with repeats), the rows, and the family count."""
    affected = state.families_of(seeds)
    members: dict[str, BoolArray] = {}
    found: list[pa.Array | pa.ChunkedArray] = [seeds]
    for name, (size, keys) in columns.items():
        family = state.family[name]
        member = np.ones(size, dtype=bool)
        member[: len(family)] = affected[family]
        members[name] = member
        found += [column.keys_of(member) for column in keys]
    arrays = [
        c
        for piece in found
        for c in (piece.chunks if isinstance(piece, pa.ChunkedArray) else [piece])
    ]
    return (
        pa.concat_arrays([a.cast(pa.large_string()) for a in arrays]),
        members,
        int(affected.sum()),
    )


def _next_state(
    merged: Dataset, state: IncrementalState, members: dict[str, BoolArray]
) -> IncrementalState:
    """The state for `merged`: families outside the affected set keep their labels and
    index entries (none of their rows or keys changed); the affected rows, a closed set,
    get their components computed afresh, numbered after the old labels."""
    tables = {
        table: _rows(getattr(merged, table)[[c for c, _ in pairs]], members[table])
        for table, pairs in FAMILY_JOINS.items()
    }
    fresh, count = row_families(tables, FAMILY_JOINS, blank_is_key=True)
    affected = np.zeros(state.families, dtype=bool)
    next_label = state.families + count
    family: dict[str, IntArray] = {}
    for table in FAMILY_JOINS:
        old = state.family[table]
        member = members[table]
        affected[old[member[: len(old)]]] = True
        labels = np.empty(len(member), dtype=np.int64)
        labels[: len(old)] = old
        labels[member] = state.families + fresh[table]
        # A new row in no affected family (it has no key at all): a family of its own.
        alone = np.flatnonzero(~member[len(old) :]) + len(old)
        labels[alone] = next_label + np.arange(len(alone), dtype=np.int64)
        next_label += len(alone)
        family[table] = labels
    # The key index: the unaffected entries (still sorted) and the affected rows' keys.
    kept = ~affected[state.key_family]
    old_print, old_family = state.key_print[kept], state.key_family[kept]
    new_print, new_family = _key_entries(
        _family_columns_of(tables),
        {table: state.families + labels for table, labels in fresh.items()},
    )
    order = np.argsort(new_print, kind="stable")
    new_print, new_family = new_print[order], new_family[order]
    at = np.searchsorted(old_print, new_print, side="right")
    key_print = np.insert(old_print, at, new_print)
    key_family = np.insert(old_family, at, new_family)
    rows = sum(len(labels) for labels in family.values())
    if next_label > 4 * rows + 1024:  # renumber densely now and then (labels only grow)
        used, dense = np.unique(np.concatenate(list(family.values())), return_inverse=True)
        start = 0
        for table in FAMILY_JOINS:
            size = len(family[table])
            family[table] = dense[start : start + size].astype(np.int64)
            start += size
        key_family = np.searchsorted(used, key_family).astype(np.int64)
        next_label = len(used)
    tables_now = {table: getattr(merged, table) for table in FAMILY_JOINS}
    keys = {table: _keys(frame, table) for table, frame in tables_now.items()}
    return IncrementalState(
        keys=keys,
        family=family,
        families=next_label,
        joined=_joined(tables_now),
        key_print=key_print,
        key_family=key_family,
    )


def _positions(values: pa.Array, keys: pa.Array) -> IntArray:
    found = lookup(values, keys)
    result: IntArray = np.unique(found[found >= 0])
    return result


def _old_links(previous: pd.DataFrame, ds: Dataset) -> tuple[IntArray, IntArray]:
    """(line, settlement) positions in `ds` linked in the previous run (its bank_entry
    outcomes name their settlement(s); a consolidated credit lists them `;`-joined)."""
    rows = _rows(previous, _mask(pc.equal(_chunks(previous["entity_type"]), "bank_entry")))
    if len(rows) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    split = pc.split_pattern(text(rows["settlement_id"]).fill_null(""), ";")
    parents = pc.list_parent_indices(split).to_numpy(zero_copy_only=False).astype(np.int64)
    line = lookup(text(rows["entity_id"]), text(ds.bank["id"]))[parents]
    settlement = lookup(pc.list_flatten(split), text(ds.settlements["id"]))
    ok = (line >= 0) & (settlement >= 0)
    return line[ok], settlement[ok]


@dataclass(frozen=True)
class _Links:
    """Bank links of the whole merged dataset: (line, settlement) pairs now, the previous
    run's pairs, lines paid to instant payouts, and the fallback candidates."""

    new_line: IntArray
    new_settlement: IntArray
    old_line: IntArray
    old_settlement: IntArray
    payout_lines: BoolArray
    candidate_settlements: BoolArray
    candidate_lines: BoolArray


def _links(merged: Dataset, previous: pd.DataFrame, params: EngineParams, as_of: int) -> _Links:
    m, b = len(merged.settlements), len(merged.bank)
    old_line, old_settlement = _old_links(previous, merged)
    # The bank links of the whole ledger, as the partitioner computes them (link_bank
    # reads settlements, payouts and credits only: no row table); None without a bank
    # statement.
    links = _ledger_links(merged, params, as_of)
    if links is None:
        empty = np.zeros(0, dtype=np.int64)
        return _Links(
            empty, empty, old_line, old_settlement, np.zeros(b, bool), np.zeros(m, bool),
            np.zeros(b, bool),
        )  # fmt: skip
    lines, settlements = [], []
    for line in np.flatnonzero(links.line >= 0):
        members = links.line_settlements.get(int(line), [int(links.line[line])])
        lines += [int(line)] * len(members)
        settlements += [int(s) for s in members]
    credit = ints(merged.bank["credit"])
    payout = links.line_payout if links.line_payout is not None else np.full(b, -1)
    return _Links(
        new_line=np.asarray(lines, dtype=np.int64),
        new_settlement=np.asarray(settlements, dtype=np.int64),
        old_line=old_line,
        old_settlement=old_settlement,
        payout_lines=payout >= 0,
        candidate_settlements=links.utr_credits == 0,
        candidate_lines=(credit > 0) & (links.line_method != M_UTR),
    )


def _ledger_links(merged: Dataset, params: EngineParams, as_of: int) -> BankLinks | None:
    """What `partition.ledger_links(merged, ...)` gives (link_bank over the ledger alone:
    it reads no row table), with the row tables as zero-row slices of merged's own
    instead of new empty frames of every column (0.05-0.15 CPU s a run)."""
    if not merged.has_bank_statement:
        return None
    ledger = replace(
        merged,
        **{t: getattr(merged, t).iloc[0:0] for t in ("payments", "refunds", "recon")},
        disputes=merged.disputes.iloc[0:0],
        transfers=merged.transfers.iloc[0:0],
    )
    return link_bank(Context.build(ledger, params, as_of))


def _close_links(
    settlements: BoolArray, lines: BoolArray, pairs: list[tuple[IntArray, IntArray]]
) -> None:
    """Grow both masks (in place) along (line, settlement) pairs until nothing changes."""
    line = np.concatenate([p[0] for p in pairs]) if pairs else np.zeros(0, np.int64)
    settlement = np.concatenate([p[1] for p in pairs]) if pairs else np.zeros(0, np.int64)
    while True:
        before = int(settlements.sum()) + int(lines.sum())
        lines[line[settlements[settlement]]] = True
        settlements[settlement[lines[line]]] = True
        if int(settlements.sum()) + int(lines.sum()) == before:
            return


class _Previous:
    """The previous run's outcomes, by entity type: the ids still open.

    For settlements and bank credits (and instant settlements): any status but MATCHED, or
    matched by a bank fallback. For the family entities (payments, refunds, transfers,
    recon rows, disputes) only the outcomes the as-of can move: as-of enters their
    decision only through `overdue` for an entity with no recon row (core/engine/
    entities.py, transfers.py), whose outcome is then PENDING (AWAITING_SETTLEMENT) or an
    EXCEPTION carrying MISSING_RECONCILIATION_RECORD, and for a failed or reversed refund
    a settlement debited and nothing credited back in full (PENDING AWAITING_SETTLEMENT or
    REFUND_REVERSAL_MISSING: entities.py `_owed_back`). Any other EXCEPTION (an amount
    mismatch, a duplicate, a wrong mapping, ...) reads only its family's rows and the
    settlements they name, which the affected set already follows."""

    def __init__(self, previous: pd.DataFrame) -> None:
        self.runs = _type_runs(previous)
        self.ids = _chunks(previous["entity_id"])
        method = _chunks(previous["match_method"]).fill_null("")
        status = _chunks(previous["status"])
        self.open = pc.or_(
            pc.not_equal(status, "MATCHED"),
            pc.is_in(method, value_set=pa.array(FALLBACK_METHODS, pa.large_string())),
        ).fill_null(True)
        timed = pc.or_(
            pc.match_substring_regex(_chunks(previous["reason_codes"]).fill_null(""), _TIMED),
            pc.match_substring_regex(_chunks(previous["reason_code"]).fill_null(""), _TIMED),
        )
        settled_exception = pc.and_(pc.equal(status, "EXCEPTION"), pc.invert(timed))
        self.family_open = pc.and_(self.open, pc.invert(settled_exception.fill_null(False)))

    def open_ids(self, entity_type: str) -> pa.ChunkedArray:
        start, end = self.runs.get(entity_type, (0, 0))
        mask = self.family_open if entity_type in (*FAMILY_ENTITY_TYPES, "dispute") else self.open
        return self.ids.slice(start, end - start).filter(mask.slice(start, end - start))


def plan_incremental(
    merged: Dataset,
    day: Dataset,
    replaced: Dataset,
    previous: pd.DataFrame,
    params: EngineParams,
    as_of: int,
    state: IncrementalState | None = None,
) -> Plan:
    """The affected set of a day's load and the sub-dataset that decides it (module doc).
    With `state` (the previous run's families, for the stored rows `merged` starts with)
    the family closure is one probe per key column; without it, or when the state does
    not match `merged`, a closure over all rows (same affected set or a larger one)."""
    links = _links(merged, previous, params, as_of)
    before = _Previous(previous)
    s_ids, b_ids = text(merged.settlements["id"]), text(merged.bank["id"])
    m, b = len(s_ids), len(b_ids)

    # Settlements and credits whose outcome is decided again.
    s_keep = np.zeros(m, dtype=bool)
    changed_settlements = _unique([text(day.settlements["id"])])
    s_keep[_positions(changed_settlements, s_ids)] = True
    for frame in (day.recon, replaced.recon):
        s_keep[_positions(text(frame["settlement_id"]), s_ids)] = True
    s_keep[_positions(before.open_ids("settlement"), s_ids)] = True
    s_keep |= links.candidate_settlements
    b_keep = np.zeros(b, dtype=bool)
    b_keep[_positions(text(day.bank["id"]), b_ids)] = True
    b_keep[_positions(before.open_ids("bank_entry"), b_ids)] = True
    b_keep |= links.candidate_lines | links.payout_lines
    new_pairs = (links.new_line, links.new_settlement)
    _close_links(s_keep, b_keep, [new_pairs, (links.old_line, links.old_settlement)])

    # Families decided again: the day's keys (new and replaced versions), open outcomes,
    # and the families whose rows name a settlement (or instant settlement) the day changed.
    columns = _family_columns(merged)
    recon_settlement = text(merged.recon["settlement_id"])
    changed_any = _unique([changed_settlements, text(day.instant_settlements["id"])])
    naming = _mask(pc.is_in(recon_settlement, value_set=changed_any))
    seeds = [_family_keys(day), _family_keys(replaced)]
    seeds += [column.keys_of(naming) for column in columns["recon"][1]]
    for entity_type in FAMILY_ENTITY_TYPES:
        seeds.append(_present_keys(before.open_ids(entity_type)))
    seeds.append(_present_keys(before.open_ids("dispute"), DISPUTE_PREFIX))
    indexed = state is not None and state.matches(merged, day, replaced)
    if state is not None and indexed:
        family_keys, members, families = _close_with_state(columns, _unique(seeds), state)
    else:
        family_keys, members = _close_families(columns, _unique(seeds))
        families = -1

    # The sub-dataset: family rows; for each re-decided settlement, its other rows as one
    # summary row (its sum is all it reads of them); the settlements family rows name; and
    # the linked counterparts of every settlement and credit in it (so UTR links and
    # fallback candidates come out as in the full dataset).
    outside = ~members["recon"] & _mask(
        pc.is_in(recon_settlement, value_set=s_ids.filter(pa.array(s_keep)))
    )
    recon = pd.concat(
        [
            _rows(merged.recon, members["recon"]),
            _summary_rows(merged.recon, outside, recon_settlement),
        ],
        ignore_index=True,
    )
    s_in = s_keep.copy()
    s_in[_positions(recon_settlement.filter(pa.array(members["recon"])), s_ids)] = True
    b_in = b_keep.copy()
    _close_links(s_in, b_in, [new_pairs])
    chosen = {name: members[name] for name in ("payments", "refunds", "transfers")}
    if len(chosen["transfers"]) and not chosen["transfers"].any():
        chosen["transfers"] = chosen["transfers"].copy()
        chosen["transfers"][0] = True  # keep the table non-empty: its emptiness is a switch
    subset = Dataset(
        payments=_rows(merged.payments, chosen["payments"]),
        refunds=_rows(merged.refunds, chosen["refunds"]),
        settlements=_rows(merged.settlements, s_in),
        recon=recon,
        bank=_rows(merged.bank, b_in),
        has_bank_statement=merged.has_bank_statement,
        instant_settlements=merged.instant_settlements,
        instant_payouts=merged.instant_payouts,
        disputes=_rows(merged.disputes, members["disputes"]),
        transfers=_rows(merged.transfers, chosen["transfers"]),
    )

    is_dispute = pc.starts_with(family_keys, DISPUTE_PREFIX)
    plain_keys = family_keys.filter(pc.invert(is_dispute))
    dispute_keys = pc.utf8_slice_codeunits(family_keys.filter(is_dispute), len(DISPUTE_PREFIX))
    keep = {entity_type: plain_keys for entity_type in FAMILY_ENTITY_TYPES}
    keep["dispute"] = dispute_keys
    keep["settlement"] = s_ids.filter(pa.array(s_keep))
    keep["bank_entry"] = b_ids.filter(pa.array(b_keep))
    keep["instant_settlement"] = text(merged.instant_settlements["id"])
    stats = {
        "payments": len(merged.payments),
        "affected_payments": int(members["payments"].sum()),
        "affected_families": families if families >= 0 else len(plain_keys),
        "affected_settlements": int(s_keep.sum()),
        "affected_bank_lines": int(b_keep.sum()),
        "subset_payments": len(subset.payments),
        "subset_recon_rows": len(subset.recon),
        "subset_settlements": len(subset.settlements),
        "subset_bank_lines": len(subset.bank),
        "family_index": int(indexed),
    }
    return Plan(subset=subset, keep=keep, stats=stats, members=members)


SUMMARY_PREFIX = "\x00sum:"


def _summary_rows(recon: pd.DataFrame, chosen: BoolArray, settlement_ids: pa.Array) -> pd.DataFrame:
    """The chosen recon rows as one row per settlement they name, carrying their net
    (credit - debit): an `adjustment` without a dispute, which the engine counts in its
    settlement's sum and gives no outcome (docs/engine.md, *Recon rows*), so the
    settlement is judged as with every row while the rows' own entities stay out.
    settlement_ids: text(recon["settlement_id"]) (the caller's, not converted again)."""
    rows = np.flatnonzero(chosen)
    settlement = settlement_ids.take(pa.array(rows, type=pa.int64()))
    ids = pc.unique(settlement)
    position = lookup(settlement, ids)
    net = np.zeros(len(ids), dtype=np.int64)
    np.add.at(net, position, ints(recon["credit"])[rows] - ints(recon["debit"])[rows])
    key = pc.binary_join_element_wise(pa.scalar(SUMMARY_PREFIX, pa.large_string()), ids, _EMPTY)
    n = len(ids)
    summary = {
        "row_key": key,
        "entity_id": key,
        "type": pa.array(["adjustment"] * n, pa.large_string()),
        "debit": np.maximum(-net, 0),
        "credit": np.maximum(net, 0),
        "amount": np.abs(net),
        "fee": np.zeros(n, dtype=np.int64),
        "tax": np.zeros(n, dtype=np.int64),
        "on_hold": np.zeros(n, dtype=bool),
        "settled": np.ones(n, dtype=bool),
        "settlement_id": ids,
    }
    frame = {}
    for name, dtype in RECON_COLUMNS.items():
        values = summary.get(name)
        if values is None:
            frame[name] = pd.Series([pd.NA] * n, dtype=dtype)
        elif isinstance(values, pa.Array):
            frame[name] = pd.Series(values.to_pylist(), dtype=dtype)
        else:
            frame[name] = pd.Series(values, dtype=dtype)
    return pd.DataFrame(frame)


def _key_mask(outcomes: pd.DataFrame, keep: dict[str, pa.Array]) -> BoolArray:
    """Which outcome rows have a key in `keep` (entity_type -> entity ids). Outcomes come
    sorted by entity type, so each type is one run of rows: one probe per row."""
    ids = _chunks(outcomes["entity_id"])
    result = np.zeros(len(outcomes), dtype=bool)
    # Types sharing one key array (the family types: one set of family keys) are probed
    # together, so the set is hashed once instead of once per type.
    groups: dict[int, tuple[pa.Array, list[tuple[int, int]]]] = {}
    for entity_type, (start, end) in _type_runs(outcomes).items():
        wanted = keep.get(entity_type)
        if wanted is not None and len(wanted) and end > start:
            groups.setdefault(id(wanted), (wanted, []))[1].append((start, end))
    for wanted, runs in groups.values():
        chunks = [c for start, end in runs for c in ids.slice(start, end - start).chunks]
        probed = pa.chunked_array(chunks, type=ids.type)
        found = _mask(pc.is_in(probed, value_set=wanted))
        at = 0
        for start, end in runs:
            result[start:end] = found[at : at + end - start]
            at += end - start
    return result


def _type_runs(outcomes: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """entity_type -> (start, end) of its rows; outcomes are sorted by type, so each type
    is one run (checked: a type seen twice is refused)."""
    runs = pc.run_end_encode(_chunks(outcomes["entity_type"]).combine_chunks())
    result: dict[str, tuple[int, int]] = {}
    start = 0
    for end, entity_type in zip(runs.run_ends.to_pylist(), runs.values.to_pylist(), strict=True):
        if entity_type in result:
            raise ValueError("outcomes are not sorted by entity_type")
        result[str(entity_type)] = (start, int(end))
        start = int(end)
    return result


def _fixed_width(ids: pa.ChunkedArray) -> npt.NDArray[np.bytes_] | None:
    """The ids as a numpy bytes array (dtype S<length>, a view of Arrow's buffer) when
    every id has one length and no NUL byte (numpy's bytes compare like Arrow's sort,
    byte by byte, unsigned, only without NULs); else None."""
    array = ids.combine_chunks() if ids.num_chunks != 1 else ids.chunk(0)
    if len(array) == 0 or array.null_count:
        return None
    if not pa.types.is_large_string(array.type):
        array = array.cast(pa.large_string())
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    width = int(offsets[1] - offsets[0])
    if width <= 0 or data_buffer is None or not bool((np.diff(offsets) == width).all()):
        return None
    data = np.frombuffer(data_buffer, dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    if not bool(data.all()):
        return None
    return data.view(f"S{width}")


def _merge_sorted(
    fresh: pa.ChunkedArray, previous: pa.ChunkedArray, carry: BoolArray
) -> tuple[IntArray, BoolArray] | None:
    """Where each fresh id goes among the carried previous ids (both sorted, disjoint),
    without sorting them together: a binary search of the fresh ids in the previous run's
    ids, counting the carried ones before. Returns (each fresh id's position in the
    merged run, which merged positions are fresh), or None when the ids are not all of
    one width or not strictly sorted (the caller sorts them together instead)."""
    if len(fresh) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(int(carry.sum()), dtype=bool)
    f, p = _fixed_width(fresh), _fixed_width(previous)
    if f is None or p is None or f.dtype != p.dtype:
        return None
    if not (bool((f[1:] > f[:-1]).all()) and bool((p[1:] > p[:-1]).all())):
        return None
    rank = np.searchsorted(p, f, side="left")
    before = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(carry, dtype=np.int64)])
    at = np.arange(len(f), dtype=np.int64) + before[rank]
    slots = np.zeros(len(f) + int(before[-1]), dtype=bool)
    slots[at] = True
    return at, slots


def _combined(fresh: pd.DataFrame, previous: pd.DataFrame, carry: BoolArray) -> pd.DataFrame:
    """The fresh rows and the previous rows marked `carry` (each frame sorted by entity_type
    then entity_id; keys disjoint) in one frame sorted the same way, in byte order as
    `assemble` sorts: per entity type, the ids of both sorted together; then each column
    built by one take over the two frames joined (previous rows are never copied twice)."""
    fresh_runs, previous_runs = _type_runs(fresh), _type_runs(previous)
    fresh_ids, previous_ids = _chunks(fresh["entity_id"]), _chunks(previous["entity_id"])
    pieces: list[IntArray] = []
    for entity_type in sorted({*fresh_runs, *previous_runs}):
        f0, f1 = fresh_runs.get(entity_type, (0, 0))
        p0, p1 = previous_runs.get(entity_type, (0, 0))
        kept = p0 + np.flatnonzero(carry[p0:p1])
        merged_order = _merge_sorted(
            fresh_ids.slice(f0, f1 - f0), previous_ids.slice(p0, p1 - p0), carry[p0:p1]
        )
        if merged_order is not None:
            at, slots = merged_order
            piece = np.empty(len(slots), dtype=np.int64)
            piece[at] = f0 + np.arange(f1 - f0, dtype=np.int64)
            piece[~slots] = len(fresh) + kept
            pieces.append(piece)
            continue
        ids = pa.chunked_array(
            [
                *fresh_ids.slice(f0, f1 - f0).chunks,
                *previous_ids.slice(p0, p1 - p0).filter(pa.array(carry[p0:p1])).chunks,
            ],
            type=pa.large_string(),
        ).combine_chunks()
        local = pc.sort_indices(ids).to_numpy().astype(np.int64)
        from_fresh = local < f1 - f0
        carried = kept[np.where(from_fresh, 0, local - (f1 - f0))] if len(kept) else local
        pieces.append(np.where(from_fresh, f0 + local, len(fresh) + carried))
    positions = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    order = pa.array(positions)
    columns: dict[str, object] = {}
    for name in OUTCOME_COLUMNS:
        dtype = fresh[name].dtype
        if hasattr(dtype, "__from_arrow__"):
            # Taken over the two frames' chunks as they are (Arrow >= 19 takes over chunks
            # without joining them first: the previous run's column is not copied twice).
            both = [*_chunks(fresh[name]).chunks, *_chunks(previous[name]).chunks]
            values = pa.chunked_array(both, type=both[0].type)
            columns[name] = dtype.__from_arrow__(values.take(order))
        else:
            ints_ = np.concatenate(
                [fresh[name].to_numpy(dtype=np.int64), previous[name].to_numpy(dtype=np.int64)]
            )
            columns[name] = ints_[positions]
    return pd.DataFrame(columns, columns=list(OUTCOME_COLUMNS))


def combine_outcomes(
    fresh: pd.DataFrame, previous: pd.DataFrame, carried: BoolArray
) -> pd.DataFrame:
    """The outcome frame a run gave from its fresh outcomes and the previous run's rows it
    carried (IncrementalResult.fresh, .carried): its carry forward, again (a snapshot
    delta's replay, core.snapshots)."""
    if len(carried) != len(previous):
        raise ValueError("the carried mask does not fit the previous outcomes")
    return _combined(fresh, previous, carried)


def reconcile_incremental(
    merged: Dataset,
    day: Dataset,
    replaced: Dataset,
    previous: pd.DataFrame,
    params: EngineParams,
    as_of: int,
    pricing: tuple[PricingPlan, ...] = (),
    state: IncrementalState | None = None,
    *,
    on_carry: Callable[[BoolArray], None] | None = None,
) -> IncrementalResult:
    """The outcomes `reconcile(merged, params, as_of, pricing)` gives, computed from the
    previous run's outcomes (same params and pricing, over `merged` minus the day's rows
    plus `replaced`) and a reconcile of the affected sub-dataset only.

    state: the previous run's IncrementalState (`build_state(stored)` after a full run, or
    the previous incremental result's `state`); it makes the plan cheaper and the result
    then carries the state for `merged` (IncrementalResult.state) for the next day. A
    state that does not match the stored rows is ignored (the plan falls back to the
    closure over all rows, `stats["family_index"] == 0`).

    on_carry: called with the mask of `previous`'s carried rows (IncrementalResult.carried)
    as soon as the plan is known, before the affected rows are reconciled (a caller's early
    start on the rows decided again); not called when everything is reconciled."""
    began = time.process_time()
    stored_transfers = len(merged.transfers) - len(_new_keys(day.transfers, "transfers", replaced))
    stored = replace(replaced, transfers=merged.transfers.iloc[:stored_transfers])
    if needs_full_run(stored, merged) is not None:
        # A switch of the whole engine flipped: nothing can be carried forward.
        outcomes = reconcile(merged, params, as_of, pricing)
        plan = Plan(subset=merged, keep={}, stats={"payments": len(merged.payments)})
        stats = {**plan.stats, "reconciled": len(outcomes), "carried_forward": 0}
        cpu = {"reconcile_cpu_s": round(time.process_time() - began, 3)}
        after = build_state(merged) if state is not None else None
        return IncrementalResult(
            plan=plan, stats=stats, cpu_seconds=cpu, state=after, whole=outcomes
        )
    plan = plan_incremental(merged, day, replaced, previous, params, as_of, state)
    planned = time.process_time()
    # The carried rows are named, not copied: `IncrementalResult.outcomes` builds the
    # full frame only when a caller asks for it.
    carry = ~_key_mask(previous, plan.keep)
    if on_carry is not None:
        on_carry(carry)
    carried = time.process_time()
    fresh = reconcile(plan.subset, params, as_of, pricing)
    fresh = _rows(fresh, _key_mask(fresh, plan.keep))
    done = time.process_time()
    after = None
    if state is not None:
        indexed = plan.stats.get("family_index", 0) == 1
        after = _next_state(merged, state, plan.members) if indexed else build_state(merged)
    stats = {**plan.stats, "reconciled": len(fresh), "carried_forward": int(carry.sum())}
    cpu = {
        "plan_cpu_s": round(planned - began, 3),
        "reconcile_cpu_s": round(done - carried, 3),
        "carry_forward_cpu_s": round(carried - planned, 3),
    }
    if after is not None:
        cpu["state_cpu_s"] = round(time.process_time() - done, 3)
    return IncrementalResult(
        plan=plan,
        stats=stats,
        cpu_seconds=cpu,
        state=after,
        fresh=fresh,
        carried=carry,
        previous=previous,
    )
