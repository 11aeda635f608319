"""What an import changes in the stored rows, and whether it would move a row backwards
(docs/ingest.md, "Corrections and older files").

Rows are upserted by key, so a stored row sent again with other values is replaced: a
correction. But Razorpay's lifecycles only go forward (docs/razorpay-sources.md): a
payment is created, then authorized (or failed, and a failed one may still be authorized
late), then captured, then refunded; a refund goes pending -> processed or failed; a
settlement created -> processed, or failed and retried to processed. And some amounts only
grow: a payment's amount_refunded (a refund issued is never cancelled), a transfer's
amount_reversed. A file that would move a stored row's status back along its lifecycle, or
lower such an amount, is an older download, not a correction: re-importing an earlier day
after later ones would otherwise revert them.

`STATUS_RANK` and `GROWING_AMOUNTS` are the one lifecycle table of the project: imports and
the Razorpay webhooks (core.razorpay.webhooks, by their entity's table) decide by them.
`stored_changes` compares a dataset with the stored rows of its keys (frames only, one
vectorised comparison per table); `backward_moves` is its backward part for one table (a
webhook's entity); `older_problems` names each backward move by file, line and the column
as the file writes it (the file is read again: that path runs only when an import is
refused).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.dataset import Dataset
from core.errors import OlderRowsError, Problem

# How far along its lifecycle a status is, per raw table (a Dataset field); a stored row is
# never moved to a lower rank. Equal ranks are alternatives (neither follows the other) and
# are not refused; statuses not listed (and disputes, whose phases may open a decided
# dispute again) are not compared. Webhooks decide by it too (a late settlement event saying
# failed after processed is skipped).
STATUS_RANK: dict[str, dict[str, int]] = {
    # Late authorisation: "Move states forward only; accept failed -> authorized"; an
    # authorized payment not captured in time is auto-refunded.
    "payments": {"created": 0, "failed": 1, "authorized": 2, "captured": 3, "refunded": 4},
    "refunds": {"created": 0, "pending": 0, "processed": 1, "failed": 1},
    # "failed is not final, so a failed settlement may be retried and still reach processed"
    "settlements": {"created": 0, "failed": 1, "processed": 2},
    # reversed: "could not be processed": the alternative to processed
    "instant_settlements": {
        "created": 0,
        "initiated": 1,
        "partially_processed": 2,
        "processed": 3,
        "reversed": 3,
    },
    "instant_payouts": {"created": 0, "initiated": 1, "processed": 2, "reversed": 3},
    # a transfer is reversed (in part, then whole) only once processed
    "transfers": {
        "created": 0,
        "pending": 1,
        "processed": 2,
        "failed": 2,
        "partially_reversed": 3,
        "reversed": 4,
    },
}
# Amounts, in paise, that only grow along a row's lifecycle: a stored row's is never
# lowered (a missing value on either side is not compared).
GROWING_AMOUNTS: dict[str, tuple[str, ...]] = {
    # "You can issue multiple, partial refunds as long as their sum does not exceed the
    # captured amount"; "Once a refund is issued, it cannot be canceled or reversed"
    "payments": ("amount_refunded",),
    # "Partial reversals are also supported, and you can create multiple reversals on a
    # transfer_id"; a reversal once created was successful
    "transfers": ("amount_reversed",),
}
# Tables compared (bank lines are never replaced: core.ingest.statements), with their key.
COMPARED: dict[str, str] = {
    "payments": "id",
    "refunds": "id",
    "settlements": "id",
    "recon": "row_key",
    "instant_settlements": "id",
    "instant_payouts": "id",
    "disputes": "id",
    "transfers": "id",
}
TABLE_NAMES: dict[str, str] = {"recon": "recon_rows"}
EXAMPLES = 5  # changed rows shown field by field
FIELDS_SHOWN = 4  # fields of one row shown
OLDER_SHOWN = 10  # backward moves named in a refusal
MISSING = "\x00"  # a missing value, as compared (no cell holds a NUL: core.ingest.readers)
ObjectArray = np.ndarray[Any, np.dtype[np.object_]]


@dataclass(frozen=True)
class FieldChange:
    """One field of a stored row that an import changes: table, key, column, old -> new."""

    table: str
    key: str
    column: str
    old: str
    new: str

    def text(self) -> str:
        return f"{self.table} {self.key}: {self.column} {self.old!r} -> {self.new!r}"


@dataclass(frozen=True)
class BackwardMove:
    """A stored row an import would move back: `attribute` (Dataset field), key, stored
    value, the file's, and `column`: "status" (back along STATUS_RANK) or an amount of
    GROWING_AMOUNTS (lowered; the values are paise)."""

    attribute: str
    key: str
    stored: str
    incoming: str
    column: str = "status"

    def text(self) -> str:
        """'payments pay_X: captured -> authorized' / 'payments pay_X: amount_refunded
        330195 -> 0' (the report's and the audit entry's wording)."""
        table = TABLE_NAMES.get(self.attribute, self.attribute)
        what = "" if self.column == "status" else f"{self.column} "
        return f"{table} {self.key}: {what}{self.stored} -> {self.incoming}"

    def refusal(self) -> str:
        """What the refusal says of it (after file:line:column)."""
        if self.column == "status":
            return f"{self.key} would go from {self.stored!r} back to {self.incoming!r}"
        return f"{self.key} would lower {self.column} from {self.stored} to {self.incoming} paise"


