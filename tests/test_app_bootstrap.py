"""Cold start: one build per empty database, across threads and processes; dead starts are
discarded and rebuilt; data that did not come from a cold start are never replaced."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core import bootstrap
from core.db import connect, migrate
from core.db.backend import is_postgres_url
from core.errors import ConfigError
from tests.app_builder import bootstrap_builder, build
from tests.conftest import ROOT
from tests.run_lock_support import four_kib_file


@pytest.fixture(autouse=True)
def _a_fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a new app process would: nothing remembered as ready. (The test
    PostgreSQL server hands a finished test's database, emptied, to the next test under the
    same URL, which this process's cache would otherwise still call ready.)"""
    monkeypatch.setattr(bootstrap, "_ready_paths", set())


@pytest.fixture
def cold(db_url: str, tmp_path: Path) -> str:
    """An empty database: on SQLite a file not yet created (a first start's case), on
    PostgreSQL a fresh, migrated database (tests/conftest.py's db_url)."""
    return db_url if is_postgres_url(db_url) else str(tmp_path / "cold.sqlite")


def _counts(path: str) -> dict[str, int]:
    conn = connect(path)
    try:
        return {
            "runs": conn.execute("SELECT count(*) FROM runs").fetchone()[0],
            "completed": conn.execute(
                "SELECT count(*) FROM runs WHERE status = 'completed'"
            ).fetchone()[0],
            "imports": conn.execute("SELECT count(*) FROM imports").fetchone()[0],
            "payments": conn.execute("SELECT count(*) FROM payments").fetchone()[0],
        }
    finally:
        conn.close()


def _work_folders(path: str) -> list[Path]:
    """A SQLite cold start's work folders beside the database."""
    return sorted(Path(path).parent.glob(Path(path).name + ".bootstrap-work-*"))


def _progress_note(path: str) -> Path:
    """Where a cold start reports its progress to sessions waiting for it."""
    if is_postgres_url(path):
        return bootstrap.progress_path(str(bootstrap._postgres_progress_path(path)))
    return bootstrap.progress_path(path)


def _start_in_subprocess(
    path: str, builder: str, env: dict[str, str], *, printing_progress: bool = False
) -> subprocess.Popen[str]:
    """A cold start in a process of its own; `printing_progress`: each progress message on a
    line of its standard output before the result."""
    progress = ", progress=lambda f, m: print(m, flush=True)" if printing_progress else ""
    code = (
        "import sys; from core import bootstrap; from tests import app_builder as b; "
        f"r = bootstrap.ensure_ready(sys.argv[1], builder=b.{builder}{progress}); print(r.status)"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            **{k: v for k, v in os.environ.items() if k == "DATABASE_OWNER_URL"},
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_empty_database_is_built_once_then_ready(cold: str) -> None:
    path = cold
    messages: list[str] = []
    first = bootstrap.ensure_ready(
        path, builder=bootstrap_builder, progress=lambda f, m: messages.append(m)
    )
    assert first.status == "built" and first.run_id is not None
    assert _counts(path) == {"runs": 1, "completed": 1, "imports": 1, "payments": 300}
    assert "Ready" in messages and "Writing synthetic rows" in messages
    assert not bootstrap.scratch_path(path).exists()
    assert not _progress_note(path).exists()
    assert bootstrap.ensure_ready(path, builder=bootstrap_builder).status == "ready"
    assert _counts(path)["runs"] == 1


def test_concurrent_sessions_build_once_and_waiters_see_progress(
    cold: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUILDER_DELAY", "0.6")
    path = cold
    results: list[str] = []
    waiting_messages: list[str] = []

    def session() -> None:
        result = bootstrap.ensure_ready(
            path, builder=bootstrap_builder, progress=lambda f, m: waiting_messages.append(m)
        )
        results.append(result.status)

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results).count("built") == 1 and len(results) == 8
    assert set(results) <= {"built", "waited", "ready"}
    assert any(m.startswith("Another session is preparing the data") for m in waiting_messages)
    assert _counts(path) == {"runs": 1, "completed": 1, "imports": 1, "payments": 300}


def test_concurrent_processes_build_once(cold: str) -> None:
    path = cold
    procs = [
        _start_in_subprocess(path, "bootstrap_builder", {"BUILDER_DELAY": "0.5"}) for _ in range(4)
    ]
    statuses = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs), [p.stderr for p in procs]
    assert statuses.count("built") == 1
    assert _counts(path) == {"runs": 1, "completed": 1, "imports": 1, "payments": 300}


