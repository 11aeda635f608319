"""The public demo cannot fill the disk (F8): at most RAZORRECON_DEMO_MAX_SANDBOXES copies
live at once; a copy unused for minutes (not a day) is swept; at the cap the least recently
used idle copy makes room, else the next visitor is told the demo is full. A visitor's own
use keeps their copy; a visitor whose copy was swept gets a fresh one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import demo
from core.db import connect, migrate
from core.errors import ConfigError
from tests.app_builder import build
from tests.conftest import ROOT
from ui import keys

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "benchmark.sqlite"
    conn = connect(path)
    migrate(conn)
    build(conn, payments=200, seed=3)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", str(path))
    monkeypatch.setenv(demo.DEMO_ENV, "1")
    monkeypatch.setenv(demo.DIR_ENV, str(tmp_path / "sandboxes"))
    monkeypatch.setenv("RAZORRECON_DEMO_MAX_SANDBOXES", "2")
    yield path


def _folders(shared: Path) -> list[Path]:
    return sorted((shared.parent / "sandboxes").glob("razorrecon-demo-*"))


def _visitor() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.button(key=f"{keys.DEMO_SIGN_IN}-viewer").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _idle(sandbox: str, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(Path(sandbox).parent, (then, then))


def test_the_demo_keeps_at_most_the_cap_and_tells_the_next_visitor_it_is_full(
    shared: Path,
) -> None:
    first, second = _visitor(), _visitor()
    assert first.session_state[keys.DEMO_SANDBOX] != second.session_state[keys.DEMO_SANDBOX]
    third = _visitor()
    assert len(_folders(shared)) == 2
    assert any("The demo is full" in w.value for w in third.warning)
    assert any("RAZORRECON_DEMO_MAX_SANDBOXES=2" in w.value for w in third.warning)
    assert keys.DEMO_SANDBOX not in third.session_state
    assert [b for b in third.button if str(b.key).startswith(keys.DEMO_SIGN_IN)]  # try again


def test_the_least_recently_used_idle_copy_makes_room_and_its_visitor_gets_a_fresh_one(
    shared: Path,
) -> None:
    first, second = _visitor(), _visitor()
    old = str(first.session_state[keys.DEMO_SANDBOX])
    _idle(old, demo.EVICT_IDLE_SECONDS + 30)  # the first visitor stepped away
    _visitor()
    assert not Path(old).exists() and len(_folders(shared)) == 2
    _idle(str(second.session_state[keys.DEMO_SANDBOX]), demo.EVICT_IDLE_SECONDS + 30)
    first.run()  # back: a fresh copy (the second visitor's idle copy made room)
    assert any("fresh copy" in i.value for i in first.info)
    assert Path(first.session_state[keys.DEMO_SANDBOX]).exists()
    assert len(_folders(shared)) == 2


def test_copies_unused_for_minutes_are_swept_and_use_keeps_a_copy(shared: Path) -> None:
    kept, left = _visitor(), _visitor()
    _idle(str(kept.session_state[keys.DEMO_SANDBOX]), demo.IDLE_SECONDS + 60)
    kept.run()  # every run of the visitor's session marks their copy used
    _idle(str(left.session_state[keys.DEMO_SANDBOX]), demo.IDLE_SECONDS + 60)
    assert demo.IDLE_SECONDS <= 30 * 60  # minutes, not a day
    demo.sweep()
    assert Path(kept.session_state[keys.DEMO_SANDBOX]).exists()
    assert not Path(left.session_state[keys.DEMO_SANDBOX]).exists()


def test_the_cap_setting_is_a_whole_number(monkeypatch: pytest.MonkeyPatch) -> None:
    assert demo.max_sandboxes({}) == 20
    assert demo.max_sandboxes({"RAZORRECON_DEMO_MAX_SANDBOXES": "5"}) == 5
    for bad in ("0", "-1", "many", "1e3"):
        with pytest.raises(ConfigError, match="RAZORRECON_DEMO_MAX_SANDBOXES"):
            demo.max_sandboxes({"RAZORRECON_DEMO_MAX_SANDBOXES": bad})
