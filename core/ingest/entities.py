"""Razorpay entity tables (payments, refunds, settlements, recon rows): validate and convert.

`build_frame` turns a RawTable into the Dataset frame for its table, collecting every problem
of the file (vectorised) rather than stopping at the first one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.dataset import TRANSFER_STATUS_UNKNOWN
from core.errors import InputError, Problem
from core.ingest import convert
from core.ingest.cards import card_columns
from core.ingest.convert import BadCells
from core.ingest.layouts import (
    CARD_OBJECT,
    FEE_EXCLUSIVE_TAX,
    REFUND_PROCESSED_AT,
    REFUND_SETTLED_AT,
)
from core.ingest.readers import RawTable, ReadFailure, table_from_items
from core.ingest.report import FileReport
from core.ingest.tables import TABLES, ColumnSpec, TableSpec

UNITS = ("auto", "paise", "rupees")
# Column kinds converted to numpy (their Arrow text is dead once converted).
_NUMERIC_KINDS = frozenset({"money", "time", "bool"})
STRING_DTYPE = pd.StringDtype()


class ProblemLog:
    """The problems of one file. Cell problems keep row positions until lines are needed."""

    def __init__(self, raw: RawTable) -> None:
        self.raw = raw
        self._cells: list[tuple[str, BadCells]] = []
        self._fixed: list[Problem] = []

    def cells(self, column: str, bad: BadCells) -> None:
        if len(bad):
            self._cells.append((column, bad))

    def add(self, problem: Problem) -> None:
        self._fixed.append(problem)

    def __bool__(self) -> bool:
        return bool(self._cells or self._fixed)

    def problems(self) -> list[Problem]:
        found = list(self._fixed)
        if self._cells:
            lines = self.raw.lines()
            prefix_items = not self.raw.by_line
            for column, bad in self._cells:
                label = self.raw.column_label(column)
                for row, message in zip(bad.rows.tolist(), bad.messages, strict=True):
                    line = int(lines[row]) if row < len(lines) else 0
                    text = f"item {row + 1}: {message}" if prefix_items else message
                    found.append(Problem(self.raw.file, line, label, text))
        order = {name: i for i, name in enumerate(self.raw.written_names.values())}
        found.sort(key=lambda p: (p.line, order.get(p.column, len(order))))
        return found


def string_series(values: pa.Array | pa.ChunkedArray) -> pd.Series:
    """A text column as a pandas string Series over ONE Arrow chunk. A CSV parse leaves a
    chunk per 1 MiB block (336 for 1M wide payments); the engine needs whole arrays, and
    every look at a many-chunk column concatenated (copied) it again."""
    if isinstance(values, pa.ChunkedArray) and values.num_chunks > 1:
        values = values.combine_chunks()
    return pd.Series(values.to_pandas(types_mapper={pa.string(): STRING_DTYPE}.get))


def decide_unit(
    spec: TableSpec,
    raw: RawTable,
    columns: dict[str, pa.Array],
    setting: str,
    casts: convert.IntCasts | None = None,
) -> tuple[str, str]:
    """Paise or rupees for this file, and why (spec section 2)."""
    if setting in ("paise", "rupees"):
        return setting, "set by --amount-unit"
    lines: np.ndarray[Any, Any] | None = None

    def where(row: int) -> str:
        nonlocal lines
        if raw.by_line:
            lines = raw.lines() if lines is None else lines
            return f"line {int(lines[row])}"
        return f"item {row + 1}"

    for name in spec.money_columns:
        if name in columns and (row := convert.looks_like_rupees(columns[name], casts)) is not None:
            value = columns[name][row].as_py()
            return "rupees", f"{name} {value!r} on {where(row)} is written in rupees"
    for name in spec.time_columns:
        if (
            name in columns
            and (row := convert.looks_like_dashboard_dates(columns[name], casts)) is not None
        ):
            value = columns[name][row].as_py()
            return "rupees", (
                f"whole amounts with dashboard-style dates ({name} {value!r} on {where(row)})"
            )
    if raw.aliased and raw.n_rows > 0:
        # A dashboard report's column names ("Refund ID"): the dashboard writes rupees, and
        # a report of whole-rupee amounts with ISO dates would otherwise read as paise.
        return "rupees", "whole amounts under the Razorpay dashboard report's column names"
    if raw.n_rows == 0:
        return "paise", "no rows"
    return "paise", "whole-number amounts as the API writes them"


_NO_NOTES = pa.array(["[]", "{}"], type=pa.string())


def _notes_json(values: pa.Array) -> pa.Array:
    """Notes as JSON text: objects and lists kept as written, a plain string JSON-encoded;
    no notes (the API's `[]` or `{}`, the dashboard's empty cell) is empty alike, so that a
    layout switch does not list every row's notes as a correction."""
    empty = pc.fill_null(pc.is_in(values, value_set=_NO_NOTES), False)
    if pc.any(empty).as_py():
        values = pc.if_else(empty, pa.scalar(None, pa.string()), values)
    is_json = convert.to_bool_numpy(pc.match_substring_regex(values, r"^[\[{]"))
    plain = convert.valid_mask(values) & ~is_json
    if not plain.any():
        return values
    import json

    texts = values.to_pylist()
    for row in np.flatnonzero(plain).tolist():
        texts[row] = json.dumps(texts[row], ensure_ascii=False)
    return pa.array(texts, type=pa.string())


