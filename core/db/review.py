"""SQL of the exception lifecycle: sync from a run's outcomes, reads, and decisions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from core.db.backend import is_postgres

EXCEPTION_COLUMNS = (
    "id",
    "entity_type",
    "entity_id",
    "reason_code",
    "reason_codes",
    "exposure_class",
    "exposure_amount",
    "expected_amount",
    "actual_amount",
    "difference",
    "settlement_id",
    "order_id",
    "utr",
    "entity_created_at",
    "status",
    "assignee",
    "due_date",
    "version",
    "first_run_id",
    "last_run_id",
    "opened_at",
    "updated_at",
    "closed_at",
    "not_found_run_id",  # 0047: "needs review: no longer found" (ExceptionRecord.needs_review)
)
EVENT_COLUMNS = (
    "id",
    "exception_id",
    "action",
    "actor",
    "note",
    "from_status",
    "to_status",
    "request_id",
    "created_at",
)
# Facts copied from a run's outcome onto its exception on every sync.
FACT_COLUMNS = (
    "reason_codes",
    "exposure_class",
    "exposure_amount",
    "expected_amount",
    "actual_amount",
    "difference",
    "settlement_id",
    "order_id",
    "utr",
    "entity_created_at",
)
# Facts whose change makes a reviewer's view stale (the version moves on).
MATERIAL_COLUMNS = (
    "reason_codes",
    "exposure_class",
    "exposure_amount",
    "expected_amount",
    "actual_amount",
    "settlement_id",
)
CLOSED = ("RESOLVED", "AUTO_CLEARED")

_SEL = ", ".join(f"e.{c}" for c in EXCEPTION_COLUMNS)
_IN_RUN = (
    "o.run_id = ? AND o.status = 'EXCEPTION' AND o.entity_type = e.entity_type"
    " AND o.entity_id = e.entity_id AND o.reason_code = e.reason_code"
)
_CHANGED = " OR ".join(f"e.{c} IS NOT o.{c}" for c in MATERIAL_COLUMNS)
# Any fact differs (material or not): only such rows need the facts copied onto them.
_FACTS_DIFFER = " OR ".join(f"e.{c} IS NOT o.{c}" for c in FACT_COLUMNS)
_COPY = ", ".join(f"{c} = o.{c}" for c in FACT_COLUMNS)
# A scoped sync's statements (`stage_scope`) read the run's outcomes of the staged entities
# only, each found by its primary key: SQLite keeps a CROSS JOIN's order, so the staged
# rows drive the join. (A filter on all the run's EXCEPTION outcomes still reads each of
# their rows: 0.06 CPU s a statement at 1M.)
_SCOPE_FROM = "temp.review_scope s CROSS JOIN outcomes o"
_SCOPE_ON = "o.entity_type = s.entity_type AND o.entity_id = s.entity_id"
# The exception's entity is a staged one.
_E_SCOPED = (
    "EXISTS (SELECT 1 FROM temp.review_scope s"
    " WHERE s.entity_type = e.entity_type AND s.entity_id = e.entity_id)"
)


def _run_exceptions(conn: Any) -> str:
    """The run's outcomes joined with the exceptions, as `outcomes o`.

    SQLite: read through `outcomes_status` (migration 0020: the run's EXCEPTION outcomes
    only, a partial index), named with INDEXED BY. Left to itself, SQLite's planner (no
    statistics on a fresh file) reads the run's whole primary-key range instead and filters
    the status row by row: 1M outcomes for 26k exceptions, 0.23-0.3 CPU s a statement
    (docs/benchmark.md, "`--db` at 1M, fifth round"). PostgreSQL has no such clause; it
    joins by hash there (`set_based_plans`)."""
    return "outcomes o" if is_postgres(conn) else "outcomes o INDEXED BY outcomes_status"


DueRules = Sequence[tuple[str | None, int, str]]
EventRow = tuple[int, str, str, str | None, str | None, str | None, str | None, int]


def _due_case(rules: DueRules, alias: str, conn: Any = None) -> tuple[str, list[Any]]:
    """A CASE picking each row's due date from (class, min_exposure, date) rules."""
    known = sorted({c for c, _, _ in rules if c is not None})
    marks = ", ".join("?" for _ in known)
    parts: list[str] = []
    params: list[Any] = []
    for cls, minimum, day in rules:
        if cls is None:
            parts.append(
                f"WHEN {alias}.exposure_class NOT IN ({marks})"
                f" AND ABS({alias}.exposure_amount) >= ? THEN ?"
            )
            params.extend([*known, minimum, day])
        else:
            parts.append(
                f"WHEN {alias}.exposure_class = ? AND ABS({alias}.exposure_amount) >= ? THEN ?"
            )
            params.extend([cls, minimum, day])
    by_rule = "CASE " + " ".join(parts) + " END"
    # An open dispute is due on its `respond_by` (IST date), from the disputes raw table.
    respond_by = (
        f"CASE WHEN {alias}.entity_type = 'dispute' AND {alias}.reason_code = 'DISPUTE_OPEN'"
        f" THEN (SELECT {_ist_date(conn, 'd.respond_by')} FROM disputes d"
        f" WHERE d.id = {alias}.entity_id AND d.respond_by IS NOT NULL) END"
    )
    return f"COALESCE({respond_by}, {by_rule})", params


