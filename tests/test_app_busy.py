"""A person's action in the app while another connection holds the database's write lock
for longer than the busy timeout (RAZORRECON_BUSY_TIMEOUT_S; on PostgreSQL the
lock_timeout our connections set from it): one st.error saying which database is busy,
that nothing was written and to try again; the page otherwise as it was; nothing written;
the same action again once the lock is released goes through, once. Reads never wait for
a writer. The lock is real: a second sqlite3 connection's BEGIN IMMEDIATE on the SQLite
file, another PostgreSQL session's transaction holding the write lock (tests/busy_support.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from urllib.parse import urlparse

import pytest
from streamlit.testing.v1 import AppTest

from core import review
from core.books.ledger import ledger_status, rebuild_ledger
from core.db import connect
from tests.app_builder import build
from tests.app_signin import signed_in
from tests.busy_support import write_lock_held
from tests.conftest import SPEC_EXAMPLE, database_rows, is_postgres
from tests.review_support import add_people
from ui import keys, shell

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
ADMIN, ASHA, APPROVER = "admin@example.com", "asha@example.com", "approver@example.com"
BUSY_S = "0.3"  # seconds a write waits for the lock before the app says the database is busy
PAGES = tuple(path for path, _, _ in shell.PAGES)  # every page, as the app navigates


@pytest.fixture
def app_db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The builder's rows (as imported from files: an import may add to them), the test
    people, the app pointed at them, and a short busy timeout."""
    with closing(connect(db_url)) as conn:
        build(conn, payments=300, seed=11, source="files")
        add_people(conn)
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", BUSY_S)
    monkeypatch.setenv("RAZORRECON_FOUR_EYES_PAISE", "1000000")
    monkeypatch.delenv("RAZORRECON_DEMO", raising=False)
    yield db_url


def shown(text: str) -> str:
    """Markdown text as a reader sees it (ui.format.md's escapes dropped)."""
    return text.replace("\\", "").replace("\u2060", "")


def _page(page: str, email: str = ADMIN) -> AppTest:
    at = signed_in(email, timeout=120)
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _busy_while_locked(at: AppTest, database: str, act: Callable[[AppTest], object]) -> str:
    """Do `act` on the page while another connection holds the write lock; checks that it
    wrote nothing and left no traceback, and returns the one error it showed."""
    before = database_rows(database)
    with write_lock_held(database):
        act(at)
    assert not at.exception, [e.value for e in at.exception]
    assert database_rows(database) == before
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1, errors
    name = urlparse(database).path.lstrip("/") if is_postgres(database) else Path(database).name
    (message,) = errors
    assert message.startswith(f"The database {name} is busy: another "), message
    assert f"for longer than {BUSY_S} s" in message
    assert "Nothing was written. Try again in a moment." in message
    return message


def _successes(at: AppTest) -> list[str]:
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    return [shown(s.value) for s in at.success]


def _one(database: str, sql: str, *params: object) -> object:
    with closing(connect(database)) as conn:
        return conn.execute(sql, params).fetchone()[0]


def _audited(database: str, action: str, entity_id: object) -> int:
    return int(
        _one(
            database,
            "SELECT count(*) FROM audit_log WHERE action = ? AND entity_id = ?",
            action,
            str(entity_id),
        )
    )


def test_resolving_on_a_busy_database_says_so_and_the_retry_resolves_it_once(
    app_db: str,
) -> None:
    at = _page("pages/investigation.py", ASHA)
    exception_id = int(at.number_input(key=keys.INVESTIGATE_ID).value)
    note = "Bank confirmed the credit by phone."
    at.text_area(key=keys.DECISION_NOTE).input(note)
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.DECISION_RESOLVE).click().run())
    assert at.title[0].value == "Investigation" and at.expander  # the evidence still shown
    assert at.text_area(key=keys.DECISION_NOTE).value == note  # kept for the retry
    assert not at.button(key=keys.DECISION_RESOLVE).disabled
    at.button(key=keys.DECISION_RESOLVE).click().run()
    assert any(f"#{exception_id} is now RESOLVED" in s for s in _successes(at))
    assert _audited(app_db, "exception.resolved", exception_id) == 1