# SQLite only: the half-built scratch file beside the database is a file property; on
# PostgreSQL see test_a_start_killed_midway_on_postgresql_published_nothing_and_is_rebuilt.
@pytest.mark.sqlite_only
def test_start_killed_midway_is_discarded_and_rebuilt(cold: str) -> None:
    path = cold
    dying = _start_in_subprocess(path, "dying_builder", {})
    dying.communicate(timeout=60)
    assert dying.returncode == -9
    assert bootstrap.scratch_path(path).exists()  # the half-built file was left behind
    [work] = _work_folders(path)  # and its work folder
    assert _counts(path)["runs"] == 0  # and the real database never saw any of it
    result = bootstrap.ensure_ready(path, builder=bootstrap_builder)
    assert result.status == "built"
    assert any("run 1 running" in d and "1 import(s)" in d for d in result.discarded)
    assert any(str(work) in d for d in result.discarded)
    assert _counts(path) == {"runs": 1, "completed": 1, "imports": 1, "payments": 300}
    assert not bootstrap.scratch_path(path).exists()
    assert _work_folders(path) == []


# SQLite only: a start from before scratch files left its half build in the database file;
# on PostgreSQL (published in one transaction) such rows are refused, see
# test_a_partial_benchmark_on_postgresql_is_refused_not_built_over.
@pytest.mark.sqlite_only
def test_a_running_run_left_in_the_database_is_replaced(cold: str) -> None:
    path = cold
    conn = connect(path)
    migrate(conn)
    conn.execute(
        "INSERT INTO imports (source, location, content_hash, imported_at, report_json) "
        "VALUES ('benchmark', 'seed=42', 'h', 0, '{}')"
    )
    conn.execute(
        "INSERT INTO runs (started_at, status, as_of, source, params_json, input_hashes_json) "
        "VALUES (0, 'running', 0, 'benchmark', '{}', '{}')"
    )
    conn.close()
    result = bootstrap.ensure_ready(path, builder=bootstrap_builder)
    assert result.status == "built" and result.discarded
    assert _counts(path) == {"runs": 1, "completed": 1, "imports": 1, "payments": 300}


@pytest.mark.postgres
def test_a_start_killed_midway_on_postgresql_published_nothing_and_is_rebuilt(
    pg_url: str, tmp_path: Path
) -> None:
    temp = tmp_path / "temp"  # the processes' temporary folder, watched here
    temp.mkdir()
    dying = _start_in_subprocess(pg_url, "dying_builder", {"TMPDIR": str(temp)})
    dying.communicate(timeout=60)
    assert dying.returncode == -9
    assert _counts(pg_url)["runs"] == 0  # the build never left its scratch file
    [left] = [p for p in temp.iterdir() if (p / "build.sqlite").exists()]  # only its folder
    # the server ended the dead start's session, and with it the bootstrap lock; the next
    # process's start removes the dead one's folder
    rebuild = _start_in_subprocess(pg_url, "bootstrap_builder", {"TMPDIR": str(temp)})
    out, err = rebuild.communicate(timeout=120)
    assert rebuild.returncode == 0, err
    assert out.strip() == "built"
    assert not left.exists()
    assert list(temp.iterdir()) == []  # neither its folder nor a progress note is left
    assert _counts(pg_url) == {"runs": 1, "completed": 1, "imports": 1, "payments": 300}


@pytest.mark.postgres
def test_a_partial_benchmark_on_postgresql_is_refused_not_built_over(pg_url: str) -> None:
    conn = connect(pg_url)
    conn.execute(
        "INSERT INTO imports (source, location, content_hash, imported_at, report_json) "
        "VALUES ('benchmark', 'seed=42', 'h', 0, '{}')"
    )
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match="partial benchmark"):
        bootstrap.ensure_ready(pg_url, builder=bootstrap_builder)
    assert _counts(pg_url) == {"runs": 0, "completed": 0, "imports": 1, "payments": 0}


