"""Sign-in and roles in the app (AppTest): who sees which action, and no name to type."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.db import access as access_sql
from core.db import connect, migrate
from core.errors import RefusedError
from tests.app_builder import build
from tests.app_signin import signed_in
from tests.conftest import ROOT
from tests.review_support import add_people
from ui import audit as audit_ui
from ui import auth, keys
from ui.format import inr, md

# AppTest and the v2 multipage app: see tests.conftest.streamlit_navigation_v2.
pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


@pytest.fixture
def app_db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The app's database, a SQLite file or a PostgreSQL URL (tests/conftest.py)."""
    path = db_url
    conn = connect(path)
    build(conn, payments=600, seed=5)
    add_people(conn)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", path)
    monkeypatch.setenv("RAZORRECON_FOUR_EYES_PAISE", "1000000")
    monkeypatch.delenv("RAZORRECON_DEMO", raising=False)
    yield path


def _at(email: str, page: str | None = None) -> AppTest:
    at = signed_in(email)
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _status(path: str | Path, exception_id: int) -> str:
    conn = connect(path)
    try:
        return str(
            conn.execute("SELECT status FROM exceptions WHERE id = ?", (exception_id,)).fetchone()[
                0
            ]
        )
    finally:
        conn.close()


def test_no_widget_asks_for_a_name_to_act_as() -> None:
    texts = []
    for path in [ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "ui").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "text_input":
                label = node.args[0] if node.args else None
                if isinstance(label, ast.Constant):
                    texts.append(str(label.value).lower())
    asking = [t for t in texts if "your name" in t or "reviewer" in t or "actor" in t]
    assert asking == [] and "reviewer name" not in texts, texts
    assert not hasattr(keys, "REVIEWER")


def test_the_sidebar_names_the_signed_in_identity_and_role(app_db: str) -> None:
    at = _at("asha@example.com")
    sidebar = " ".join(m.value for m in at.sidebar.markdown)
    assert "asha@example.com" in re.sub(r"\\(.)", r"\1", sidebar).replace("\u2060", "")
    assert any("Reviewer" in c.value for c in at.sidebar.caption)
    assert not at.sidebar.text_input


def test_an_unknown_or_unverified_email_sees_nothing(app_db: str) -> None:
    at = signed_in("cfo@elsewhere.example")
    at.run()
    assert any("has no access yet" in e.value for e in at.error)
    assert not at.metric and not at.title[1:]
    at = signed_in("asha@example.com", verified=False)
    at.run()
    assert any("did not vouch" in e.value for e in at.error)
    assert not at.metric


EVIL = "[re-authenticate_to_approve](//phish.example/login)@example.com"


def _store_person(path: str, email: str, role: str) -> None:
    """A person stored before addresses were checked closely (add_user refuses it now)."""
    conn = connect(path)
    try:
        with conn:
            access_sql.insert_user(conn, email, role, "admin@example.com", 1)
    finally:
        conn.close()


def test_an_address_that_is_markdown_is_shown_as_text_and_refused_at_sign_in(app_db: str) -> None:
    _store_person(app_db, EVIL, "reviewer")
    at = signed_in(EVIL)
    at.run()
    said = " ".join(e.value for e in at.error)
    assert "not an address this workbench accepts" in said
    assert "](" not in said and "phish" in said
    assert not at.sidebar.markdown and not at.metric


def test_a_makers_address_in_the_pending_write_off_notice_is_text_not_a_link(app_db: str) -> None:
    _store_person(app_db, EVIL, "reviewer")
    conn = connect(app_db)
    try:
        exception_id, version = conn.execute(
            "SELECT id, version FROM exceptions WHERE status = 'OPEN' ORDER BY id LIMIT 1"
        ).fetchone()
        with conn:
            access_sql.insert_approval(
                conn,
                exception_id=int(exception_id),
                resolution="written_off",
                amount=2_000_000,
                note="please approve",
                maker=EVIL,
                version=int(version),
                request_id="evil-1",
                now=1,
            )
    finally:
        conn.close()
    at = _at("approver@example.com", "pages/investigation.py")
    at.number_input(key=keys.INVESTIGATE_ID).set_value(int(exception_id)).run()
    (notice,) = [i.value for i in at.info if "awaits approval" in i.value]
    assert "[re-authenticate" not in notice and "](" not in notice
    assert EVIL in re.sub(r"\\(.)", r"\1", notice).replace("\u2060", "")


