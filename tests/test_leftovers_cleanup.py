"""Staging folders and output temporaries of a SIGKILLed process go at the next start; a
live process's stay."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

# Holds a staging folder (with a big-ish file) and an output temporary, says so, sleeps.
CHILD = """
import sys, time
from core.db.staging import staging_directory
from core.outputs import output_target, temporary_for
with staging_directory() as folder:
    (folder / "outcomes.sqlite").write_bytes(b"x" * 1_000_000)
    temp = temporary_for(output_target("-"))
    print(folder, temp, flush=True)
    time.sleep(600)
"""


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}


def _holder(tmp: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], cwd=ROOT, env=_env(tmp), stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    folder, temp = child.stdout.readline().split()
    return child, Path(folder), Path(temp)


def test_a_sigkilled_runs_staging_folder_and_temporaries_go_at_the_next_start(
    tmp_path: Path, db_url: str
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead, dead_folder, dead_temp = _holder(tmp)
    live, live_folder, live_temp = _holder(tmp)
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait(10)
        assert dead_folder.is_dir() and dead_temp.is_file()  # a killed process cleans nothing
        assert dead_folder.name.startswith(f"razorrecon-staging-{dead.pid}-")
        # the next start of the command line (any command) removes the dead one's leftovers
        start = subprocess.run(
            [sys.executable, "-m", "core", "audit", "verify", "--db", db_url],
            cwd=ROOT,
            env=_env(tmp),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert start.returncode == 0, start.stderr  # the clean-up ran, then the command
        assert not dead_folder.exists() and not dead_temp.exists()
        assert live_folder.is_dir() and live_temp.is_file()  # a live process's stay
        assert (live_folder / "outcomes.sqlite").stat().st_size == 1_000_000
    finally:
        live.kill()
        live.wait(10)


def test_a_folder_whose_pid_looks_dead_but_whose_owner_holds_the_lock_stays(
    tmp_path: Path,
) -> None:
    from core.leftovers import remove_dead_leftovers

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    live, live_folder, _ = _holder(tmp)
    try:
        # as seen from another pid namespace: the owner's pid is not one we know
        alias = tmp / "razorrecon-staging-999999999-abc"
        live_folder.rename(alias)
        assert alias not in remove_dead_leftovers(tmp)
        assert alias.is_dir()
    finally:
        live.kill()
        live.wait(10)


def test_the_pipeline_start_removes_a_dead_runs_staging_folder(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead, dead_folder, _ = _holder(tmp)
    dead.send_signal(signal.SIGKILL)
    dead.wait(10)
    code = (
        "from core.db.staging import staging_directory\nwith staging_directory() as f: print(f)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(tmp), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert not dead_folder.exists()
