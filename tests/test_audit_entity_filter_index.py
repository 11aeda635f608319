"""The Audit page's list (`core.db.audit.query_rows` and `count_rows`): for every combination
of its filters (actor, action, entity type, entity id), the newest entries that match and
their number, on both databases; on SQLite read through migration 0108's and 0103's
one-column indexes, whose entries for one value are already in seq order: no sort of the
matching entries, and no scan of the trail."""

from __future__ import annotations

import itertools
import random
import sqlite3

from core.audit import AuditEvent, append_many
from core.db import audit
from core.db.audit import AuditFilter, AuditRow
from core.db.backend import is_postgres

COLUMNS = ("actor", "action", "entity_type", "entity_id")
PAGE = 7  # the page's limit, small enough that most filters match more


def _trail(conn: sqlite3.Connection) -> list[AuditRow]:
    """A trail of 402 entries: a common actor, action and type beside rare ones, and entity
    ids shared by entities of different types (the newest two: run 3 and exception 3)."""
    pick = random.Random(108)
    events = [
        AuditEvent(
            pick.choice(["engine"] * 6 + ["asha@example.in", "ravi@example.in"]),
            pick.choice(["exception.opened"] * 4 + ["exception.assigned", "exception.resolved"]),
            entity_type,
            str(pick.randint(1, 12)) if entity_type != "user" else "asha@example.in",
            {"n": n},
        )
        for n, entity_type in enumerate(
            pick.choice(["exception"] * 8 + ["run", "user"]) for _ in range(400)
        )
    ]
    events += [  # the newest: run 3, then exception 3 (the same id, another type)
        AuditEvent("engine", "exceptions.synced", "run", "3", {"opened": 1}),
        AuditEvent("asha@example.in", "exception.assigned", "exception", "3", {"to": "ravi"}),
    ]
    append_many(conn, events, now=1_790_000_000)
    return list(audit.iter_rows(conn))


def _filters(rows: list[AuditRow]) -> list[AuditFilter]:
    """Every combination of the four filters (none included), with the values of a few
    entries (so something matches) and a value no entry has."""
    filters = []
    for size in range(len(COLUMNS) + 1):
        for combo in itertools.combinations(COLUMNS, size):
            for row in (rows[-1], rows[0], rows[len(rows) // 2]):
                values = dict(zip(COLUMNS, row[2:6], strict=True))
                filters.append(AuditFilter(**{c: values[c] for c in combo}))
            if combo:
                filters.append(AuditFilter(**{c: "nobody" for c in combo}))
    return filters


def _matches(row: AuditRow, f: AuditFilter) -> bool:
    wanted = (f.actor, f.action, f.entity_type, f.entity_id)
    return all(w is None or w == v for w, v in zip(wanted, row[2:6], strict=True))


def test_every_audit_filter_combination_lists_the_newest_matching_entries_and_counts_them(
    db_conn: sqlite3.Connection,
) -> None:
    rows = _trail(db_conn)
    filters = _filters(rows)
    for f in filters:
        matching = [r for r in reversed(rows) if _matches(r, f)]
        assert audit.query_rows(db_conn, f, limit=PAGE, newest_first=True) == matching[:PAGE], f
        assert audit.count_rows(db_conn, f) == len(matching), f
        oldest_first = audit.query_rows(db_conn, f, limit=None, newest_first=False)
        assert oldest_first == matching[::-1], f  # the review history of one exception
    # The newest entry's id is exception 3's and run 3's: its type filter leaves one out.
    assert rows[-1][4:6] == ("exception", "3")
    assert {r[4] for r in rows if r[5] == "3"} >= {"exception", "run"}


def test_the_audit_filters_read_through_an_index_without_sorting_or_scanning_the_trail(
    db_conn: sqlite3.Connection,
) -> None:
    if is_postgres(db_conn):
        return  # plans on SQLite; the rows are checked on both databases above
    rows = _trail(db_conn)
    for f in _filters(rows):
        statements: list[str] = []
        db_conn.set_trace_callback(statements.append)  # the statements as run, values bound
        audit.query_rows(db_conn, f, limit=PAGE, newest_first=True)
        audit.count_rows(db_conn, f)
        db_conn.set_trace_callback(None)
        assert len(statements) == 2
        plans = [
            " | ".join(str(r[3]) for r in db_conn.execute(f"EXPLAIN QUERY PLAN {s}"))
            for s in statements
        ]
        for plan in plans:
            assert "TEMP B-TREE" not in plan, (f, plan)
        filtered = any(getattr(f, c) is not None for c in COLUMNS)
        if not filtered:
            # No filter: the page walks seq backwards and stops after its rows; the count
            # reads the smallest index, not the rows.
            assert plans[0] == "SCAN audit_log", plans
            assert plans[1].startswith("SCAN audit_log USING COVERING INDEX"), plans
            continue
        for plan in plans:
            assert plan.startswith("SEARCH audit_log USING "), (f, plan)
            assert "SCAN" not in plan, (f, plan)
        if f.entity_id is not None:  # an entity's few entries, whatever else is chosen
            assert all("INDEX audit_log_entity_id (entity_id=?)" in p for p in plans), plans
        elif f.entity_type is not None and f.actor is None and f.action is None:
            assert "INDEX audit_log_entity_type (entity_type=?)" in plans[0], plans
            assert "COVERING INDEX audit_log_entity_type" in plans[1], plans


def test_has_entry_reads_the_entity_through_its_id_index(db_conn: sqlite3.Connection) -> None:
    rows = _trail(db_conn)
    last = rows[-1]
    assert audit.has_entry(db_conn, last[3], last[4], last[5])
    assert not audit.has_entry(db_conn, "exception.nothing", last[4], last[5])
    if is_postgres(db_conn):
        return
    statements: list[str] = []
    db_conn.set_trace_callback(statements.append)
    audit.has_entry(db_conn, last[3], last[4], last[5])
    db_conn.set_trace_callback(None)
    (plan,) = [
        " | ".join(str(r[3]) for r in db_conn.execute(f"EXPLAIN QUERY PLAN {s}"))
        for s in statements
    ]
    assert plan.startswith("SEARCH audit_log USING INDEX audit_log_entity_id (entity_id=?)"), plan