def test_signed_out_visitors_get_the_sign_in_button(app_db: str) -> None:
    at = signed_in()
    at.user = {"is_logged_in": False}
    at.run()
    assert at.button(key=keys.SIGN_IN).label == "Sign in"
    assert not at.metric


def test_without_a_provider_off_loopback_the_app_refuses(app_db: str) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()  # AppTest has no server address: as if listening on every interface
    assert any("No identity provider is configured" in e.value for e in at.error)
    assert not at.metric


def test_a_viewer_can_read_but_not_decide_or_assign(app_db: str) -> None:
    at = _at("viewer@example.com", "pages/investigation.py")
    assert any("Deciding needs the reviewer role" in c.value for c in at.caption)
    assert not [t for t in at.text_area if t.key == keys.DECISION_NOTE]
    assert at.button(key=keys.INVESTIGATE_ASK).disabled
    at.switch_page("pages/exceptions.py")
    at.run()
    assert not [b for b in at.button if b.key == keys.QUEUE_ASSIGN]
    assert any("need the reviewer role" in c.value for c in at.caption)


def test_the_data_admin_and_approvals_pages_are_hidden_from_a_reviewer(app_db: str) -> None:
    at = _at("asha@example.com")
    for page in ("pages/data.py", "pages/admin.py", "pages/approvals.py"):
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            at.switch_page(page)
    admin = _at("admin@example.com", "pages/data.py")
    assert admin.button(key=keys.UPLOAD_IMPORT) is not None


def test_a_session_whose_role_is_lowered_loses_the_page_it_was_on(app_db: str) -> None:
    at = _at("admin@example.com", "pages/approvals.py")  # admin includes approver
    assert at.title[0].value == "Approvals"
    at.user = {"is_logged_in": True, "email": "viewer@example.com", "email_verified": True}
    at.run()  # the same session, now a viewer: no Approvals page, no approve button
    assert at.title[0].value != "Approvals"
    assert not [b for b in at.button if b.key == keys.APPROVAL_APPROVE]


def test_an_admin_adds_a_person_on_the_admin_page_and_it_is_audited(app_db: str) -> None:
    at = _at("admin@example.com", "pages/admin.py")
    at.text_input(key=keys.ADMIN_EMAIL).input("New.Person@Example.com")
    at.selectbox(key=keys.ADMIN_ROLE).select("approver").run()
    at.button(key=keys.ADMIN_ADD).click().run()
    assert not at.exception
    shown = [s.value.replace("\\", "").replace("\u2060", "") for s in at.success]  # md() escapes
    assert any("new.person@example.com: approver, active" in text for text in shown)
    conn = connect(app_db)
    row = conn.execute(
        "SELECT actor FROM audit_log WHERE action = 'user.added' AND entity_id = ?",
        ("new.person@example.com",),
    ).fetchone()
    conn.close()
    assert tuple(row) == ("admin@example.com",)


def _write_off(at: AppTest, rupees: str) -> int:
    exception_id = int(at.number_input(key=keys.INVESTIGATE_ID).value)
    at.text_area(key=keys.DECISION_NOTE).input("Customer paid short; unrecoverable.")
    at.radio(key=keys.DECISION_RESOLUTION).set_value("written_off").run()
    at.text_input(key=keys.DECISION_AMOUNT).input(rupees)
    at.button(key=keys.DECISION_RESOLVE).click().run()
    assert not at.exception
    return exception_id


