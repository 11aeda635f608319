"""`python -m core users ...` and the review commands' actor: the OS user, or --actor only
for a user with the role (else exit 3, refused and audited)."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from core.__main__ import main
from core.db import connect
from core.review import sync_exceptions
from tests.review_support import Finding, add_people, exception_id, write_run


def _seed(db_path: Path) -> str:
    conn = connect(db_path)
    add_people(conn)
    sync_exceptions(conn, write_run(conn, [Finding("pay_1", exposure_amount=5_000_000)]))
    exc = exception_id(conn, "pay_1")
    conn.close()
    return str(exc)


def _audit_actors(db_path: Path, action: str) -> list[str]:
    conn = connect(db_path)
    try:
        rows = conn.execute("SELECT actor FROM audit_log WHERE action = ? ORDER BY seq", (action,))
        return [str(r[0]) for r in rows]
    finally:
        conn.close()


def test_actor_is_refused_for_unknown_users_with_exit_3(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = _seed(db_path)
    for name in ("engine", "cfo", "stranger@example.com"):
        code = main(
            [
                "review",
                "resolve",
                exc,
                "--db",
                str(db_path),
                "--actor",
                name,
                "--note",
                "n",
                "--request-id",
                f"r-{name}",
            ]
        )
        assert code == 3, name
    assert "not a user here" in capsys.readouterr().err
    assert _audit_actors(db_path, "access.refused") == ["engine", "cfo", "stranger@example.com"]
    assert _audit_actors(db_path, "exception.resolved") == []


def test_actor_without_the_role_is_refused(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = _seed(db_path)
    args = [
        "review",
        "resolve",
        exc,
        "--db",
        str(db_path),
        "--actor",
        "viewer@example.com",
        "--note",
        "n",
        "--request-id",
        "r1",
    ]
    assert main(args) == 3
    assert "needs the reviewer role" in capsys.readouterr().err


def test_without_actor_the_os_user_is_recorded(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = _seed(db_path)
    args = ["review", "resolve", exc, "--db", str(db_path), "--note", "n", "--request-id", "r1"]
    assert main(args) == 0
    assert _audit_actors(db_path, "exception.resolved") == [getpass.getuser()]


def test_users_add_grant_deactivate_list(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(db_path)
    db = ["--db", str(db_path)]
    assert main(["users", "add", "new@example.com", "--role", "reviewer", *db]) == 0
    assert (
        main(
            [
                "users",
                "add",
                "x@example.com",
                "--role",
                "viewer",
                *db,
                "--actor",
                "asha@example.com",
            ]
        )
        == 3
    )  # a reviewer is not an admin
    assert (
        main(
            [
                "users",
                "grant",
                "new@example.com",
                "--role",
                "approver",
                *db,
                "--actor",
                "admin@example.com",
            ]
        )
        == 0
    )
    assert main(["users", "deactivate", "new@example.com", *db]) == 0
    capsys.readouterr()
    assert main(["users", "list", *db, "--all", "--json"]) == 0
    listed = {u["email"]: u for u in json.loads(capsys.readouterr().out)}
    assert listed["new@example.com"]["role"] == "approver"
    assert listed["new@example.com"]["active"] is False
    assert main(["users", "list", *db, "--json"]) == 0
    assert "new@example.com" not in capsys.readouterr().out
    assert _audit_actors(db_path, "user.added")[-1] == getpass.getuser()
    assert _audit_actors(db_path, "user.role_changed") == ["admin@example.com"]


def test_four_eyes_from_the_command_line(
    db_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_FOUR_EYES_PAISE", "1000000")
    exc = _seed(db_path)
    db = ["--db", str(db_path)]
    assert (
        main(
            [
                "review",
                "resolve",
                exc,
                *db,
                "--actor",
                "asha@example.com",
                "--note",
                "unrecoverable",
                "--request-id",
                "w1",
                "--resolution",
                "written_off",
                "--amount",
                "12,500.00",
                "--json",
            ]
        )
        == 0
    )
    asked = json.loads(capsys.readouterr().out)
    assert asked["to_status"] == "OPEN" and asked["amount"] == 1_250_000
    approval = str(asked["approval_id"])
    assert main(["review", "approvals", *db]) == 0
    assert "asha@example.com" in capsys.readouterr().out
    assert (
        main(
            [
                "review",
                "approve",
                approval,
                *db,
                "--actor",
                "asha@example.com",
                "--request-id",
                "a0",
            ]
        )
        == 3
    )
    assert (
        main(
            ["review", "approve", approval, *db, "--actor", "cfo@example.com", "--request-id", "a1"]
        )
        == 0
    )
    assert "RESOLVED" in capsys.readouterr().out
