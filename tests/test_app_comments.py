"""The Investigation page's comment thread (issue 13, item 6) under Streamlit's AppTest."""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from core.db import connect
from core.review import list_comments
from core.review.comments import add_comment
from tests import test_app_pages as pages
from tests.app_builder import Built
from ui import keys
from ui.format import ist

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
app_db = pages.app_db
ASHA = "asha@example.com"
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def _investigating(email: str) -> tuple[AppTest, int]:
    at = pages._app("pages/investigation.py", email)
    pages._no_exception(at)
    return at, int(at.number_input(key=keys.INVESTIGATE_ID).value)


def _thread(path: str, exception_id: int) -> list[tuple[str, str]]:
    conn = connect(path)
    try:
        return [(c.author, c.body) for c in list_comments(conn, exception_id)]
    finally:
        conn.close()


def _last_event(at: Any) -> dict[str, Any]:
    """The history table's last event (a single event too wide for a row is shown as
    Field | Value, ui.format.fitted_table)."""
    history = at.dataframe[-1].value
    if list(history.columns) == ["Field", "Value"]:
        return dict(zip(history["Field"], history["Value"], strict=True))
    return dict(history.iloc[-1])


def test_a_reviewer_posts_a_comment_and_sees_it_in_the_thread_and_the_history(
    app_db: tuple[str, Built],
) -> None:
    path, _ = app_db
    at, exception_id = _investigating(ASHA)
    assert "No comments yet." in [c.value for c in at.caption]
    body = "Called HDFC: the credit is under UTR UTIB0000123, posted on the 3rd."
    at.text_area(key=keys.COMMENT_TEXT).input(body).run()
    at.button(key=keys.COMMENT_POST).click().run()
    pages._no_exception(at)
    assert any("Comment added." in pages.shown(s.value) for s in at.success)
    assert _thread(path, exception_id) == [(ASHA, body)]
    assert body in [t.value for t in at.text]  # shown as text
    conn = connect(path)
    (comment,) = list_comments(conn, exception_id)
    conn.close()
    byline = [pages.shown(c.value) for c in at.caption if ASHA in pages.shown(c.value)]
    assert byline == [f"**{ASHA}** · {ist(comment.created_at)}"]
    last = _last_event(at)
    assert (last["Action"], last["By"], last["Note"]) == ("commented", ASHA, body)
    assert last["Created"] == ist(comment.created_at)
    assert at.text_area(key=keys.COMMENT_TEXT).value == ""  # emptied for the next one


def test_comment_text_is_shown_as_typed_never_as_markdown_or_html(
    app_db: tuple[str, Built],
) -> None:
    at, _ = _investigating(ASHA)
    body = "**urgent** [pay here](http://evil.example) <img src=x onerror=alert(1)> :red[x]"
    at.text_area(key=keys.COMMENT_TEXT).input(body).run()
    at.button(key=keys.COMMENT_POST).click().run()
    assert body in [t.value for t in at.text]
    assert not any("evil.example" in m.value for m in at.markdown)


def test_a_blank_or_overlong_comment_is_refused_on_the_page(app_db: tuple[str, Built]) -> None:
    path, _ = app_db
    at, exception_id = _investigating(ASHA)
    at.button(key=keys.COMMENT_POST).click().run()
    assert any("Write the comment first." in pages.shown(e.value) for e in at.error)
    at.text_area(key=keys.COMMENT_TEXT).input("x" * 10_001).run()
    at.button(key=keys.COMMENT_POST).click().run()
    assert any("longer than the 10,000 allowed" in pages.shown(e.value) for e in at.error)
    assert _thread(path, exception_id) == []


def test_a_viewer_reads_the_thread_and_downloads_files_but_cannot_comment(
    app_db: tuple[str, Built],
) -> None:
    path, _ = app_db
    at, exception_id = _investigating("viewer@example.com")
    conn = connect(path)
    add_comment(
        conn,
        exception_id,
        actor=ASHA,
        body="Screenshot of the dashboard attached.",
        request_id="seed-1",
        attachments=[("dashboard.png", PNG_BYTES)],
    )
    conn.close()
    at.run()
    pages._no_exception(at)
    assert "Screenshot of the dashboard attached." in [t.value for t in at.text]
    assert "Commenting needs the reviewer role." in [c.value for c in at.caption]
    assert not [b for b in at.button if b.key == keys.COMMENT_POST]
    assert not [t for t in at.text_area if t.key == keys.COMMENT_TEXT]
    downloads = at.get("download_button")
    labels = [pages.shown(d.proto.label) for d in downloads]
    # (The escalation packet's two buttons sit on the same page, disabled for a viewer.)
    assert [x for x in labels if not x.startswith("Escalation packet")] == [
        "dashboard.png (PNG, 2 KiB)"
    ]
    assert _last_event(at)["Attachments"] == "dashboard.png (PNG, 2 KiB)"