def test_four_eyes_in_the_app_reviewer_asks_approver_approves(app_db: str) -> None:
    at = _at("asha@example.com", "pages/investigation.py")
    exception_id = _write_off(at, "25,000")
    assert any("pending approval" in s.value for s in at.success)
    assert _status(app_db, exception_id) != "RESOLVED"

    maker = _at("asha@example.com")
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        maker.switch_page("pages/approvals.py")

    checker = _at("approver@example.com", "pages/approvals.py")
    assert "asha@example.com" in " ".join(checker.dataframe[0].value["Requested by"])
    checker.button(key=keys.APPROVAL_APPROVE).click().run()
    assert any("approved" in s.value and "RESOLVED" in s.value for s in checker.success)
    assert _status(app_db, exception_id) == "RESOLVED"


def test_the_maker_withdraws_a_pending_write_off_and_may_decide_the_exception_again(
    app_db: str,
) -> None:
    # An independent walkthrough: a write-off request could not be taken back, so an
    # exception asked for by mistake (or in local mode, with no second person) stayed
    # blocked ("has a write-off awaiting approval") for good.
    at = _at("asha@example.com", "pages/investigation.py")
    exception_id = _write_off(at, "25,000")
    assert any("pending approval" in s.value for s in at.success)
    at.text_area(key=keys.DECISION_NOTE).input("Typed on the wrong exception.")
    at.button(key=keys.DECISION_WITHDRAW).click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("withdrawn" in s.value for s in at.success)
    assert not [b for b in at.button if b.key == keys.DECISION_WITHDRAW]  # nothing pending
    conn = connect(app_db)
    try:
        row = conn.execute(
            "SELECT status, checker, checker_note FROM approvals WHERE exception_id = ?",
            (exception_id,),
        ).fetchone()
        assert tuple(row) == ("rejected", "asha@example.com", "Typed on the wrong exception.")
        (payload,) = conn.execute(
            "SELECT payload_json FROM audit_log WHERE action = 'exception.write_off_rejected'"
            " AND entity_id = ?",
            (str(exception_id),),
        ).fetchone()
        assert '"withdrawn_by_maker":true' in payload.replace(" ", "")
        from core.audit import verify
        from core.review import withdraw

        assert verify(conn).ok
        # Only the maker withdraws: another reviewer asking is refused (an approver rejects).
        at.text_area(key=keys.DECISION_NOTE).input("Written off after all.")
        at.button(key=keys.DECISION_RESOLVE).click().run()
        (approval,) = conn.execute(
            "SELECT id FROM approvals WHERE exception_id = ? AND status = 'pending'",
            (exception_id,),
        ).fetchone()
        with pytest.raises(RefusedError, match="may withdraw it"):
            withdraw(
                conn,
                approval,
                actor="ravi@example.com",
                note="not mine",
                request_id="w-1",
            )
    finally:
        conn.close()
    assert _status(app_db, exception_id) != "RESOLVED"


def test_a_write_off_amount_is_read_in_the_short_forms_the_queue_filters_take(
    app_db: str,
) -> None:
    # "25k" as the queue's amount filters read it (an independent walkthrough's "5 Cr" was
    # "A write-off needs the amount written off, in rupees."): ₹25,000.00, asked of an approver.
    at = _at("asha@example.com", "pages/investigation.py")
    exception_id = _write_off(at, "25k")
    assert any("pending approval" in s.value for s in at.success), [e.value for e in at.error]
    conn = connect(app_db)
    (amount,) = conn.execute(
        "SELECT amount FROM approvals WHERE exception_id = ? AND status = 'pending'",
        (exception_id,),
    ).fetchone()
    conn.close()
    assert amount == 2_500_000