def _convert_column(
    spec: ColumnSpec,
    column: pa.Array | None,
    n: int,
    unit: str,
    log: ProblemLog,
    styles: set[str],
    casts: convert.IntCasts,
) -> tuple[pd.Series, np.ndarray[Any, Any]]:
    """(pandas column, presence mask) for one spec column."""
    if column is None:
        column = pa.nulls(n, type=pa.string())
    if spec.kind in ("text", "notes", "choice"):
        values = column
        if spec.kind == "choice":
            values = convert.normalise_choice(values)
            for read, stored in spec.synonyms:
                values = pc.if_else(pc.equal(values, read), stored, values)
            log.cells(
                spec.name, convert.check_choices(values, spec.choices or frozenset(), spec.name)
            )
        if spec.kind == "notes":
            values = _notes_json(values)
        present = convert.valid_mask(values)
        if spec.default is not None:
            values = pc.fill_null(values, str(spec.default))
        return string_series(values), present
    if spec.kind == "money":
        parsed = convert.parse_money(column, unit, casts)
        log.cells(spec.name, parsed.bad)
        return _int_series(parsed.values, parsed.present, spec), parsed.present
    if spec.kind == "time":
        times = convert.parse_times(column, casts=casts)
        log.cells(spec.name, times.bad)
        styles.update(times.styles)
        return _int_series(times.seconds, times.present, spec), times.present
    if spec.kind == "bool":
        flags, present, bad = convert.parse_bools(column)
        log.cells(spec.name, bad)
        if spec.default is not None:
            flags = np.where(present, flags, bool(spec.default))
        return pd.Series(flags, dtype="bool"), present
    raise ValueError(f"unknown column kind {spec.kind!r}")  # pragma: no cover


# The Dashboard's Disputes report (Reports Data Schema) has three columns, Dispute ID, Reason
# Description and Created At: no payment, amount or status, so it cannot be read as disputes
# (docs/ingest.md, "Disputes come from the API").
DISPUTES_REPORT_REFUSED = (
    "the Dashboard's Disputes report (Dispute ID, Reason Description, Created At) has no"
    " payment id, amount or status, which a dispute is checked by: take disputes from the API"
    " (python -m core sync, or GET /v1/disputes saved as disputes.json; a CSV needs the"
    " Dispute entity's fields: id, payment_id, amount, status, created_at), or leave {file}"
    " out (dispute debits are then checked from the recon rows alone)"
)


def _int_series(
    values: np.ndarray[Any, Any], present: np.ndarray[Any, Any], spec: ColumnSpec
) -> pd.Series:
    if spec.required or spec.default is not None:
        filled = values if spec.default is None else np.where(present, values, int(spec.default))
        return pd.Series(np.asarray(filled, dtype=np.int64), dtype="int64")
    return pd.Series(pd.arrays.IntegerArray(np.asarray(values, dtype=np.int64), ~present))


def _style_text(styles: set[str]) -> str:
    names = [
        convert.DATE_STYLES[s] for s in ("unix", "dmy_time", "dmy", "iso", "dmony") if s in styles
    ]
    return ", ".join(names)


