"""Two app processes on one PostgreSQL database, eight browser sessions between them
(docs/postgres.md): one cold start for all of them, and every decision lands exactly once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.audit import verify
from core.db import connect
from tests.app_browser import (
    CHROMIUM,
    open_exception,
    running_server,
    screen_errors,
    wait_rendered,
)

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.postgres,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium"),
]
COLD_START_MS = 240_000  # two shared cores, two servers: generous; speed is `make bench`'s
RUPEES = re.compile(r"^₹[\d,]+(\.\d\d)?( (L|Cr))?$")


def _count(url: str, sql: str) -> int:
    conn = connect(url)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def _captured(page: object) -> str:
    for metric in page.query_selector_all('[data-testid="stMetric"]'):  # type: ignore[attr-defined]
        label = metric.query_selector('[data-testid="stMetricLabel"]').inner_text().strip()
        if label == "Captured":
            return str(metric.query_selector('[data-testid="stMetricValue"]').inner_text())
    return ""


def test_two_app_processes_eight_sessions_one_bootstrap_no_lost_or_doubled_decision(
    pg_url: str, tmp_path: Path, browser: object
) -> None:
    with (
        running_server(pg_url, tmp_path / "a.log") as first,  # type: ignore[arg-type]
        running_server(pg_url, tmp_path / "b.log") as second,  # type: ignore[arg-type]
    ):
        servers = [first, second] * 4
        contexts = [browser.new_context() for _ in range(8)]  # type: ignore[attr-defined]
        pages = [c.new_page() for c in contexts]
        for page, server in zip(pages, servers, strict=True):
            page.goto(server.url, wait_until="commit")
        for n, page in enumerate(pages):
            page.wait_for_selector('[data-testid="stMetric"]', timeout=COLD_START_MS)
            wait_rendered(page)
            assert screen_errors(page) == [], n
            assert RUPEES.match(_captured(page)), n
        assert _count(pg_url, "SELECT count(*) FROM imports") == 1
        assert _count(pg_url, "SELECT count(*) FROM runs") == 1
        assert _count(pg_url, "SELECT count(*) FROM runs WHERE status = 'completed'") == 1

        conn = connect(pg_url)
        ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM exceptions WHERE status = 'OPEN' ORDER BY id LIMIT 8"
            )
        ]
        audit_before = int(conn.execute("SELECT count(*) FROM audit_log").fetchone()[0])
        conn.close()
        assert len(ids) == 8
        for page, server, exception_id in zip(pages, servers, ids, strict=True):
            page.goto(f"{server.url}/investigation")
            wait_rendered(page)
            open_exception(page, exception_id)
            page.fill('textarea[aria-label="Note (required)"]', f"Closing {exception_id}.")
        for page in pages:  # eight decisions in flight on two processes at once
            page.get_by_role("button", name="Resolve").click(no_wait_after=True)
        for page, exception_id in zip(pages, ids, strict=True):
            page.wait_for_selector(
                f"text=Exception #{exception_id} is now RESOLVED", timeout=120_000
            )
            assert screen_errors(page) == [], exception_id
        for context in contexts:
            context.close()

    conn = connect(pg_url)
    marks = ", ".join(str(i) for i in ids)
    resolved = conn.execute(
        f"SELECT count(*) FROM exceptions WHERE id IN ({marks}) AND status = 'RESOLVED'"
    ).fetchone()[0]
    events = conn.execute(
        "SELECT exception_id, count(*) FROM exception_events"
        f" WHERE action = 'resolved' AND exception_id IN ({marks}) GROUP BY exception_id"
    ).fetchall()
    entries = conn.execute(
        "SELECT entity_id, count(*) FROM audit_log WHERE action = 'exception.resolved'"
        " GROUP BY entity_id"
    ).fetchall()
    assert resolved == 8
    assert sorted((int(e[0]), int(e[1])) for e in events) == [(i, 1) for i in sorted(ids)]
    assert sorted((int(e[0]), int(e[1])) for e in entries) == [(i, 1) for i in sorted(ids)]
    assert int(conn.execute("SELECT count(*) FROM audit_log").fetchone()[0]) >= audit_before + 8
    assert verify(conn).ok
    conn.close()
