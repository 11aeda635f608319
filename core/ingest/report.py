"""What an import read and wrote, for people (`lines()`) and for the `imports` table (`to_json`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class FileReport:
    """One file read.

    kind: a table kind (payments, refunds, settlements, settlement_recon, instant_settlements,
        instant_payouts, disputes, transfers), reversals or bank_statement.
    file: the file's name; fmt: csv, json, xlsx, xls or items (API dicts).
    rows: data rows read (bank: transaction lines).
    amount_unit: paise or rupees, as decided for this file; unit_reason: why.
    date_style: how its dates were written (e.g. 'Unix seconds', 'dd/mm/YYYY HH:MM:SS (IST)').
    bank_layout: HDFC, ICICI, SBI, Axis or generic (bank statements only).
    ignored_columns: columns present but not read.
    warnings: anything a reviewer should know (skipped lines, derived values).
    sha256: of the file's bytes as read ('' for API items).
    layout: the layout recognised (e.g. 'Razorpay API JSON', 'Razorpay dashboard: Payments
        report'); '' when not recorded (older imports, bank statements).
    absent_columns: the table's columns this file's layout does not carry (nor derive from
        its data): a stored row keeps its values of them (Dataset.absent); () for every
        column, and for older stored reports.
    """

    kind: str
    file: str
    fmt: str
    rows: int
    amount_unit: str
    unit_reason: str
    date_style: str = ""
    bank_layout: str | None = None
    ignored_columns: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    sha256: str = ""
    layout: str = ""
    absent_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportReport:
    """One import.

    source: 'files', 'benchmark', 'razorpay_api'; location: folder, seed or date range.
    content_hash: sha256 over the inputs (and the amount-unit setting).
    files: one FileReport per file read (empty when the dataset came from elsewhere).
    has_bank_statement: a bank statement was part of the input.
    import_id: the `imports` row (None before storing).
    already_imported: the same content was the latest import, so nothing was written.
    replaced: the raw tables were emptied first.
    written: rows upserted per raw table.
    bank_lines_known: statement lines not stored again, being stored lines already (an
    overlapping download); bank_lines_renamed: new lines stored under a qualified id, a
    stored line holding theirs (core.ingest.statements).
    changed: stored rows the import changed, per table (core.ingest.lifecycle; a replace
    and tables with none left out); changes: the first few of them, field by field
    ('payments pay_X: status 'authorized' -> 'captured''); accepted_older: statuses it moved
    backwards and growing amounts it lowered, taken as corrections on request ('payments
    pay_X: captured -> authorized', 'payments pay_X: amount_refunded 330195 -> 0'), at most
    a few, older_count: how many in all. kept: per file whose layout lacks columns of a
    table in which the import met stored rows, 'file: column, ...' (those rows keep their
    stored values of them: core.ingest.lifecycle, Dataset.absent). added_to_stored: the
    import added to a database that held an earlier import (not a replace), so a table
    without a file keeps its stored rows.
    """

    source: str
    location: str
    content_hash: str
    files: tuple[FileReport, ...] = ()
    has_bank_statement: bool = False
    import_id: int | None = None
    already_imported: bool = False
    replaced: bool = False
    written: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    bank_lines_known: int = 0
    bank_lines_renamed: int = 0
    changed: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    changes: tuple[str, ...] = ()
    accepted_older: tuple[str, ...] = ()
    older_count: int = 0
    kept: tuple[str, ...] = ()
    added_to_stored: bool = False

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(f"{f.file}: {w}" for f in self.files for w in f.warnings)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["files"] = [asdict(f) for f in self.files]
        data["written"] = dict(self.written)
        data["changed"] = dict(self.changed)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def lines(self, unchanged: str = "nothing written") -> list[str]:
        """The report as a person reads it; `unchanged`: what an import made already says
        (`import-day` still reconciles)."""
        out = [f"Import from {self.location} ({self.source}), content {self.content_hash[:12]}"]
        for f in self.files:
            detail = f"{f.rows} rows, {f.fmt}"
            if f.kind == "reversals":
                pass
            elif f.kind == "bank_statement":
                detail += f", layout {f.bank_layout}, amounts in rupees"
            elif f.rows == 0:
                pass  # no amount to read a unit from
            else:
                detail += f", amounts in {f.amount_unit} ({f.unit_reason})"
            if f.date_style:
                detail += f", dates {f.date_style}"
            if f.layout:
                detail += f"; layout {f.layout}"
            out.append(f"  {f.file}: {detail}")
            if f.ignored_columns:
                out.append(f"    ignored columns: {', '.join(f.ignored_columns)}")
            out.extend(f"    warning: {w}" for w in f.warnings)
        if not self.has_bank_statement and self.added_to_stored:
            out.append("  no bank statement in these files: the stored bank lines stay")
        elif not self.has_bank_statement:
            out.append("  no bank statement: bank checks will be skipped")
        if self.bank_lines_known:  # core.ingest.statements
            out.append(
                f"  {self.bank_lines_known} bank line(s) already stored from an earlier"
                " statement (same dates, narration, reference, amounts and balance):"
                " not stored again"
            )
        if self.bank_lines_renamed:
            out.append(
                f"  {self.bank_lines_renamed} new bank line(s) stored under ids qualified by"
                " this import (folder@content): other stored lines hold their file:line ids"
            )
        if self.already_imported:
            out.append(f"Already imported (import #{self.import_id}): {unchanged}.")
        elif self.import_id is not None:
            counts = ", ".join(f"{table} {n}" for table, n in self.written.items())
            mode = "replaced raw tables" if self.replaced else "upserted"
            out.append(f"Import #{self.import_id}: {mode}: {counts}.")
            if not self.replaced:
                out.extend(self._change_lines())
        return out

    def _change_lines(self) -> list[str]:
        """How many stored rows the import changed (corrections), the first few field by
        field, and any status it moved backwards (or amount it lowered) on request."""
        kept = [f"  not in its layout, stored values kept: {line}" for line in self.kept]
        if not self.changed:
            return [
                "  stored rows changed: none (every row written is new or as stored)",
                *kept,
            ]
        counts = ", ".join(f"{table} {n}" for table, n in self.changed.items())
        out = [f"  stored rows changed (corrections): {counts}", *kept]
        out.extend(f"    {change}" for change in self.changes)
        if self.older_count:
            out.append(
                f"  {self.older_count} value(s) moved backwards (a status, or an amount"
                " lowered), taken as corrections as asked (older rows accepted):"
            )
            out.extend(f"    {move}" for move in self.accepted_older)
        return out
