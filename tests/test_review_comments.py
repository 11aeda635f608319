"""Comments and attachments on an exception (issue 13, item 6): core.review.comments."""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
import zipfile
from pathlib import Path

import pytest

from core.__main__ import main
from core.audit import verify
from core.db import connect
from core.db.backend import is_postgres
from core.errors import InputError, RefusedError
from core.review import (
    NewAttachment,
    add_comment,
    assign,
    attachment,
    comment,
    get_exception,
    list_comments,
    sync_exceptions,
)
from core.review.comments import history, max_attachment_bytes, safe_filename, sniff
from tests.review_support import Finding, add_people, exception_id, write_run


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


ASHA = "asha@example.com"
NOON_IST = 1_767_940_200  # Friday 9 January 2026, 12:00 IST
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF_BYTES = b"%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


@pytest.fixture(autouse=True)
def _people(conn: sqlite3.Connection) -> None:
    add_people(conn)


def _one_open(conn: sqlite3.Connection, entity: str = "pay_1") -> int:
    sync_exceptions(conn, write_run(conn, [Finding(entity)]))
    return exception_id(conn, entity)


def _xlsx(*extra: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in ("[Content_Types].xml", "xl/workbook.xml", *extra):
            archive.writestr(name, "<x/>")
    return buffer.getvalue()


def _written(conn: sqlite3.Connection) -> tuple[int, int, int, int, int]:
    """Rows a comment writes: comments, attachments, human events, audit entries, requests."""
    return (
        conn.execute("SELECT COUNT(*) FROM review_comments").fetchone()[0],
        conn.execute("SELECT COUNT(*) FROM review_attachments").fetchone()[0],
        conn.execute(
            "SELECT COUNT(*) FROM exception_events WHERE request_id IS NOT NULL"
        ).fetchone()[0],
        conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0],
        conn.execute("SELECT COUNT(*) FROM action_requests").fetchone()[0],
    )


def test_a_comment_records_its_author_time_text_and_files_in_the_thread_and_history(
    conn: sqlite3.Connection,
) -> None:
    exc = _one_open(conn)
    result = add_comment(
        conn,
        exc,
        actor=ASHA,
        body="  Bank statement attached; the UTR is on page 2.  ",
        request_id="c1",
        attachments=[
            NewAttachment("C:\\Users\\asha\\hdfc statement.pdf", PDF_BYTES),
            ("../../etc/screenshot.png", PNG_BYTES),
        ],
        now=NOON_IST,
    )
    (thread,) = list_comments(conn, exc)
    assert (thread.author, thread.created_at) == (ASHA, NOON_IST)
    assert thread.body == "Bank statement attached; the UTR is on page 2."
    assert [(a.filename, a.media_type, a.size) for a in thread.attachments] == [
        ("hdfc statement.pdf", "application/pdf", len(PDF_BYTES)),
        ("screenshot.png", "image/png", len(PNG_BYTES)),
    ]
    assert [attachment(conn, a.id) for a in thread.attachments] == [PDF_BYTES, PNG_BYTES]
    assert thread.attachments[1].sha256 == hashlib.sha256(PNG_BYTES).hexdigest()
    assert result.attachment_ids == tuple(a.id for a in thread.attachments)
    record = get_exception(conn, exc)
    assert (result.to_status, result.version) == (record.status, record.version) == ("OPEN", 1)
    last = history(conn, exc)[-1]
    assert (last["action"], last["actor"], last["created_at"]) == ("commented", ASHA, NOON_IST)
    assert last["note"] == thread.body
    assert last["attachments"] == (
        f"hdfc statement.pdf (PDF, {len(PDF_BYTES)} bytes); screenshot.png (PNG, 1 KiB)"
    )


