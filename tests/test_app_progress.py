"""The Data page's long actions show `st.progress` fed by the same ProgressFn(fraction,
message) the command line's tqdm bars are fed (issue 16 item 3)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from core.benchmark import generate
from core.calendar import IST
from core.db import connect, migrate
from core.db.runs import latest_completed_run
from tests.app_builder import build
from tests.app_signin import signed_in
from tests.conftest import SPEC_EXAMPLE
from tests.test_app_actions import _uploads
from ui import actions, auth, keys, widgets

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "app.sqlite"
    conn = connect(path)
    migrate(conn)
    build(conn, payments=200, source="files")
    conn.close()
    monkeypatch.setenv("DATABASE_URL", str(path))
    monkeypatch.setenv("RAZORRECON_ADMINS", "admin@example.com")  # the first admin
    return path


def _bars(at: object) -> list[tuple[int, str]]:
    return [(int(e.proto.value), str(e.proto.text)) for e in at.get("progress")]  # type: ignore[attr-defined]


def test_streaming_a_server_folder_shows_a_progress_bar_that_reaches_100_percent(
    database: Path, tmp_path: Path
) -> None:
    generated = generate(tmp_path / "ds", payments=800, seed=3)
    at = signed_in("admin@example.com", timeout=600)
    at.run()
    at.switch_page("pages/data.py")
    at.run()
    assert at.button(key=keys.STREAM_START).disabled  # no folder yet
    as_of = dt.datetime.fromtimestamp(generated.as_of, tz=IST)
    at.date_input(key=keys.RUN_AS_OF_DATE).set_value(as_of.date())
    at.text_input(key=keys.STREAM_FOLDER).input(str(tmp_path / "ds"))
    at.checkbox(key=keys.STREAM_CONFIRM).check().run()  # the database holds data: replace it
    at.button(key=keys.STREAM_START).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    bars = _bars(at)
    assert bars and bars[-1][0] == 100, bars
    run = latest_completed_run(connect(database))
    assert run is not None and bars[-1][1] == f"Done: run #{run.id}"
    assert any(f"Run #{run.id}:" in s.value for s in at.success)


def test_a_folder_that_is_not_there_is_refused_without_a_run(database: Path) -> None:
    at = signed_in("admin@example.com", timeout=120)
    at.run()
    at.switch_page("pages/data.py")
    at.run()
    before = latest_completed_run(connect(database))
    at.text_input(key=keys.STREAM_FOLDER).input("/no/such/folder")
    at.checkbox(key=keys.STREAM_CONFIRM).check().run()
    at.button(key=keys.STREAM_START).click().run()
    assert not at.exception
    assert any("nothing was written" in e.value for e in at.error)
    after = latest_completed_run(connect(database))
    assert (after.id if after else None) == (before.id if before else None)


def test_the_upload_import_reports_its_steps_up_to_100_percent(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core import access

    local = access.local_user()
    session = auth.Session(local.actor, "admin", "local", local, local.actor)
    monkeypatch.setattr(auth, "current", lambda: session)
    seen: list[tuple[float, str]] = []
    actions.import_uploads(
        _uploads(SPEC_EXAMPLE / "dataset"), "auto", True, lambda f, m: seen.append((f, m))
    )
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] > 0 and fractions[-1] == 1.0
    assert any(m.startswith("Reading and checking") for _, m in seen)


def test_progress_to_moves_a_bar_within_0_and_1() -> None:
    class Bar:
        def __init__(self) -> None:
            self.calls: list[tuple[float, str]] = []

        def progress(self, value: float, text: str) -> None:
            self.calls.append((value, text))

    bar = Bar()
    update = widgets.progress_to(bar)
    update(-0.5, "a")
    update(0.5, "b")
    update(1.7, "c")
    assert bar.calls == [(0.0, "a"), (0.5, "b"), (1.0, "c")]