def build_frame(
    spec: TableSpec, raw: RawTable, unit_setting: str = "auto", *, consume: bool = False
) -> tuple[pd.DataFrame, FileReport, list[Problem]]:
    """Validate and convert one entity file. Problems are returned, not raised.

    consume: the caller is done with `raw`'s columns: each is replaced by its cleaned copy as
    soon as that is made, so a large file never holds both versions of every column."""
    log = ProblemLog(raw)
    n = raw.n_rows
    casts = convert.IntCasts()
    kinds = {c.name: c.kind for c in spec.columns}
    columns: dict[str, pa.Array] = {}
    for name, values in raw.columns.items():
        if not raw.nul_free:
            log.cells(name, convert.nul_cells(values))
        # A numeric column that casts cleanly has nothing to trim (and the cast is kept).
        numeric = kinds.get(name) in ("money", "time") and casts(values) is not None
        columns[name] = values if numeric else convert.clean_strings(values)
        if convert.is_id_column(name) and kinds.get(name) == "text":
            log.cells(name, convert.bad_id_cells(columns[name]))
        if consume:
            raw.columns[name] = columns[name]
    warnings: list[str] = []
    if "settled_by" in columns:
        columns["settled_by"] = _razorpay_is_default(columns["settled_by"])
    guessed: set[str] = set()  # filled in without the file saying: not carried
    if spec.kind == "refunds" and "status" not in columns and n > 0:
        if not {REFUND_PROCESSED_AT, REFUND_SETTLED_AT} & columns.keys():
            guessed.add("status")  # no date to read it from: every refund pending
        columns["status"], note = _refund_status_from_dates(columns, n)
        warnings.append(note)
    # The Transfers report has no Status column (Reports Data Schema): its status is derived
    # from Amount Reversed below (after the amounts are read), never a stored row's correction.
    transfer_status = spec.kind == "transfers" and "status" not in columns and n > 0
    if transfer_status:
        guessed.add("status")
    missing = [
        col.name
        for col in spec.columns
        if col.required and col.name not in columns.keys() | guessed and (raw.by_line or n > 0)
    ]
    for name in missing:
        log.add(Problem(raw.file, raw.header_line, name, f"required column {name!r} is missing"))
    if spec.kind == "disputes" and missing and raw.aliased:
        log.add(Problem(raw.file, 0, "", DISPUTES_REPORT_REFUSED.format(file=raw.file)))
    if spec.kind == "payments" and CARD_OBJECT in columns:
        columns.update(card_columns(columns.pop(CARD_OBJECT), columns))
    unit, reason = decide_unit(spec, raw, columns, unit_setting, casts)
    in_file = frozenset(columns)  # the columns read (converted ones are dropped below)
    styles: set[str] = set()
    out: dict[str, pd.Series] = {}
    presence: dict[str, np.ndarray[Any, Any]] = {}
    for col in spec.columns:
        series, present = _convert_column(col, columns.get(col.name), n, unit, log, styles, casts)
        out[col.name] = series
        presence[col.name] = present
        if col.required and col.name in columns:
            # Unreadable cells were reported by the converter; here only the empty ones.
            empty = ~convert.valid_mask(columns[col.name])
            if empty.any():
                rows = np.flatnonzero(empty)
                log.cells(col.name, BadCells(rows, tuple(f"{col.name} is empty" for _ in rows)))
        if consume and col.kind in _NUMERIC_KINDS and col.name in columns:
            # Converted to numpy: its text and its int64 cast are not read again (the
            # import's peak memory is the second big file converted while the first is held).
            casts.forget(columns[col.name])
            raw.columns.pop(col.name, None)
            del columns[col.name]

    if spec.unique and spec.unique in columns:
        repeated, firsts = convert.duplicate_rows(columns[spec.unique])
        if len(repeated):
            lines = raw.lines()
            ids = columns[spec.unique].take(pa.array(repeated)).to_pylist()
            where = (
                [f"line {int(lines[f])}" for f in firsts.tolist()]
                if raw.by_line
                else [f"item {f + 1}" for f in firsts.tolist()]
            )
            log.cells(
                spec.unique,
                BadCells(
                    repeated,
                    tuple(
                        duplicate_text(spec.unique, v, w) for v, w in zip(ids, where, strict=True)
                    ),
                ),
            )

    if transfer_status:
        out["status"], note = _transfer_status_from_reversals(out["amount_reversed"])
        warnings.append(note)
    if spec.kind == "payments":
        status = out["status"]
        derived = status.isin(["captured", "refunded"]).to_numpy(dtype=bool, na_value=False)
        given = presence.get("captured")
        if "captured" not in in_file:
            warnings.append("no 'captured' column: derived from status (captured or refunded)")
        if given is not None:
            out["captured"] = pd.Series(
                np.where(given, out["captured"].to_numpy(), derived), dtype="bool"
            )
    if spec.kind == "settlement_recon":
        if FEE_EXCLUSIVE_TAX in columns and "fee" not in in_file:
            excl = convert.parse_money(columns[FEE_EXCLUSIVE_TAX], unit, casts)
            log.cells(FEE_EXCLUSIVE_TAX, excl.bad)
            # The report's fee is before GST; the API's `fee` includes it: fee = fee_excl + tax,
            # exactly in paise. An empty cell of either counts as zero (as an empty fee or
            # tax cell does anywhere in this table).
            out["fee"] = pd.Series(excl.values + out["tax"].to_numpy(dtype=np.int64), dtype="int64")
            warnings.append("fee = 'fee (exclusive tax)' + tax (the API's fee includes GST)")
        if "settled" not in in_file and n > 0:
            settled = presence["settled_at"] | presence["settlement_id"]
            out["settled"] = pd.Series(settled, dtype="bool")
            warnings.append("no 'settled' column: a row with a settlement id or date is settled")
        out["row_key"] = _row_keys(columns, n)

    frame = pd.DataFrame({name: out[name] for name in spec.dtypes})
    frame = frame.astype(spec.dtypes)
    carried = _carried(spec, in_file - guessed)
    report = FileReport(
        kind=spec.kind,
        file=raw.file,
        fmt=raw.fmt,
        rows=n,
        amount_unit=unit,
        unit_reason=reason,
        date_style=_style_text(styles),
        ignored_columns=raw.ignored,
        warnings=tuple(warnings),
        absent_columns=tuple(c for c in spec.dtypes if c not in carried),
    )
    return frame, report, log.problems() if log else []


