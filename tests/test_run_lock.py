"""One run at a time per database (core.db.run_lock): a run started while another stores into
the same database waits for it and then builds on its run, or gives up having written
nothing, naming the run it waited for."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from core.benchmark import generate
from core.calendar import IST
from core.db import connect, migrate, open_database
from core.db.run_lock import RunInProgressError, lock_file, run_lock, run_wait_seconds
from core.db.runs import latest_completed_run, list_runs, read_outcome_frame
from core.engine import EngineParams
from core.errors import ConfigError
from core.pipeline import reconcile_database
from tests.app_builder import build
from tests.test_pipeline_incremental import split_into_days

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], str]:
    root = tmp_path_factory.mktemp("run-lock")
    generated = generate(root / "full", payments=600, seed=21)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cuts = [last - dt.timedelta(days=4), last - dt.timedelta(days=2)]
    folders = split_into_days(root / "full", root / "days", cuts)
    return folders, dt.datetime.fromtimestamp(generated.as_of, tz=IST).isoformat()


def _import_day(
    folder: Path, db: str, as_of: str, *extra: str, **env: str
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "core",
            "import-day",
            str(folder),
            "--db",
            db,
            "--as-of",
            as_of,
            *extra,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def _built(path: Path, payments: int) -> sqlite3.Connection:
    """A migrated SQLite file holding a built benchmark (imported and reconciled)."""
    conn = connect(path)
    migrate(conn)
    build(conn, payments=payments, source="files")
    return conn


def _latest_id(conn: sqlite3.Connection) -> int | None:
    run = latest_completed_run(conn)
    return run.id if run is not None else None


def _wait_until_waiting(process: subprocess.Popen[str], seconds: float = 120) -> str:
    """The first line the process writes to standard error (the run lock's note)."""
    assert process.stderr is not None
    line = process.stderr.readline()
    assert line, f"exited {process.wait(seconds)} without waiting"
    return line


def test_two_import_days_started_together_store_one_after_the_other(
    days: tuple[list[Path], str], db_url: str
) -> None:
    folders, as_of = days
    first = _import_day(folders[0], db_url, as_of)
    assert first.communicate(timeout=300)[0] and first.returncode == 0
    with open_database(db_url) as holder, run_lock(holder, "a test holding the lock"):
        one = _import_day(folders[1], db_url, as_of)
        two = _import_day(folders[2], db_url, as_of)
        for process in (one, two):
            note = _wait_until_waiting(process)
            assert note.startswith("note: waiting for another run"), note
        with open_database(db_url) as conn:
            assert len(list_runs(conn)) == 1  # neither wrote anything while waiting
    for process in (one, two):
        _out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    with open_database(db_url) as conn:
        runs = list(reversed(list_runs(conn)))
        assert [(r.id, r.kind, r.base_run_id, r.status) for r in runs] == [
            (1, "full", None, "completed"),
            (2, "incremental", 1, "completed"),
            (3, "incremental", 2, "completed"),
        ]
        latest = read_outcome_frame(conn, 3)
        full = reconcile_database(
            conn, EngineParams.from_dict(runs[-1].params), runs[-1].as_of, "files"
        )
        pd.testing.assert_frame_equal(latest, read_outcome_frame(conn, full.run_id))


def test_a_run_that_cannot_get_the_lock_in_time_names_the_holder_and_writes_nothing(
    days: tuple[list[Path], str], tmp_path: Path
) -> None:
    folders, as_of = days
    db = str(tmp_path / "held.sqlite")
    with open_database(db) as holder, run_lock(holder, "a test holding the lock"):
        late = _import_day(folders[0], db, as_of, RAZORRECON_RUN_WAIT_S="0.5")
        _out, err = late.communicate(timeout=300)
    assert late.returncode == 3, err
    assert f"another run (a test holding the lock, pid {os.getpid()} on " in err
    assert "waited 0.5 s and wrote nothing" in err
    with open_database(db) as conn:
        assert list_runs(conn) == []
        assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 0


def test_the_lock_is_reentrant_on_its_thread_and_excludes_other_threads(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite"
    conn = connect(path)
    outcomes: list[str] = []

    def other() -> None:
        other_conn = connect(path)
        try:
            with run_lock(other_conn, "the other thread", wait_s=0):
                outcomes.append("got it")
        except RunInProgressError as error:
            outcomes.append(str(error))
        finally:
            other_conn.close()

    with run_lock(conn, "the outer block"), run_lock(conn, "an inner block"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert json.loads(lock_file(str(path)).read_text())["command"] == "the outer block"
    assert len(outcomes) == 1 and outcomes[0].startswith("another run (the outer block, pid")
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert outcomes[-1] == "got it"
    assert lock_file(str(path)).read_text() == ""  # released: no holder named
    conn.close()


def test_a_killed_holder_leaves_the_lock_free(tmp_path: Path) -> None:
    path = tmp_path / "killed.sqlite"
    connect(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from core.db import connect\n"
            "from core.db.run_lock import run_lock\n"
            f"with run_lock(connect({str(path)!r}), 'a run killed midway'):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(600)\n",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    conn = connect(path)
    with (
        pytest.raises(RunInProgressError, match="a run killed midway"),
        run_lock(conn, "too early", wait_s=0),
    ):
        pass
    holder.send_signal(signal.SIGKILL)
    holder.wait(30)
    started = time.monotonic()
    with run_lock(conn, "after the kill", wait_s=5):
        assert time.monotonic() - started < 5
    conn.close()


def test_a_run_lock_wait_that_is_not_seconds_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAZORRECON_RUN_WAIT_S", "ten minutes")
    with pytest.raises(ConfigError, match="RAZORRECON_RUN_WAIT_S='ten minutes'"):
        run_wait_seconds()
    monkeypatch.setenv("RAZORRECON_RUN_WAIT_S", "-1")
    with pytest.raises(ConfigError):
        run_wait_seconds()
    monkeypatch.setenv("RAZORRECON_RUN_WAIT_S", "2.5")
    assert run_wait_seconds() == 2.5


def test_a_pipeline_run_refused_the_lock_leaves_the_latest_run_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pipeline's run functions take the lock themselves (no command around them).
    path = tmp_path / "pipeline.sqlite"
    conn = _built(path, payments=100)
    before = _latest_id(conn)
    other = connect(path)
    with run_lock(other, "a test holding the lock"):
        blocked: list[BaseException] = []

        def reconcile() -> None:
            mine = connect(path)
            try:
                reconcile_database(mine, EngineParams(), 1_790_000_000, "files")
            except RunInProgressError as error:
                blocked.append(error)
            finally:
                mine.close()

        monkeypatch.setenv("RAZORRECON_RUN_WAIT_S", "0.2")
        thread = threading.Thread(target=reconcile)
        thread.start()
        thread.join()
    assert len(blocked) == 1
    assert _latest_id(conn) == before
    conn.close()
    other.close()


@pytest.mark.usefixtures("streamlit_navigation_v2")
def test_the_apps_reconcile_while_another_run_stores_says_so_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.app_signin import signed_in
    from ui import keys

    path = tmp_path / "app.sqlite"
    conn = _built(path, payments=200)
    monkeypatch.setenv("DATABASE_URL", str(path))
    monkeypatch.setenv("RAZORRECON_ADMINS", "admin@example.com")
    monkeypatch.setenv("RAZORRECON_RUN_WAIT_S", "0.3")
    before = _latest_id(conn)
    at = signed_in("admin@example.com", timeout=120)
    at.run()
    at.switch_page("pages/data.py")
    at.run()
    with run_lock(connect(path), "import-day"):
        at.button(key=keys.RUN_START).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    # The message as shown (markdown's escapes dropped).
    (warning,) = [w.value.replace("\\", "") for w in at.warning if "another run" in w.value]
    assert warning.startswith("Not done: another run (import-day, pid ")
    assert "wrote nothing" in warning
    assert _latest_id(conn) == before
    at.button(key=keys.RUN_START).click().run()  # the lock released: the run goes through
    assert not at.warning and not at.error, [w.value for w in [*at.warning, *at.error]]
    assert _latest_id(conn) not in (None, before)
    conn.close()


def test_a_run_lock_that_cannot_be_opened_stops_the_run_with_its_path(tmp_path: Path) -> None:
    from core.errors import StorageError

    path = tmp_path / "blocked.sqlite"
    conn = connect(path)
    lock_file(str(path)).mkdir()  # something that is not a file stands where the lock goes
    with (
        pytest.raises(
            StorageError, match=r"could not open the run lock .*blocked\.sqlite\.run\.lock"
        ),
        run_lock(conn, "a run"),
    ):
        pytest.fail("the block ran without the lock")
    conn.close()


def test_a_run_left_running_by_a_killed_process_is_discarded_by_the_next_run_at_once(
    days: tuple[list[Path], str], db_url: str
) -> None:
    # Holding the run lock, a run knows no other is in progress: a 'running' run is dead
    # (not an hour later, as without the lock).
    from core.db.runs import start_run

    folders, as_of = days
    first = _import_day(folders[0], db_url, as_of)
    assert first.communicate(timeout=300)[0] and first.returncode == 0
    with open_database(db_url) as conn:
        killed = start_run(conn, as_of=0, source="files", params={}, input_hashes={})
    second = _import_day(folders[1], db_url, as_of)
    _out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    with open_database(db_url) as conn:
        runs = {r.id: r for r in list_runs(conn)}
        assert runs[killed].status == "failed" and "abandoned" in str(runs[killed].error)
        latest = latest_completed_run(conn)
        assert latest is not None and latest.id > killed and latest.base_run_id == 1


# `python -m core ARGS` whose full reconcile first waits for the file GATE to exist (a run
# holding the lock between reading the stored state and storing its run).
_GATED = (
    "import pathlib, runpy, sys, time\n"
    "import core.pipeline as pipeline\n"
    "gate, engine = pathlib.Path(sys.argv[1]), pipeline.reconcile\n"
    "def gated(*args, **kwargs):\n"
    "    print('reconciling', file=sys.stderr, flush=True)\n"
    "    while not gate.exists():\n"
    "        time.sleep(0.05)\n"
    "    return engine(*args, **kwargs)\n"
    "pipeline.reconcile = gated\n"
    "sys.argv = ['core', *sys.argv[2:]]\n"
    "runpy.run_module('core', run_name='__main__')\n"
)


def test_an_import_while_a_run_stores_waits_and_the_next_day_still_reconciles_it(
    tmp_path: Path, db_url: str
) -> None:
    generated = generate(tmp_path / "full", payments=600, seed=21)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cuts = [last - dt.timedelta(days=d) for d in (6, 4, 2)]
    day0, day1, day2, day3 = split_into_days(tmp_path / "full", tmp_path / "days", cuts)
    as_of = dt.datetime.fromtimestamp(generated.as_of, tz=IST).isoformat()
    # No snapshots on PostgreSQL (its default): the runs' import ids alone tell the last day
    # what was reconciled (a comparison of seconds failed this test 1 time in 3 there).
    first = _import_day(day0, db_url, as_of)
    assert first.communicate(timeout=300)[0] and first.returncode == 0
    gate = tmp_path / "gate"
    day = [sys.executable, "-c", _GATED, str(gate), "import-day", str(day1), "--db", db_url]
    running = subprocess.Popen(
        [*day, "--as-of", as_of, "--full"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    assert running.stderr is not None and running.stderr.readline() == "reconciling\n"
    # The stored state is read; a plain import now must not land before the run is stored.
    plain = subprocess.Popen(
        [sys.executable, "-m", "core", "import", str(day2), "--db", db_url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        note = _wait_until_waiting(plain)
        assert note.startswith("note: waiting for another run ("), note
    finally:
        gate.touch()
        running.communicate(timeout=300)
        plain.communicate(timeout=300)
    assert running.returncode == 0 and plain.returncode == 0
    last_day = _import_day(day3, db_url, as_of)
    assert last_day.communicate(timeout=300)[0] and last_day.returncode == 0
    with open_database(db_url) as conn:
        latest = latest_completed_run(conn)
        assert latest is not None and latest.id == 3
        full = reconcile_database(conn, EngineParams.from_dict(latest.params), latest.as_of, "x")
        pd.testing.assert_frame_equal(
            read_outcome_frame(conn, 3), read_outcome_frame(conn, full.run_id)
        )


@pytest.mark.postgres
def test_a_postgresql_wait_names_the_holder_in_its_own_database_not_another(
    postgres_server: object,
) -> None:
    from tests.postgres_server import PostgresServer

    assert isinstance(postgres_server, PostgresServer)
    other, mine = postgres_server.fresh_database(), postgres_server.fresh_database()
    elsewhere, holder = connect(postgres_server.url(other)), connect(postgres_server.url(mine))
    late = connect(postgres_server.url(mine))
    pid = holder.execute("SELECT pg_backend_pid()").fetchone()[0]
    held, done = threading.Event(), threading.Event()

    def hold() -> None:  # another thread: the lock is re-entrant on its own
        with run_lock(holder, "import-day"):
            held.set()
            done.wait(60)

    # The other database's run took the same key first.
    with run_lock(elsewhere, "import-day"):
        holding = threading.Thread(target=hold)
        holding.start()
        try:
            assert held.wait(60)
            with pytest.raises(RunInProgressError) as refused, run_lock(late, "x", wait_s=0.3):
                pass
        finally:
            done.set()
            holding.join()
    assert f"another run (PostgreSQL session {pid}, " in str(refused.value)
    for conn in (elsewhere, holder, late):
        conn.close()
    for name in (other, mine):
        postgres_server.release_database(name)
