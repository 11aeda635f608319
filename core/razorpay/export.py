"""`python -m core export OUT_DIR`: write the stored data back out as a dataset (spec section 2).

Razorpay entities are written as the API's collection envelopes in integer paise
(`payments.json`, `refunds.json`, `settlements.json`, `settlement_recon.json`, and when
stored `instant_settlements.json`, `instant_settlement_payouts.json`, `disputes.json`,
`transfers.json`), each item
rebuilt from its modelled columns plus the fields kept in `extra_json`, so `python -m core
reconcile OUT_DIR` reads exactly what the database holds.

Bank lines, when present, become `bank_statement.csv` in HDFC's layout (spec section 3). A
bank line's id is `<file name>:<physical line number>`, so the file is laid out to keep ids:

- lines that all came from one file keep their physical line numbers: the header goes on
  the line before the first data line, banner lines fill the top, and `********` separator
  rows (which the importer skips) fill any gaps. The ids are then identical whenever that
  file was named `bank_statement.csv`, as it is in a dataset folder; from a file with
  another name only the name part changes.
- lines from several files are written in (file, line) order with the header on line 1,
  so their ids are renumbered `bank_statement.csv:2`, `:3`, ... consistently.

Files are written to a temporary folder first and moved into place together, so a failed
export leaves OUT_DIR as it was.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.dataset import BANK_FILE, DATASET_FILES, HDFC_HEADER
from core.db import razorpay as db
from core.errors import InputError, NotFoundError, Problem, RefusedError
from core.money import format_rupees

_SEPARATOR = ("********",) * len(HDFC_HEADER)
_BLANK = ("",) * len(HDFC_HEADER)

_BOOLEAN_COLUMNS = frozenset({"captured", "international", "on_hold", "settled"})
_ENTITY_NAMES = {"payments": "payment", "refunds": "refund", "settlements": "settlement"}
# The wider money model's tables (docs/engine.md): written only when they hold rows.
_OPTIONAL_TABLES = {
    "instant_settlements": ("instant_settlements.json", "settlement.ondemand"),
    "instant_payouts": ("instant_settlement_payouts.json", "settlement.ondemand_payout"),
    "disputes": ("disputes.json", "dispute"),
    "transfers": ("transfers.json", "transfer"),
}


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote.

    out_dir: the folder. files: the dataset files written, in order. counts: rows per file.
    bank_ids_preserved: True when every bank line keeps its original id, False when they were
    renumbered, None when there were no bank lines.
    """

    out_dir: Path
    files: tuple[str, ...]
    counts: tuple[tuple[str, int], ...]
    bank_ids_preserved: bool | None


def _json_value(text: object) -> Any:
    """`notes` and similar columns hold JSON text as received; give back the JSON value."""
    if text is None:
        return None
    try:
        return json.loads(str(text))
    except ValueError:
        return text