def _carried(spec: TableSpec, read: frozenset[str]) -> frozenset[str]:
    """The table's columns a file carries: those it has (`read`: its columns, the card
    object's four and a refund status read from its dates included, a guessed status
    left out) and those derived from them: a payment's `captured` from its status, a
    recon row's `fee` from `fee (exclusive tax)` + tax, `settled` from its settlement id
    or date, and `row_key`. Any other column is absent: its cells are only the column's
    default or null, which must not overwrite a stored value (docs/ingest.md, "Switching
    layouts")."""
    carried = set(read)
    if spec.kind == "payments" and "status" in read:
        carried.add("captured")
    if spec.kind == "settlement_recon":
        carried.add("row_key")
        if FEE_EXCLUSIVE_TAX in read:
            carried.add("fee")
        if {"settled_at", "settlement_id"} & read:
            carried.add("settled")
    return frozenset(carried & spec.dtypes.keys())


def _razorpay_is_default(values: pa.Array) -> pa.Array:
    """settled_by 'Razorpay' is what an empty settled_by means (the API leaves it out): kept
    empty, so only other settlers (a partner bank's direct settlement) carry a value."""
    default = convert.to_bool_numpy(pc.equal(pc.utf8_lower(values), "razorpay"))
    if not default.any():
        return values
    return pc.if_else(pa.array(default), pa.scalar(None, pa.string()), values)


def _refund_status_from_dates(columns: dict[str, pa.Array], n: int) -> tuple[pa.Array, str]:
    """A refunds report without a Status column: a refund with a processed or settled date is
    processed; one without is pending (Razorpay has not reported it done)."""
    dated = np.zeros(n, dtype=np.bool_)
    for name in (REFUND_PROCESSED_AT, REFUND_SETTLED_AT):
        if name in columns:
            dated |= convert.valid_mask(columns[name])
    status = pa.array(np.where(dated, "processed", "pending"), type=pa.string())
    note = (
        f"no 'status' column: {int(dated.sum())} refunds with a processed/settled date read as"
        f" processed, {int(n - dated.sum())} without one as pending"
    )
    return status, note


