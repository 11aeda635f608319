"""SQL of the audit trail (`audit_log`). The chain logic lives in `core.audit`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from core.db.backend import is_postgres
from core.db.guards import created_definitions, guard_problems, normal_form

AUDIT_COLUMNS = (
    "seq, created_at, actor, action, entity_type, entity_id, payload_json, prev_hash, hash"
)
APPEND_ONLY_TRIGGERS = ("audit_log_no_update", "audit_log_no_delete")
# Every trigger by which the database refuses to change what is decided, by table: the
# audit trail's (0001), a completed run's, its outcomes' and the exceptions' identity
# (0113), a completed run's snapshot record (0114), a closed month's kept rows (0116) and
# what a completed run was (0117).
# `audit verify` reports any of them missing, disabled (PostgreSQL) or defined otherwise
# than its migration creates it (core.db.guards).
GUARD_TRIGGERS: dict[str, tuple[str, ...]] = {
    "audit_log": APPEND_ONLY_TRIGGERS,
    "outcomes": ("outcomes_completed_no_update", "outcomes_completed_no_delete"),
    "runs": (
        "runs_status_decided_once",
        "runs_completed_no_update",
        "runs_completed_no_delete",
        "runs_snapshot_recorded_once",
        "runs_kind_decided",
    ),
    "exceptions": ("exceptions_identity_fixed",),
    "month_closes": ("month_closes_no_update", "month_closes_no_delete"),
    "month_close_books": ("month_close_books_no_update", "month_close_books_no_delete"),
}

AuditRow = tuple[int, int, str, str, str, str, str, str, str]


def latest_run_counts(conn: sqlite3.Connection) -> tuple[int, str, dict[str, int]] | None:
    """The latest completed run: its id, the counts recorded when it completed (JSON) and
    its stored outcomes counted by status now; None when there is no completed run."""
    row = conn.execute(
        "SELECT id, counts_json FROM runs WHERE status = 'completed' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    counted = conn.execute(
        "SELECT status, COUNT(*) FROM outcomes WHERE run_id = ? GROUP BY status", (row[0],)
    ).fetchall()
    return int(row[0]), str(row[1] or ""), {str(r[0]): int(r[1]) for r in counted}


def runs_without_entry(conn: sqlite3.Connection, action: str) -> list[int]:
    """Completed runs after the first one the trail records with `action` (entity `run`)
    that it does not record: the database began naming who reconciled at that run, so a
    later run without its entry was stored by a process that stopped before recording it
    (or by a path that does not record). Runs are few (one a day, a few a reconcile)."""
    recorded = {
        int(r[0])
        for r in conn.execute(
            "SELECT entity_id FROM audit_log WHERE action = ? AND entity_type = 'run'", (action,)
        )
        if str(r[0]).isdigit()
    }
    if not recorded:
        return []
    rows = conn.execute(
        "SELECT id FROM runs WHERE status = 'completed' AND id > ? ORDER BY id", (min(recorded),)
    )
    return [int(r[0]) for r in rows if int(r[0]) not in recorded]


@dataclass(frozen=True)
class AuditFilter:
    """Filters of an audit query; None means no filter.

    actor, action, entity_type, entity_id: exact matches. since/until: Unix seconds,
    `since <= created_at < until`. after_seq: only rows with a larger seq (paging).
    """

    actor: str | None = None
    action: str | None = None
    entity_type: str | None = None
    entity_id: str | None = None
    since: int | None = None
    until: int | None = None
    after_seq: int | None = None


def head(conn: sqlite3.Connection) -> tuple[int, str] | None:
    """(seq, hash) of the last row, or None for an empty trail."""
    row = conn.execute("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def insert_rows(conn: sqlite3.Connection, rows: Sequence[AuditRow]) -> None:
    """Insert fully computed rows (seq and hashes included)."""
    conn.executemany(
        f"INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
    )


def iter_rows(conn: sqlite3.Connection, batch: int = 10_000) -> Iterator[AuditRow]:
    """Every row in seq order, read in batches so memory stays flat."""
    last = None
    while True:
        if last is None:
            cursor = conn.execute(
                f"SELECT {AUDIT_COLUMNS} FROM audit_log ORDER BY seq LIMIT ?", (batch,)
            )
        else:
            cursor = conn.execute(
                f"SELECT {AUDIT_COLUMNS} FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?",
                (last, batch),
            )
        rows = cursor.fetchall()
        if not rows:
            return
        for row in rows:
            yield tuple(row)  # type: ignore[misc]
        last = rows[-1][0]


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0])


def hash_at(conn: sqlite3.Connection, seq: int) -> str | None:
    row = conn.execute("SELECT hash FROM audit_log WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])


def migration_triggers(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """Every trigger this database's migrations create (core.db.guards), by table: the
    GUARD_TRIGGERS, the other append-only tables' (review history, requests, comments,
    approvals, users; TRUNCATE on PostgreSQL) and the maintenance triggers that keep the
    Books ledger, the queue's totals and its search current, which refuse nothing but, made
    never to fire, would leave those figures stale without a word."""
    created = created_definitions("postgresql" if is_postgres(conn) else "sqlite").triggers
    found: dict[str, list[str]] = {}
    for name, definition in sorted(created.items()):
        tokens = normal_form(definition.sql)  # comments left out: `ON` names its table
        if "on" in tokens[:-1]:
            found.setdefault(tokens[tokens.index("on") + 1], []).append(name)
    return {table: tuple(names) for table, names in found.items()}


def altered_guards(conn: sqlite3.Connection) -> dict[str, str]:
    """Each trigger the migrations create (GUARD_TRIGGERS among them) that is not as its
    migration created it, and what is wrong: missing, disabled (PostgreSQL), or another
    definition (core.db.guards)."""
    return guard_problems(conn, migration_triggers(conn))


def has_entry(conn: sqlite3.Connection, action: str, entity_type: str, entity_id: str) -> bool:
    where, params = _where(
        conn, AuditFilter(action=action, entity_type=entity_type, entity_id=entity_id)
    )
    return conn.execute(f"SELECT 1 FROM audit_log{where} LIMIT 1", params).fetchone() is not None


def _where(conn: sqlite3.Connection, f: AuditFilter) -> tuple[str, list[object]]:
    """The WHERE clause of `f`. Each of actor, action, entity_type and entity_id has an index
    of its own (0103, 0108) whose entries for one value are in seq order, so none of the
    reads sorts. With an entity id, on SQLite, the other columns are compared as `+column`:
    the unary plus keeps them out of the planner's choice of index, so it reads the entity's
    few entries through audit_log_entity_id. Without statistics it would rate the indexes
    alike and might walk actor's or entity type's instead: every 'engine' or 'exception'
    entry, newest first, checked for the id (the review history of one exception)."""
    steer = f.entity_id is not None and not is_postgres(conn)
    clauses: list[str] = []
    params: list[object] = []
    for column, value in (
        ("actor", f.actor),
        ("action", f.action),
        ("entity_type", f.entity_type),
        ("entity_id", f.entity_id),
    ):
        if value is not None:
            clauses.append(f"{'+' if steer and column != 'entity_id' else ''}{column} = ?")
            params.append(value)
    if f.since is not None:
        clauses.append("created_at >= ?")
        params.append(f.since)
    if f.until is not None:
        clauses.append("created_at < ?")
        params.append(f.until)
    if f.after_seq is not None:
        clauses.append("seq > ?")
        params.append(f.after_seq)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def query_rows(
    conn: sqlite3.Connection, f: AuditFilter, *, limit: int | None, newest_first: bool
) -> list[AuditRow]:
    where, params = _where(conn, f)
    order = "DESC" if newest_first else "ASC"
    sql = f"SELECT {AUDIT_COLUMNS} FROM audit_log{where} ORDER BY seq {order}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [tuple(r) for r in conn.execute(sql, params)]  # type: ignore[misc]


def count_rows(conn: sqlite3.Connection, f: AuditFilter) -> int:
    where, params = _where(conn, f)
    return int(conn.execute(f"SELECT COUNT(*) FROM audit_log{where}", params).fetchone()[0])


def iter_query(conn: sqlite3.Connection, f: AuditFilter, batch: int = 10_000) -> Iterator[AuditRow]:
    """Rows matching `f` in seq order, in batches (for export)."""
    after = f.after_seq
    while True:
        page = AuditFilter(
            actor=f.actor,
            action=f.action,
            entity_type=f.entity_type,
            entity_id=f.entity_id,
            since=f.since,
            until=f.until,
            after_seq=after,
        )
        rows = query_rows(conn, page, limit=batch, newest_first=False)
        if not rows:
            return
        yield from rows
        after = rows[-1][0]


def distinct_values(conn: sqlite3.Connection, column: str) -> list[str]:
    """Distinct actors or actions, for the Audit page's filter widgets."""
    if column not in ("actor", "action", "entity_type"):
        raise ValueError(f"not a filterable column: {column}")
    return [str(r[0]) for r in conn.execute(f"SELECT DISTINCT {column} FROM audit_log ORDER BY 1")]