def test_the_same_request_id_twice_makes_one_comment(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    before = _written(conn)
    first, again = (
        add_comment(
            conn,
            exc,
            actor=ASHA,
            body="asked Razorpay",
            request_id="c1",
            attachments=[("a.png", PNG_BYTES)],
        )
        for _ in range(2)
    )
    assert (first.replayed, again.replayed) == (False, True)
    assert (again.comment_id, again.attachment_ids) == (first.comment_id, first.attachment_ids)
    after = _written(conn)
    assert [b - a for a, b in zip(before, after, strict=True)] == [1, 1, 1, 1, 1]
    with pytest.raises(RefusedError, match="different action or payload"):
        add_comment(conn, exc, actor=ASHA, body="something else", request_id="c1")
    assert _written(conn) == after


def test_an_attachment_over_the_size_cap_is_refused_with_a_clear_message_and_nothing_written(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    exc = _one_open(conn)
    monkeypatch.setenv("RAZORRECON_MAX_ATTACHMENT_KB", "1")
    assert max_attachment_bytes() == 1024
    before = _written(conn)
    big = b"%PDF-1.7\n" + b"0" * 2048
    with pytest.raises(InputError) as refused:
        add_comment(
            conn,
            exc,
            actor=ASHA,
            body="statement",
            request_id="c1",
            attachments=[("bank.pdf", big)],
        )
    message = str(refused.value)
    assert "bank.pdf is 2 KiB, over the 1 KiB limit" in message
    assert "RAZORRECON_MAX_ATTACHMENT_KB" in message and "nothing was saved" in message
    assert _written(conn) == before
    monkeypatch.setenv("RAZORRECON_MAX_ATTACHMENT_KB", "4")
    add_comment(
        conn, exc, actor=ASHA, body="statement", request_id="c2", attachments=[("bank.pdf", big)]
    )
    assert len(list_comments(conn, exc)[0].attachments) == 1


def test_attachments_past_the_per_exception_limit_are_refused_and_nothing_written(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    exc = _one_open(conn)
    monkeypatch.setenv("RAZORRECON_MAX_ATTACHMENTS", "2")
    add_comment(
        conn, exc, actor=ASHA, body="one", request_id="c1", attachments=[("1.png", PNG_BYTES)]
    )
    before = _written(conn)
    two = [("2.png", PNG_BYTES), ("3.pdf", PDF_BYTES)]
    with pytest.raises(RefusedError, match=r"has 1 attachment.*limit of 2 per exception"):
        add_comment(conn, exc, actor=ASHA, body="two more", request_id="c2", attachments=two)
    assert _written(conn) == before
    add_comment(conn, exc, actor=ASHA, body="text only is fine", request_id="c3")
    assert [c.body for c in list_comments(conn, exc)] == ["one", "text only is fine"]


def test_a_viewer_cannot_comment_and_the_refusal_is_audited(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    before = _written(conn)
    with pytest.raises(RefusedError, match="viewer; comment needs the reviewer role"):
        add_comment(conn, exc, actor="viewer@example.com", body="me too", request_id="v1")
    refusal = conn.execute(
        "SELECT actor, action, entity_id FROM audit_log ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    assert tuple(refusal) == ("viewer@example.com", "access.refused", str(exc))
    assert list_comments(conn, exc) == ()
    assert _written(conn)[:3] == before[:3]


def test_a_comment_is_audited_with_body_hash_and_file_hashes_and_the_chain_verifies(
    conn: sqlite3.Connection,
) -> None:
    ledger = _xlsx()  # once: a zip member carries the time it was written
    exc = _one_open(conn)
    body = "Customer's bank reference ODH5ms; mail from Razorpay attached"
    mail = b"From: support@razorpay.com\r\nSubject: settlement\r\n\r\nHello\r\n"
    result = add_comment(
        conn,
        exc,
        actor=ASHA,
        body=body,
        request_id="c1",
        attachments=[("reply.eml", mail), ("ledger.xlsx", ledger)],
    )
    actor, action, entity, payload = conn.execute(
        "SELECT actor, action, entity_id, payload_json FROM audit_log WHERE seq = ?",
        (result.audit_seq,),
    ).fetchone()
    details = json.loads(payload)
    assert (actor, action, entity) == (ASHA, "exception.commented", str(exc))
    assert details["body_sha256"] == hashlib.sha256(body.encode()).hexdigest()
    assert body not in payload  # the text stays in the thread; the trail holds its hash
    assert [(a["filename"], a["media_type"], a["sha256"]) for a in details["attachments"]] == [
        ("reply.eml", "message/rfc822", hashlib.sha256(mail).hexdigest()),
        (
            "ledger.xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            hashlib.sha256(ledger).hexdigest(),
        ),
    ]
    assert verify(conn).ok


def test_the_database_refuses_to_change_or_delete_a_comment_or_an_attachment(
    conn: sqlite3.Connection,
) -> None:
    exc = _one_open(conn)
    add_comment(
        conn, exc, actor=ASHA, body="original", request_id="c1", attachments=[("a.png", PNG_BYTES)]
    )
    statements: list[tuple[str, tuple[object, ...]]] = [
        ("UPDATE review_comments SET body = 'rewritten'", ()),
        ("DELETE FROM review_comments", ()),
        ("UPDATE review_attachments SET content = ?, size = 1", (b"\x00",)),
        ("DELETE FROM review_attachments", ()),
    ]
    # SQLite: the triggers; PostgreSQL: the app role lacks the privilege, and the same
    # triggers stop the owner role
    editors = [conn]
    if is_postgres(conn):
        editors.append(connect(os.environ["DATABASE_OWNER_URL"]))
    for editor in editors:
        refused = "permission denied" if editor is conn and is_postgres(conn) else "append-only"
        for statement, params in statements:
            with pytest.raises(sqlite3.DatabaseError, match=refused):
                editor.execute(statement, params)
    for editor in editors[1:]:
        editor.close()
    (kept,) = list_comments(conn, exc)
    assert kept.body == "original" and attachment(conn, kept.attachments[0].id) == PNG_BYTES


def test_a_commented_exception_is_marked_no_longer_found_instead_of_auto_cleared(
    conn: sqlite3.Connection,
) -> None:
    run = write_run(conn, [Finding("pay_commented"), Finding("pay_untouched")])
    sync_exceptions(conn, run)
    commented = exception_id(conn, "pay_commented")
    add_comment(conn, commented, actor=ASHA, body="waiting on the bank", request_id="c1")
    summary = sync_exceptions(conn, write_run(conn, [], matched=["pay_commented"]))
    assert (summary.auto_cleared, summary.no_longer_found) == (1, 1)
    record = get_exception(conn, commented)
    assert record.status == "OPEN" and record.needs_review
    assert get_exception(conn, exception_id(conn, "pay_untouched")).status == "AUTO_CLEARED"
    assert verify(conn).ok


def test_file_names_keep_only_their_last_part_and_safe_characters() -> None:
    assert safe_filename("../../etc/passwd.txt") == "passwd.txt"
    assert safe_filename("C:\\Temp\\..\\bank.pdf") == "bank.pdf"
    assert safe_filename(".hidden.csv") == "hidden.csv"
    assert safe_filename("inv\u202egnp.pdf") == "invgnp.pdf"  # no right-to-left override
    assert safe_filename("a<script>.txt") == "a_script_.txt"
    assert safe_filename("राशि विवरण.csv") == "राशि विवरण.csv"
    assert len(safe_filename("x" * 500 + ".pdf")) == 120
    for hopeless in ("", "..", "/", "noextension", "...pdf"):
        with pytest.raises(InputError, match="no usable file name"):
            safe_filename(hopeless)


def test_a_file_whose_bytes_are_not_what_its_name_says_is_refused() -> None:
    assert sniff("a.png", PNG_BYTES) == "image/png"
    assert sniff("a.jpeg", b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert sniff("a.csv", b"amount,utr\n100,UTIB1\n") == "text/csv"
    refused = {
        "photo.pdf": PNG_BYTES,  # a PNG named .pdf
        "page.txt": b"<!DOCTYPE html><script>alert(1)</script>",  # markup is not text here
        "tool.exe": b"MZ\x90\x00",  # not on the allowlist
        "sheet.xlsx": b"PK\x03\x04not really a zip",
        "macros.xlsx": _xlsx("xl/vbaProject.bin"),  # a macro workbook renamed
        "notes.txt": b"text\x00with a NUL",
        "mail.eml": b"just some words, no headers",
        "ledger.csv": "\u20b9 in Latin-1".encode("cp1252", "replace") + b"\xff\xfe",
    }
    for name, content in refused.items():
        with pytest.raises(InputError, match=name.replace(".", r"\.")):
            sniff(name, content)


def test_a_blank_or_overlong_comment_is_refused_and_nothing_written(
    conn: sqlite3.Connection,
) -> None:
    exc = _one_open(conn)
    before = _written(conn)
    with pytest.raises(InputError, match="needs text"):
        add_comment(conn, exc, actor=ASHA, body="   ", request_id="c1")
    with pytest.raises(InputError, match="longer than the 10,000 allowed"):
        add_comment(conn, exc, actor=ASHA, body="x" * 10_001, request_id="c2")
    with pytest.raises(InputError, match="empty"):
        add_comment(conn, exc, actor=ASHA, body="ok", request_id="c3", attachments=[("a.txt", b"")])
    assert _written(conn) == before


def test_a_comment_action_lands_in_the_thread_and_a_stale_version_is_refused(
    conn: sqlite3.Connection,
) -> None:
    exc = _one_open(conn)
    comment(conn, exc, actor=ASHA, note="first look", request_id="c1", expected_version=1)
    assign(conn, exc, actor=ASHA, assignee=ASHA, request_id="a1")
    with pytest.raises(RefusedError, match="version 2, you had version 1"):
        add_comment(conn, exc, actor=ASHA, body="late", request_id="c2", expected_version=1)
    assert [c.body for c in list_comments(conn, exc)] == ["first look"]


def test_the_cli_comments_with_an_attachment_as_the_os_user_once(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = connect(db_path)
    exc = _one_open(conn)
    conn.close()
    statement = tmp_path / "hdfc.pdf"
    statement.write_bytes(PDF_BYTES)
    args = ["review", "comment", "--db", str(db_path), "--exception", str(exc)]
    args += ["--text", "statement attached", "--attach", str(statement), "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(args) == 0  # the same command again: the same request, nothing added
    again = json.loads(capsys.readouterr().out)
    assert again["replayed"] and again["comment_id"] == first["comment_id"]
    conn = connect(db_path)
    (thread,) = list_comments(conn, exc)
    conn.close()
    import getpass

    assert thread.author == getpass.getuser()
    assert [a.filename for a in thread.attachments] == ["hdfc.pdf"]
    missing = ["review", "comment", "--db", str(db_path), "--exception", str(exc)]
    assert main([*missing, "--text", "x", "--attach", str(tmp_path / "nope.pdf")]) == 2
    assert "no such file to attach" in capsys.readouterr().err