def _transfer_status_from_reversals(amount_reversed: pd.Series) -> tuple[pd.Series, str]:
    """A Transfers report without a Status column: a transfer with an Amount Reversed above
    0 was processed (only a processed transfer is reversed: core.ingest.lifecycle); any other
    is of unknown status (TRANSFER_STATUS_UNKNOWN): nothing in the report's documented columns
    tells a failed transfer from a processed one, and a failed one moved no money."""
    reversed_ = amount_reversed.fillna(0).to_numpy(dtype=np.int64) > 0
    status = pa.array(np.where(reversed_, "processed", TRANSFER_STATUS_UNKNOWN), type=pa.string())
    note = (
        f"no 'status' column: {int(reversed_.sum())} transfers with an Amount Reversed read as"
        f" processed, {int(len(reversed_) - reversed_.sum())} without one as of unknown status"
        " (a transfer without a recon row then stays PENDING: its status is unknown)"
    )
    return string_series(status), note


def duplicate_text(column: str, value: object, first: str) -> str:
    """The problem of a key met again: one wording for the whole import and the streamed
    one (core.ingest.stream), which checks across its blocks what each block cannot."""
    return f"duplicate {column} {value!r} (first on {first})"


def occurrences(bases: list[str]) -> list[int]:
    """Each key's occurrence among `bases`, counting from 1 in the order given: the last part
    of a recon row's `row_key` (here, and across a streamed import's blocks)."""
    seen: dict[str, int] = {}
    counted = []
    for base in bases:
        seen[base] = seen.get(base, 0) + 1
        counted.append(seen[base])
    return counted


def _row_keys(columns: dict[str, pa.Array], n: int) -> pd.Series:
    """type:entity_id:settlement_id:occurrence, occurrence counting from 1 in file order.

    Only rows whose entity_id repeats can share a key, so only they are counted (in Python).
    """
    empty = pa.nulls(n, type=pa.string())
    parts = [
        pc.fill_null(pc.utf8_lower(columns.get("type", empty)), ""),
        pc.fill_null(columns.get("entity_id", empty), ""),
        pc.fill_null(columns.get("settlement_id", empty), ""),
    ]
    occurrence = np.ones(n, dtype=np.int64)
    # A duplicated recon row is a finding, not bad input, and real files have some: count
    # repeats directly rather than test uniqueness first.
    repeated, firsts = convert.duplicate_rows(parts[1], expect_repeats=True)
    if len(repeated):
        rows = np.unique(np.concatenate([repeated, firsts]))
        taken = pa.array(rows)
        bases = pc.binary_join_element_wise(*(p.take(taken) for p in parts), ":").to_pylist()
        occurrence[rows] = occurrences(bases)
    keys = pc.binary_join_element_wise(*parts, pc.cast(pa.array(occurrence), pa.string()), ":")
    return string_series(keys)


def frames_from_items(kind: str, items: list[dict[str, Any]], source_name: str) -> pd.DataFrame:
    """API-shaped dicts (amounts in paise) to the Dataset frame for `kind`, validated like files.

    kind: a key of core.ingest.tables.TABLES (payments, refunds, settlements,
    settlement_recon, instant_settlements, instant_payouts, disputes, transfers). Raises
    InputError naming `source_name`, the item number and the field of every bad value.
    """
    return frame_and_absent_from_items(kind, items, source_name)[0]


def frame_and_absent_from_items(
    kind: str, items: list[dict[str, Any]], source_name: str
) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """`frames_from_items`, and the table's columns no item carries (a field the API left
    out of every item: `settled_by` when Razorpay settles), for Dataset.absent."""
    spec = TABLES.get(kind)
    if spec is None:
        raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(TABLES)}")
    wanted = [c.name for c in spec.columns] + ([CARD_OBJECT] if kind == "payments" else [])
    notes = [c.name for c in spec.columns if c.kind == "notes"]
    try:
        raw = table_from_items(source_name, items, wanted, notes)
    except ReadFailure as failure:
        raise InputError(failure.problems) from None
    frame, report, problems = build_frame(spec, raw, "paise")
    if problems:
        raise InputError(problems)
    return frame, report.absent_columns