def exception_states(conn: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
    """(id, status, assignee, version, exposure_amount, reason_code) of every exception,
    by id, for replaying the trail against them."""
    cursor = conn.execute(
        "SELECT id, status, assignee, version, exposure_amount, reason_code"
        " FROM exceptions ORDER BY id"
    )
    while True:
        rows = cursor.fetchmany(10_000)
        if not rows:
            return
        for row in rows:
            yield tuple(row)


def user_states(conn: sqlite3.Connection) -> list[tuple[str, str, int]]:
    """(email, role, active) of every user, by email, for replaying the trail."""
    rows = conn.execute("SELECT email, role, active FROM users ORDER BY email").fetchall()
    return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]


def approval_states(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """(id, exception_id, resolution, amount, note, maker, version, status, checker,
    checker_note) of every approval, by id, for replaying the trail."""
    rows = conn.execute(
        "SELECT id, exception_id, resolution, amount, note, maker, version, status, checker,"
        " checker_note FROM approvals ORDER BY id"
    ).fetchall()
    return [tuple(r) for r in rows]


def main_database_file(conn: sqlite3.Connection) -> str:
    """The file of `conn`'s main database ('' in memory or temporary, and on PostgreSQL)."""
    if is_postgres(conn):
        return ""
    for row in conn.execute("PRAGMA database_list").fetchall():
        if row[1] == "main":
            return str(row[2] or "")
    return ""


def database_labels(conn: sqlite3.Connection) -> tuple[str, str]:
    """File-name-safe names of a PostgreSQL database, for its anchor file: host_port_dbname
    (the host without a netmask), and the name written before that was fixed, where the
    address read as host/32 and became host_32_port_dbname (still read when only it
    exists, core.audit.anchor.anchor_file). ('', '') for SQLite."""
    if not is_postgres(conn):
        return "", ""
    row = conn.execute(
        "SELECT coalesce(host(inet_server_addr()), 'local'), "
        "coalesce(inet_server_addr()::text, 'local'), inet_server_port(), current_database()"
    ).fetchone()
    host, legacy_host, port, database = (str(v) for v in row)

    def safe(*parts: str) -> str:
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in "_".join(parts))

    return safe(host, port, database), safe(legacy_host, port, database)


def latest_entry_of(conn: sqlite3.Connection, actions: Sequence[str]) -> tuple[int, str] | None:
    """(seq, payload JSON) of the newest entry recording one of `actions`, or None. Each
    action's newest through its own index (audit_log_action: entries in seq order)."""
    best: tuple[int, str] | None = None
    for action in actions:
        row = conn.execute(
            "SELECT seq, payload_json FROM audit_log WHERE action = ? ORDER BY seq DESC LIMIT 1",
            (action,),
        ).fetchone()
        if row is not None and (best is None or int(row[0]) > best[0]):
            best = (int(row[0]), str(row[1]))
    return best
