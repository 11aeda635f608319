"""SQL for saved bank statement column mappings (migration 0011_bank_mappings)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from core.db.connection import transaction


@dataclass(frozen=True)
class MappingRow:
    """One saved version of a mapping, as stored."""

    id: int
    signature: str
    version: int
    name: str
    header_json: str
    fields_json: str
    saved_at: int
    saved_by: str


_COLUMNS = "id, signature, version, name, header_json, fields_json, saved_at, saved_by"


def insert_version(
    conn: sqlite3.Connection,
    *,
    signature: str,
    name: str,
    header_json: str,
    fields_json: str,
    saved_at: int,
    saved_by: str,
) -> MappingRow:
    """Store a new version of the mapping for `signature` (1 for the first); the row stored."""
    with transaction(conn):
        (latest,) = conn.execute(
            "SELECT COALESCE(MAX(version), 0) FROM bank_mappings WHERE signature = ?",
            (signature,),
        ).fetchone()
        cursor = conn.execute(
            "INSERT INTO bank_mappings (signature, version, name, header_json, fields_json,"
            " saved_at, saved_by) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (signature, latest + 1, name, header_json, fields_json, saved_at, saved_by),
        )
        row_id = cursor.fetchall()[0][0]
    return MappingRow(
        int(row_id or 0),
        signature,
        latest + 1,
        name,
        header_json,
        fields_json,
        saved_at,
        saved_by,
    )


def latest_versions(conn: sqlite3.Connection) -> list[MappingRow]:
    """The latest version of every saved mapping, oldest signature first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM bank_mappings AS m WHERE version = ("
        " SELECT MAX(version) FROM bank_mappings WHERE signature = m.signature)"
        " ORDER BY id"
    ).fetchall()
    return [MappingRow(*tuple(r)) for r in rows]


def all_versions(conn: sqlite3.Connection) -> list[MappingRow]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM bank_mappings ORDER BY signature, version"
    ).fetchall()
    return [MappingRow(*tuple(r)) for r in rows]