def _item(row: sqlite3.Row, entity: str | None, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    columns = list(row.keys())  # `in row` would search the values of a sqlite3.Row
    extra = _json_value(row["extra_json"]) if "extra_json" in columns else None
    item: dict[str, Any] = {}
    if "id" in columns:
        item["id"] = row["id"]
    if entity:
        item["entity"] = entity
    if isinstance(extra, dict):
        item.update(extra)
    for column in columns:
        if column in ("extra_json", *skip):
            continue
        value = row[column]
        if column in _BOOLEAN_COLUMNS and value is not None:
            value = bool(value)
        elif column == "notes":
            value = _json_value(value)
        item[column] = value
    return item


def _collection(items: list[dict[str, Any]]) -> str:
    envelope = {"entity": "collection", "count": len(items), "items": items}
    return json.dumps(envelope, ensure_ascii=False) + "\n"


def _one_line(text: object) -> str:
    return " ".join(str(text).split()) if text is not None else ""


def _bank_date(iso: object) -> str:
    if iso is None or str(iso) == "":
        return ""
    return dt.date.fromisoformat(str(iso)).strftime("%d/%m/%y")


def _bank_cells(row: sqlite3.Row) -> tuple[str, ...]:
    debit, credit = int(row["debit"] or 0), int(row["credit"] or 0)
    return (
        _bank_date(row["txn_date"]),
        _one_line(row["narration"]),
        _one_line(row["reference"]),
        _bank_date(row["value_date"]),
        format_rupees(debit) if debit else "",
        format_rupees(credit) if credit or not debit else "",
        format_rupees(int(row["balance"])) if row["balance"] is not None else "",
    )


def bank_statement_csv(rows: list[sqlite3.Row]) -> tuple[str, bool]:
    """The HDFC-layout text for these bank lines, and whether their ids survive (module doc)."""
    files = {str(r["file"]) for r in rows}
    numbers = [int(r["line_no"]) for r in rows]
    keep_lines = len(files) == 1 and len(set(numbers)) == len(numbers) and min(numbers) >= 2
    lines: list[tuple[str, ...]] = []
    if keep_lines:
        source = next(iter(files))
        first = min(numbers)
        banner = (f"Bank lines exported by RazorRecon from {_one_line(source)}", *_BLANK[1:])
        lines.append(banner)
        lines.extend([_BLANK] * (first - 3))  # lines 2 .. first-2
        lines.append(HDFC_HEADER)
        by_number = {int(r["line_no"]): r for r in rows}
        for number in range(first, max(numbers) + 1):
            row = by_number.get(number)
            lines.append(_bank_cells(row) if row is not None else _SEPARATOR)
    else:
        lines.append(HDFC_HEADER)
        lines.extend(_bank_cells(r) for r in rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if keep_lines and min(numbers) == 2:
        lines = lines[1:]  # no room for a banner: the header is line 1
    writer.writerows(lines)
    return buffer.getvalue(), keep_lines and files == {BANK_FILE}


def export_dataset(
    conn: sqlite3.Connection, out_dir: str | Path, *, overwrite: bool = False
) -> ExportReport:
    """Write the stored Razorpay data (and bank lines) as a dataset folder; see module doc.

    Refuses (RefusedError) when OUT_DIR already holds dataset files, unless `overwrite`,
    which replaces them; raises NotFoundError when there is nothing to export.
    """
    target = Path(out_dir)
    if target.exists() and not target.is_dir():
        raise InputError(
            [Problem(str(out_dir), 0, "", "is not a folder; OUT_DIR must be a folder (or new)")]
        )
    existing = [name for name in DATASET_FILES if (target / name).exists()]
    if existing and not overwrite:
        raise RefusedError(
            f"{target} already holds {', '.join(existing)}; use --overwrite to replace them"
        )
    counts = db.raw_table_counts(conn)
    if counts["payments"] == 0 and counts["settlements"] == 0:
        raise NotFoundError("no payments or settlements stored: run `sync` or `import` first")

    outputs: dict[str, tuple[str, int]] = {}
    for table in ("payments", "refunds", "settlements"):
        rows = db.export_rows(conn, table)
        if table == "refunds" and not rows:
            continue
        items = [_item(r, _ENTITY_NAMES[table]) for r in rows]
        outputs[f"{table}.json"] = (_collection(items), len(items))
    recon = [_item(r, None, skip=("row_key",)) for r in db.export_rows(conn, "recon_rows")]
    outputs["settlement_recon.json"] = (_collection(recon), len(recon))
    for table, (name, entity) in _OPTIONAL_TABLES.items():
        if counts[table]:
            items = [_item(r, entity) for r in db.export_rows(conn, table)]
            outputs[name] = (_collection(items), len(items))
    bank_rows = db.export_rows(conn, "bank_lines")
    preserved: bool | None = None
    if bank_rows:
        text, preserved = bank_statement_csv(bank_rows)
        outputs[BANK_FILE] = (text, len(bank_rows))

    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=target))
    try:
        for name, (text, _) in outputs.items():
            (staging / name).write_text(text, encoding="utf-8")
        for name in existing:
            (target / name).unlink()
        for name in outputs:
            (staging / name).replace(target / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportReport(
        out_dir=target,
        files=tuple(outputs),
        counts=tuple((name, count) for name, (_, count) in outputs.items()),
        bank_ids_preserved=preserved,
    )
