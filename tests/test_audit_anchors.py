"""The chain's head is anchored outside the database after every run and batch of
decisions; `audit verify` catches a rewritten chain (naming the seq) and an exception
changed without an audit entry (naming the exception)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.__main__ import main
from core.audit import row_hash
from core.db import connect
from tests.conftest import SPEC_EXAMPLE, is_postgres

DATASET = SPEC_EXAMPLE / "dataset"
AS_OF = "2026-06-30T23:59:59+05:30"
KEY = "anchor-key-for-tests"


@pytest.fixture(autouse=True)
def _anchor_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAZORRECON_ANCHOR_KEY", KEY)
    monkeypatch.delenv("RAZORRECON_ANCHOR_DIR", raising=False)


@pytest.fixture
def db(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The database, SQLite or PostgreSQL. PostgreSQL has no file to anchor beside, so its
    anchors go to RAZORRECON_ANCHOR_DIR (core.audit.anchor.anchor_file)."""
    if is_postgres(db_url):
        monkeypatch.setenv("RAZORRECON_ANCHOR_DIR", str(tmp_path / "pg-anchors"))
    return db_url


def _reconciled(tmp_path: Path, db: str) -> str:
    args = ["reconcile", str(DATASET), "--out", str(tmp_path / "r.csv"), "--as-of", AS_OF]
    assert main([*args, "--db", db]) == 0
    return db


def _anchor_path(db: str) -> Path:
    configured = os.environ.get("RAZORRECON_ANCHOR_DIR")
    if configured:  # PostgreSQL (or SQLite told where): <label>.anchors.jsonl, the only one
        [path] = Path(configured).glob("*.anchors.jsonl")
        return path
    return Path(db).with_name(Path(db).name + ".anchors") / f"{Path(db).name}.anchors.jsonl"


def _anchors(db: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in _anchor_path(db).read_text().splitlines()]


def _head(db: str) -> tuple[int, str]:
    conn = connect(db)
    try:
        row = conn.execute("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()
        return int(row[0]), str(row[1])
    finally:
        conn.close()


@contextmanager
def _tampering(db: str, trigger: str = "") -> Iterator[sqlite3.Connection]:
    """A connection of someone who can change the tables behind the product's back, in one
    transaction: SQLite's file opened directly; PostgreSQL's owner role (the app role may
    not touch the audit trail at all: tests/test_db_postgres.py). With `trigger`, that
    append-only trigger is out of the way meanwhile (SQLite: dropped and recreated;
    PostgreSQL: disabled and enabled, which only the owner may do)."""
    if is_postgres(db):
        owner = connect(os.environ["DATABASE_OWNER_URL"])
        try:
            owner.execute("BEGIN")
            if trigger:
                owner.execute(f"ALTER TABLE audit_log DISABLE TRIGGER {trigger}")
            yield owner
            if trigger:
                owner.execute(f"ALTER TABLE audit_log ENABLE TRIGGER {trigger}")
            owner.execute("COMMIT")
        finally:
            owner.close()
        return
    conn = sqlite3.connect(db)
    try:
        with conn:
            if trigger:
                conn.execute(f"DROP TRIGGER {trigger}")
            yield conn
            if trigger:
                kind = "UPDATE" if trigger.endswith("update") else "DELETE"
                conn.execute(
                    f"CREATE TRIGGER {trigger} BEFORE {kind} ON audit_log"
                    " BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END"
                )
    finally:
        conn.close()


def _resolve(db: str, exc_id: int, request_id: str) -> int:
    return main(
        [
            "review",
            "resolve",
            str(exc_id),
            "--db",
            db,
            "--note",
            "paid late",
            "--request-id",
            request_id,
        ]
    )


def _verify(db: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["audit", "verify", "--db", db])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_run_and_each_decision_anchor_the_head_outside_the_database(
    tmp_path: Path, db: str
) -> None:
    db = _reconciled(tmp_path, db)
    first = _anchors(db)
    # the queue's sync and then the run's own entry naming who ran it (core.activity)
    assert len(first) == 2 and (first[-1]["seq"], first[-1]["hash"]) == _head(db)
    assert _resolve(db, 1, "req-1") == 0
    assert _resolve(db, 1, "req-1") == 0  # a replayed request adds nothing
    anchors = _anchors(db)
    assert len(anchors) == 3 and (anchors[-1]["seq"], anchors[-1]["hash"]) == _head(db)
    for a in anchors:
        message = json.dumps(
            {"hash": a["hash"], "seq": a["seq"], "time": a["time"]},
            sort_keys=True,
            separators=(",", ":"),
        )
        want = hmac.new(KEY.encode(), message.encode(), hashlib.sha256).hexdigest()
        assert a["hmac"] == want


def test_a_chain_rewritten_with_recomputed_hashes_fails_naming_the_anchored_seq(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], db: str
) -> None:
    db = _reconciled(tmp_path, db)
    assert _resolve(db, 2, "req-2") == 0
    anchored_run = int(_anchors(db)[0]["seq"])  # type: ignore[call-overload]
    assert _verify(db, capsys)[0] == 0
    # with the update trigger out of the way, edit a row and recompute every hash from it on
    # (on PostgreSQL the owner role: the one that could; the chain then holds by itself)
    with _tampering(db, "audit_log_no_update") as conn:
        if not is_postgres(db):
            conn.execute("DROP INDEX audit_log_prev_hash")
        conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE seq = ?", (anchored_run - 5,))
        prev = conn.execute(
            "SELECT hash FROM audit_log WHERE seq = ?", (anchored_run - 6,)
        ).fetchone()[0]
        rows = conn.execute(
            "SELECT seq, created_at, actor, action, entity_type, entity_id, payload_json"
            " FROM audit_log WHERE seq >= ? ORDER BY seq",
            (anchored_run - 5,),
        ).fetchall()
        for seq, created, actor, action, etype, eid, payload in rows:
            digest = row_hash(seq, created, actor, action, etype, eid, payload, prev)
            conn.execute(
                "UPDATE audit_log SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, digest, seq)
            )
            prev = digest
        if not is_postgres(db):
            conn.execute("CREATE UNIQUE INDEX audit_log_prev_hash ON audit_log (prev_hash)")
    conn = connect(db)
    assert (
        conn.execute("SELECT actor FROM audit_log WHERE seq = ?", (anchored_run - 5,)).fetchone()[0]
        == "mallory"
    )
    conn.close()
    code, text = _verify(db, capsys)
    assert code == 1
    assert f"row {anchored_run}" in text and "anchored" in text