def test_escalating_selected_rows_on_a_busy_database_says_so_and_the_retry_escalates_them(
    app_db: str,
) -> None:
    at = _page("pages/exceptions.py", ASHA)
    at.toggle(key=keys.QUEUE_BULK).set_value(True).run()
    table = at.dataframe[0]
    chosen = [int(i) for i in table.value["Id"].iloc[:2]]
    at.session_state[table.key] = {"selection": {"rows": [0, 1], "columns": []}}
    at.text_input(key=keys.QUEUE_ESCALATE_NOTE).input("Needs the bank's confirmation").run()
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.QUEUE_ESCALATE).click().run())
    assert [int(i) for i in at.dataframe[0].value["Id"].iloc[:2]] == chosen  # the queue stands
    at.button(key=keys.QUEUE_ESCALATE).click().run()
    assert any("Escalated 2." in s for s in _successes(at))
    assert [_audited(app_db, "exception.escalated", i) for i in chosen] == [1, 1]


def test_an_import_on_a_busy_database_says_so_and_the_retry_imports_the_files(
    app_db: str,
) -> None:
    imports = int(_one(app_db, "SELECT count(*) FROM imports"))
    at = _page("pages/data.py")
    files = sorted((SPEC_EXAMPLE / "dataset").iterdir())
    at.file_uploader(key=keys.UPLOAD_FILES).set_value(
        [(f.name, f.read_bytes(), "application/octet-stream") for f in files]
    )
    at.radio(key=keys.UPLOAD_MODE).set_value("add").run()
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.UPLOAD_IMPORT).click().run())
    assert not at.success  # no "Imported." beside it
    assert not at.button(key=keys.UPLOAD_IMPORT).disabled
    at.button(key=keys.UPLOAD_IMPORT).click().run()
    assert any(s.startswith("Imported.") for s in _successes(at))
    assert _one(app_db, "SELECT count(*) FROM imports") == imports + 1


def test_an_import_refused_as_busy_after_one_that_succeeded_leaves_no_imported_beside_it(
    app_db: str,
) -> None:
    # The first import's "Imported." and its report belong to that import: a later one that
    # failed (here: busy) shows its error alone, never under the earlier success.
    at = _page("pages/data.py")
    files = sorted((SPEC_EXAMPLE / "dataset").iterdir())
    at.file_uploader(key=keys.UPLOAD_FILES).set_value(
        [(f.name, f.read_bytes(), "application/octet-stream") for f in files]
    )
    at.radio(key=keys.UPLOAD_MODE).set_value("add").run()
    at.button(key=keys.UPLOAD_IMPORT).click().run()
    assert any(s.startswith("Imported.") for s in _successes(at))
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.UPLOAD_IMPORT).click().run())
    assert not at.success and not at.code  # neither the old "Imported." nor its report


def test_a_reconciliation_on_a_busy_database_says_so_and_the_retry_stores_the_run(
    app_db: str,
) -> None:
    runs = int(_one(app_db, "SELECT count(*) FROM runs"))
    at = _page("pages/data.py")
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.RUN_START).click().run())
    assert at.button(key=keys.RUN_START) is not None and at.tabs  # the page stands
    at.button(key=keys.RUN_START).click().run()
    assert any(s.startswith("Reconciliation finished: run #") for s in _successes(at))
    assert _one(app_db, "SELECT count(*) FROM runs WHERE status = 'completed'") == runs + 1


def test_deriving_the_books_on_a_busy_database_says_so_and_the_retry_derives_them(
    app_db: str,
) -> None:
    at = _page("pages/books.py")
    _busy_while_locked(
        at, app_db, lambda at: at.button(key=keys.BOOKS_LEDGER_REBUILD).click().run()
    )
    assert at.title[0].value == "Books" and at.selectbox(key=keys.BOOKS_MONTH).options
    at.button(key=keys.BOOKS_LEDGER_REBUILD).click().run()
    assert any("derived again" in s for s in _successes(at))
    with closing(connect(app_db)) as conn:
        assert ledger_status(conn).current


