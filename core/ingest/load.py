"""A dataset folder in, a validated Dataset out; and storing it, once, in one transaction."""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
import time
from pathlib import Path
from types import MappingProxyType

import pandas as pd

from core.dataset import Dataset
from core.db import raw, transaction
from core.errors import ConfigError, InputError, Problem
from core.ingest.bank import parse_bank_statement
from core.ingest.entities import UNITS, build_frame
from core.ingest.readers import RawTable, ReadFailure, read_csv_table, read_json_table
from core.ingest.report import FileReport, ImportReport
from core.ingest.tables import DATASET_FIELD, TABLES, TableSpec

BANK_STEM = "bank_statement"


def _files_by_name(folder: Path) -> dict[str, Path]:
    return {p.name.lower(): p for p in folder.iterdir() if p.is_file()}


def _locate(spec_stem: str, files: dict[str, Path]) -> tuple[list[Path], list[Problem]]:
    found = [files[n] for n in (f"{spec_stem}.csv", f"{spec_stem}.json") if n in files]
    if len(found) > 1:
        names = " and ".join(p.name for p in found)
        return [], [Problem(found[0].name, 0, "", f"both {names} exist: keep one")]
    return found, []


def _read_entity_file(spec: TableSpec, path: Path, data: bytes) -> RawTable:
    wanted = [c.name for c in spec.columns]
    notes = [c.name for c in spec.columns if c.kind == "notes"]
    if path.suffix.lower() == ".json":
        return read_json_table(path.name, data, wanted, notes)
    return read_csv_table(path.name, data, wanted)


def load_dataset(folder: str | Path, amount_unit: str = "auto") -> tuple[Dataset, ImportReport]:
    """Read and validate a dataset folder (spec sections 2-3).

    amount_unit: 'auto' decides paise or rupees per file; 'paise' or 'rupees' forces it for
    the Razorpay files (bank statements are always rupees). Raises InputError with every
    problem found (file:line:column) and returns nothing partial.
    """
    if amount_unit not in UNITS:
        raise ConfigError(f"amount unit must be one of {', '.join(UNITS)}, not {amount_unit!r}")
    root = Path(folder)
    if not root.is_dir():
        raise InputError([Problem(str(folder), 0, "", "not a folder")])
    files = _files_by_name(root)
    problems: list[Problem] = []
    frames: dict[str, pd.DataFrame] = {}
    reports: list[FileReport] = []
    digest = hashlib.sha256()
    digest.update(f"amount_unit={amount_unit}\n".encode())

    for spec in TABLES.values():
        found, located = _locate(spec.stem, files)
        problems.extend(located)
        if not found:
            if spec.required_file and not located:
                problems.append(
                    Problem(
                        f"{spec.stem}.csv",
                        0,
                        "",
                        f"required file missing: {spec.stem}.csv or {spec.stem}.json",
                    )
                )
            continue
        path = found[0]
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
        try:
            table = _read_entity_file(spec, path, data)
        except ReadFailure as failure:
            problems.extend(failure.problems)
            continue
        frame, file_report, file_problems = build_frame(spec, table, amount_unit)
        problems.extend(file_problems)
        frames[DATASET_FIELD[spec.kind]] = frame
        reports.append(file_report)

    has_bank = False
    bank_path = files.get(f"{BANK_STEM}.csv")
    if bank_path is not None:
        has_bank = True
        data = bank_path.read_bytes()
        digest.update(f"{bank_path.name}\0{len(data)}\0".encode())
        digest.update(data)
        try:
            bank, bank_report, bank_problems = parse_bank_statement(bank_path.name, data)
        except ReadFailure as failure:
            problems.extend(failure.problems)
        else:
            problems.extend(bank_problems)
            frames["bank"] = bank
            reports.append(bank_report)

    if problems:
        raise InputError(problems)
    dataset = Dataset(**frames, has_bank_statement=has_bank)
    report = ImportReport(
        source="files",
        location=str(root),
        content_hash=digest.hexdigest(),
        files=tuple(reports),
        has_bank_statement=has_bank,
    )
    return dataset, report


def store_dataset(
    conn: sqlite3.Connection,
    dataset: Dataset,
    *,
    source: str,
    location: str,
    content_hash: str,
    replace: bool = False,
    files: tuple[FileReport, ...] = (),
) -> ImportReport:
    """Write a dataset's raw tables in one transaction and record the import.

    The same content as the latest import is a no-op (unless `replace` asks to rebuild tables
    that also hold other imports). Rows are upserted by primary key, so nothing is ever
    duplicated. `replace=True` empties the five raw tables first (never exceptions, runs or
    the audit trail).
    """
    report = ImportReport(
        source=source,
        location=location,
        content_hash=content_hash,
        files=files,
        has_bank_statement=dataset.has_bank_statement,
    )
    with transaction(conn):
        latest = raw.latest_import(conn)
        if (
            latest is not None
            and latest.content_hash == content_hash
            and (latest.exclusive or not replace)
        ):
            return dataclasses.replace(report, import_id=latest.id, already_imported=True)
        if replace:
            raw.clear_raw_tables(conn)
        exclusive = replace or raw.raw_tables_empty(conn)
        import_id = raw.insert_import(
            conn,
            source=source,
            location=location,
            content_hash=content_hash,
            imported_at=int(time.time()),
            report_json="{}",
        )
        written: dict[str, int] = {}
        for attribute, (table, _, _) in raw.RAW_TABLES.items():
            written[table] = raw.upsert_frame(
                conn, attribute, getattr(dataset, attribute), import_id
            )
        report = dataclasses.replace(
            report, import_id=import_id, replaced=replace, written=MappingProxyType(written)
        )
        record = report.to_dict()
        record["exclusive"] = exclusive
        import json

        raw.update_import_report(conn, import_id, json.dumps(record, sort_keys=True))
    return report


def import_dataset(
    conn: sqlite3.Connection, folder: str | Path, amount_unit: str = "auto", replace: bool = False
) -> ImportReport:
    """load_dataset + store_dataset: nothing is written unless every file is valid."""
    dataset, loaded = load_dataset(folder, amount_unit)
    return store_dataset(
        conn,
        dataset,
        source=loaded.source,
        location=loaded.location,
        content_hash=loaded.content_hash,
        replace=replace,
        files=loaded.files,
    )
