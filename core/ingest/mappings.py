"""Column mappings for bank statement layouts we do not recognise, made once and reused.

A user says which of their header's columns is which of our fields; the mapping is keyed by
the header's signature (its cells normalised: core.ingest.headers.header_signature), saved
in the database as a new version (the latest version is used; each save is also an audit
entry), and used automatically by every later import whose header row has the same
signature. Mappings are plain values: `load_dataset(..., bank_mappings=...)` and
`parse_bank_statement(..., mappings)` take them without a database.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.errors import InputError, Problem
from core.ingest.bank import header_row, parse_bank_statement
from core.ingest.headers import SIGNATURE_SEPARATOR, header_key, header_signature
from core.ingest.headers import BankMapping as BankMapping  # its public name: mappings.BankMapping
from core.ingest.readers import ReadFailure

# Our fields, in the order a form shows them.
BANK_FIELDS: tuple[str, ...] = (
    "txn_date",
    "value_date",
    "narration",
    "reference",
    "credit",
    "debit",
    "amount",
    "direction",
    "balance",
)
IGNORED = ""  # what a column not mapped to any field is assigned


def make_mapping(
    header: Sequence[str],
    assignments: Mapping[str, str],
    *,
    name: str = "custom",
    file: str = "bank mapping",
) -> BankMapping:
    """Check and build a mapping. `assignments`: header name as written -> field ('' to leave
    a column out). Raises InputError naming `file` and the column at fault."""
    cells = [c.strip() for c in header]
    keys = header_signature(cells)
    problems: list[Problem] = []
    if not keys:
        problems.append(Problem(file, 0, "", "the header row is empty"))
    by_key = {header_key(c): c for c in cells if header_key(c)}
    duplicated = sorted({k for k in keys if k and keys.count(k) > 1})
    fields: dict[str, str] = {}
    for column, field in assignments.items():
        field = field.strip()
        if not field:
            continue
        if field not in BANK_FIELDS:
            message = f"unknown field {field!r}; expected one of {', '.join(BANK_FIELDS)}"
            problems.append(Problem(file, 0, column, message))
            continue
        key = header_key(column)
        if key not in by_key:
            problems.append(Problem(file, 0, column, "no such column in the header"))
            continue
        if key in duplicated:
            problems.append(Problem(file, 0, column, "the header has this column twice"))
            continue
        if field in fields:
            message = f"{field} is already mapped to column {fields[field]!r}"
            problems.append(Problem(file, 0, column, message))
            continue
        fields[field] = by_key[key]
    if "txn_date" not in fields and "value_date" not in fields:
        problems.append(Problem(file, 0, "", "map a column to txn_date (or value_date)"))
    if not {"credit", "debit", "amount"} & fields.keys():
        problems.append(Problem(file, 0, "", "map a column to credit and debit, or to amount"))
    if "amount" in fields and {"credit", "debit"} & fields.keys():
        problems.append(Problem(file, 0, "", "map either amount or credit/debit, not both"))
    if "direction" in fields and "amount" not in fields:
        problems.append(Problem(file, 0, "", "direction needs an amount column"))
    if problems:
        raise InputError(problems)
    ordered = tuple((f, fields[f]) for f in BANK_FIELDS if f in fields)
    return BankMapping(name.strip() or "custom", keys, ordered, tuple(cells))


def mapping_for_statement(
    file: str, data: bytes, assignments: Mapping[str, str], *, name: str = ""
) -> BankMapping:
    """A mapping made from the statement's own header row and checked by reading the whole
    statement with it: any problem (a narration column mapped to an amount, a missing
    header) raises InputError naming file:line:column, and nothing is saved."""
    header = header_row(file, data)
    if header is None:
        raise InputError([Problem(file, 0, "", "no header row found to map")])
    mapping = make_mapping(header.cells, assignments, name=name or file, file=file)
    try:
        _, _, problems = parse_bank_statement(file, data, [mapping])
    except ReadFailure as failure:
        raise InputError(failure.problems) from failure
    if problems:
        raise InputError(problems)
    return mapping


def save_statement_mapping(
    conn: sqlite3.Connection,
    file: str,
    data: bytes,
    assignments: Mapping[str, str],
    *,
    name: str = "",
    actor: str,
) -> BankMapping:
    """`mapping_for_statement`, then saved (next version, audited). For the Data page and
    the `bank-mapping save` command."""
    return save_mapping(
        conn, mapping_for_statement(file, data, assignments, name=name), actor=actor
    )


def parse_assignments(pairs: Sequence[str]) -> dict[str, str]:
    """['Txn Dt=txn_date', ...] -> {'Txn Dt': 'txn_date'} (the last '=' splits)."""
    out: dict[str, str] = {}
    problems: list[Problem] = []
    for pair in pairs:
        column, sep, field = pair.rpartition("=")
        if not sep or not column.strip():
            problems.append(Problem("--map", 0, "", f"expected 'Header name=field', not {pair!r}"))
            continue
        out[column.strip()] = field.strip()
    if problems:
        raise InputError(problems)
    return out


def _from_row(row: object) -> BankMapping:
    from core.db.bank_mappings import MappingRow

    assert isinstance(row, MappingRow)
    fields = tuple((str(f), str(n)) for f, n in json.loads(row.fields_json))
    header = tuple(str(c) for c in json.loads(row.header_json))
    signature = tuple(row.signature.split(SIGNATURE_SEPARATOR))
    return BankMapping(row.name, signature, fields, header, row.version)


def save_mapping(conn: sqlite3.Connection, mapping: BankMapping, *, actor: str) -> BankMapping:
    """Store `mapping` as the next version for its signature, with an audit entry, in one
    transaction; the mapping as saved."""
    from core.audit import append
    from core.db import transaction
    from core.db.bank_mappings import insert_version

    with transaction(conn):
        row = insert_version(
            conn,
            signature=mapping.signature_text,
            name=mapping.name,
            header_json=json.dumps(list(mapping.header)),
            fields_json=json.dumps([list(p) for p in mapping.fields]),
            saved_at=int(time.time()),
            saved_by=actor,
        )
        append(
            conn,
            actor=actor,
            action="bank_mapping_saved",
            entity_type="bank_mapping",
            entity_id=f"{row.name}:v{row.version}",
            payload={
                "signature": row.signature,
                "version": row.version,
                "fields": [list(p) for p in mapping.fields],
            },
        )
    return _from_row(row)


def saved_mappings(conn: sqlite3.Connection) -> tuple[BankMapping, ...]:
    """The latest version of every saved mapping."""
    from core.db.bank_mappings import latest_versions

    return tuple(_from_row(r) for r in latest_versions(conn))


def saved_mappings_in(db: str | Path | None) -> tuple[BankMapping, ...]:
    """The mappings saved in an existing database file; none when it does not exist yet (a
    refused import or run must not create it)."""
    from core.db import database_path, open_database
    from core.db.backend import is_postgres_url

    if db is None:
        return ()
    target = database_path(str(db))
    if not is_postgres_url(target) and not Path(target).is_file():
        return ()
    with open_database(str(db)) as conn:
        return saved_mappings(conn)


def mapping_history(conn: sqlite3.Connection) -> tuple[BankMapping, ...]:
    """Every saved version, by signature then version."""
    from core.db.bank_mappings import all_versions

    return tuple(_from_row(r) for r in all_versions(conn))
