"""The roll-forward of the Razorpay receivable (docs/books.md).

Every movement of the merchant's Razorpay balance becomes one *event*: a signed amount in
paise (its effect on what Razorpay owes the merchant), a Unix time, a line and the entity it
comes from. Three kinds of line:

- flow lines (FLOW_LINES): captured, fees, refunds, disputes, adjustments, transfers,
  settlements. opening + Σ flow = closing.
- open-item lines (OPEN_LINES): what is still with Razorpay at that moment, each entity once
  (unsettled captured payments, held payments, pending refunds, other unsettled rows) plus
  the differences the reconciliation flagged as exceptions (claims under review).
- `unexplained`: a difference that no exception covers. closing − Σ open items equals the
  sum of these, the residual, and its events are the drill-down.

"Captured" is the payment entity (the merchant's record of the sale); "settled" is a recon
row that names a settlement Razorpay paid (a processed regular settlement, or an instant
settlement). An entity's difference is what it should have brought minus what its settled
rows brought; a settlement's difference is what its rows add up to minus what it paid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core import columns
from core.calendar import IST, month_bounds
from core.dataset import Dataset

CAPTURED = "captured"
FEES = "fees"
REFUNDS = "refunds"
DISPUTE_DEBITS = "dispute_debits"
DISPUTE_REVERSALS = "dispute_reversals"
WRITTEN_OFF = "written_off"
ADJUSTMENTS = "adjustments"
TRANSFERS = "transfers"
SETTLEMENTS = "settlements"
INSTANT_SETTLEMENTS = "instant_settlements"
FLOW_LINES: tuple[str, ...] = (
    CAPTURED,
    REFUNDS,
    FEES,
    DISPUTE_DEBITS,
    DISPUTE_REVERSALS,
    WRITTEN_OFF,
    ADJUSTMENTS,
    TRANSFERS,
    SETTLEMENTS,
    INSTANT_SETTLEMENTS,
)
OPEN_PAYMENTS = "unsettled_payments"
HELD = "held"
OPEN_REFUNDS = "pending_refunds"
OPEN_TRANSFERS = "pending_transfers"
OPEN_DISPUTES = "pending_dispute_deductions"
OPEN_OTHER = "unsettled_other_rows"
INSTANT_ADVANCES = "instant_advances"
FLAGGED = "flagged_differences"
OPEN_LINES: tuple[str, ...] = (
    OPEN_PAYMENTS,
    HELD,
    OPEN_REFUNDS,
    OPEN_TRANSFERS,
    OPEN_DISPUTES,
    OPEN_OTHER,
    INSTANT_ADVANCES,
    FLAGGED,
)
UNEXPLAINED = "unexplained"

EVENT_COLUMNS = ("ts", "line", "entity_type", "entity_id", "amount")
EXCEPTION = "EXCEPTION"


def exception_entities(outcomes: pd.DataFrame) -> frozenset[tuple[str, str]]:
    """(entity_type, entity_id) of every EXCEPTION outcome: the differences they explain."""
    if outcomes.empty:
        return frozenset()
    hit = outcomes.loc[outcomes["status"] == EXCEPTION, ["entity_type", "entity_id"]]
    return frozenset(zip(hit["entity_type"].astype(str), hit["entity_id"].astype(str), strict=True))


# The dtype pandas gives a column of Python str (and a broadcast str): Arrow-backed text.
_TEXT = pd.StringDtype("pyarrow", na_value=np.nan)


# Every line, as the category of an event's `line`: an event frame holds a line as a small
# integer code, not a string per event (5M events at 1M payments; the sums group by code).
LINE_TYPE = pd.CategoricalDtype([*FLOW_LINES, *OPEN_LINES, UNEXPLAINED])
_LINE_CODE = {name: code for code, name in enumerate(LINE_TYPE.categories)}


def line_codes(
    choices: list[np.ndarray] | list[pd.Series], names: list[str], default: str
) -> pd.Categorical:
    """`np.select(choices, names, default)` as a line column (codes of LINE_TYPE), made
    from the codes: no numpy str array to compare name by name afterwards."""
    conditions = [np.asarray(c, dtype=np.bool_) for c in choices]
    named = [np.int8(_LINE_CODE[n]) for n in names]
    codes = np.select(conditions, named, np.int8(_LINE_CODE[default]))
    return pd.Categorical.from_codes(codes.astype(np.int8), dtype=LINE_TYPE)


def _lines(line: str | pd.Series | np.ndarray | pd.Categorical, size: int) -> pd.Categorical:
    """A line column as codes of LINE_TYPE: one code broadcast, a line column already
    (`line_codes`), or each distinct name of a numpy str or object array compared once (no
    Arrow text made)."""
    if isinstance(line, str):
        return pd.Categorical.from_codes(np.full(size, _LINE_CODE[line], np.int8), dtype=LINE_TYPE)
    if isinstance(line, pd.Categorical) and line.dtype == LINE_TYPE:
        return line
    values = line.to_numpy(dtype=object) if isinstance(line, pd.Series) else np.asarray(line)
    codes = np.full(size, -1, dtype=np.int8)
    for name in pd.unique(values.astype(object)) if len(values) else []:
        codes[values == name] = _LINE_CODE[str(name)]
    return pd.Categorical.from_codes(codes, dtype=LINE_TYPE)


def _events(
    ts: pd.Series | np.ndarray,
    line: str | pd.Series | np.ndarray | pd.Categorical,
    etype: str,
    eid: pd.Series | pd.api.extensions.ExtensionArray,
    amount: pd.Series | np.ndarray,
) -> pd.DataFrame:
    amounts = pd.Series(amount).to_numpy(dtype=np.int64)
    times = pd.Series(ts).to_numpy(dtype=np.int64)
    lines = _lines(line, len(amounts))
    ids = eid if is_coded(eid) else pd.Series(eid).astype(str).array
    if not amounts.all():  # zero amounts left out (one take of each column)
        kept = np.flatnonzero(amounts)
        amounts, times, lines, ids = amounts[kept], times[kept], lines.take(kept), ids.take(kept)
    return pd.DataFrame(
        {"ts": times, "line": lines, "entity_type": etype, "entity_id": ids, "amount": amounts}
    )


def coded(codes: np.ndarray, dictionary: pa.Array) -> pd.api.extensions.ExtensionArray:
    """Entity ids given as their codes into `dictionary` (distinct texts): an Arrow
    dictionary column, taken as integers and grouped by code by `ledger_of`;
    `event_frame` makes it text again."""
    indices = pa.array(np.asarray(codes, dtype=np.int64), type=pa.int64())
    return pd.arrays.ArrowExtensionArray(pa.DictionaryArray.from_arrays(indices, dictionary))


def is_coded(values: object) -> bool:
    """Whether `values` (a column or array) is a `coded` entity column."""
    dtype = getattr(values, "dtype", None)
    return isinstance(dtype, pd.ArrowDtype) and pa.types.is_dictionary(dtype.pyarrow_dtype)


def coded_parts(values: pd.Series) -> tuple[np.ndarray, pa.Array]:
    """A `coded` column's codes and its dictionary."""
    column = pa.array(values.array)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return np.asarray(column.indices, dtype=np.int64), column.dictionary