def test_a_silent_update_of_an_exception_fails_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], db: str
) -> None:
    db = _reconciled(tmp_path, db)
    with _tampering(db) as conn:
        conn.execute("UPDATE exceptions SET status = 'RESOLVED' WHERE id = 3")
    code, text = _verify(db, capsys)
    assert code == 1
    assert "exception 3" in text and "status" in text


def test_a_silent_reassignment_with_a_version_bump_is_caught_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], db: str
) -> None:
    db = _reconciled(tmp_path, db)
    people = ["users", "add", "ravi@example.in", "--role", "reviewer", "--db", db]
    assert main(people) == 0
    assert (
        main(
            [
                "review",
                "assign",
                "4",
                "--db",
                db,
                "--assignee",
                "ravi@example.in",
                "--request-id",
                "a-4",
            ]
        )
        == 0
    )
    assert _verify(db, capsys)[0] == 0
    with _tampering(db) as conn:
        conn.execute("UPDATE exceptions SET assignee = 'mallory' WHERE id = 4")
    code, text = _verify(db, capsys)
    assert code == 1 and "exception 4" in text and "assignee" in text


def test_edited_or_cut_anchors_fail_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], db: str
) -> None:
    db = _reconciled(tmp_path, db)
    assert _resolve(db, 1, "req-1") == 0
    path = _anchor_path(db)
    lines = path.read_text().splitlines()
    forged = json.loads(lines[0])
    forged["hash"] = "f" * 64
    path.write_text(json.dumps(forged) + "\n" + lines[1] + "\n")
    code, text = _verify(db, capsys)
    assert code == 1 and "anchor line 1" in text and "HMAC" in text
    path.write_text("\n".join(lines) + "\n")
    assert _verify(db, capsys)[0] == 0
    # the chain's tail cut off: the last anchored row is missing
    with _tampering(db, "audit_log_no_delete") as conn:
        conn.execute("DELETE FROM audit_log WHERE seq = (SELECT MAX(seq) FROM audit_log)")
    code, text = _verify(db, capsys)
    assert code == 1 and "cut off" in text


def test_anchors_go_to_the_configured_folder_and_a_failed_anchor_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], db: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("RAZORRECON_ANCHOR_DIR", str(elsewhere))
    db = _reconciled(tmp_path, db)
    if is_postgres(db):  # named after the server and database: <host>_<port>_<db>
        [anchors] = elsewhere.iterdir()
        assert anchors.name.endswith(f"_{db.rsplit('/', 1)[1]}.anchors.jsonl")
        assert not (tmp_path / "pg-anchors").exists()
    else:
        assert (elsewhere / f"{Path(db).name}.anchors.jsonl").is_file()
        assert not Path(db).with_name(Path(db).name + ".anchors").exists()
    code, text = _verify(db, capsys)
    assert code == 0 and "beside the database" not in text
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("RAZORRECON_ANCHOR_DIR", str(blocked))
    assert _resolve(db, 1, "req-9") == 4  # the anchor could not be written: nothing stored
    assert "anchor" in capsys.readouterr().err
    conn = connect(db)
    status = conn.execute("SELECT status FROM exceptions WHERE id = 1").fetchone()[0]
    conn.close()
    assert status != "RESOLVED"


def test_every_audit_export_carries_the_signed_head(tmp_path: Path, db: str) -> None:
    db = _reconciled(tmp_path, db)
    out = tmp_path / "trail.jsonl"
    assert main(["audit", "export", "--db", db, "--out", str(out)]) == 0
    last = json.loads(out.read_text().splitlines()[-1])["anchor"]
    assert (last["seq"], last["hash"]) == _head(db)
    assert isinstance(last["hmac"], str) and len(last["hmac"]) == 64


@pytest.mark.postgres  # PostgreSQL names its anchor file after the server; SQLite after its file
def test_a_postgres_anchor_file_is_named_host_port_database_and_an_old_name_is_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    db = pg_url
    from urllib.parse import urlsplit

    from core.audit.anchor import anchor_file

    folder = tmp_path / "named"
    monkeypatch.setenv("RAZORRECON_ANCHOR_DIR", str(folder))
    url = urlsplit(db)
    label = f"{url.hostname}_{url.port}_{url.path.lstrip('/')}"
    conn = connect(db)
    try:
        assert anchor_file(conn) == folder / f"{label}.anchors.jsonl"  # no "_32_" (a netmask)
        # A file written under the name before the fix (host/32 made host_32) stays in use.
        folder.mkdir()
        old = folder / f"{url.hostname}_32_{url.port}_{url.path.lstrip('/')}.anchors.jsonl"
        old.write_text("")
        assert anchor_file(conn) == old
        (folder / f"{label}.anchors.jsonl").write_text("")  # both: the current name wins
        assert anchor_file(conn) == folder / f"{label}.anchors.jsonl"
    finally:
        conn.close()