def test_closing_a_month_on_a_busy_database_says_so_and_the_retry_closes_it_once(
    app_db: str,
) -> None:
    with closing(connect(app_db)) as conn:
        rebuild_ledger(conn)  # as a completed run leaves it
    at = _page("pages/books.py")
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    at.button(key=keys.BOOKS_CLOSE).click().run()  # the confirm step
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.BOOKS_CLOSE_CONFIRM).click().run())
    assert {m.label for m in at.metric} == {"Opening", "Closing", "Open items", "Residual"}
    at.button(key=keys.BOOKS_CLOSE_CONFIRM).click().run()
    assert f"{month} closed." in _successes(at)
    assert _audited(app_db, "month_closed", month) == 1


def test_adding_a_person_on_a_busy_database_says_so_and_the_retry_adds_them(
    app_db: str,
) -> None:
    at = _page("pages/admin.py")
    at.text_input(key=keys.ADMIN_EMAIL).input("new.person@example.com")
    at.selectbox(key=keys.ADMIN_ROLE).select("reviewer").run()
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.ADMIN_ADD).click().run())
    assert "new.person@example.com" not in set(at.dataframe[0].value["Email"])
    at.button(key=keys.ADMIN_ADD).click().run()
    assert any("new.person@example.com: reviewer, active" in s for s in _successes(at))
    assert _audited(app_db, "user.added", "new.person@example.com") == 1


def test_approving_a_write_off_on_a_busy_database_says_so_and_the_retry_approves_it(
    app_db: str,
) -> None:
    exception_id = int(_one(app_db, "SELECT min(id) FROM exceptions"))
    with closing(connect(app_db)) as conn:
        asked = review.resolve(
            conn,
            exception_id,
            actor=ASHA,
            note="Customer paid short; unrecoverable.",
            request_id="write-off-1",
            resolution="written_off",
            amount=2_500_000,
        )
    assert asked.approval_id is not None
    at = _page("pages/approvals.py", APPROVER)
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.APPROVAL_APPROVE).click().run())
    assert at.button(key=keys.APPROVAL_APPROVE) is not None  # still awaiting approval
    at.button(key=keys.APPROVAL_APPROVE).click().run()
    assert any("approved" in s and "RESOLVED" in s for s in _successes(at))
    assert _audited(app_db, "exception.resolved", exception_id) == 1


def test_a_comment_on_a_busy_database_says_so_and_the_retry_posts_it_once(app_db: str) -> None:
    at = _page("pages/investigation.py", ASHA)
    exception_id = int(at.number_input(key=keys.INVESTIGATE_ID).value)
    body = "Asked HDFC for the credit advice."
    at.text_area(key=keys.COMMENT_TEXT).input(body)
    _busy_while_locked(at, app_db, lambda at: at.button(key=keys.COMMENT_POST).click().run())
    assert at.text_area(key=keys.COMMENT_TEXT).value == body  # kept for the retry
    at.button(key=keys.COMMENT_POST).click().run()
    assert "Comment added." in _successes(at)
    with closing(connect(app_db)) as conn:
        assert [c.body for c in review.list_comments(conn, exception_id)] == [body]


def test_a_configured_admins_first_sign_in_on_a_busy_database_says_so_and_the_retry_signs_in(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_ADMINS", "first.admin@example.com")
    at = signed_in("first.admin@example.com", timeout=120)
    _busy_while_locked(at, app_db, lambda at: at.run())
    assert not at.sidebar.markdown  # nobody is signed in: no page, no sidebar
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert at.title[0].value == "Overview"
    assert _audited(app_db, "user.added", "first.admin@example.com") == 1


def test_every_page_reads_while_another_connection_writes_and_shows_only_what_is_committed(
    app_db: str,
) -> None:
    at = signed_in(ADMIN, timeout=120)
    at.run()
    with write_lock_held(app_db) as writer:
        writer.execute(
            "INSERT INTO users (email, role, active, added_by, added_at, updated_at)"
            " VALUES ('uncommitted@example.com', 'viewer', 1, 'test', 0, 0)"
        )
        for page in PAGES:
            at.switch_page(page)
            at.run()
            assert not at.exception, (page, [e.value for e in at.exception])
            assert not at.error, (page, [e.value for e in at.error])
            assert at.title, page
        assert "uncommitted@example.com" not in set(at.dataframe[0].value["Email"])
