"""The public demo keeps anonymous visitors inside their private copy (F4, F5): the demo
admin persona cannot run the deployment's Razorpay sync, cannot read a folder on the
server, and the investigator never spends the deployment's model key; a webhook delivery
never writes into the shared database the copies are made from. Refused in core (or the
action layer), not only by hiding a button."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import demo_mode
from core.calendar import CalendarParams
from core.db import connect, migrate
from core.errors import RefusedError
from core.investigate.gemini import ClientConfig
from core.investigate.service import investigate
from core.razorpay.config import settings_from_env
from core.razorpay.webhooks import handle_webhook, sign
from tests.app_builder import build
from tests.conftest import ROOT
from ui import keys

fake_razorpay = pytest.importorskip("tests.fake_razorpay")
support = pytest.importorskip("tests.razorpay_support")
pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
DEMO = {demo_mode.DEMO_ENV: "1"}


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The demo's shared database: the synthetic benchmark, nothing people did."""
    path = tmp_path / "benchmark.sqlite"
    conn = connect(path)
    migrate(conn)
    build(conn, payments=300, seed=3)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", str(path))
    monkeypatch.setenv(demo_mode.DEMO_ENV, "1")
    monkeypatch.setenv("RAZORRECON_DEMO_DIR", str(tmp_path / "sandboxes"))
    yield path


