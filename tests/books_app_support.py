"""The Books page under AppTest: the database its tests build and the way they open it."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import core.books.ledger
import core.books.store
import core.db.raw
from core.books.ledger import rebuild_ledger
from core.db import connect
from tests.app_builder import build
from tests.app_signin import signed_in
from tests.review_support import add_people
from ui import keys


def books_database(
    db_url: str, monkeypatch: pytest.MonkeyPatch, *, payments: int, seed: int
) -> str:
    """`db_url` (a SQLite file or a PostgreSQL URL) filled by the test builder, with the
    reviewers and the stored Books ledger a completed run leaves (the builder stands in for
    one); the app pointed at it (DATABASE_URL)."""
    conn = connect(db_url)
    try:
        build(conn, payments=payments, seed=seed)
        add_people(conn)
        rebuild_ledger(conn)
    finally:
        conn.close()
    monkeypatch.setenv("DATABASE_URL", db_url)
    return db_url


def open_books(email: str = "admin@example.com") -> AppTest:
    """The Books page, rendered for `email` signed in."""
    at = signed_in(email)
    at.run()
    at.switch_page("pages/books.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_tab(at: AppTest, label: str) -> AppTest:
    """Open a Books tab: the tabs are lazy, only the open one's code runs."""
    at.session_state[keys.BOOKS_TAB] = label
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def edit_behind_the_engines_back(db_url: str) -> None:
    """Change a captured payment's amount in the raw tables, as no import or run would: the
    stored ledger, and anything kept from the data, is then stale."""
    conn = connect(db_url)
    try:
        with conn:
            conn.execute(
                "UPDATE payments SET amount = amount + 500"
                " WHERE id = (SELECT min(id) FROM payments WHERE status = 'captured')"
            )
    finally:
        conn.close()


def count_dataset_reads(monkeypatch: pytest.MonkeyPatch, *, refuse: bool) -> list[int]:
    """Patch every way the page could read the raw tables as a Dataset; counts the reads,
    or refuses them."""
    calls: list[int] = []
    real = core.db.raw.read_dataset

    def reading(conn: object) -> object:
        if refuse:
            raise AssertionError("a Books render read the raw tables")
        calls.append(1)
        return real(conn)  # type: ignore[arg-type]

    for module in (core.db.raw, core.books.store, core.books.ledger):
        monkeypatch.setattr(module, "read_dataset", reading)
    return calls