@dataclass(frozen=True)
class StoredChanges:
    """changed: stored rows the import changes, per table (tables with none left out);
    examples: fields of the first EXAMPLES such rows; backward: every status it would move
    back and every growing amount it would lower (per table, in the dataset's row order);
    met: per Dataset field, how many of the import's keys are stored (tables meeting none
    left out)."""

    changed: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    examples: tuple[FieldChange, ...] = ()
    backward: tuple[BackwardMove, ...] = ()
    met: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


NO_CHANGES = StoredChanges()


def _keys(frame: pd.DataFrame, column: str) -> pa.Array:
    return pa.array(frame[column].astype("string").to_numpy(dtype=object), type=pa.string())


def _texts(series: pd.Series) -> ObjectArray:
    """A column as text (MISSING for a missing value), so stored and read values compare
    whatever their dtypes."""
    text = series.astype("string").fillna(MISSING)
    return np.asarray(text.to_numpy(dtype=object), dtype=np.object_)


def _latest_of_each_key(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """The last row of each key, as repeated upserts leave it."""
    dup = frame[key].duplicated(keep="last").to_numpy()
    return frame[~dup] if dup.any() else frame


def _met(
    new: pd.DataFrame, old: pd.DataFrame | None, key: str
) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The incoming rows whose key is stored (the last of each key) and the stored rows they
    meet, row for row; None when none do."""
    if old is None or len(new) == 0 or len(old) == 0:
        return None
    new = _latest_of_each_key(new, key)
    found = pc.index_in(_keys(new, key), value_set=_keys(old, key))
    at = np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    hit = at >= 0
    return (new[hit], old.iloc[at[hit]]) if hit.any() else None


def stored_changes(incoming: Dataset, stored: Mapping[str, pd.DataFrame]) -> StoredChanges:
    """What upserting `incoming` changes in `stored` (per Dataset field: the stored rows of
    at least the incoming keys, every column): one vectorised comparison per table, over
    the columns `incoming` carries (a column in `incoming.absent` keeps its stored value,
    so it is neither a correction nor a move backwards)."""
    changed: dict[str, int] = {}
    examples: list[FieldChange] = []
    backward: list[BackwardMove] = []
    met_rows: dict[str, int] = {}
    for attribute, key in COMPARED.items():
        met = _met(getattr(incoming, attribute), stored.get(attribute), key)
        if met is None:
            continue
        ours, theirs = met
        met_rows[attribute] = len(ours)
        absent = set(incoming.absent_columns(attribute))
        columns = [c for c in ours.columns if c != key and c in theirs.columns and c not in absent]
        differs = {column: _differs(theirs[column], ours[column]) for column in columns}
        any_change = np.zeros(len(ours), dtype=bool)
        for mask in differs.values():
            any_change |= mask
        count = int(any_change.sum())
        if count == 0:
            continue
        table = TABLE_NAMES.get(attribute, attribute)
        changed[table] = count
        keys = ours[key].astype("string").to_numpy(dtype=object)
        for row in np.flatnonzero(any_change)[: max(0, EXAMPLES - len(examples))]:
            shown = [c for c in columns if differs[c][row]][:FIELDS_SHOWN]
            for column in shown:
                old_text = _shown(theirs[column].iloc[row])
                new_text = _shown(ours[column].iloc[row])
                examples.append(FieldChange(table, str(keys[row]), column, old_text, new_text))
        backward.extend(_backward(attribute, keys, theirs, ours, differs))
    return StoredChanges(
        MappingProxyType(changed), tuple(examples), tuple(backward), MappingProxyType(met_rows)
    )


def backward_moves(
    attribute: str, new: pd.DataFrame, old: pd.DataFrame
) -> tuple[BackwardMove, ...]:
    """What `stored_changes(...).backward` holds for one table (`attribute`, a Dataset
    field of COMPARED) when `new` is upserted over `old` (the stored rows of at least its
    keys), comparing only the lifecycle's columns: for a few rows (a webhook's entity)
    without building a Dataset."""
    key = COMPARED[attribute]
    met = _met(new, old, key)
    if met is None:
        return ()
    ours, theirs = met
    lifecycle = ("status", *GROWING_AMOUNTS.get(attribute, ()))
    columns = [c for c in lifecycle if c in ours.columns and c in theirs.columns]
    differs = {column: _differs(theirs[column], ours[column]) for column in columns}
    keys = ours[key].astype("string").to_numpy(dtype=object)
    return tuple(_backward(attribute, keys, theirs, ours, differs))


def _backward(
    attribute: str,
    keys: ObjectArray,
    theirs: pd.DataFrame,
    ours: pd.DataFrame,
    differs: Mapping[str, np.ndarray[Any, np.dtype[np.bool_]]],
) -> list[BackwardMove]:
    """Of the rows whose values differ, those whose status goes back along STATUS_RANK or
    whose growing amount is lowered, in row order (a row's status first)."""
    found: list[tuple[int, int, BackwardMove]] = []
    ranks = STATUS_RANK.get(attribute)
    if ranks is not None and "status" in differs and differs["status"].any():
        rows = np.flatnonzero(differs["status"])
        old_status = _texts(theirs["status"].iloc[rows])
        new_status = _texts(ours["status"].iloc[rows])
        rank = pd.Series(ranks, dtype="int64")
        old_rank = pd.Series(old_status).str.lower().map(rank).to_numpy(dtype=float)
        new_rank = pd.Series(new_status).str.lower().map(rank).to_numpy(dtype=float)
        back = np.flatnonzero(new_rank < old_rank)  # NaN (a status not ranked) is never <
        for i in back:
            old_text, new_text = str(old_status[i]), str(new_status[i])
            move = BackwardMove(attribute, str(keys[rows[i]]), old_text, new_text)
            found.append((int(rows[i]), 0, move))
    for order, column in enumerate(GROWING_AMOUNTS.get(attribute, ()), start=1):
        if column not in differs or not differs[column].any():
            continue
        rows = np.flatnonzero(differs[column])
        old_amount = _amounts(theirs[column].iloc[rows])
        new_amount = _amounts(ours[column].iloc[rows])
        lower = pc.fill_null(pc.less(new_amount, old_amount), False)  # a missing one: never
        for i in np.flatnonzero(np.asarray(lower.to_numpy(zero_copy_only=False))):
            old_text, new_text = str(old_amount[i].as_py()), str(new_amount[i].as_py())
            move = BackwardMove(attribute, str(keys[rows[i]]), old_text, new_text, column)
            found.append((int(rows[i]), order, move))
    return [move for _, _, move in sorted(found, key=lambda f: (f[0], f[1]))]


def _amounts(series: pd.Series) -> pa.Array:
    """Paise as Arrow int64 (null where missing), whatever the frame's integer dtype."""
    return pa.Array.from_pandas(series.astype("Int64").reset_index(drop=True))


def _differs(old: pd.Series, new: pd.Series) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Row by row, whether the values differ (two missing values are equal): in Arrow, on
    the columns as they are (text only when the dtypes differ)."""
    if old.dtype != new.dtype:
        old, new = old.astype("string"), new.astype("string")
    a = pa.Array.from_pandas(old.reset_index(drop=True))
    b = pa.Array.from_pandas(new.reset_index(drop=True))
    same = pc.fill_null(pc.equal(a, b), False)
    both_missing = pc.and_(pc.is_null(a), pc.is_null(b))
    return np.asarray(pc.invert(pc.or_(same, both_missing)).to_numpy(zero_copy_only=False))


def _shown(value: object) -> str:
    text = "" if value is None or value is pd.NA or value == MISSING else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def older_problems(
    moves: Sequence[BackwardMove],
    *,
    where: Mapping[tuple[str, str, str], tuple[str, int, str]],
    location: str = "",
    hint: str = "--accept-older takes it as a correction",
) -> OlderRowsError:
    """The refusal for `moves`: each named by `where` ((attribute, key, column) -> file as
    shown, physical line, column as written: core.ingest.load.locate_rows), else by
    `location` with no line."""
    problems = []
    for move in moves[:OLDER_SHOWN]:
        place = (location, 0, move.column)
        file, line, column = where.get((move.attribute, move.key, move.column), place)
        message = f"{move.refusal()}: this file looks older than what is stored; refused ({hint})"
        problems.append(Problem(file, line, column, message))
    return OlderRowsError(problems, len(moves))