def test_imported_files_without_a_run_are_never_replaced(cold: str) -> None:
    path = cold
    conn = connect(path)
    migrate(conn)
    conn.execute(
        "INSERT INTO imports (source, location, content_hash, imported_at, report_json) "
        "VALUES ('files', '/data/june', 'h', 0, '{}')"
    )
    conn.close()
    result = bootstrap.ensure_ready(path, builder=bootstrap_builder)
    assert result.status == "needs_run"
    assert _counts(path) == {"runs": 0, "completed": 0, "imports": 1, "payments": 0}


def test_a_database_with_a_completed_run_is_left_alone(cold: str) -> None:
    path = cold
    conn = connect(path)
    migrate(conn)
    build(conn, payments=50, source="files")
    conn.close()
    result = bootstrap.ensure_ready(path, builder=bootstrap_builder)
    assert result.status == "ready" and result.run_id == 1
    assert _counts(path)["payments"] == 50


def test_a_failing_build_leaves_the_database_empty(cold: str) -> None:
    path = cold

    def broken(conn: object, work: object, progress: object) -> None:
        raise RuntimeError("generator exploded")

    with pytest.raises(RuntimeError, match="exploded"):
        bootstrap.ensure_ready(path, builder=broken)
    assert _counts(path)["runs"] == 0
    assert not bootstrap.scratch_path(path).exists()
    assert bootstrap.ensure_ready(path, builder=bootstrap_builder).status == "built"


def test_the_real_cold_start_keeps_labels_apart_and_scores_only_its_own_run(
    cold: str,
) -> None:
    pytest.importorskip("core.benchmark")
    pytest.importorskip("core.evaluation")
    from core.views.evaluation import evaluation_report, heldout_accuracy
    from core.views.runs import latest_run

    path = cold
    result = bootstrap.ensure_ready(path)
    assert result.status == "built"
    if not is_postgres_url(path):  # PostgreSQL: the build's folder was temporary, and is gone
        folder = bootstrap.dataset_folder(path)
        assert (folder / "ground_truth.csv").exists() and (folder / "benchmark.json").exists()
        assert not (folder / "dataset" / "ground_truth.csv").exists()  # never beside the data
        scratch = bootstrap.scratch_path(path)  # the build's file, and its run's lock file
        assert not scratch.exists() and not Path(f"{scratch}.run.lock").exists()
    conn = connect(path)
    try:
        run = latest_run(conn)
        assert run is not None and run.is_synthetic and run.source == "benchmark"
        accuracy = heldout_accuracy(conn, run.id)
        assert accuracy is not None and accuracy.metrics["Accuracy"].endswith("%")
        report = evaluation_report(conn, run.id)
        assert report is not None and set(report.confusion.columns) == {
            "Ground truth",
            "Engine",
            "Count",
        }
        assert int(report.confusion["Count"].sum()) == int(
            report.headline["Records"].replace(",", "")
        )
        later = bootstrap.reconcile_stored(conn, as_of=run.as_of + 30 * 86_400)
        assert heldout_accuracy(conn, later) is None  # labels are for the other as-of
    finally:
        conn.close()


def test_an_empty_database_made_with_4_kib_pages_is_built(tmp_path: Path) -> None:
    # An empty file from before new files took 8 KiB pages: the build's scratch file takes
    # the real file's page size, or the backup that publishes the build is refused.
    path = tmp_path / "old-empty.sqlite"
    four_kib_file(path)
    result = bootstrap.ensure_ready(str(path), builder=bootstrap_builder)
    assert result.status == "built"
    assert _counts(str(path)) == {"runs": 1, "completed": 1, "imports": 1, "payments": 300}
    conn = connect(path)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    conn.close()


def test_a_cold_start_waits_for_a_run_a_command_stores_and_leaves_it_in_place(
    cold: str,
) -> None:
    from core.db.run_lock import run_lock

    path = cold
    conn = connect(path)
    migrate(conn)
    # The cold start reads the file empty, then `reconcile --db` stores its run into it.
    with run_lock(conn, "reconcile --db"):
        start = _start_in_subprocess(path, "bootstrap_builder", {}, printing_progress=True)
        assert start.stdout is not None
        said = start.stdout.readline()
        assert said.startswith("Waiting for another run ("), said
        build(conn, payments=200, source="files")
    out, err = start.communicate(timeout=120)
    conn.close()
    assert start.returncode == 0, err
    assert out.splitlines()[-1] == "ready"
    assert _counts(path) == {"runs": 1, "completed": 1, "imports": 1, "payments": 200}
