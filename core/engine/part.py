"""One entity type's outcomes as whole columns, and their assembly into the outcomes frame.

Each checker (payments, refunds, recon rows, settlements, bank lines) returns a `Part`:
the codes that apply as a bit mask over its priority tuple, the pending reason, amounts
and context. `assemble` turns masks into `reason_code` / `reason_codes`, derives status
and exposure, sorts by `entity_id` and stacks the parts in `entity_type` order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.dataset import OUTCOME_COLUMNS
from core.engine import codes as C
from core.engine.columns import IntArray, later, sort_text
from core.errors import InputError, Problem

PENDING_REASONS: tuple[str, ...] = (
    "",
    C.AWAITING_SETTLEMENT,
    C.ON_HOLD,
    C.AWAITING_BANK_CREDIT,
    C.DISPUTE_UNDER_REVIEW,
    C.TRANSFER_STATUS_UNKNOWN,
)
(
    NO_PENDING,
    P_AWAITING_SETTLEMENT,
    P_ON_HOLD,
    P_AWAITING_BANK_CREDIT,
    P_DISPUTE_UNDER_REVIEW,
    P_TRANSFER_STATUS_UNKNOWN,
) = range(6)

METHODS: tuple[str, ...] = (
    "",
    C.METHOD_UTR,
    C.METHOD_FUZZY_UTR,
    C.METHOD_CONSOLIDATED,
    C.METHOD_NO_BANK_STATEMENT,
    C.METHOD_DIRECT,
)
M_NONE, M_UTR, M_FUZZY, M_CONSOLIDATED, M_NO_BANK, M_DIRECT = range(6)

STRING_COLUMNS: tuple[str, ...] = (
    "entity_type",
    "entity_id",
    "status",
    "reason_code",
    "reason_codes",
    "settlement_id",
    "exposure_class",
    "match_method",
    "order_id",
    "utr",
)
AMOUNT_COLUMNS: tuple[str, ...] = (
    "expected_amount",
    "actual_amount",
    "difference",
    "exposure_amount",
)


def bit(index: int) -> int:
    """The mask bit of the code at `index` in its priority tuple."""
    return 1 << index


def primary_index(mask: IntArray, width: int) -> IntArray:
    """Index of the lowest set bit (the primary code), -1 where no code applies."""
    table = np.full(1 << width, -1, dtype=np.int64)
    for value in range(1, 1 << width):
        table[value] = (value & -value).bit_length() - 1
    result: IntArray = table[mask]
    return result


@dataclass(frozen=True)
class TextRef:
    """A text column not yet materialised: `source[rows]` (null where a row is -1), or
    `source` itself when `rows` is None. Assembly composes the sort order into `rows` so
    each output string column costs one Arrow `take`."""

    source: pa.Array
    rows: IntArray | None = None

    def __len__(self) -> int:
        return len(self.source) if self.rows is None else len(self.rows)

    def resolve(self, order: IntArray | None = None) -> pa.Array:
        source = self.source
        if not pa.types.is_large_string(source.type):
            source = source.cast(pa.large_string())
        rows = self.rows
        if order is not None:
            rows = order if rows is None else rows[order]
        if rows is None:
            return source
        indices = pa.array(rows, mask=rows < 0, type=pa.int64())
        return source.take(indices)


def nulls_ref(n: int) -> TextRef:
    return TextRef(pa.nulls(n, type=pa.large_string()))


@dataclass
class Part:
    """Outcomes of one entity type, one array element per entity.

    codes: the entity type's exception codes in priority order; `mask` has bit i set when
    codes[i] applies. pending: index into PENDING_REASONS (0 = not pending). method: index
    into METHODS. Text columns are `TextRef`s (null = empty), amounts int64 paise,
    created_at int64 Unix seconds with a null mask.
    """

    entity_type: str
    codes: tuple[str, ...]
    entity_id: TextRef
    mask: IntArray
    pending: npt.NDArray[np.int8]
    settlement_id: TextRef
    expected: IntArray
    actual: IntArray
    method: npt.NDArray[np.int8]
    order_id: TextRef
    utr: TextRef
    created_at: IntArray
    created_at_null: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.mask)


def _labels(keys: IntArray, label_of: dict[int, str]) -> pa.Array:
    """Strings for small integer keys, via a dictionary array (no per-row Python)."""
    size = int(keys.max()) + 1 if len(keys) else 1
    table = [label_of.get(k, "") for k in range(size)]
    dictionary = pa.array(table, type=pa.large_string())
    indices = pa.array(keys.astype(np.int32), type=pa.int32())
    return pa.DictionaryArray.from_arrays(indices, dictionary).cast(pa.large_string())


def _sort_order(
    ref: TextRef, source_order: Callable[[], IntArray] | None = None
) -> tuple[IntArray, pa.Array]:
    """The permutation that sorts the part by entity_id, and the sorted ids.

    source_order: returns `sort_text(ref.source)` when it was started earlier (on another
    thread, see `reconcile`); used only when the whole source is ranked."""
    if ref.rows is None or len(ref.rows) < len(ref.source) // 4:
        ids = ref.resolve()
        order: IntArray = sort_text(ids)
        return order, ids.take(pa.array(order))
    # Rank the whole source once, then order the selected rows by rank: one string sort
    # and one take instead of take, sort, take.
    ranked = sort_text(ref.source) if source_order is None else source_order()
    rank = np.empty(len(ref.source), dtype=np.int64)
    rank[ranked] = np.arange(len(ref.source), dtype=np.int64)
    selected = rank[ref.rows]
    # Distinct rows (the usual case) are placed by rank in one pass, no second sort; rows
    # named twice (or -1) fall back to the stable sort.
    place = np.full(len(ref.source), -1, dtype=np.int64)
    place[selected] = np.arange(len(selected), dtype=np.int64)
    order = place[place >= 0]
    if len(order) != len(selected) or (ref.rows < 0).any():
        order = np.argsort(selected, kind="stable").astype(np.int64)
    return order, ref.resolve(order)


def _refuse_duplicates(entity_type: str, ids: pa.Array) -> None:
    """Two entities with one id would make two outcomes with one key: refuse, naming it."""
    if len(ids) < 2:
        return
    same = pc.equal(ids.slice(1), ids.slice(0, len(ids) - 1)).fill_null(False)
    if not pc.any(same).as_py():
        return
    positions = np.flatnonzero(same.to_numpy(zero_copy_only=False))[:5] + 1
    duplicates = sorted({str(ids[int(i)]) for i in positions})
    table = TABLES.get(entity_type, entity_type)
    raise InputError([Problem(table, 0, "id", f"duplicate id {dup!r}") for dup in duplicates])


TABLES = {
    "payment": "payments",
    "refund": "refunds",
    "settlement": "settlements",
    "bank_entry": "bank_statement",
    "instant_settlement": "instant_settlements",
    "dispute": "disputes",
    "transfer": "transfers",
}


Column: TypeAlias = pa.Array | np.ndarray
Later: TypeAlias = Callable[[], pa.Array]


def _sorted_ids(entity_type: str, entity_id: pa.Array) -> pa.Array:
    if entity_type != "recon_row":  # recon rows are already grouped by entity_id
        _refuse_duplicates(entity_type, entity_id)
    return entity_id


def _columns(
    part: Part,
    pool: Executor | None = None,
    source_order: Callable[[], IntArray] | None = None,
) -> dict[str, Column | Later]:
    """One part's outcome columns. With a pool the Arrow takes of its text columns run on
    the pool while this thread derives the rest; those columns are then callables that
    return the array (their future's `result`)."""
    order, entity_id = _sort_order(part.entity_id, source_order)
    ids = _sorted_ids(part.entity_type, entity_id)
    width = len(part.codes)
    mask = part.mask[order]
    pending = part.pending[order].astype(np.int64)
    primary = primary_index(mask, width)
    is_exception = mask > 0
    is_pending = ~is_exception & (pending > 0)
    status_key = np.where(is_exception, 2, np.where(is_pending, 1, 0)).astype(np.int64)

    # reason_code: the primary code, the pending reason, or ''.
    offset = len(PENDING_REASONS)
    reason_key = np.where(is_exception, offset + primary, pending)
    reason_label = dict(enumerate(PENDING_REASONS))
    reason_label.update({offset + i: code for i, code in enumerate(part.codes)})

    # reason_codes: every code that applies in priority order (so the primary comes first).
    joined_key = np.where(is_exception, offset + mask, pending)
    joined_label = dict(enumerate(PENDING_REASONS))
    for value in np.unique(mask[is_exception]).tolist():
        names = [code for i, code in enumerate(part.codes) if value & bit(i)]
        joined_label[offset + int(value)] = ";".join(names)

    # Exposure per the primary code's class (spec 6); a code outside the table is at risk.
    classes = ("", *C.EXPOSURE_CLASSES)
    class_of_primary = np.array(
        [classes.index(C.exposure_class(code)) for code in part.codes] + [0], dtype=np.int64
    )
    class_key = np.where(is_exception, class_of_primary[primary], 0)
    expected = part.expected[order].astype(np.int64)
    actual = part.actual[order].astype(np.int64)
    difference = actual - expected
    exposure = np.select(
        [
            class_key == classes.index(C.AMOUNT_AT_RISK),
            class_key == classes.index(C.AWAITING),
            class_key == classes.index(C.DISPUTED),
            class_key == classes.index(C.REALISED_LOSS),
        ],
        [np.abs(difference), expected, actual, actual],
        default=0,
    ).astype(np.int64)

    n = len(part)
    created = pa.array(part.created_at[order], mask=part.created_at_null[order], type=pa.int64())
    return {
        "entity_type": _labels(np.zeros(n, dtype=np.int64), {0: part.entity_type}),
        "entity_id": ids,
        "status": _labels(status_key, {0: C.MATCHED, 1: C.PENDING, 2: C.EXCEPTION}),
        "reason_code": _labels(reason_key, reason_label),
        "reason_codes": _labels(joined_key, joined_label),
        "settlement_id": later(pool, part.settlement_id.resolve, order),
        "expected_amount": expected,
        "actual_amount": actual,
        "difference": difference,
        "exposure_class": _labels(class_key, dict(enumerate(classes))),
        "exposure_amount": exposure,
        "match_method": _labels(part.method[order].astype(np.int64), dict(enumerate(METHODS))),
        "order_id": later(pool, part.order_id.resolve, order),
        "utr": later(pool, part.utr.resolve, order),
        "entity_created_at": created,
    }


def _value(column: Column | Later) -> Column:
    """A column, waiting for it when it is still being taken on the pool."""
    if isinstance(column, (pa.Array, np.ndarray)):
        return column
    return column()


def assemble(
    parts: list[Part],
    pool: Executor | None = None,
    source_orders: Mapping[int, Callable[[], IntArray]] | None = None,
) -> pd.DataFrame:
    """The outcomes frame: OUTCOME_COLUMNS, sorted by entity_type then entity_id.

    pool: an executor for the text columns' takes (the frame is the same with or without).
    source_orders: `id(source)` of an entity_id TextRef's source -> a callable returning
    `sort_text(source)`, computed ahead (reconcile starts the payment ids' sort early)."""
    orders = source_orders or {}
    pieces = [
        _columns(p, pool, orders.get(id(p.entity_id.source)))
        for p in sorted(parts, key=lambda p: p.entity_type)
        if len(p)
    ]
    frame: dict[str, object] = {}
    for name in OUTCOME_COLUMNS:
        values = [_value(piece[name]) for piece in pieces]
        if name in AMOUNT_COLUMNS:
            frame[name] = (
                np.concatenate([np.asarray(v, dtype=np.int64) for v in values])
                if values
                else np.zeros(0, dtype=np.int64)
            )
            continue
        arrays = [v for v in values if isinstance(v, pa.Array)]
        if name == "entity_created_at":
            joined = pa.concat_arrays(arrays) if arrays else pa.array([], type=pa.int64())
            data = joined.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            mask = np.asarray(joined.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            frame[name] = pd.arrays.IntegerArray(data, mask)
        else:
            # One chunk per entity type: no copy of the strings.
            chunks = pa.chunked_array(arrays, type=pa.large_string())
            frame[name] = pd.arrays.ArrowStringArray(chunks)
    return pd.DataFrame(frame, columns=list(OUTCOME_COLUMNS))