def test_a_write_off_typed_at_the_threshold_on_a_larger_exposure_awaits_an_approver(
    app_db: str,
) -> None:
    conn = connect(app_db)
    try:
        exception_id, exposure = conn.execute(
            "SELECT id, exposure_amount FROM exceptions WHERE status = 'OPEN'"
            " AND exposure_amount > 1000000 ORDER BY exposure_amount DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    at = _at("asha@example.com", "pages/investigation.py")
    at.number_input(key=keys.INVESTIGATE_ID).set_value(int(exception_id)).run()
    assert _write_off(at, "10,000") == exception_id
    assert any("pending approval" in s.value for s in at.success)
    assert _status(app_db, exception_id) != "RESOLVED"

    checker = _at("approver@example.com", "pages/approvals.py")
    table = checker.dataframe[0].value
    assert list(table["Write-off"]) == ["₹10,000.00"]
    assert list(table["Exposure closed"]) == [inr(int(exposure))]


def test_an_approver_cannot_approve_their_own_write_off(app_db: str) -> None:
    at = _at("cfo@example.com", "pages/investigation.py")
    exception_id = _write_off(at, "50,000")
    at.switch_page("pages/approvals.py")
    at.run()
    assert any("another approver must decide" in w.value for w in at.warning)
    # The button that says so is off (the judge clicked it and got a refusal); core refuses it
    # too (test_access_roles, four eyes); the maker may still withdraw it with Reject.
    assert at.button(key=keys.APPROVAL_APPROVE).disabled
    assert not at.button(key=keys.APPROVAL_REJECT).disabled
    assert _status(app_db, exception_id) != "RESOLVED"
    other = _at("approver@example.com", "pages/approvals.py")
    assert not other.button(key=keys.APPROVAL_APPROVE).disabled


# SQLite only: a demo session's private copy is a copy of the database file (SQLite's backup
# API); on PostgreSQL demo mode is refused, proven by test_app_demo_reset.py
# test_demo_mode_on_a_postgresql_database_is_refused_with_a_config_error.
@pytest.mark.sqlite_only
def test_demo_personas_work_on_a_private_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The demo copies only the synthetic benchmark with nothing people did (core.demo
    # template_problems): its own database, without app_db's people.
    app_db = str(tmp_path / "benchmark.sqlite")
    conn = connect(app_db)
    migrate(conn)
    build(conn, payments=600, seed=5)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", app_db)
    monkeypatch.setenv("RAZORRECON_DEMO", "1")
    monkeypatch.setenv("RAZORRECON_DEMO_DIR", str(tmp_path / "sandboxes"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert any("Demo sign-in" in i.value for i in at.info)
    # The first screen says what the product does and where to start, before any sign-in.
    assert [m.value for m in at.markdown if m.value == auth.DEMO_PITCH]
    assert "**Start as the reviewer**" in auth.DEMO_PITCH
    assert at.button(key=f"{keys.DEMO_SIGN_IN}-reviewer").proto.type == "primary"
    at.button(key=f"{keys.DEMO_SIGN_IN}-reviewer").click().run()
    sandbox = Path(at.session_state[keys.DEMO_SANDBOX])
    assert str(sandbox) != app_db and sandbox.exists()
    assert sandbox.parent.parent == tmp_path / "sandboxes"
    at.switch_page("pages/investigation.py")
    at.run()
    exception_id = int(at.number_input(key=keys.INVESTIGATE_ID).value)
    at.text_area(key=keys.DECISION_NOTE).input("Demo decision")
    at.button(key=keys.DECISION_RESOLVE).click().run()
    assert _status(sandbox, exception_id) == "RESOLVED"
    assert _status(app_db, exception_id) == "OPEN"
    at.button(key=keys.DEMO_RESET).click().run()
    assert _status(sandbox, exception_id) == "OPEN"
    # Verifying the chain tells a visitor what the demo's anchors are, never the server's
    # folders or settings (the deployment's warnings name both).
    at.switch_page("pages/audit.py")
    at.run()
    at.button(key=keys.AUDIT_VERIFY).click().run()
    assert any(s.value.startswith("Chain intact") for s in at.success), [e.value for e in at.error]
    said = [w.value for w in at.warning]
    assert said == [md(audit_ui.DEMO_ANCHORS_NOTE)]
    assert not any(str(tmp_path) in w or "RAZORRECON_" in w for w in said)


def test_demo_mode_and_a_provider_together_are_refused(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_DEMO", "1")
    at = signed_in("admin@example.com")
    at.run()
    assert any("choose one" in e.value for e in at.error)
    assert not at.metric