def _ist_date(conn: Any, seconds: str) -> str:
    """The IST calendar date (YYYY-MM-DD) of Unix `seconds`, in the database's SQL."""
    if is_postgres(conn):
        return f"to_char(to_timestamp({seconds} + 19800) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
    return f"date({seconds} + 19800, 'unixepoch')"


# -- runs ---------------------------------------------------------------------------------


def run_status(conn: sqlite3.Connection, run_id: int) -> str | None:
    row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else str(row[0])


def latest_synced_run(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT MAX(run_id) FROM exception_syncs").fetchone()
    return None if row[0] is None else int(row[0])


def run_synced(conn: sqlite3.Connection, run_id: int) -> bool:
    row = conn.execute("SELECT 1 FROM exception_syncs WHERE run_id = ?", (run_id,)).fetchone()
    return row is not None


def record_sync(
    conn: sqlite3.Connection, run_id: int, now: int, actor: str, summary_json: str
) -> None:
    """Remember the first sync of a run (a repeat of it keeps the first record)."""
    conn.execute(
        "INSERT INTO exception_syncs (run_id, synced_at, actor, summary_json)"
        " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (run_id, now, actor, summary_json),
    )


def max_exception_id(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM exceptions").fetchone()[0])


# -- sync ---------------------------------------------------------------------------------


@contextmanager
def set_based_plans(conn: sqlite3.Connection) -> Iterator[None]:
    """Within the caller's transaction, let PostgreSQL join a run's outcomes and the
    exceptions by hash or merge joins only (`enable_nestloop` off, restored after).

    The app role cannot ANALYZE (owner only, PostgreSQL 15), and a first sync meets an
    `outcomes` just grown by a million rows and an `exceptions` grown in this very
    transaction: with no statistics the planner takes both for a few pages and probes the
    run's EXCEPTION outcomes once per exception, a nested loop of n x n rows (minutes at
    1M payments; docs/benchmark.md, "PostgreSQL --db at 1M"). A hash join reads each side
    once, whatever the sizes. SQLite: nothing to do."""
    if not is_postgres(conn):
        yield
        return
    previous = str(conn.execute("SELECT current_setting('enable_nestloop')").fetchone()[0])
    conn.execute("SELECT set_config('enable_nestloop', 'off', true)")
    yield  # on an error the rollback undoes the setting with the rest
    conn.execute("SELECT set_config('enable_nestloop', ?, true)", (previous,))


def reopen_candidates(conn: sqlite3.Connection, run_id: int) -> list[sqlite3.Row]:
    """Exceptions that hold again in this run: auto-cleared ones, and resolved ones whose
    exposure moved since the decision."""
    return conn.execute(
        "SELECT e.id, e.status, e.exposure_amount AS old_exposure,"
        " o.exposure_amount AS new_exposure, o.exposure_class AS new_class"
        # The closed exceptions (few) first, by the queue index on status; each probes the
        # run's outcomes by primary key (SQLite keeps the CROSS JOIN's order).
        " FROM exceptions e CROSS JOIN outcomes o"
        " WHERE e.status IN ('AUTO_CLEARED', 'RESOLVED') AND (e.status = 'AUTO_CLEARED'"
        f" OR e.exposure_amount IS NOT o.exposure_amount) AND {_IN_RUN}"
        " ORDER BY e.id",
        (run_id,),
    ).fetchall()


def reopen_from_run(
    conn: sqlite3.Connection, run_id: int, ids: Sequence[int], now: int, rules: DueRules
) -> None:
    """Reopen `ids` with this run's facts and a fresh due date."""
    if not ids:
        return
    due, due_params = _due_case(rules, "o", conn)
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS review_ids (id INTEGER PRIMARY KEY)")
    conn.execute("DELETE FROM temp.review_ids")
    conn.executemany("INSERT INTO temp.review_ids (id) VALUES (?)", [(i,) for i in ids])
    conn.execute(
        f"UPDATE exceptions AS e SET {_COPY}, status = 'OPEN', assignee = NULL,"
        f" due_date = {due}, version = e.version + 1, last_run_id = ?, updated_at = ?,"
        " closed_at = NULL"
        f" FROM {_run_exceptions(conn)} WHERE {_IN_RUN}"
        " AND e.id IN (SELECT id FROM temp.review_ids)",
        [*due_params, run_id, now, run_id],
    )
    conn.execute("DELETE FROM temp.review_ids")


def changed_facts(
    conn: sqlite3.Connection, run_id: int, *, scoped: bool = False
) -> list[sqlite3.Row]:
    """Still-holding exceptions whose material facts differ in this run (old and new).
    scoped: of the staged entities only (`stage_scope`)."""
    source = (
        f"{_SCOPE_FROM} CROSS JOIN exceptions e WHERE {_SCOPE_ON} AND {_IN_RUN} AND ({_CHANGED})"
        if scoped
        else f"exceptions e JOIN {_run_exceptions(conn)} ON {_IN_RUN} WHERE {_CHANGED}"
    )
    return conn.execute(
        "SELECT e.id, e.status, e.exposure_amount AS old_exposure,"
        " o.exposure_amount AS new_exposure, e.reason_codes AS old_codes,"
        f" o.reason_codes AS new_codes FROM {source} ORDER BY e.id",
        (run_id,),
    ).fetchall()


def refresh_from_run(
    conn: sqlite3.Connection, run_id: int, now: int, *, scoped: bool = False
) -> int:
    """Copy this run's facts onto every exception that still holds; how many changed.

    Status, assignee, due date and history stay; the version moves on only when a
    material fact changed, so a re-run alone never makes a reviewer's view stale.

    Two statements, the same rows and values as one: the rows whose facts differ get them
    copied; the others (most of them: a carried outcome has its base run's facts) only
    their run ids. Writing a fact column, even with its own value, rewrites the entries of
    every index on it (six of the exceptions' indexes); the run ids are in none.
    scoped: of the staged entities only (`stage_scope`).
    """
    source = (
        f"{_SCOPE_FROM} WHERE {_SCOPE_ON} AND {_IN_RUN}"
        if scoped
        else f"{_run_exceptions(conn)} WHERE {_IN_RUN}"
    )
    changed = conn.execute(
        f"UPDATE exceptions AS e SET {_COPY}, last_run_id = ?, not_found_run_id = NULL,"
        f" version = e.version + (CASE WHEN {_CHANGED} THEN 1 ELSE 0 END),"
        f" updated_at = CASE WHEN {_CHANGED} THEN ? ELSE e.updated_at END"
        f" FROM {source}"
        f" AND (e.last_run_id IS NOT ? OR {_CHANGED}) AND ({_FACTS_DIFFER})",
        (run_id, now, run_id, run_id),
    ).rowcount
    same = conn.execute(
        "UPDATE exceptions AS e SET last_run_id = ?, not_found_run_id = NULL"
        f" FROM {source}"
        f" AND e.last_run_id IS NOT ? AND NOT ({_FACTS_DIFFER})",
        (run_id, run_id, run_id),
    ).rowcount
    return int(changed) + int(same)


def count_holding(conn: sqlite3.Connection, run_id: int, *, scoped: bool = False) -> int:
    """Known exceptions that this run still has (scoped: of the staged entities only)."""
    source = (
        f"{_SCOPE_FROM} CROSS JOIN exceptions e WHERE {_SCOPE_ON} AND {_IN_RUN}"
        if scoped
        else f"exceptions e JOIN {_run_exceptions(conn)} ON {_IN_RUN}"
    )
    row = conn.execute(f"SELECT COUNT(*) FROM {source}", (run_id,)).fetchone()
    return int(row[0])


def stage_scope(conn: sqlite3.Connection, keys: Iterable[tuple[str, str]]) -> None:
    """The (entity_type, entity_id) a scoped sync's statements read, in a temporary table
    of this connection until `clear_scope`."""
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS review_scope (entity_type TEXT NOT NULL,"
        " entity_id TEXT NOT NULL, PRIMARY KEY (entity_type, entity_id)) WITHOUT ROWID"
    )
    conn.execute("DELETE FROM temp.review_scope")
    conn.executemany(
        "INSERT OR IGNORE INTO temp.review_scope (entity_type, entity_id) VALUES (?, ?)", keys
    )


def clear_scope(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM temp.review_scope")


def count_carried(conn: sqlite3.Connection, base_run_id: int) -> int:
    """Exceptions whose last run is `base_run_id`, their entity not a staged one."""
    row = conn.execute(
        f"SELECT COUNT(*) FROM exceptions e WHERE e.last_run_id = ? AND NOT {_E_SCOPED}",
        (base_run_id,),
    ).fetchone()
    return int(row[0])


def refresh_carried(conn: sqlite3.Connection, base_run_id: int, run_id: int) -> int:
    """Move the exceptions `count_carried` counts on to run `run_id`: what
    `refresh_from_run` writes for one whose outcome the run copied from its last run."""
    cursor = conn.execute(
        "UPDATE exceptions AS e SET last_run_id = ?, not_found_run_id = NULL"
        f" WHERE e.last_run_id = ? AND NOT {_E_SCOPED}",
        (run_id, base_run_id),
    )
    return int(cursor.rowcount)


# A sync that opens at least this many exceptions analyses `exceptions` (PostgreSQL) before
# its auto-clear and not-found statements join them with the run's outcomes.
ANALYZE_MIN_OPENED = 1_000


def open_new_from_run(
    conn: sqlite3.Connection, run_id: int, now: int, rules: DueRules, *, scoped: bool = False
) -> None:
    """Insert an OPEN exception for every EXCEPTION outcome of the run not yet known
    (scoped: of the staged entities only, `stage_scope`)."""
    due, due_params = _due_case(rules, "o", conn)
    facts = ", ".join(FACT_COLUMNS)
    o_facts = ", ".join(f"o.{c}" for c in FACT_COLUMNS)
    # New exceptions are numbered in the ids' byte order on both databases (as results.csv
    # sorts them): PostgreSQL by the "C" collation whatever the database's own; on SQLite
    # the + keeps the status index in use.
    order = (
        'o.entity_type COLLATE "C", o.entity_id COLLATE "C"'
        if is_postgres(conn)
        else "+o.entity_type, +o.entity_id"
    )
    opened = conn.execute(
        f"INSERT INTO exceptions (entity_type, entity_id, reason_code, {facts}, status,"
        " due_date, version, first_run_id, last_run_id, opened_at, updated_at)"
        f" SELECT o.entity_type, o.entity_id, o.reason_code, {o_facts}, 'OPEN', {due}, 1,"
        f" ?, ?, ?, ? FROM {_SCOPE_FROM if scoped else 'outcomes o'}"
        f" WHERE {_SCOPE_ON + ' AND ' if scoped else ''}"
        "o.run_id = ? AND o.status = 'EXCEPTION' AND NOT EXISTS ("
        "  SELECT 1 FROM exceptions e WHERE e.entity_type = o.entity_type"
        "  AND e.entity_id = o.entity_id AND e.reason_code = o.reason_code)"
        f" ORDER BY {order}",
        [*due_params, run_id, run_id, now, now, run_id],
    )
    if is_postgres(conn) and opened.rowcount >= ANALYZE_MIN_OPENED:
        # Statistics for the sync's next statements (rows of this transaction count).
        from core.db.pg_bulk import analyze

        analyze(conn, "exceptions")


def exceptions_after(conn: sqlite3.Connection, after_id: int) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT id, entity_type, entity_id, reason_code, exposure_class, exposure_amount,"
        " due_date FROM exceptions WHERE id > ? ORDER BY id",
        (after_id,),
    ).fetchall()


_NOT_IN_RUN = (
    "e.status NOT IN ('RESOLVED', 'AUTO_CLEARED') AND NOT EXISTS ("
    f"SELECT 1 FROM outcomes o WHERE {_IN_RUN})"
)
# The same rows within a scoped sync, once its refresh and inserts are done: it has moved
# every exception the run has on to the run, and none other can be there (a run is synced
# after the last synced one only), so no outcome need be probed.
_NOT_MOVED_ON = "e.status NOT IN ('RESOLVED', 'AUTO_CLEARED') AND e.last_run_id IS NOT ?"


def _not_in_run(scoped: bool) -> str:
    return _NOT_MOVED_ON if scoped else _NOT_IN_RUN


# A person worked on it: assigned, escalated, investigated, or any human event (a human
# action always carries a request id; the engine's sync events do not).
_TOUCHED = (
    "(e.assignee IS NOT NULL OR e.status IN ('ASSIGNED', 'INVESTIGATED', 'ESCALATED')"
    " OR EXISTS (SELECT 1 FROM exception_events v WHERE v.exception_id = e.id"
    " AND v.request_id IS NOT NULL))"
)


def auto_clear_candidates(
    conn: sqlite3.Connection, run_id: int, *, scoped: bool = False
) -> list[sqlite3.Row]:
    """Open exceptions (any status but RESOLVED/AUTO_CLEARED) that this run no longer has
    and no person has touched. scoped: within a scoped sync, after its refresh."""
    return conn.execute(
        "SELECT e.id, e.status, e.exposure_amount FROM exceptions e"
        f" WHERE {_not_in_run(scoped)} AND NOT {_TOUCHED} ORDER BY e.id",
        (run_id,),
    ).fetchall()


def auto_clear(conn: sqlite3.Connection, run_id: int, now: int, *, scoped: bool = False) -> int:
    cursor = conn.execute(
        "UPDATE exceptions AS e SET status = 'AUTO_CLEARED', version = e.version + 1,"
        f" updated_at = ?, closed_at = ? WHERE {_not_in_run(scoped)} AND NOT {_TOUCHED}",
        (now, now, run_id),
    )
    return int(cursor.rowcount)


def not_found_candidates(
    conn: sqlite3.Connection, run_id: int, *, scoped: bool = False
) -> list[sqlite3.Row]:
    """Touched open exceptions this run no longer has, not yet marked 'no longer found'.
    scoped: within a scoped sync, after its refresh."""
    return conn.execute(
        "SELECT e.id, e.status, e.exposure_amount, e.assignee FROM exceptions e"
        f" WHERE {_not_in_run(scoped)} AND {_TOUCHED} AND e.not_found_run_id IS NULL"
        " ORDER BY e.id",
        (run_id,),
    ).fetchall()


def mark_not_found(conn: sqlite3.Connection, ids: Sequence[int], run_id: int, now: int) -> None:
    """Mark `ids` as 'needs review: no longer found' by run `run_id`; status and version
    stay (a decision the reviewer is about to take is still valid; core.audit.replay)."""
    conn.executemany(
        "UPDATE exceptions SET not_found_run_id = ?, updated_at = ? WHERE id = ?",
        [(run_id, now, i) for i in ids],
    )


# -- queue search documents (migration 0105) ----------------------------------------------


def begin_search_deferred(conn: sqlite3.Connection) -> None:
    """Within the caller's transaction: the queue-search triggers of 0075 stand aside for
    new exceptions and new events (migration 0105) until `end_search_deferred`; the caller
    writes their documents with `write_search` before that. No other connection sees the
    flag row; on an error the rollback removes it with the rest."""
    conn.execute("INSERT INTO exception_search_deferred (deferred) VALUES (1)")


def end_search_deferred(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM exception_search_deferred")


def stage_search_notes(conn: sqlite3.Connection, notes: Sequence[tuple[int, str]]) -> None:
    """The new events' notes for `write_search`, in a temporary table of this connection.
    notes: (exception id, ' ' || note of each of its new events in id order), one per id."""
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS review_notes (id INTEGER PRIMARY KEY, notes TEXT NOT NULL)"
    )
    conn.execute("DELETE FROM temp.review_notes")
    conn.executemany("INSERT INTO temp.review_notes (id, notes) VALUES (?, ?)", notes)


def write_search(conn: sqlite3.Connection, first_new: int, new_notes: str = "") -> None:
    """What the triggers of 0075 would have written, set-based: a document for every
    exception with id > `first_new` (its ids as the insert trigger makes them, its notes ''
    followed by `new_notes`, the notes of its events written by `insert_events_of_new`, and
    its staged notes), and the staged notes appended to the documents of the
    older ones (`stage_search_notes` first). A few statements, no row passes through
    Python: the sync hashes its audit entries on a worker meanwhile."""
    if is_postgres(conn):
        conn.execute(
            "INSERT INTO exception_search (id, ids, notes)"
            " SELECT e.id, exception_search_ids_of(e), ? || coalesce(n.notes, '') FROM exceptions e"
            " LEFT JOIN temp.review_notes n ON n.id = e.id WHERE e.id > ? ORDER BY e.id",
            (new_notes, first_new),
        )
        conn.execute(
            "UPDATE exception_search s SET notes = s.notes || n.notes FROM temp.review_notes n"
            " WHERE n.id = s.id AND n.id <= ?",
            (first_new,),
        )
    else:
        conn.execute(
            "INSERT INTO exception_search (rowid, ids, notes)"
            " SELECT e.id, e.entity_id || ' ' || coalesce(e.order_id, '') || ' '"
            " || coalesce(e.utr, '') || ' ' || coalesce(e.settlement_id, '') || ' '"
            " || coalesce((SELECT b.narration FROM bank_lines b"
            " WHERE e.entity_type = 'bank_entry' AND b.id = e.entity_id), ''),"
            " ? || coalesce(n.notes, '') FROM exceptions e LEFT JOIN temp.review_notes n"
            " ON n.id = e.id WHERE e.id > ? ORDER BY e.id",
            (new_notes, first_new),
        )
        conn.execute(
            "UPDATE exception_search SET notes = notes"
            " || (SELECT n.notes FROM temp.review_notes n WHERE n.id = exception_search.rowid)"
            " WHERE rowid IN (SELECT id FROM temp.review_notes WHERE id <= ?)",
            (first_new,),
        )
    conn.execute("DELETE FROM temp.review_notes")


# -- events -------------------------------------------------------------------------------


def insert_events(conn: sqlite3.Connection, rows: Iterable[EventRow]) -> None:
    """(exception_id, action, actor, note, from_status, to_status, request_id, created_at)."""
    conn.executemany(
        "INSERT INTO exception_events (exception_id, action, actor, note, from_status,"
        " to_status, request_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def insert_events_of_new(
    conn: sqlite3.Connection,
    first_new: int,
    action: str,
    actor: str,
    note: str,
    to_status: str,
    created_at: int,
) -> None:
    """One event (`action`, no from-status, no request) for every exception with id >
    `first_new`, in id order: set-based, what `insert_events` would write for those rows."""
    conn.execute(
        "INSERT INTO exception_events (exception_id, action, actor, note, from_status,"
        " to_status, request_id, created_at) SELECT id, ?, ?, ?, NULL, ?, NULL, ?"
        " FROM exceptions WHERE id > ? ORDER BY id",
        (action, actor, note, to_status, created_at, first_new),
    )


def insert_event(conn: sqlite3.Connection, row: EventRow) -> int:
    found = conn.execute(
        "INSERT INTO exception_events (exception_id, action, actor, note, from_status,"
        " to_status, request_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        row,
    ).fetchall()
    return int(found[0][0])


def events_of(conn: sqlite3.Connection, exception_id: int) -> list[sqlite3.Row]:
    cols = ", ".join(EVENT_COLUMNS)
    return conn.execute(
        f"SELECT {cols} FROM exception_events WHERE exception_id = ? ORDER BY id",
        (exception_id,),
    ).fetchall()


# -- reads --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExceptionFilter:
    """Queue filters; None means any. statuses: any of these lifecycle statuses."""

    statuses: tuple[str, ...] | None = None
    reason_code: str | None = None
    exposure_class: str | None = None
    assignee: str | None = None
    entity_id: str | None = None
    settlement_id: str | None = None


def _exception_where(f: ExceptionFilter) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if f.statuses:
        clauses.append(f"e.status IN ({', '.join('?' for _ in f.statuses)})")
        params.extend(f.statuses)
    for column, value in (
        ("reason_code", f.reason_code),
        ("exposure_class", f.exposure_class),
        ("assignee", f.assignee),
        ("entity_id", f.entity_id),
        ("settlement_id", f.settlement_id),
    ):
        if value is not None:
            clauses.append(f"e.{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def list_exceptions(
    conn: sqlite3.Connection, f: ExceptionFilter, *, limit: int | None, offset: int = 0
) -> list[sqlite3.Row]:
    """Matching exceptions, largest exposure first, then id."""
    where, params = _exception_where(f)
    sql = f"SELECT {_SEL} FROM exceptions e{where} ORDER BY e.exposure_amount DESC, e.id"
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params.extend([limit, offset])
    return conn.execute(sql, params).fetchall()


def count_exceptions(conn: sqlite3.Connection, f: ExceptionFilter) -> int:
    where, params = _exception_where(f)
    return int(conn.execute(f"SELECT COUNT(*) FROM exceptions e{where}", params).fetchone()[0])


def get_exception(conn: sqlite3.Connection, exception_id: int) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        f"SELECT {_SEL} FROM exceptions e WHERE e.id = ?", (exception_id,)
    ).fetchone()
    return row


def get_exceptions(conn: sqlite3.Connection, ids: Sequence[int]) -> list[sqlite3.Row]:
    found: list[sqlite3.Row] = []
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        found.extend(
            conn.execute(f"SELECT {_SEL} FROM exceptions e WHERE e.id IN ({marks})", chunk)
        )
    return found


# -- decisions ----------------------------------------------------------------------------


def update_state(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    expected_version: int,
    status: str,
    assignee: str | None,
    due_date: str | None,
    closed_at: int | None,
    now: int,
    settled: bool = False,
) -> bool:
    """Move an exception on, only if it is still at `expected_version`; whether it moved.
    `settled`: a person resolved or reopened it (clears 'no longer found')."""
    cursor = conn.execute(
        "UPDATE exceptions SET status = ?, assignee = ?, due_date = ?, closed_at = ?,"
        " not_found_run_id = CASE WHEN ? THEN NULL ELSE not_found_run_id END,"
        " version = version + 1, updated_at = ? WHERE id = ? AND version = ?",
        (status, assignee, due_date, closed_at, settled, now, exception_id, expected_version),
    )
    return cursor.rowcount == 1


# -- idempotency --------------------------------------------------------------------------


def find_request(conn: sqlite3.Connection, request_id: str) -> tuple[str, str] | None:
    """(payload_hash, result_json) of an answered request id."""
    row = conn.execute(
        "SELECT payload_hash, result_json FROM action_requests WHERE request_id = ?",
        (request_id,),
    ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def record_request(
    conn: sqlite3.Connection, request_id: str, payload_hash: str, result_json: str, now: int
) -> None:
    conn.execute(
        "INSERT INTO action_requests (request_id, payload_hash, result_json, created_at)"
        " VALUES (?, ?, ?, ?)",
        (request_id, payload_hash, result_json, now),
    )