def _demo_admin_on_data_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.button(key=f"{keys.DEMO_SIGN_IN}-admin").click().run()
    at.switch_page("pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _count(path: str | Path, sql: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def test_a_demo_visitor_cannot_sync_the_deployments_razorpay_account(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_razorpay.FakeRazorpay() as fake:
        fake.load_dataset(support.SPEC_DATASET)
        for name, value in support.sync_env(fake, shared).items():
            monkeypatch.setenv(name, value)
        at = _demo_admin_on_data_page()
        at.session_state[keys.DATA_TAB] = "Razorpay API"
        at.run()
        at.date_input(key=keys.SYNC_FROM).set_value(support.SPEC_FROM)
        at.date_input(key=keys.SYNC_TO).set_value(support.SPEC_TO)
        at.button(key=keys.SYNC_START).click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [w.value for w in at.warning] + [e.value for e in at.error]
    assert any("not available in the public demo" in s for s in shown), shown
    sandbox = at.session_state[keys.DEMO_SANDBOX]
    assert _count(sandbox, "SELECT count(*) FROM razorpay_sync_runs") == 0
    assert _count(sandbox, "SELECT count(*) FROM payments WHERE id NOT LIKE 'pay_0%'") == 0


def test_the_demo_refuses_the_deployments_razorpay_keys_in_core() -> None:
    env = {**DEMO, "RAZORPAY_KEY_ID": "rzp_test_Key0001", "RAZORPAY_KEY_SECRET": "s3cret"}
    with pytest.raises(RefusedError, match="public demo"):
        settings_from_env(env)


def test_a_demo_visitor_is_not_offered_and_cannot_import_a_folder_on_the_server(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _demo_admin_on_data_page()
    assert not [t for t in at.text_input if t.key == keys.STREAM_FOLDER]
    assert any("Importing a folder on the server" in i.value for i in at.info)

    # The action itself refuses, whatever the page shows (signed-in checks passed).
    from ui import actions, auth

    monkeypatch.setattr(auth, "require", lambda permission, action: None)
    folder = tmp_path / "server-folder"
    folder.mkdir()
    with pytest.raises(RefusedError, match="folder on the server"):
        actions.stream_folder(str(folder), "auto", CalendarParams(), 0, lambda f, m: None)


def test_the_demo_investigator_never_asks_the_deployments_model(shared: Path) -> None:
    env = {
        **DEMO,
        "GEMINI_API_KEY": "deployment-key",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",  # nothing listens: never reached
        "GEMINI_MODELS": "gemini-test:2",
    }
    config = ClientConfig.from_env(env)
    assert not config.enabled
    exception_id = _count(shared, "SELECT min(id) FROM exceptions")
    answer = investigate(str(shared), exception_id, client_config=config, use_cache=False)
    assert answer.source == "deterministic"
    assert not answer.attempts
    assert "public demo" in str(answer.fallback_reason)


def test_the_demo_takes_no_webhook_delivery_into_the_shared_database(
    shared: Path,
) -> None:
    payment = next(p for p in fake_razorpay.read_items(support.SPEC_DATASET, "payments"))
    body = (
        b'{"entity":"event","account_id":"acc_X","event":"payment.captured",'
        b'"contains":["payment"],"payload":{"payment":{"entity":'
        + json.dumps(payment).encode()
        + b'}},"created_at":1782000000}'
    )
    headers = {"X-Razorpay-Signature": sign(body, "whsec_demo"), "X-Razorpay-Event-Id": "evt_D1"}
    conn = connect(shared)
    try:
        result = handle_webhook(conn, body, headers, secret="whsec_demo", now=1_782_900_000)
    finally:
        conn.close()
    assert result.status == 503 and "public demo" in result.message
    assert _count(shared, f"SELECT count(*) FROM payments WHERE id = '{payment['id']}'") == 0


def _sandboxes(shared: Path) -> list[Path]:
    return sorted((shared.parent / "sandboxes").glob("razorrecon-demo-*"))


def test_the_demo_refuses_a_database_with_people_and_their_comments_naming_both(
    shared: Path,
) -> None:
    from core.review.comments import add_comment
    from tests.review_support import add_people

    conn = connect(shared)
    add_people(conn)
    exception_id = int(conn.execute("SELECT min(id) FROM exceptions").fetchone()[0])
    add_comment(
        conn,
        exception_id,
        actor="asha@example.com",
        body="CONFIDENTIAL: customer disputes; bank a/c 50200012345678",
        request_id="req-confidential",
    )
    conn.close()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    refusals = [e.value for e in at.error]
    assert any(str(shared) in r and "user(s)" in r and "1 comment(s)" in r for r in refusals)
    assert any("asha@example.com" in r for r in refusals), refusals
    assert not [b for b in at.button if str(b.key).startswith(keys.DEMO_SIGN_IN)]
    assert _sandboxes(shared) == []


def test_the_demo_refuses_imported_data_and_copies_only_the_benchmark(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core import demo

    conn = connect(shared)
    assert demo.template_problems(conn) == []  # the benchmark alone: copied
    conn.close()
    sandbox = demo.create_sandbox(shared)
    assert sandbox.exists()
    imported = tmp_path / "imported.sqlite"
    conn = connect(imported)
    migrate(conn)
    build(conn, payments=200, seed=4, source="files")
    conn.close()
    monkeypatch.setenv("DATABASE_URL", str(imported))
    before = _sandboxes(shared)
    with pytest.raises(demo.ConfigError, match="data imported from files"):
        demo.create_sandbox(imported)
    with pytest.raises(demo.ConfigError, match=str(imported)):
        demo.reset_sandbox(imported, sandbox)  # the visitor's copy is not overwritten with it
    assert not sandbox.exists()
    assert _sandboxes(shared) == [f for f in before if f != sandbox.parent]


def test_demo_copies_keep_their_anchors_in_their_own_folder_unsigned(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core import demo
    from core.review import resolve

    store = tmp_path / "deployment-anchors"  # the deployment's anchor store and key
    monkeypatch.setenv("RAZORRECON_ANCHOR_DIR", str(store))
    monkeypatch.setenv("RAZORRECON_ANCHOR_KEY", "deployment-anchor-key")
    copies = [demo.create_sandbox(shared), demo.create_sandbox(shared)]
    for n, sandbox in enumerate(copies):
        conn = connect(sandbox)
        exception_id = int(conn.execute("SELECT min(id) FROM exceptions").fetchone()[0])
        resolve(
            conn, exception_id, actor=demo.PERSONAS["reviewer"], note="demo", request_id=f"a{n}"
        )
        conn.close()
    assert not store.exists() or list(store.iterdir()) == []
    for sandbox in copies:
        anchors = sandbox.parent / "sandbox.sqlite.anchors" / "sandbox.sqlite.anchors.jsonl"
        lines = anchors.read_text(encoding="utf-8").splitlines()
        assert lines and all(json.loads(line)["hmac"] is None for line in lines)


def test_the_demo_copies_the_database_its_own_first_start_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hosted demo's database is the one the first start builds (core.bootstrap), whose
    # import and run entries name `bootstrap` since every import and run names its actor:
    # that is the benchmark's own making, not something people did, and must be copied.
    from core import bootstrap, demo

    monkeypatch.setattr(bootstrap, "BENCHMARK_PAYMENTS", 300)  # the same build, smaller
    shared = tmp_path / "first-start.sqlite"
    bootstrap.ensure_ready(shared)
    conn = connect(shared)
    try:
        actors = {str(r[0]) for r in conn.execute("SELECT DISTINCT actor FROM audit_log")}
        assert "bootstrap" in actors
        assert demo.template_problems(conn) == []
    finally:
        conn.close()
    monkeypatch.setenv("RAZORRECON_DEMO_DIR", str(tmp_path / "sandboxes"))
    assert demo.create_sandbox(shared).exists()
