"""The Data page's Razorpay tab against the fake Razorpay API on 127.0.0.1 (real SDK)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from core.db import connect
from tests.app_builder import build
from tests.app_signin import signed_in
from ui import keys

fake_razorpay = pytest.importorskip("tests.fake_razorpay")
support = pytest.importorskip("tests.razorpay_support")


def shown(text: str) -> str:
    """What a reader sees of Markdown text the app escaped (ui.format.md)."""
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")


# AppTest and the v2 multipage app: see tests.conftest.streamlit_navigation_v2.
pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


@pytest.fixture
def database(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The app's database, a SQLite file or a PostgreSQL URL (tests/conftest.py)."""
    path = db_url
    conn = connect(path)
    build(conn, payments=200, source="files")
    conn.close()
    monkeypatch.setenv("DATABASE_URL", path)
    monkeypatch.setenv("RAZORRECON_ADMINS", "admin@example.com")  # the first admin
    for name in ("RAZORPAY_KEY_ID", "RAZORPAY_KEY_SECRET", "RAZORPAY_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture
def fake() -> Iterator[object]:
    with fake_razorpay.FakeRazorpay() as server:
        server.load_dataset(support.SPEC_DATASET)
        yield server


def _data_page() -> AppTest:
    at = signed_in("admin@example.com", timeout=120)
    at.run()
    at.switch_page("pages/data.py")
    at.run()
    assert not any("**State:**" in m.value for m in at.markdown)  # read only when open
    at.session_state[keys.DATA_TAB] = "Razorpay API"  # the tabs are lazy
    at.run()
    return at


def test_sync_without_keys_says_which_variables_to_set(database: str) -> None:
    at = _data_page()
    assert any("**State:** never" in m.value for m in at.markdown)
    at.button(key=keys.SYNC_START).click().run()
    assert not at.exception
    assert any("RAZORPAY_KEY_ID" in shown(e.value) for e in at.error)


def test_sync_from_the_data_page_fills_the_raw_tables_and_the_status(
    database: str, fake: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in support.sync_env(fake, database).items():
        monkeypatch.setenv(name, value)
    at = _data_page()
    at.date_input(key=keys.SYNC_FROM).set_value(support.SPEC_FROM)
    at.date_input(key=keys.SYNC_TO).set_value(support.SPEC_TO)
    at.button(key=keys.SYNC_START).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(shown(s.value).startswith("Synced ") for s in at.success), [
        e.value for e in at.error
    ]
    assert any("**State:** completed" in m.value for m in at.markdown)
    conn = connect(database)
    synced = conn.execute("SELECT count(*) FROM payments WHERE id NOT LIKE 'pay_0%'").fetchone()
    conn.close()
    assert synced[0] > 0


def test_a_sync_from_the_data_page_names_the_signed_in_admin_in_the_trail(
    database: str, fake: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in support.sync_env(fake, database).items():
        monkeypatch.setenv(name, value)
    at = _data_page()
    at.date_input(key=keys.SYNC_FROM).set_value(support.SPEC_FROM)
    at.date_input(key=keys.SYNC_TO).set_value(support.SPEC_FROM)
    at.button(key=keys.SYNC_START).click().run()
    assert not at.exception, [e.value for e in at.exception]
    conn = connect(database)
    try:
        rows = conn.execute(
            "SELECT actor, entity_id FROM audit_log WHERE action = 'razorpay.synced'"
        ).fetchall()
        run_id = conn.execute("SELECT MAX(id) FROM razorpay_sync_runs").fetchone()[0]
    finally:
        conn.close()
    assert [tuple(r) for r in rows] == [("admin@example.com", str(run_id))]
