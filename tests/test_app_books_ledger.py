"""The Books page over the stored ledger, under AppTest: a render with a current ledger never
reads the raw tables; a stale one is announced, and computed (for the session) or derived
again (admin, for everyone) only behind a button."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.books.ledger import ledger_status
from core.db import connect
from tests.books_app_support import (
    books_database,
    count_dataset_reads,
    edit_behind_the_engines_back,
    open_books,
)
from ui import keys

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


@pytest.fixture
def app_db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield books_database(db_url, monkeypatch, payments=600, seed=5)


def test_a_books_render_with_a_current_ledger_never_reads_the_raw_tables(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    count_dataset_reads(monkeypatch, refuse=True)
    at = open_books("viewer@example.com")
    metrics = {m.label: m.value for m in at.metric}
    assert set(metrics) == {"Opening", "Closing", "Open items", "Residual"}
    assert not at.warning
    for month in at.selectbox(key=keys.BOOKS_MONTH).options:
        at.selectbox(key=keys.BOOKS_MONTH).select(month).run()
        assert not at.exception, [e.value for e in at.exception]
        assert {m.label for m in at.metric} == set(metrics)


def test_a_stale_ledger_is_announced_and_computed_for_the_session_only_when_asked(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit_behind_the_engines_back(app_db)
    calls = count_dataset_reads(monkeypatch, refuse=False)
    at = open_books("viewer@example.com")
    assert any("changed since the books were derived" in w.value for w in at.warning)
    assert not at.metric and calls == []  # nothing computed on render
    assert not [b for b in at.button if b.key == keys.BOOKS_LEDGER_REBUILD]  # admin only
    at.button(key=keys.BOOKS_LEDGER_COMPUTE).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert {m.label for m in at.metric} == {"Opening", "Closing", "Open items", "Residual"}
    assert calls == [1]
    at.run()  # a later render keeps the session's computation
    assert calls == [1] and at.metric
    conn = connect(app_db)
    try:
        assert not ledger_status(conn).current  # a viewer stored nothing
    finally:
        conn.close()


def test_an_admin_derives_a_stale_ledger_again_for_everyone(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit_behind_the_engines_back(app_db)
    at = open_books("admin@example.com")
    assert not at.metric
    at.button(key=keys.BOOKS_LEDGER_REBUILD).click().run()
    assert not at.exception, [e.value for e in at.exception]
    conn = connect(app_db)
    try:
        assert ledger_status(conn).current
    finally:
        conn.close()
    count_dataset_reads(monkeypatch, refuse=True)
    at = open_books("viewer@example.com")
    assert not at.warning and at.metric
