from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.__main__ import main
from core.db import connect
from core.review import assign, sync_exceptions
from tests.review_support import Finding, add_people, exception_id, write_run


def _seed(db_url: str) -> list[int]:
    conn = connect(db_url)
    add_people(conn)
    findings = [
        Finding("pay_small", exposure_amount=5_000),
        Finding("pay_big", exposure_amount=9_000_000),
        Finding("setl_9", "MISSING_BANK_ENTRY", 40_000, "awaiting_settlement", "settlement"),
    ]
    sync_exceptions(conn, write_run(conn, findings))
    ids = [exception_id(conn, f.entity_id, f.reason_code) for f in findings]
    conn.close()
    return ids


def _review(db: Path, *args: str) -> int:
    return main(["review", *args[:2], "--db", str(db), *args[2:]])


def test_review_resolve_exits_0_then_0_on_replay_then_3_on_conflict(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = str(_seed(db_url)[0])
    base = ["resolve", exc, "--actor", "asha@example.com", "--request-id", "r1"]
    assert _review(db_url, *base, "--note", "fee refund posted") == 0
    assert "OPEN -> RESOLVED" in capsys.readouterr().out
    assert _review(db_url, *base, "--note", "fee refund posted") == 0
    assert "nothing changed" in capsys.readouterr().out
    assert _review(db_url, *base, "--note", "something else") == 3
    assert "different action or payload" in capsys.readouterr().err


def test_review_refuses_a_stale_version_and_an_illegal_move_with_exit_3(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = str(_seed(db_url)[1])
    args = [
        "assign",
        exc,
        "--actor",
        "lead@example.com",
        "--assignee",
        "ravi@example.com",
        "--request-id",
        "a1",
    ]
    assert _review(db_url, *args, "--expected-version", "1") == 0
    stale = ["escalate", exc, "--actor", "asha@example.com", "--note", "n", "--request-id", "e1"]
    assert _review(db_url, *stale, "--expected-version", "1") == 3
    assert "Reload" in capsys.readouterr().err
    assert (
        _review(
            db_url,
            "reopen",
            exc,
            "--actor",
            "asha@example.com",
            "--note",
            "n",
            "--request-id",
            "o1",
        )
        == 3
    )
    assert "cannot reopen" in capsys.readouterr().err


def test_review_exits_2_on_bad_input(
    db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    exc = str(_seed(db_url)[0])
    with pytest.raises(SystemExit) as missing_note:
        _review(db_url, "resolve", exc, "--actor", "asha@example.com", "--request-id", "r1")
    assert missing_note.value.code == 2
    with pytest.raises(SystemExit) as bad_id:
        _review(
            db_url,
            "resolve",
            "abc",
            "--actor",
            "asha@example.com",
            "--note",
            "n",
            "--request-id",
            "r",
        )
    assert bad_id.value.code == 2
    assert (
        _review(
            db_url,
            "resolve",
            "999",
            "--actor",
            "asha@example.com",
            "--note",
            "n",
            "--request-id",
            "r",
        )
        == 2
    )
    assert _review(db_url, "resolve", exc, "--actor", " ", "--note", "n", "--request-id", "r") == 2
    missing_db = tmp_path / "typo.sqlite"
    code = main(
        [
            "review",
            "resolve",
            exc,
            "--db",
            str(missing_db),
            "--actor",
            "a",
            "--note",
            "n",
            "--request-id",
            "r",
        ]
    )
    assert code == 2 and not missing_db.exists()
    capsys.readouterr()


def test_review_commands_cover_the_lifecycle_and_print_json(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = str(_seed(db_url)[2])
    steps = [
        [
            "assign",
            exc,
            "--actor",
            "lead@example.com",
            "--assignee",
            "ravi@example.com",
            "--request-id",
            "1",
        ],
        [
            "investigate",
            exc,
            "--actor",
            "ravi@example.com",
            "--note",
            "no bank line",
            "--request-id",
            "2",
        ],
        [
            "comment",
            exc,
            "--actor",
            "ravi@example.com",
            "--note",
            "asked the bank",
            "--request-id",
            "3",
        ],
        [
            "escalate",
            exc,
            "--actor",
            "ravi@example.com",
            "--note",
            "bank silent",
            "--request-id",
            "4",
        ],
        [
            "resolve",
            exc,
            "--actor",
            "cfo@example.com",
            "--note",
            "credit found",
            "--request-id",
            "5",
        ],
        [
            "reopen",
            exc,
            "--actor",
            "cfo@example.com",
            "--note",
            "wrong credit",
            "--request-id",
            "6",
        ],
    ]
    statuses = []
    for step in steps:
        assert _review(db_url, *step, "--json") == 0
        statuses.append(json.loads(capsys.readouterr().out)["to_status"])
    assert statuses == ["ASSIGNED", "INVESTIGATED", "INVESTIGATED", "ESCALATED", "RESOLVED", "OPEN"]
    assert main(["review", "show", exc, "--db", str(db_url), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert len(shown["history"]) == 7 and len(shown["audit"]) == 7
    assert shown["exception"]["status"] == "OPEN"


def test_exceptions_list_json_has_the_contract_fields_and_filters_by_status(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _seed(db_url)
    conn = connect(db_url)
    assign(conn, ids[0], actor="lead@example.com", assignee="ravi@example.com", request_id="a")
    conn.close()
    assert main(["exceptions", "list", "--db", str(db_url), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    required = {
        "id",
        "entity_type",
        "entity_id",
        "reason_code",
        "reason_codes",
        "exposure_class",
        "exposure_amount",
        "status",
    }
    assert all(required <= set(r) for r in rows)
    assert [r["entity_id"] for r in rows] == ["pay_big", "setl_9", "pay_small"]
    assert isinstance(rows[0]["exposure_amount"], int)
    assert main(["exceptions", "list", "--db", str(db_url), "--status", "assigned", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [ids[0]]
    assert main(["exceptions", "list", "--db", str(db_url), "--status", "OPEN,ASSIGNED"]) == 0
    assert "3 exception(s)" in capsys.readouterr().out
    assert main(["exceptions", "list", "--db", str(db_url), "--status", "CLOSED"]) == 2
    assert "unknown status" in capsys.readouterr().err


def test_exceptions_list_prints_whole_entity_ids_a_reviewer_can_copy(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    long_id = "2026-07-08/bank_statement.csv:16"
    conn = connect(db_url)
    add_people(conn)
    sync_exceptions(
        conn,
        write_run(
            conn,
            [
                Finding(
                    "setl_krSo1jjUUi4Duc",
                    "DUPLICATE_BANK_CREDIT",
                    7,
                    "amount_at_risk",
                    "settlement",
                ),
                Finding(long_id, "UNMATCHED_BANK_CREDIT", 5, "amount_at_risk", "bank_credit"),
            ],
        ),
    )
    conn.close()
    assert main(["exceptions", "list", "--db", str(db_url)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("settlement setl_krSo1jjUUi4Duc " in line for line in lines)
    assert any(f"bank_credit {long_id} " in line for line in lines)
    # The columns stay aligned: every row's due date starts under the header's "due".
    due = lines[0].index("due")
    assert all(line[due - 2 : due] == "  " and line[due:].strip() for line in lines[1:-1])


def _audit_rows(db_url: str) -> int:
    conn = connect(db_url)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0])
    finally:
        conn.close()


def test_a_run_stored_but_never_synced_is_named_by_list_and_synced_once_by_exceptions_sync(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(db_url)  # run 1, synced: three exceptions
    # What a process killed between storing its run and syncing the queue leaves: run 2
    # completed (pay_big gone, pay_new found), the queue still run 1's.
    conn = connect(db_url)
    write_run(
        conn,
        [Finding("pay_small", exposure_amount=5_000), Finding("pay_new", exposure_amount=7_000)],
    )
    conn.close()
    assert main(["exceptions", "list", "--db", db_url, "--json"]) == 0
    out, err = capsys.readouterr()
    assert {r["entity_id"] for r in json.loads(out)} == {"pay_small", "pay_big", "setl_9"}
    assert "run 2 completed but the exception queue was not synced with it" in err
    assert "the queue shows run 1's findings" in err
    before = _audit_rows(db_url)
    assert main(["exceptions", "sync", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "exception queue synced with run 2: 1 opened, 0 reopened, 2 auto-cleared" in out
    assert _audit_rows(db_url) > before
    synced = _audit_rows(db_url)
    assert main(["exceptions", "sync", "--db", db_url]) == 0
    assert "in line with run 2; nothing written" in capsys.readouterr().out
    assert _audit_rows(db_url) == synced
    assert main(["exceptions", "list", "--db", db_url, "--status", "OPEN", "--json"]) == 0
    out, err = capsys.readouterr()
    assert {r["entity_id"] for r in json.loads(out)} == {"pay_small", "pay_new"}
    assert err == ""


def test_exceptions_sync_on_a_database_with_no_run_writes_nothing(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    connect(db_url).close()
    before = _audit_rows(db_url)
    assert main(["exceptions", "sync", "--db", db_url]) == 0
    assert "in line with no run yet; nothing written" in capsys.readouterr().out
    assert _audit_rows(db_url) == before