def text_entities(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with a `coded` entity_id made text (the column `_events` makes of text)."""
    if not is_coded(frame["entity_id"]):
        return frame
    codes, dictionary = coded_parts(frame["entity_id"])
    return frame.assign(entity_id=pd.array(dictionary.take(codes), dtype=_TEXT))


def _is_foreign(currency: pd.Series) -> pd.Series:
    upper = currency.astype("string").str.upper()
    return (upper.notna() & (upper != "INR")).fillna(False).astype(bool)


def razorpay_settled(settled_by: pd.Series) -> npt.NDArray[np.bool_]:
    """Settled by Razorpay: `settled_by` missing, empty or `Razorpay` (any case, spaces
    around), as the engine reads it (docs/engine.md); the roll-forward, the journal and the
    GST tie-out alike."""
    text = pc.utf8_lower(pc.utf8_trim_whitespace(columns.text(settled_by)))
    named = pc.is_in(text, value_set=pa.array(["", "razorpay"], pa.large_string()))
    chosen = pc.or_(pc.is_null(text), pc.fill_null(named, False))
    return np.asarray(chosen.to_numpy(zero_copy_only=False), dtype=bool)


def names_a_settlement(settlement_id: pd.Series) -> npt.NDArray[np.bool_]:
    """Recon rows that name a settlement (a non-empty `settlement_id`): Razorpay carried
    the row in one of its settlements (whether paid out yet or not)."""
    text = pc.utf8_trim_whitespace(columns.text(settlement_id))
    named = pc.fill_null(pc.not_equal(text, pa.scalar("", text.type)), False)
    return np.asarray(named.to_numpy(zero_copy_only=False), dtype=bool)


def through_razorpay(
    settled_by: pd.Series, carried: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """The one rule for "this payment (or refund) passes through the Razorpay balance" (the
    roll-forward's payments, the journal's captured voucher, the ledger and import-day's
    carry, which derive from `row_event_parts`): settled by Razorpay (`razorpay_settled`),
    or `carried`: one of its recon rows names a settlement (`names_a_settlement`), so
    Razorpay settled it whatever its Settled By says. A payment Settled By a bank whose
    recon rows name no settlement never passes through the balance, even with a row (the
    combined report lists a direct settlement with `settlement_id` empty; before
    2026-12-04 any row brought it back, and an independent tester's ₹3,400 sat in
    `unsettled_payments` for good: docs/books.md section 1)."""
    return razorpay_settled(settled_by) | carried


def _settle_times(dataset: Dataset) -> pd.Series:
    """settlement id -> the time it paid out: processed regular settlements and instant
    settlements (created_at)."""
    st = dataset.settlements
    regular = st[st["status"].astype(str) == "processed"]
    inst = dataset.instant_settlements
    times = pd.concat(
        [
            pd.Series(regular["created_at"].to_numpy(np.int64), index=regular["id"].astype(str)),
            pd.Series(inst["created_at"].to_numpy(np.int64), index=inst["id"].astype(str)),
        ]
    )
    return times[~times.index.duplicated(keep="first")]


def _arrow_text(values: pd.Series | pd.Index) -> pa.Array:
    found = pa.array(values.astype(str).array)
    if isinstance(found, pa.ChunkedArray):
        found = found.combine_chunks()
    return found.cast(pa.large_string())


def text_isin(values: pd.Series, candidates: pd.Series | pd.Index | set[str]) -> pd.Series:
    """`values.isin(candidates)` for text keys, by one Arrow `is_in`: pandas (3.1) makes a
    Python scalar of every candidate first, 94 of the Books page's 150 CPU s at 1M payments.
    The same answer: a missing value matches a missing candidate, as in pandas."""
    if not isinstance(values.array, pd.arrays.ArrowStringArray):
        return values.isin(candidates)
    if isinstance(candidates, (pd.Series, pd.Index)):
        pool = _arrow_text(candidates)
    else:
        pool = pa.array(sorted(candidates), type=pa.large_string())
    found = pc.is_in(_arrow_text(values), value_set=pool)
    return pd.Series(np.asarray(found, dtype=np.bool_), index=values.index)


def text_map(values: pd.Series, mapping: pd.Series) -> pd.Series:
    """`values.map(mapping)` for text keys and a mapping whose index is unique text, by one
    Arrow `index_in`: pandas hashes a Python object per key and per value (at 1M payments,
    7 of the ledger's 18 CPU s). The same answer: a key not in the index (a missing value
    unless the index holds one) gives a missing value, int64 values then become float64."""
    if not isinstance(values.array, pd.arrays.ArrowStringArray):
        return values.map(mapping)
    where = pc.index_in(_arrow_text(values), value_set=_arrow_text(mapping.index))
    positions = np.asarray(where.fill_null(-1), dtype=np.int64)
    return _taken(mapping, positions, values.index)


# The columns `row_events` reads: selected first, so that its filters copy these alone
# (the wide exports carry 23 recon and 22 payment columns, descriptions and notes among them).
_RECON_COLUMNS = [
    "row_key",
    "entity_id",
    "type",
    "debit",
    "credit",
    "amount",
    "fee",
    "on_hold",
    "settled",
    "created_at",
    "settlement_id",
    "dispute_id",
    "transfer_id",
]
_PAYMENT_COLUMNS = [
    "id",
    "amount",
    "currency",
    "status",
    "captured",
    "fee",
    "created_at",
    "base_amount",
    "settled_by",
]
# What the rows owned by a payment, refund or transfer are read for (a dispute's also
# for their dispute_id and created_at).
_OWNED_COLUMNS = ["entity_id", "amount", "fee", "settle_ts", "net", "held"]
_REFUND_COLUMNS = ["id", "amount", "currency", "status", "created_at", "base_amount", "settled_by"]
# A transfer in one of these states was made: Razorpay took it from the balance when it was
# created (a reversal gives money back as a row of its own).
_MADE_TRANSFERS = ("processed", "partially_reversed", "reversed")


def _item_events(
    *,
    etype: str,
    ids: pd.Series,
    created: pd.Series,
    expected: pd.Series,
    open_line: pd.Categorical,
    rows: pd.DataFrame,
    id_code: np.ndarray,
    row_code: np.ndarray,
    codes: int,
    texts: pa.Array,
    flagged: frozenset[tuple[str, str]],
    emit: Callable[[pd.DataFrame], None],
) -> None:
    """Open-item and difference events of entities that own recon rows (payments, refunds).

    rows: the entities' recon rows with `owner`, `settle_ts` (NaN when unsettled) and `net`.
    The entity is open from `created` until its first settled row; its difference is
    `expected` (at that moment) minus each settled row's net (at the row's settlement).
    open_line: each entity's open-item line (`line_codes`). id_code, row_code: each id's
    and each row's owner's code (`_owned_rows`, of `codes`; -1: none); `texts`: the texts
    of the codes, for the events' `coded` entity ids."""
    id_text = ids.astype(str)
    expect = expected.to_numpy(np.int64)
    born = created.to_numpy(np.int64)
    is_settled = rows["settle_ts"].notna().to_numpy()
    settled = rows[is_settled]
    # Each settled row's entity as the first position among `ids` of its owner's code (-1:
    # none of them): integer lookups, no text hashed again.
    first_id = _first_at(id_code, codes)
    at = _at(first_id, row_code[is_settled])
    owned = at >= 0
    times = settled["settle_ts"].to_numpy(np.float64)
    first = np.full(len(id_text), np.inf)
    np.minimum.at(first, at[owned], times[owned])
    emit(_events(born, open_line, etype, coded(id_code, texts), expect))
    is_closed = np.isfinite(first)
    closed_first = first[is_closed].astype(np.int64)
    closed_id = coded(id_code[is_closed], texts)
    emit(_events(closed_first, open_line[is_closed], etype, closed_id, -expect[is_closed]))
    flagged_ids = {i for kind, i in flagged if kind == etype}
    flag_of = np.zeros(len(id_text), dtype=np.bool_)
    if flagged_ids:
        # The first position of each flagged id among `ids` (as an index_in of them would).
        flag_code = np.zeros(codes, dtype=np.bool_)
        flag_code[id_code[text_isin(id_text, flagged_ids).to_numpy()]] = True
        flag_of = flag_code[id_code] & (first_id[id_code] == np.arange(len(id_text)))
    diff_line = line_codes([flag_of[is_closed]], [FLAGGED], UNEXPLAINED)
    emit(_events(closed_first, diff_line, etype, closed_id, expect[is_closed]))
    mine = settled[owned]
    emit(
        _events(
            mine["settle_ts"].astype(np.int64),
            line_codes([flag_of[at[owned]]], [FLAGGED], UNEXPLAINED),
            etype,
            coded(row_code[is_settled][owned], texts),
            -mine["net"],
        )
    )


