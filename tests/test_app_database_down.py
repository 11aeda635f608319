"""A person's action in the app while the database cannot be reached: a PostgreSQL server
stopped for real (the tests' own server, `pg_ctl stop`, then started again), or a SQLite
database whose file cannot be opened (a folder where the file was). One message says the
database cannot be reached and that the action was not saved, never the driver's error;
the sidebar keeps who is signed in and their role; what was typed stays in its box, as in
the busy case (tests/test_app_busy.py); once the database answers again the page is back
with the text, and the same action goes through, once.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import review
from core.db import connect
from tests.app_builder import build
from tests.app_signin import signed_in
from tests.review_support import add_people
from ui import keys

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
ASHA = "asha@example.com"


@contextmanager
def _sqlite_unreachable(path: Path) -> Iterator[None]:
    """The file (and its WAL files) moved aside and a folder in its place: SQLite cannot
    open it (the app's connect makes a missing parent folder, so a moved folder would
    only give it a new, empty database)."""
    aside = path.parent / "aside"
    aside.mkdir()
    moved = [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]
    for p in moved:
        shutil.move(p, aside / p.name)
    path.mkdir()
    try:
        yield
    finally:
        path.rmdir()
        for p in moved:
            shutil.move(aside / p.name, p)


@pytest.fixture
def app_db(
    db_url: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Callable[[], object]]]:
    """The builder's rows and the test people, the app pointed at them, and how to make
    the database unreachable for a block."""
    with closing(connect(db_url)) as conn:
        build(conn, payments=300, seed=11, source="files")
        add_people(conn)
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.delenv("RAZORRECON_DEMO", raising=False)
    if db_url.startswith("postgresql"):
        server = request.getfixturevalue("postgres_server")

        @contextmanager
        def down() -> Iterator[None]:
            server.pause()
            try:
                yield
            finally:
                server.resume()

        yield db_url, down
    else:
        yield db_url, lambda: _sqlite_unreachable(Path(db_url))


def _shown(text: str) -> str:
    return text.replace("\\", "").replace("\u2060", "")


def _sidebar(at: AppTest) -> str:
    return _shown(" ".join(str(m.value) for m in [*at.sidebar.markdown, *at.sidebar.caption]))


def _errors(at: AppTest) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [_shown(e.value) for e in at.error]


def _comments(database: str, exception_id: int) -> list[str]:
    with closing(connect(database)) as conn:
        return [c.body for c in review.list_comments(conn, exception_id)]


def test_a_comment_while_the_database_is_down_says_not_saved_keeps_the_text_and_posts_once_back(
    app_db: tuple[str, Callable[[], object]],
) -> None:
    database, down = app_db
    at = signed_in(ASHA, timeout=120)
    at.run()
    at.switch_page("pages/investigation.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    exception_id = int(at.number_input(key=keys.INVESTIGATE_ID).value)
    body = "Comment typed while the database goes down."
    note = "Decision note typed before the outage."
    at.text_area(key=keys.COMMENT_TEXT).input(body)
    at.text_area(key=keys.DECISION_NOTE).input(note)
    with down():  # type: ignore[attr-defined]
        at.button(key=keys.COMMENT_POST).click().run()
        errors = _errors(at)
        assert len(errors) == 1, errors
        (message,) = errors
        assert message.startswith("Not saved: the database "), message
        assert "cannot be reached" in message and "stays in its box" in message
        for raw in (
            "postgresql://",
            "Is the server running",
            "unable to open",
            "connection failed",
        ):
            assert raw not in message, message
        sidebar = _sidebar(at)
        assert ASHA in sidebar and "Reviewer" in sidebar, sidebar  # the frame stays
        at.run()  # still down: the page says so again, and saved nothing
        errors = _errors(at)
        assert len(errors) == 1 and "cannot be reached" in errors[0], errors
        assert "Not saved" not in errors[0]  # no action this time
        assert ASHA in _sidebar(at)
    at.run()  # back (in the browser, the page's own check reruns it: no click needed)
    assert _errors(at) == []
    assert at.title[0].value == "Investigation"
    assert at.text_area(key=keys.COMMENT_TEXT).value == body  # kept in its box
    assert at.text_area(key=keys.DECISION_NOTE).value == note
    assert _comments(database, exception_id) == []  # not saved meanwhile
    at.button(key=keys.COMMENT_POST).click().run()
    assert "Comment added." in [_shown(s.value) for s in at.success]
    assert _comments(database, exception_id) == [body]  # once
