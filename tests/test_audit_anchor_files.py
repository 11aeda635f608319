"""The anchor file is written only as a regular file: a FIFO, a device or a folder in its
place refuses the run or decision (exit 4, nothing stored) instead of hanging, a symbolic
link is refused naming RAZORRECON_ANCHOR_DIR, and `audit verify` fails on such a file
instead of hanging or skipping it (docs/review.md, *Anchors outside the database*)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core.__main__ import main
from core.db import connect
from core.review.packet import build_packet
from tests.conftest import SPEC_EXAMPLE
from tests.test_audit_anchors import _head

ROOT = Path(__file__).resolve().parents[1]
DATASET = SPEC_EXAMPLE / "dataset"
AS_OF = "2026-06-30T23:59:59+05:30"
KEY = "anchor-key-for-tests"
IMPORT_DAY = (sys.executable, "-m", "core", "import-day")


@pytest.fixture(autouse=True)
def _anchor_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAZORRECON_ANCHOR_KEY", KEY)
    monkeypatch.delenv("RAZORRECON_ANCHOR_DIR", raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A SQLite file reconciled once, its anchors in the folder beside it."""
    path = tmp_path / "x.sqlite"
    args = ["reconcile", str(DATASET), "--out", str(tmp_path / "r.csv"), "--as-of", AS_OF]
    assert main([*args, "--db", str(path)]) == 0
    assert _anchor_path(path).is_file()
    return path


def _anchor_path(db: Path) -> Path:
    return db.with_name(db.name + ".anchors") / f"{db.name}.anchors.jsonl"


def _fifo_in_place_of_the_anchors(db: Path) -> Path:
    path = _anchor_path(db)
    path.unlink()
    os.mkfifo(path)
    return path


def _import_day(db: Path) -> subprocess.CompletedProcess[str]:
    """`python -m core import-day` of the example dataset into `db`; a hang fails the test."""
    try:
        return subprocess.run(
            [*IMPORT_DAY, str(DATASET), "--db", str(db), "--as-of", AS_OF],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=90,
            env=dict(os.environ),
        )
    except subprocess.TimeoutExpired:
        pytest.fail("import-day hung on a FIFO in place of the anchor file")


def _status(db: Path, exc_id: int) -> str:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT status FROM exceptions WHERE id = ?", (exc_id,)).fetchone()
        return str(row[0])
    finally:
        conn.close()


def _resolve(db: Path, request_id: str) -> int:
    note = ["--note", "paid late", "--request-id", request_id]
    return main(["review", "resolve", "1", "--db", str(db), *note])


@pytest.mark.timeout(120)
def test_a_fifo_as_the_anchor_file_refuses_import_day_with_exit_4_instead_of_hanging(
    db: Path,
) -> None:
    fifo = _fifo_in_place_of_the_anchors(db)
    before = _head(db)
    done = _import_day(db)
    assert done.returncode == 4, done.stderr
    assert str(fifo) in done.stderr and "FIFO" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert _head(db) == before  # the sync's audit entries rolled back with it
    assert fifo.is_fifo()