def _first_at(codes: np.ndarray, size: int) -> np.ndarray:
    """Per code below `size`, the first position holding it in `codes` (-1: none)."""
    first = np.full(size, len(codes), dtype=np.int64)
    valid = np.flatnonzero(codes >= 0)
    np.minimum.at(first, codes[valid], valid)
    first[first == len(codes)] = -1
    return first


def _at(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """table[code] for each code, -1 where the code is -1."""
    out = np.full(len(codes), -1, dtype=np.int64)
    valid = codes >= 0
    out[valid] = table[codes[valid]]
    return out


def _owned_rows(
    recon: pd.DataFrame,
    is_kind: np.ndarray,
    ids: pd.Series,
    by: str = "entity_id",
    extra: tuple[str, ...] = (),
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, pa.Array]:
    """The recon rows of a kind (`is_kind`) whose entity_id is among `ids` (the
    _OWNED_COLUMNS and `owner`), each id's code, each row's code and how many codes (the
    distinct ids): one Arrow dictionary encoding of the ids followed by the rows' entity
    ids, so equal texts share a code (a missing one too, as is_in and index_in match it),
    an entity id among `ids` has a code below their count, and every later "is it among",
    "first row of" or "position of" question is an integer lookup. The last: the ids'
    distinct texts, in code order (their count is the number of codes). by: the column
    naming the owner (a dispute's rows name it by `dispute_id`); extra: columns read
    besides _OWNED_COLUMNS."""
    candidates = np.flatnonzero(is_kind)
    owners = recon[by].astype(str).iloc[candidates]
    column = pa.concat_arrays([_arrow_text(ids), _arrow_text(owners)])
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    codes = np.asarray(encoded.indices, dtype=np.int64)
    id_code, owner_code = codes[: len(ids)], codes[len(ids) :]
    size = int(id_code.max()) + 1 if len(id_code) else 0
    found = owner_code < size
    mask = np.zeros(len(recon), dtype=np.bool_)
    mask[candidates[found]] = True
    rows = recon.loc[mask, [*_OWNED_COLUMNS, *(c for c in extra if c not in _OWNED_COLUMNS)]]
    rows = rows.assign(owner=rows[by].astype(str))
    return rows, id_code, owner_code[found], encoded.dictionary[:size]


def _taken(source: pd.Series, positions: np.ndarray, index: pd.Index) -> pd.Series:
    """source's values at `positions` (-1: missing; int64 values then become float64), as
    `text_map` gives them."""
    values = (
        source.array
        if isinstance(source.dtype, pd.api.extensions.ExtensionDtype)
        else source.to_numpy()
    )
    return pd.Series(pd.api.extensions.take(values, positions, allow_fill=True), index=index)


def ledger_events(dataset: Dataset, flagged: Iterable[tuple[str, str]] = ()) -> pd.DataFrame:
    """Every event of the receivable (columns EVENT_COLUMNS), unsorted.

    flagged: (entity_type, entity_id) of the exceptions of a run over this dataset
    (`exception_entities`); their differences are open items, any other difference is
    `unexplained`."""
    flags = frozenset(flagged)
    rows, rows_sum = row_events(dataset, flags, settle_times(dataset))
    frame = event_frame([rows, settlement_events(dataset, rows_sum, flags)])
    frame["line"] = frame["line"].astype(object)  # names, as the Books pages group them
    frame["day"] = pd.to_datetime(frame["ts"], unit="s", utc=True).dt.tz_convert(IST).dt.date
    return frame


def settle_times(dataset: Dataset) -> pd.Series:
    """settlement id -> the time it paid out (read from the settlements and instant
    settlements alone, so a window's rows can be given the whole tables')."""
    return _settle_times(dataset)


def event_frame(parts: list[pd.DataFrame], keep_codes: bool = False) -> pd.DataFrame:
    """Event frames as one (ts, line, entity_type, entity_id, amount), ts and amount int64,
    entity_id text (a part's `coded` ids made text; `keep_codes`: left as they are, for
    one part summed by `ledger_of`)."""
    kept = [e if keep_codes else text_entities(e) for e in parts if len(e)]
    if kept:
        frame = pd.concat(kept, ignore_index=True)
    else:
        frame = pd.DataFrame({c: pd.Series(dtype=object) for c in EVENT_COLUMNS})
    frame["ts"] = frame["ts"].astype(np.int64)
    frame["amount"] = frame["amount"].astype(np.int64)
    return frame


def row_events(
    dataset: Dataset, flags: frozenset[tuple[str, str]], times: pd.Series
) -> tuple[pd.DataFrame, pd.Series]:
    """`row_event_parts` as one event frame."""
    parts: list[pd.DataFrame] = []
    rows_sum = row_event_parts(dataset, flags, times, parts.append)
    return event_frame(parts), rows_sum


def row_event_parts(
    dataset: Dataset,
    flags: frozenset[tuple[str, str]],
    times: pd.Series,
    emit: Callable[[pd.DataFrame], None],
) -> pd.Series:
    """The events of the row tables (payments, refunds, recon rows; disputes name the
    lost ones), and per settlement id the sum of its settled rows' net (for
    `settlement_events`). Every event of an entity comes from its own rows and the
    settlement times `times`, so a set of row families (core.engine.partition) gives
    exactly those entities' events, and the row sums of disjoint sets add up. The events
    are given to `emit` in parts (event frames, a payment's or refund's ids `coded`, whose
    `event_frame` is `row_events`' frame), each as soon as it is made, so a caller that
    sums them never holds them all."""
    recon = dataset.recon[_RECON_COLUMNS]  # the columns added below are its own (copy on write)
    recon["settle_ts"] = text_map(recon["settlement_id"].astype(str), times).astype("float64")
    recon.loc[recon["settlement_id"].isna(), "settle_ts"] = np.nan
    recon["net"] = recon["credit"].astype(np.int64) - recon["debit"].astype(np.int64)
    recon["held"] = recon["on_hold"].astype(bool) & ~recon["settled"].astype(bool)
    rtype = recon["type"].astype(str)

    # Payments: captured (or owning recon rows) and settled through Razorpay.
    pay = dataset.payments[_PAYMENT_COLUMNS]
    pay_ids = pay["id"].astype(str)
    pay_rows, pay_code, pay_row_code, pay_texts = _owned_rows(
        recon, (rtype == "payment").to_numpy(), pay_ids, extra=("settlement_id",)
    )
    pay_codes = len(pay_texts)
    # Per payment, the position in pay_rows of its owner's first row (-1: it has none).
    first_row = _first_at(pay_row_code, pay_codes)[pay_code]
    captured = (
        pay["captured"].astype(bool) | pay["status"].astype(str).isin(["captured", "refunded"])
    ).to_numpy()
    carried = np.zeros(pay_codes, dtype=np.bool_)
    carried[pay_row_code[names_a_settlement(pay_rows["settlement_id"])]] = True
    # Captured (or owning recon rows: their differences) and through the Razorpay balance.
    keep = through_razorpay(pay["settled_by"], carried[pay_code]) & (captured | (first_row >= 0))
    # Only the columns read from here on: a mask copies each column it keeps.
    p = pay.loc[keep, ["id", "amount", "currency", "fee", "created_at", "base_amount"]]
    pid = p["id"].astype(str)
    cap = captured[keep]
    foreign = _is_foreign(p["currency"]).to_numpy()
    row_amount = _taken(pay_rows["amount"], first_row[keep], pid.index).astype("Int64")
    inr = np.where(
        foreign,
        p["base_amount"].astype("Int64").fillna(row_amount).fillna(0).to_numpy(np.int64),
        p["amount"].to_numpy(np.int64),
    )
    row_fee = _taken(pay_rows["fee"], first_row[keep], pid.index).astype("Int64")
    fee = p["fee"].astype("Int64").fillna(row_fee).fillna(0)
    amount = pd.Series(np.where(cap, inr, 0), index=p.index)
    fees = pd.Series(np.where(cap, fee.to_numpy(np.int64), 0), index=p.index)
    created = p["created_at"].astype(np.int64)
    emit(_events(created, CAPTURED, "payment", coded(pay_code[keep], pay_texts), amount))
    emit(_events(created, FEES, "payment", coded(pay_code[keep], pay_texts), -fees))
    held = np.zeros(pay_codes, dtype=np.bool_)
    held[pay_row_code[pay_rows["held"].to_numpy(np.bool_)]] = True
    open_line = line_codes([held[pay_code[keep]]], [HELD], OPEN_PAYMENTS)
    _item_events(
        etype="payment",
        ids=pid,
        created=created,
        expected=amount - fees,
        open_line=open_line,
        rows=pay_rows,
        id_code=pay_code[keep],
        row_code=pay_row_code,
        codes=pay_codes,
        texts=pay_texts,
        flagged=flags,
        emit=emit,
    )

    # Refunds, processed or pending: taken from the balance when made. One a settlement
    # took (its recon row) was taken whatever its status says now: a refund that fails
    # after it was debited comes back as an adjustment of a later settlement, so dropping
    # it would leave that settlement's row, and the month it closed, unexplained.
    ref = dataset.refunds[_REFUND_COLUMNS]
    ref_ids = ref["id"].astype(str)
    ref_rows, ref_code, ref_row_code, ref_texts = _owned_rows(
        recon, (rtype == "refund").to_numpy(), ref_ids, extra=("settlement_id",)
    )
    ref_codes = len(ref_texts)
    rfirst = _first_at(ref_row_code, ref_codes)[ref_code]
    live = ref["status"].astype(str).isin(["processed", "pending"]).to_numpy()
    debited = rfirst >= 0
    rcarried = np.zeros(ref_codes, dtype=np.bool_)
    rcarried[ref_row_code[names_a_settlement(ref_rows["settlement_id"])]] = True
    rkeep = through_razorpay(ref["settled_by"], rcarried[ref_code]) & (live | debited)
    r = ref.loc[rkeep, ["id", "amount", "currency", "created_at", "base_amount"]]
    rid = r["id"].astype(str)
    rlive = (live | debited)[rkeep]
    rforeign = _is_foreign(r["currency"]).to_numpy()
    r_row_amount = _taken(ref_rows["amount"], rfirst[rkeep], rid.index).astype("Int64")
    r_inr = np.where(
        rforeign,
        r["base_amount"].astype("Int64").fillna(r_row_amount).fillna(0).to_numpy(np.int64),
        r["amount"].to_numpy(np.int64),
    )
    r_row_fee = _taken(ref_rows["fee"], rfirst[rkeep], rid.index)
    r_fee = r_row_fee.astype("Int64").fillna(0).to_numpy(np.int64)
    r_amount = pd.Series(np.where(rlive, r_inr, 0), index=r.index)
    r_fees = pd.Series(np.where(rlive, r_fee, 0), index=r.index)
    rcreated = r["created_at"].astype(np.int64)
    emit(_events(rcreated, REFUNDS, "refund", coded(ref_code[rkeep], ref_texts), -r_amount))
    emit(_events(rcreated, FEES, "refund", coded(ref_code[rkeep], ref_texts), -r_fees))
    _item_events(
        etype="refund",
        ids=rid,
        created=rcreated,
        expected=-(r_amount + r_fees),
        open_line=_lines(OPEN_REFUNDS, len(r)),
        rows=ref_rows,
        id_code=ref_code[rkeep],
        row_code=ref_row_code,
        codes=ref_codes,
        texts=ref_texts,
        flagged=flags,
        emit=emit,
    )

    # Route transfers, made (processed, or reversed since): taken from the balance when
    # created, for their amount plus the fee of their recon row (the transfers file as read
    # has no fee); their `transfer` rows close them when settled, as a refund's do.
    trf_rows = transfer_events(dataset, recon, (rtype == "transfer").to_numpy(), flags, emit)
    # Disputes whose `amount_deducted` says Razorpay took money: taken at the first debit
    # row's created_at (else the dispute's), lost ones written off; their debit rows close
    # them when settled.
    disp_rows = dispute_events(dataset, recon, flags, emit)

    # Every other recon row is its own item: it brings exactly its net when settled.
    owned = (
        recon.index.isin(pay_rows.index)
        | recon.index.isin(ref_rows.index)
        | recon.index.isin(trf_rows)
        | recon.index.isin(disp_rows)
    )
    # A payment or refund row for no known entity should have brought nothing: once settled,
    # all it brought is a difference (the engine's PAYMENT_ID_MISMATCH when it saw it).
    orphan = ~owned & rtype.isin(["payment", "refund"]).to_numpy()
    stray = recon[orphan & recon["settle_ts"].notna().to_numpy()]
    stray_id = stray["entity_id"].astype(str)
    stray_line = pd.Series(
        [FLAGGED if ("recon_row", i) in flags else UNEXPLAINED for i in stray_id],
        index=stray.index,
        dtype=object,
    )
    emit(
        _events(
            stray["settle_ts"].astype(np.int64), stray_line, "recon_row", stray_id, -stray["net"]
        )
    )
    other = recon[~owned & ~orphan]
    # An adjustment that names an instant settlement (`setlod_…`: the combined report's
    # `settlement.ondemand` row) is the regular settlement drawing back what the instant
    # settlement paid out early. The payout already took that money off the balance (the
    # instant_settlements and fees lines), so the draw moves nothing: once settled it
    # closes the open advance (INSTANT_ADVANCES) instead of being an adjustment.
    is_draw = draw_rows(other)
    drawn = other[is_draw & other["settle_ts"].notna().to_numpy()]
    emit(
        _events(
            drawn["settle_ts"].astype(np.int64),
            INSTANT_ADVANCES,
            "recon_row",
            drawn["row_key"],
            -drawn["net"],
        )
    )
    other = other[~is_draw]
    lost = set(
        dataset.disputes.loc[dataset.disputes["status"].astype(str) == "lost", "id"].astype(str)
    )
    otype = other["type"].astype(str)
    dispute = other["dispute_id"].astype("string")
    line = line_codes(
        [
            (otype == "adjustment") & dispute.notna() & dispute.isin(lost) & (other["net"] < 0),
            (otype == "adjustment") & dispute.notna() & (other["net"] < 0),
            (otype == "adjustment") & dispute.notna(),
            (otype == "adjustment") & other["transfer_id"].isna(),
        ],
        [WRITTEN_OFF, DISPUTE_DEBITS, DISPUTE_REVERSALS, ADJUSTMENTS],
        TRANSFERS,
    )
    key = other["row_key"].astype(str)
    when = (
        other["created_at"].astype("float64").fillna(other["settle_ts"]).fillna(0).astype(np.int64)
    )
    emit(_events(when, line, "recon_row", key, other["net"]))
    emit(_events(when, OPEN_OTHER, "recon_row", key, other["net"]))
    done = other[other["settle_ts"].notna()]
    emit(
        _events(
            done["settle_ts"].astype(np.int64),
            OPEN_OTHER,
            "recon_row",
            done["row_key"],
            -done["net"],
        )
    )

    settled = recon.loc[recon["settle_ts"].notna(), ["settlement_id", "net"]]
    rows_sum = settled.groupby(settled["settlement_id"].astype(str))["net"].sum()
    return rows_sum.astype(np.int64)


def transfer_events(
    dataset: Dataset,
    recon: pd.DataFrame,
    is_transfer_row: np.ndarray,
    flags: frozenset[tuple[str, str]],
    emit: Callable[[pd.DataFrame], None],
) -> pd.Index:
    """The events of the transfers file's transfers that were made (`_MADE_TRANSFERS`) or
    that a recon `transfer` row names: the amount (plus the first row's fee) leaves the
    balance at the transfer's created_at ("Amount settled = … − Transfer"; a transfer is
    refused for insufficient balance at its `balance_check` step, docs/books.md), open on
    `pending_transfers` until its first settled row. Returns the index of the rows it owns."""
    tr = dataset.transfers
    if len(tr) == 0:
        return pd.Index([])
    t_ids = tr["id"].astype(str)
    rows, code, row_code, texts = _owned_rows(recon, is_transfer_row, t_ids)
    first = _first_at(row_code, len(texts))[code]
    made = tr["status"].astype(str).isin(_MADE_TRANSFERS).to_numpy()
    keep = made | (first >= 0)
    t = tr.loc[keep, ["id", "amount", "created_at"]]
    tid = t["id"].astype(str)
    fee = _taken(rows["fee"], first[keep], tid.index).astype("Int64").fillna(0)
    out = t["amount"].astype(np.int64) + fee.astype(np.int64)
    created = t["created_at"].astype(np.int64)
    emit(_events(created, TRANSFERS, "transfer", coded(code[keep], texts), -out))
    _item_events(
        etype="transfer",
        ids=tid,
        created=created,
        expected=-out,
        open_line=_lines(OPEN_TRANSFERS, len(t)),
        rows=rows,
        id_code=code[keep],
        row_code=row_code,
        codes=len(texts),
        texts=texts,
        flagged=flags,
        emit=emit,
    )
    return rows.index


def dispute_events(
    dataset: Dataset,
    recon: pd.DataFrame,
    flags: frozenset[tuple[str, str]],
    emit: Callable[[pd.DataFrame], None],
) -> pd.Index:
    """The events of the disputes whose `amount_deducted` is above 0: Razorpay took it from
    the balance (deduct at onset, or the dispute lost or accepted). It leaves at the first
    debit row's created_at (the deduction as Razorpay recorded it), else at the dispute's
    created_at; on `written_off` when the dispute is `lost`, else on `dispute_debits`; open
    on `pending_dispute_deductions` until its first settled debit row. Its debit rows
    (`adjustment`s naming it with debit above credit) are owned: they close it instead of
    moving the balance again. A credit row (a won dispute's reversal) stays a row of its
    own. Returns the index of the rows it owns."""
    dsp = dataset.disputes
    if len(dsp) == 0:
        return pd.Index([])
    taken = dsp["amount_deducted"].astype("Int64").fillna(0).to_numpy(np.int64)
    d = dsp[taken > 0]
    if len(d) == 0:
        return pd.Index([])
    is_debit = (
        (recon["type"].astype(str) == "adjustment").to_numpy()
        & recon["dispute_id"].notna().to_numpy()
        & (recon["net"] < 0).to_numpy()
        & ~draw_rows(recon)
    )
    did = d["id"].astype(str)
    rows, code, row_code, texts = _owned_rows(
        recon, is_debit, did, by="dispute_id", extra=("dispute_id", "created_at")
    )
    # Per dispute, the earliest created_at of its debit rows (else its own created_at).
    earliest = np.full(len(texts), np.iinfo(np.int64).max, dtype=np.int64)
    row_born = rows["created_at"].astype("float64").fillna(np.inf).to_numpy()
    known = np.isfinite(row_born)
    np.minimum.at(earliest, row_code[known], row_born[known].astype(np.int64))
    mine = earliest[code]
    own = d["created_at"].to_numpy(np.int64)
    when = pd.Series(np.where(mine == np.iinfo(np.int64).max, own, mine), index=d.index)
    amount = pd.Series(taken[taken > 0], index=d.index)
    lost = (d["status"].astype(str) == "lost").to_numpy()
    line = line_codes([lost], [WRITTEN_OFF], DISPUTE_DEBITS)
    emit(_events(when, line, "dispute", coded(code, texts), -amount))
    _item_events(
        etype="dispute",
        ids=did,
        created=when,
        expected=-amount,
        open_line=_lines(OPEN_DISPUTES, len(d)),
        rows=rows,
        id_code=code,
        row_code=row_code,
        codes=len(texts),
        texts=texts,
        flagged=flags,
        emit=emit,
    )
    return rows.index


INSTANT_PREFIX = "setlod_"  # Razorpay's id prefix of an instant settlement


def draw_rows(recon: pd.DataFrame) -> np.ndarray:
    """Which recon rows are a regular settlement's draw of an instant settlement: an
    `adjustment` with no dispute whose `entity_id` is an instant settlement's id
    (`setlod_…`; the combined report's `settlement.ondemand` row, docs/ingest.md)."""
    adjustment = recon["type"].astype(str).to_numpy() == "adjustment"
    no_dispute = recon["dispute_id"].isna().to_numpy()
    named = recon["entity_id"].astype("string").str.startswith(INSTANT_PREFIX)
    result: np.ndarray = adjustment & no_dispute & named.fillna(False).to_numpy(dtype=bool)
    return result


def settlement_events(
    dataset: Dataset, rows_sum: pd.Series, flags: frozenset[tuple[str, str]]
) -> pd.DataFrame:
    """The events of the settlements, instant settlements and payouts (the whole tables),
    given `rows_sum`: per settlement id, the net of every settled row that names it."""
    events: list[pd.DataFrame] = []
    # Settlements: what Razorpay paid out, against what their rows add up to.
    st = dataset.settlements
    regular = st[st["status"].astype(str) == "processed"]
    sid = regular["id"].astype(str)
    s_ts = regular["created_at"].astype(np.int64)
    paid = regular["amount"].astype(np.int64)
    events.append(_events(s_ts, SETTLEMENTS, "settlement", sid, -paid))
    s_diff = text_map(sid, rows_sum).fillna(0).astype(np.int64) - paid
    s_line = pd.Series(
        [FLAGGED if ("settlement", i) in flags else UNEXPLAINED for i in sid],
        index=regular.index,
        dtype=object,
    )
    events.append(_events(s_ts, s_line, "settlement", sid, s_diff))

    payouts = dataset.instant_payouts
    done_payouts = payouts[payouts["status"].astype(str) == "processed"]
    po_ts = done_payouts["processed_at"].astype("Int64").fillna(done_payouts["created_at"])
    po_fees = done_payouts["fees"].astype("Int64").fillna(0).astype(np.int64)
    po_gross = done_payouts["amount"].astype(np.int64)
    parent = done_payouts["instant_settlement_id"].astype(str)
    events.append(
        _events(po_ts, INSTANT_SETTLEMENTS, "instant_settlement", parent, -(po_gross - po_fees))
    )
    events.append(_events(po_ts, FEES, "instant_settlement", parent, -po_fees))
    # An instant settlement is an advance on the balance: open (negative) from its payout
    # until recon rows that name it account for what it drew.
    events.append(_events(po_ts, INSTANT_ADVANCES, "instant_settlement", parent, -po_gross))
    inst = dataset.instant_settlements
    iid = inst["id"].astype(str)
    events.append(
        _events(
            inst["created_at"].astype(np.int64),
            INSTANT_ADVANCES,
            "instant_settlement",
            iid,
            text_map(iid, rows_sum).fillna(0).astype(np.int64),
        )
    )

    return event_frame(events)


def daily_balances(events: pd.DataFrame) -> pd.DataFrame:
    """One row per IST day with an event: each flow line's movement, the closing balance,
    each open-item line's balance at the end of the day, and the residual (closing − open
    items, which equals the cumulative `unexplained`)."""
    lines = (*FLOW_LINES, *OPEN_LINES, UNEXPLAINED)
    pivot = events.pivot_table(
        index="day", columns="line", values="amount", aggfunc="sum", fill_value=0
    ).reindex(columns=list(lines), fill_value=0)
    pivot = pivot.sort_index().astype(np.int64)
    out = pd.DataFrame(index=pivot.index)
    flow = pivot[list(FLOW_LINES)]
    out["closing"] = flow.sum(axis=1).cumsum()
    out["opening"] = out["closing"] - flow.sum(axis=1)
    for name in FLOW_LINES:
        out[name] = flow[name]
    opens = pivot[list(OPEN_LINES)].cumsum()
    for name in OPEN_LINES:
        out[f"open_{name}"] = opens[name]
    out["open_items"] = opens.sum(axis=1)
    out["residual"] = out["closing"] - out["open_items"]
    out["unexplained_cumulative"] = pivot[UNEXPLAINED].cumsum()
    out.index.name = "day"
    return out.reset_index().astype({c: np.int64 for c in out.columns})


@dataclass(frozen=True)
class MonthRollForward:
    """One month: opening, the flow lines, closing; the open items at month end; the
    residual and the entities whose unexplained differences make it."""

    month: str
    opening: int
    movements: tuple[tuple[str, int], ...]
    closing: int
    open_items: tuple[tuple[str, int], ...]
    residual: int
    drilldown: tuple[tuple[str, str, str, int], ...]  # (day, entity_type, entity_id, amount)

    def as_dict(self) -> dict[str, object]:
        return {
            "month": self.month,
            "opening": self.opening,
            "movements": dict(self.movements),
            "closing": self.closing,
            "open_items": dict(self.open_items),
            "residual": self.residual,
            "drilldown": [
                {"day": d, "entity_type": t, "entity_id": i, "amount": a}
                for d, t, i, a in self.drilldown
            ],
        }


def month_rollforward(events: pd.DataFrame, month: str) -> MonthRollForward:
    """The roll-forward of `month` ('YYYY-MM', IST)."""
    first, following = month_bounds(month)
    before = events[events["day"] < first]
    upto = events[events["day"] < following]
    inside = upto[upto["day"] >= first]
    flow_before = before[before["line"].isin(FLOW_LINES)]["amount"].sum()
    moves = inside[inside["line"].isin(FLOW_LINES)].groupby("line")["amount"].sum()
    movements = tuple((name, int(moves.get(name, 0))) for name in FLOW_LINES)
    opening = int(flow_before)
    closing = opening + sum(a for _, a in movements)
    open_sum = upto[upto["line"].isin(OPEN_LINES)].groupby("line")["amount"].sum()
    open_items = tuple((name, int(open_sum.get(name, 0))) for name in OPEN_LINES)
    residual = closing - sum(a for _, a in open_items)
    unexplained = upto[upto["line"] == UNEXPLAINED]
    # The rows of entities whose differences do not cancel out (a missing key: no entity).
    keys = ["entity_type", "entity_id"]
    totals = unexplained.groupby(keys, dropna=False)["amount"].transform("sum")
    named = unexplained[keys].notna().all(axis=1)
    detail = unexplained[(named & (totals != 0)).to_numpy()]
    grouped = detail.groupby(["day", "entity_type", "entity_id"], as_index=False)["amount"].sum()
    grouped = grouped[grouped["amount"] != 0]
    drilldown = tuple(
        (str(day), str(etype), str(eid), int(amount))
        for day, etype, eid, amount in grouped.itertuples(index=False, name=None)
    )
    return MonthRollForward(
        month=month,
        opening=opening,
        movements=movements,
        closing=closing,
        open_items=open_items,
        residual=residual,
        drilldown=drilldown,
    )
