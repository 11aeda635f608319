"""The Exceptions queue's page read (`core.db.views.queue_page`): it chooses the page's ids
from an index first and reads only those rows whole. Its pages, laid end to end, are the
export's ordered list (`queue_iter`) for every sort and filter, ties split across pages
included, on both databases."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.benchmark import generate
from core.db import connect
from core.db import views as db
from core.db.backend import is_postgres
from core.db.views import ALL_STATUSES, OPEN_STATUSES, QUEUE_SORTS, QueueFilter
from core.engine import EngineParams
from core.pipeline import reconcile_folder_into_db

DAY = 86_400


@pytest.fixture(scope="module")
def queue_db(
    module_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[sqlite3.Connection, int]]:
    """A reconciled dataset (read only by these tests) whose exceptions are spread over
    every status and a few reviewers, with updated_at values that tie in threes (the sync
    gives them all one)."""
    folder = tmp_path_factory.mktemp("queue-page") / "ds"
    generated = generate(folder, payments=3000, seed=11)
    conn = connect(module_db_url)
    try:
        reconcile_folder_into_db(conn, folder, params=EngineParams(), as_of=generated.as_of)
        ids = [int(r[0]) for r in conn.execute("SELECT id FROM exceptions ORDER BY id")]
        for n, exception_id in enumerate(ids):
            status = ("OPEN", "OPEN", "ASSIGNED", "INVESTIGATED", "ESCALATED", "RESOLVED")[n % 6]
            assignee = ("asha", "ravi", None)[n % 3] if status != "OPEN" else None
            conn.execute(
                "UPDATE exceptions SET status = ?, assignee = ?, updated_at = updated_at + ? "
                "WHERE id = ?",
                (status, assignee, (n // 3) % 5, exception_id),
            )
        yield conn, generated.as_of
    finally:
        conn.close()


def _filters(conn: sqlite3.Connection) -> dict[str, QueueFilter]:
    settlement, entity, utr = conn.execute(
        "SELECT settlement_id, entity_id, utr FROM exceptions WHERE entity_type = 'payment' "
        "AND settlement_id IS NOT NULL AND utr IS NOT NULL ORDER BY id LIMIT 1"
    ).fetchone()
    open_in = Counter(
        str(r[0])
        for r in conn.execute("SELECT settlement_id, status FROM exceptions")
        if r[0] is not None and r[1] in OPEN_STATUSES
    )
    busiest = max(sorted(open_in), key=open_in.__getitem__)
    return {
        "open": QueueFilter(),
        "open in a settlement": QueueFilter(settlement_id=busiest),  # the Settlement page's
        "every status": QueueFilter(statuses=ALL_STATUSES),
        "resolved": QueueFilter(statuses=("RESOLVED",)),
        "codes": QueueFilter(codes=("WRONG_MAPPING", "AMOUNT_MISMATCH")),
        "class": QueueFilter(classes=("amount_at_risk",), statuses=ALL_STATUSES),
        "settlement": QueueFilter(settlement_id=str(settlement), statuses=ALL_STATUSES),
        "age": QueueFilter(min_age_days=5, max_age_days=40),
        "exposure": QueueFilter(min_exposure=0, max_exposure=50_000),
        "assignee": QueueFilter(assignee="asha"),
        "unassigned": QueueFilter(assignee=""),
        "short search": QueueFilter(search="pa", statuses=ALL_STATUSES),
        "long search": QueueFilter(search=str(entity)[4:12], statuses=ALL_STATUSES),
        "utr search": QueueFilter(search=str(utr).lower()),
        "nothing": QueueFilter(search="no such thing here"),
    }


def _export(conn: sqlite3.Connection, flt: QueueFilter, as_of: int, sort: str) -> list[db.Row]:
    return [row for batch in db.queue_iter(conn, flt, as_of, sort) for row in batch]


def _paged(
    conn: sqlite3.Connection,
    flt: QueueFilter,
    as_of: int,
    sort: str,
    size: int,
    total: int | None = None,
) -> list[db.Row]:
    rows: list[db.Row] = []
    while page := db.queue_page(conn, flt, as_of, sort, size, len(rows), total):
        assert len(page) <= size
        rows.extend(page)
    return rows


def test_queue_pages_laid_end_to_end_are_the_export_for_every_sort_and_filter(
    queue_db: tuple[sqlite3.Connection, int],
) -> None:
    conn, as_of = queue_db
    filters = _filters(conn)
    for name, flt in filters.items():
        for sort in QUEUE_SORTS:
            whole = _export(conn, flt, as_of, sort)
            assert bool(whole) == (name != "nothing"), name
            for size in (7, 50, 100):
                assert _paged(conn, flt, as_of, sort, size) == whole, (name, sort, size)
                # the second half read from the end (the caller knows the count)
                paged = _paged(conn, flt, as_of, sort, size, len(whole))
                assert paged == whole, (name, sort, size)
            for offset in (len(whole), len(whole) + 3):
                for total in (None, len(whole)):
                    assert db.queue_page(conn, flt, as_of, sort, 7, offset, total) == []
            last = max(len(whole) - 5, 0)
            for total in (None, len(whole)):
                page = db.queue_page(conn, flt, as_of, sort, 7, last, total)
                assert page == whole[last:], (name, sort, total)


def test_queue_pages_split_ties_in_the_exports_order(
    queue_db: tuple[sqlite3.Connection, int],
) -> None:
    """Pages of one row, over sort keys that tie (one updated_at in three, codes, zero
    exposures): the unique id that ends every sort decides, on both sides of a page break."""
    conn, as_of = queue_db
    flt = QueueFilter(statuses=ALL_STATUSES)
    for sort in ("updated", "code", "exposure_asc"):
        whole = _export(conn, flt, as_of, sort)
        key = QUEUE_SORTS[sort].split(",")[0].split()[0]
        assert len({r[key] for r in whole}) < len(whole)  # the key ties
        assert [
            r for i in range(len(whole)) for r in db.queue_page(conn, flt, as_of, sort, 1, i)
        ] == (whole)


def test_queue_page_agrees_with_the_export_at_any_offset(
    queue_db: tuple[sqlite3.Connection, int],
) -> None:
    conn, as_of = queue_db
    exports: dict[tuple[str, str], list[db.Row]] = {}
    filters = _filters(conn)

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        name=st.sampled_from(sorted(filters)),
        sort=st.sampled_from(sorted(QUEUE_SORTS)),
        limit=st.integers(1, 60),
        offset=st.integers(0, 1200),
    )
    def agrees(name: str, sort: str, limit: int, offset: int) -> None:
        flt = filters[name]
        whole = exports.setdefault((name, sort), _export(conn, flt, as_of, sort))
        for total in (None, len(whole)):
            page = db.queue_page(conn, flt, as_of, sort, limit, offset, total)
            assert page == whole[offset : offset + limit], total

    agrees()


@pytest.mark.sqlite_only
def test_the_queue_page_sorts_index_entries_not_whole_rows(
    queue_db: tuple[sqlite3.Connection, int],
) -> None:
    """On SQLite the open queue's page is ordered over a covering index (a few values an
    exception: for `updated`, migration 0109's) and only the page's rows are read whole, by
    id."""
    conn, as_of = queue_db
    assert not is_postgres(conn)
    for sort in QUEUE_SORTS:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            db.queue_page(conn, QueueFilter(), as_of, sort, 50, 0)
        finally:
            conn.set_trace_callback(None)
        (sql,) = statements
        params = [*QueueFilter().statuses, 50, 0] if "?" in sql else []
        plan = [str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
        assert any("USING INTEGER PRIMARY KEY (rowid=?)" in step for step in plan), (sort, plan)
        assert any("COVERING INDEX" in step for step in plan), (sort, plan)


@pytest.mark.sqlite_only
def test_a_page_in_the_second_half_is_counted_from_the_end(
    queue_db: tuple[sqlite3.Connection, int],
) -> None:
    """Given the count, the last page's ids are chosen in the reverse order at offset 0, so
    the sort keeps the page's rows only (at 10M it sorted every open exception); the first
    half is read forwards as before. The rows are the same either way (tests above)."""
    conn, as_of = queue_db
    flt = QueueFilter()
    total = len(_export(conn, flt, as_of, "exposure_desc"))
    chosen: dict[str, list[str]] = {}
    for where, offset in (("first", 0), ("last", total - 3)):
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            db.queue_page(conn, flt, as_of, "exposure_desc", 50, offset, total)
        finally:
            conn.set_trace_callback(None)
        chosen[where] = [s for s in statements if "LIMIT" in s]
    (first,) = chosen["first"]
    (last,) = chosen["last"]
    assert "ORDER BY exposure_amount DESC, id LIMIT" in first
    assert "ORDER BY exposure_amount ASC, id DESC LIMIT" in last
    assert last.rstrip().endswith("ORDER BY exposure_amount DESC, id")  # shown forwards
