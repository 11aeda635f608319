"""Output targets: `-`, devices and FIFOs are written to, never replaced; folders refused;
a database URL of a scheme we do not serve is refused naming ours."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.__main__ import main
from core.bootstrap import ensure_ready
from core.errors import ConfigError
from tests.conftest import ROOT, SPEC_EXAMPLE

DATASET = SPEC_EXAMPLE / "dataset"
AS_OF = "2026-06-30T23:59:59+05:30"


def _device(tmp_path: Path) -> Path:
    """A character device in tmp: a private null device when we may make one, else a
    symlink to /dev/zero (written to, never replaced). Never the real /dev/null."""
    node = tmp_path / "nulldev"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return node
    except PermissionError:
        return Path("/dev/zero")


def _reader(fifo: Path, sink: list[bytes]) -> threading.Thread:
    def read() -> None:
        with fifo.open("rb") as handle:
            sink.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_reconcile_out_symlink_to_a_device_keeps_the_device(tmp_path: Path) -> None:
    device = _device(tmp_path)
    link = tmp_path / "results.csv"
    link.symlink_to(device)
    assert main(["reconcile", str(DATASET), "--out", str(link), "--as-of", AS_OF]) == 0
    assert link.is_symlink() and os.readlink(link) == str(device)
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_reconcile_out_a_device_itself_is_written_not_replaced(tmp_path: Path) -> None:
    device = _device(tmp_path)
    if device == Path("/dev/zero"):
        pytest.skip("cannot make a private device here")
    assert main(["reconcile", str(DATASET), "--out", str(device), "--as-of", AS_OF]) == 0
    assert stat.S_ISCHR(os.stat(device).st_mode)


def test_reconcile_out_a_fifo_is_written_through(tmp_path: Path) -> None:
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _reader(fifo, got)
    assert main(["reconcile", str(DATASET), "--out", str(fifo), "--as-of", AS_OF]) == 0
    reader.join(30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and got[0].startswith(b"entity_type,")


def test_reconcile_out_dash_writes_the_csv_to_standard_output(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "core", "reconcile", str(DATASET), "--out", "-", "--as-of", AS_OF],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("entity_type,")
    assert "EXCEPTION=73" in done.stderr  # the summary goes to stderr
    assert not (tmp_path / "-").exists()


def test_reconcile_out_a_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    assert main(["reconcile", str(DATASET), "--out", str(folder), "--as-of", AS_OF]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert folder.is_dir() and not list(folder.iterdir())


def _audited_db(tmp_path: Path, db_url: str) -> str:
    args = ["reconcile", str(DATASET), "--out", str(tmp_path / "r.csv"), "--as-of", AS_OF]
    assert main([*args, "--db", db_url]) == 0
    return db_url


def test_audit_export_into_a_fifo_and_a_device_link_never_replaces_them(
    tmp_path: Path, db_url: str
) -> None:
    db = _audited_db(tmp_path, db_url)
    fifo = tmp_path / "trail.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _reader(fifo, got)
    assert main(["audit", "export", "--db", db, "--out", str(fifo)]) == 0
    reader.join(30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got[0].startswith(b"seq,created_at")
    link = tmp_path / "trail.jsonl"
    device = _device(tmp_path)
    link.symlink_to(device)
    assert main(["audit", "export", "--db", db, "--out", str(link)]) == 0
    assert link.is_symlink() and stat.S_ISCHR(os.stat(device).st_mode)


def test_audit_export_to_a_folder_is_refused(tmp_path: Path, db_url: str) -> None:
    db = _audited_db(tmp_path, db_url)
    folder = tmp_path / "trail.csv"
    folder.mkdir()
    assert main(["audit", "export", "--db", db, "--out", str(folder)]) == 2
    assert folder.is_dir()


def test_razorpay_export_refuses_a_device_as_out_dir(tmp_path: Path, db_url: str) -> None:
    db = _audited_db(tmp_path, db_url)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    assert main(["export", str(fifo), "--db", db]) == 2
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize(
    "command",
    [
        ["reconcile", str(DATASET), "--out", "OUT", "--as-of", AS_OF, "--db", "URL"],
        ["audit", "verify", "--db", "URL"],
        ["exceptions", "list", "--db", "URL"],
        ["import", str(DATASET), "--db", "URL"],
    ],
)
def test_database_url_with_a_scheme_we_do_not_serve_exits_2_naming_ours(
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [a.replace("OUT", str(tmp_path / "r.csv")) for a in command]
    # PostgreSQL is served (docs/postgres.md); MySQL is a scheme RazorRecon does not serve.
    args = [a.replace("URL", "mysql://host/db") for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "mysql" in err and "sqlite:///" in err
    assert not (tmp_path / "mysql:").exists()
    assert not (tmp_path / "r.csv").exists()


def test_app_start_refuses_a_database_url_of_another_scheme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", "mysql://host/db")
    with pytest.raises(ConfigError, match="sqlite"):
        ensure_ready()
    assert not (tmp_path / "mysql:").exists()