@pytest.mark.timeout(60)
def test_a_fifo_as_the_anchor_file_refuses_a_decision_with_exit_4_and_stores_nothing(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = _fifo_in_place_of_the_anchors(db)
    before = _head(db)
    assert _resolve(db, "req-fifo") == 4
    err = capsys.readouterr().err
    assert str(fifo) in err and "FIFO" in err and "nothing was stored" in err
    assert _status(db, 1) != "RESOLVED"
    assert _head(db) == before


@pytest.mark.timeout(60)
def test_a_link_to_a_device_or_a_folder_as_the_anchor_file_refuses_a_decision_naming_it(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _anchor_path(db)
    path.unlink()
    path.symlink_to("/dev/null")
    assert _resolve(db, "req-device") == 4
    assert "symbolic link" in capsys.readouterr().err  # a link is refused before its target
    path.unlink()
    path.mkdir()
    assert _resolve(db, "req-folder") == 4
    err = capsys.readouterr().err
    assert str(path) in err and "folder" in err
    assert _status(db, 1) != "RESOLVED"


@pytest.mark.timeout(60)
def test_a_symlinked_anchor_file_is_refused_naming_the_setting_and_its_target_is_untouched(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _anchor_path(db)
    target = tmp_path / "elsewhere.jsonl"
    path.rename(target)
    path.symlink_to(target)
    kept = target.read_bytes()
    before = _head(db)
    assert _resolve(db, "req-link") == 4
    err = capsys.readouterr().err
    assert str(path) in err and "symbolic link" in err and "RAZORRECON_ANCHOR_DIR" in err
    assert target.read_bytes() == kept
    assert _status(db, 1) != "RESOLVED" and _head(db) == before


@pytest.mark.timeout(60)
def test_a_symlinked_anchor_folder_beside_the_database_is_refused_and_verify_fails_naming_it(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link at `<db>.anchors` would put the anchors wherever it points (another
    database's anchor folder): refused like a link at the anchor file; the setting (or a
    folder named by hand) is the way to put them elsewhere."""
    folder = _anchor_path(db).parent
    target = tmp_path / "other-anchors"
    folder.rename(target)
    folder.symlink_to(target)
    kept = {p.name: p.read_bytes() for p in target.iterdir()}
    before = _head(db)
    assert _resolve(db, "req-folder-link") == 4
    err = capsys.readouterr().err
    assert f"the anchor folder {folder} is a symbolic link" in err
    assert "RAZORRECON_ANCHOR_DIR" in err
    assert _status(db, 1) != "RESOLVED" and _head(db) == before
    assert {p.name: p.read_bytes() for p in target.iterdir()} == kept
    assert main(["audit", "verify", "--db", str(db)]) == 1
    assert f"the anchor folder {folder} is a symbolic link" in capsys.readouterr().out
    monkeypatch.setenv("RAZORRECON_ANCHOR_DIR", str(target))  # the setting: taken
    assert main(["audit", "verify", "--db", str(db)]) == 0
    assert _resolve(db, "req-folder-set") == 0
    assert _status(db, 1) == "RESOLVED"


@pytest.mark.timeout(60)
def test_audit_verify_fails_naming_a_fifo_or_device_as_the_anchor_file_instead_of_hanging(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = _fifo_in_place_of_the_anchors(db)
    assert main(["audit", "verify", "--db", str(db)]) == 1
    out = capsys.readouterr()
    assert str(fifo) in out.out + out.err and "FIFO" in out.out + out.err
    other = tmp_path / "copy.jsonl"
    os.mkfifo(other)
    assert main(["audit", "verify", "--db", str(db), "--anchors", str(other)]) == 1
    out = capsys.readouterr()
    assert str(other) in out.out + out.err and "FIFO" in out.out + out.err
    assert main(["audit", "verify", "--db", str(db), "--anchors", os.devnull]) == 1
    assert "/dev/null is a device, not a regular file" in capsys.readouterr().out


@pytest.mark.timeout(60)
def test_an_escalation_packet_calls_a_fifo_in_place_of_the_anchor_file_unreadable(
    db: Path,
) -> None:
    _fifo_in_place_of_the_anchors(db)
    conn = connect(db)
    try:
        packet = build_packet(conn, 1)
    finally:
        conn.close()
    assert packet.anchor.status == "unreadable" and packet.anchor.seq is None


@pytest.mark.timeout(120)
def test_a_run_whose_sync_the_anchor_refused_stands_and_exceptions_sync_brings_the_queue_in_line(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _anchor_path(db)
    kept = path.read_bytes()
    fifo = _fifo_in_place_of_the_anchors(db)
    done = _import_day(db)
    assert done.returncode == 4, done.stderr
    # The run was committed before its sync: the message says so instead of "nothing".
    assert "the exception queue was not synced with run 2" in done.stderr, done.stderr
    assert "Run 2 itself is stored (completed)" in done.stderr
    assert f"exceptions sync --db {db.resolve()}" in done.stderr
    assert main(["exceptions", "list", "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert "run 2 completed but the exception queue was not synced with it" in err
    assert "the queue shows run 1's findings" in err
    fifo.unlink()
    path.write_bytes(kept)
    assert main(["exceptions", "sync", "--db", str(db)]) == 0
    assert "exception queue synced with run 2: " in capsys.readouterr().out
    head = _head(db)
    assert main(["exceptions", "sync", "--db", str(db)]) == 0  # again: nothing to do
    assert "in line with run 2; nothing written" in capsys.readouterr().out
    assert _head(db) == head
    assert main(["exceptions", "list", "--db", str(db)]) == 0
    assert "not synced" not in capsys.readouterr().err
    assert main(["audit", "verify", "--db", str(db)]) == 0
