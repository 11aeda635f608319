"""`python -m core users ...` and the review commands' actor: the OS user, or --actor only
for a user with the role (else exit 3, refused and audited)."""

from __future__ import annotations

import getpass
import json

import pytest

from core.__main__ import main
from core.db import connect
from core.review import sync_exceptions
from tests.review_support import Finding, add_people, exception_id, write_run


def _seed(db_url: str) -> str:
    conn = connect(db_url)
    add_people(conn)
    sync_exceptions(conn, write_run(conn, [Finding("pay_1", exposure_amount=5_000_000)]))
    exc = exception_id(conn, "pay_1")
    conn.close()
    return str(exc)


def _audit_actors(db_url: str, action: str) -> list[str]:
    conn = connect(db_url)
    try:
        rows = conn.execute("SELECT actor FROM audit_log WHERE action = ? ORDER BY seq", (action,))
        return [str(r[0]) for r in rows]
    finally:
        conn.close()


def test_actor_is_refused_for_unknown_users_with_exit_3(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = _seed(db_url)
    for name in ("engine", "cfo", "stranger@example.com"):
        code = main(
            [
                "review",
                "resolve",
                exc,
                "--db",
                str(db_url),
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
    assert _audit_actors(db_url, "access.refused") == ["engine", "cfo", "stranger@example.com"]
    assert _audit_actors(db_url, "exception.resolved") == []


def test_actor_without_the_role_is_refused(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    exc = _seed(db_url)
    args = [
        "review",
        "resolve",
        exc,
        "--db",
        str(db_url),
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
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = _seed(db_url)
    args = ["review", "resolve", exc, "--db", str(db_url), "--note", "n", "--request-id", "r1"]
    assert main(args) == 0
    assert _audit_actors(db_url, "exception.resolved") == [getpass.getuser()]


def test_users_add_grant_deactivate_list(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(db_url)
    db = ["--db", str(db_url)]
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
    assert _audit_actors(db_url, "user.added")[-1] == getpass.getuser()
    assert _audit_actors(db_url, "user.role_changed") == ["admin@example.com"]


def test_four_eyes_from_the_command_line(
    db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_FOUR_EYES_PAISE", "1000000")
    exc = _seed(db_url)
    db = ["--db", str(db_url)]
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


def test_the_maker_withdraws_a_write_off_from_the_command_line(
    db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_FOUR_EYES_PAISE", "1000000")
    exc = _seed(db_url)
    db = ["--db", str(db_url)]
    asha = ["--actor", "asha@example.com"]
    ask = ["review", "resolve", exc, *db, *asha, "--note", "short", "--request-id", "w1"]
    assert main([*ask, "--resolution", "written_off", "--amount", "12,500.00", "--json"]) == 0
    approval = str(json.loads(capsys.readouterr().out)["approval_id"])
    withdraw = ["review", "withdraw", approval, *db, "--note", "wrong exception"]
    assert main([*withdraw, "--actor", "cfo@example.com", "--request-id", "x1"]) == 3
    assert "may withdraw it" in capsys.readouterr().err
    assert main([*withdraw, *asha, "--request-id", "x2", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert (done["action"], done["approval_id"]) == ("withdraw", int(approval))
    assert main(["review", "approvals", *db]) == 0
    assert approval not in capsys.readouterr().out.split()  # nothing pending now
