"""Helpers for the review and audit tests: runs and outcomes written as the engine would."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from core.db import transaction


@dataclass(frozen=True)
class Finding:
    """One EXCEPTION outcome of a run."""

    entity_id: str
    reason_code: str = "AMOUNT_MISMATCH"
    exposure_amount: int = 10_000
    exposure_class: str = "amount_at_risk"
    entity_type: str = "payment"
    reason_codes: str = ""
    settlement_id: str | None = "setl_1"


def write_run(
    conn: sqlite3.Connection,
    findings: Iterable[Finding],
    *,
    matched: Iterable[str] = (),
    status: str = "completed",
) -> int:
    """A run whose outcomes are `findings` (EXCEPTION) plus `matched` payments (MATCHED)."""
    with transaction(conn):
        cur = conn.execute(
            "INSERT INTO runs (started_at, finished_at, status, as_of, source, params_json,"
            " input_hashes_json) VALUES (0, 1, ?, 0, 'test', '{}', '{}') RETURNING id",
            (status,),
        )
        run_id = int(cur.fetchall()[0][0])
        conn.executemany(
            "INSERT INTO outcomes (run_id, entity_type, entity_id, status, reason_code,"
            " reason_codes, settlement_id, expected_amount, actual_amount, difference,"
            " exposure_class, exposure_amount, match_method)"
            " VALUES (?, ?, ?, 'EXCEPTION', ?, ?, ?, 100000, ?, ?, ?, ?, '')",
            [
                (
                    run_id,
                    f.entity_type,
                    f.entity_id,
                    f.reason_code,
                    f.reason_codes or f.reason_code,
                    f.settlement_id,
                    100000 - f.exposure_amount,
                    -f.exposure_amount,
                    f.exposure_class,
                    f.exposure_amount,
                )
                for f in findings
            ],
        )
        conn.executemany(
            "INSERT INTO outcomes (run_id, entity_type, entity_id, status) VALUES (?, 'payment', ?,"
            " 'MATCHED')",
            [(run_id, m) for m in matched],
        )
    return run_id


def exception_id(
    conn: sqlite3.Connection, entity_id: str, reason_code: str = "AMOUNT_MISMATCH"
) -> int:
    row = conn.execute(
        "SELECT id FROM exceptions WHERE entity_id = ? AND reason_code = ?",
        (entity_id, reason_code),
    ).fetchone()
    return int(row[0])


def statuses(conn: sqlite3.Connection) -> dict[str, str]:
    """entity_id:reason_code -> status."""
    return {
        f"{r[0]}:{r[1]}": r[2]
        for r in conn.execute("SELECT entity_id, reason_code, status FROM exceptions")
    }


def audit_actions(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return [
        (r[0], r[1], r[2])
        for r in conn.execute("SELECT action, entity_type, entity_id FROM audit_log ORDER BY seq")
    ]


# The people the review tests act as: roles attach to verified emails (core.access).
PEOPLE = {
    "asha@example.com": "reviewer",
    "ravi@example.com": "reviewer",
    "lead@example.com": "reviewer",
    "someone.else@example.com": "reviewer",
    "cfo@example.com": "approver",
    "approver@example.com": "approver",
    "viewer@example.com": "viewer",
    "admin@example.com": "admin",
}


def add_people(conn: sqlite3.Connection, people: dict[str, str] | None = None) -> None:
    """Add the test people with their roles (audited as 'test-setup', as an admin would)."""
    from core.access import seed_users

    seed_users(conn, PEOPLE if people is None else people, actor="test-setup")


def seal_raw_rows(conn: sqlite3.Connection) -> None:
    """A test's hand-built raw rows given their MACs (core.rowmac), as an audited import's
    writer would store them, so `audit verify` holds (it names a row without one)."""
    from core.db import raw, transaction

    with transaction(conn):
        for attribute in raw.RAW_TABLES:
            raw.reseal_rows(conn, attribute, None)


def record_raw_rows(conn: sqlite3.Connection, how: str) -> None:
    """A test's raw rows written, edited or deleted by SQL to set up its case, taken as an
    audited write would leave them: each row's MAC stored (`seal_raw_rows`) and the tables'
    counts recorded in one `data.imported` entry by `test-setup` (`how`: what it did), with
    its anchor, as core.activity records an import. The runs' count check and the close's
    MAC and count checks (core.audit.rawcheck) then see an audited store; the product's
    checks are unchanged."""
    from core.activity import IMPORTED
    from core.audit import append, write_anchor
    from core.audit.rawcheck import ROWS_KEY, current_counts

    seal_raw_rows(conn)
    with transaction(conn):
        append(
            conn,
            actor="test-setup",
            action=IMPORTED,
            entity_type="import",
            entity_id="test-setup",
            payload={"how": how, ROWS_KEY: current_counts(conn)},
        )
        write_anchor(conn)
