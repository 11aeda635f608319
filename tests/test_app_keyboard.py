"""Issue 13, item 1, page logic (AppTest): which buttons carry which key, for whom.

What a key press does in a browser is proved in tests/test_app_keyboard_browser.py; here,
that the keys sit on the very buttons a click presses, so a person without the reviewer
role gets no deciding key at all, and that Previous walks the queue page backwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import test_app_pages as pages
from tests.app_builder import Built
from ui import keys, shortcuts

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
app_db = pages.app_db
_app = pages._app
_no_exception = pages._no_exception


def _shortcuts(at: object) -> dict[str, str]:
    return {b.key: b.proto.shortcut for b in at.button if b.proto.shortcut}  # type: ignore[attr-defined]


def _keyboard_captions(at: object) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith("Keyboard:")]  # type: ignore[attr-defined]


def test_a_reviewer_gets_the_keys_on_the_decision_buttons(app_db: tuple[Path, Built]) -> None:
    at = _app("pages/investigation.py", "asha@example.com")
    _no_exception(at)
    assert _shortcuts(at) == {
        keys.DECISION_RESOLVE: "ctrl+enter",
        keys.DECISION_ESCALATE: "e",
        keys.DECISION_PREVIOUS: "k",
        keys.DECISION_NEXT: "j",
    }
    assert _keyboard_captions(at) == [shortcuts.INVESTIGATION_HELP]
    assert len(at.get("html")) == 1  # N and Esc: the note box's focus keys


def test_a_viewer_gets_no_deciding_key_only_next_and_previous(app_db: tuple[Path, Built]) -> None:
    at = _app("pages/investigation.py", "viewer@example.com")
    _no_exception(at)
    assert _shortcuts(at) == {keys.DECISION_PREVIOUS: "k", keys.DECISION_NEXT: "j"}
    assert _keyboard_captions(at) == [shortcuts.MOVE_HELP]
    assert at.get("html") == []  # no note box, so nothing to focus


def test_the_queue_opens_the_chosen_exception_with_o(app_db: tuple[Path, Built]) -> None:
    at = _app("pages/exceptions.py")
    assert _shortcuts(at) == {keys.QUEUE_OPEN: "o"}
    chosen = at.selectbox(key=keys.QUEUE_OPEN_CHOICE).value
    at.button(key=keys.QUEUE_OPEN).click().run()
    assert at.subheader[0].value.startswith(f"#{chosen} ")


def test_previous_walks_the_queue_page_back_and_says_when_it_is_at_the_top(
    app_db: tuple[Path, Built],
) -> None:
    at = _app("pages/exceptions.py")
    table = at.dataframe[0]
    ids = [int(i) for i in table.value["Id"]]
    at.session_state[table.key] = {"selection": {"rows": [1], "columns": []}}
    at.run()
    at.switch_page("pages/investigation.py")
    at.run()
    assert at.subheader[0].value.startswith(f"#{ids[1]} ")
    at.button(key=keys.DECISION_PREVIOUS).click().run()
    assert at.subheader[0].value.startswith(f"#{ids[0]} ")
    at.button(key=keys.DECISION_PREVIOUS).click().run()
    assert at.subheader[0].value.startswith(f"#{ids[0]} ")
    assert any("No previous exception" in w.value for w in at.warning)
    at.button(key=keys.DECISION_NEXT).click().run()
    assert at.subheader[0].value.startswith(f"#{ids[1]} ")
    _no_exception(at)
