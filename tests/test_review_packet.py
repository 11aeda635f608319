"""The escalation packet (core.review.packet): PDF and ZIP, masked, tied to the audit trail."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import sqlite3
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.access import os_operator
from core.audit import read_anchors, verify
from core.db import audit as audit_sql
from core.db import connect, transaction
from core.db import investigate as cache_db
from core.errors import NotFoundError, RefusedError
from core.investigate import gather_evidence
from core.investigate.deterministic import explain
from core.investigate.prompt import PROMPT_VERSION
from core.investigate.service import redact_evidence
from core.review import comment
from core.review.packet import (
    BANK,
    RAZORPAY,
    build_packet,
    export_packet,
    mask_record,
    mask_text,
    render_pdf,
    render_zip,
)
from tests import investigate_world as world
from tests.app_browser import CHROMIUM, CHROMIUM_ARGS, running_server, wait_rendered
from tests.app_builder import build as build_app
from tests.app_signin import signed_in
from tests.conftest import ROOT
from tests.review_support import add_people, seal_raw_rows
from ui import keys
from ui import packet as ui_packet

ACCOUNT = "001234567890"
FORMULA = '=HYPERLINK("http://evil.example/x","click")'


@pytest.fixture
def seeded(
    db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[str, dict[str, int]]:
    """The investigator's world, with a reviewer's note carrying personal data and a
    formula, and a payment description naming a bank account; on SQLite or PostgreSQL."""
    monkeypatch.delenv("RAZORRECON_ANCHOR_KEY", raising=False)
    monkeypatch.delenv("RAZORRECON_ANCHOR_DIR", raising=False)
    if db_url.startswith("postgresql://"):
        # A PostgreSQL database has no file to anchor beside: name the anchors' folder.
        monkeypatch.setenv("RAZORRECON_ANCHOR_DIR", str(tmp_path / "anchors"))
    conn = connect(db_url)
    ids = world.build(conn)
    add_people(conn)
    with transaction(conn):
        conn.execute(
            "UPDATE payments SET description = ? WHERE id = 'pay_FEE001'",
            (f"{FORMULA} refund to A/C {ACCOUNT} for {world.EMAIL}",),
        )
    seal_raw_rows(conn)  # the seeded edit, as an audited import would store it
    comment(
        conn,
        ids["FEE_CHARGED_DIFFERENTLY"],
        actor="asha@example.com",
        note=f"@SUM(1) {world.EMAIL} / {world.PHONE} paid by {world.VPA} card {world.CARD}",
        request_id="note-1",
    )
    conn.close()
    return db_url, ids


@pytest.fixture
def conn(seeded: tuple[str, dict[str, int]]) -> Iterator[sqlite3.Connection]:
    connection = connect(seeded[0])
    yield connection
    connection.close()


def fee_id(seeded: tuple[str, dict[str, int]]) -> int:
    return seeded[1]["FEE_CHARGED_DIFFERENTLY"]


def pdf_text(data: bytes) -> str:
    """The text drawn by the PDF's content streams (fpdf2 compresses them with zlib)."""
    texts = []
    # fpdf2 frames every stream with bare newlines; "\r?" here would eat a compressed
    # stream's last byte whenever that byte is a carriage return (1 stream in 256).
    for match in re.finditer(rb"\nstream\n(.*?)\nendstream", data, re.S):
        try:
            texts.append(zlib.decompress(match.group(1)).decode("latin-1"))
        except zlib.error:
            continue
    drawn = re.findall(r"\((.*?)\) Tj", "\n".join(texts))
    return "\n".join(t.replace("\\(", "(").replace("\\)", ")") for t in drawn)


def zip_texts(data: bytes) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name).decode("utf-8") for name in archive.namelist()}


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_pdf_is_a_pdf_naming_the_ids_utr_and_amounts(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    packet = build_packet(conn, fee_id(seeded), as_of=world.AS_OF)
    data = render_pdf(packet)
    assert data.startswith(b"%PDF")
    text = pdf_text(data)
    for needle in (
        f"exception #{fee_id(seeded)}",
        "pay_FEE001",
        "order_FEE001",
        "setl_GOOD01",
        "AXISCN0000000001",
        "Rs 976.40 (97640 paise)",
        "Rs 970.50 (97050 paise)",
        "FEE_CHARGED_DIFFERENTLY",
        f"To: {RAZORPAY}",
        packet.audit_hash,
    ):
        assert needle in text, needle


def test_the_zip_lists_its_files_and_the_summary_holds_ids_utr_expected_and_received(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    exception_id = fee_id(seeded)
    texts = zip_texts(render_zip(build_packet(conn, exception_id, as_of=world.AS_OF)))
    names = [n.split("/", 1)[1] for n in texts]
    assert all(n.startswith(f"packet-{exception_id}/") for n in texts)
    assert {
        "summary.csv",
        "history.csv",
        "audit_head.csv",
        "investigator.csv",
        "message.txt",
    } <= set(names)
    assert {"evidence_01_exception.csv", "evidence_02_payment.csv"} <= set(names)
    summary = {r["field"]: r for r in csv_rows(texts[f"packet-{exception_id}/summary.csv"])}
    assert summary["entity"]["value"] == "payment pay_FEE001"
    assert summary["utr"]["value"] == "AXISCN0000000001"
    assert summary["settlement_id"]["value"] == "setl_GOOD01"
    assert (summary["expected_amount"]["value"], summary["expected_amount"]["paise"]) == (
        "976.40",
        "97640",
    )
    assert (summary["actual_amount"]["value"], summary["actual_amount"]["paise"]) == (
        "970.50",
        "97050",
    )
    assert summary["entity_created_at"]["value"] == "2026-06-22 10:00 IST"
    payment = csv_rows(texts[f"packet-{exception_id}/evidence_02_payment.csv"])[0]
    assert (payment["amount"], payment["amount_paise"], payment["created_at"]) == (
        "1000.00",
        "100000",
        "2026-06-22 10:00 IST",
    )
    history = csv_rows(texts[f"packet-{exception_id}/history.csv"])
    assert [(h["action"], h["actor"]) for h in history] == [("commented", "asha@example.com")]
    investigator = {
        r["field"]: r["value"] for r in csv_rows(texts[f"packet-{exception_id}/investigator.csv"])
    }
    assert investigator["source"] == "deterministic"
    assert investigator["root_cause"] == "FEE_CHARGED_DIFFERENTLY"
    message = texts[f"packet-{exception_id}/message.txt"]
    assert message.startswith(f"To: {RAZORPAY}\nSubject: ")
    for needle in ("pay_FEE001", "setl_GOOD01", "AXISCN0000000001", "₹976.40", "₹970.50"):
        assert needle in message, needle


def test_customer_identifiers_are_masked_in_the_pdf_and_the_zip(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    packet = build_packet(conn, fee_id(seeded), as_of=world.AS_OF)
    pdf = pdf_text(render_pdf(packet))
    zipped = "\n".join(zip_texts(render_zip(packet)).values())
    for planted in (*world.PERSONAL, ACCOUNT):
        assert planted not in pdf, planted
        assert planted not in zipped, planted
    for marker in ("[EMAIL]", "[PHONE]", "[VPA]", "[CARD]", "XXXXXXXX7890"):
        assert marker in zipped, marker
        assert marker in pdf, marker
    # What support needs stays: ids, the UTR, the reviewer who acted.
    assert "AXISCN0000000001" in zipped and "asha@example.com" in zipped


def test_bank_account_numbers_are_masked_to_their_last_four_digits() -> None:
    assert (
        mask_text("IMPS to A/C No. 123456789012 ref 61234")
        == "IMPS to A/C No. XXXXXXXX9012 ref 61234"
    )
    assert mask_text("ACCT:987654321 credited") == "ACCT:XXXXX4321 credited"
    assert mask_text("NEFT CR-UTIB0000123-RAZORPAY-AXISCN0000000001") == (
        "NEFT CR-UTIB0000123-RAZORPAY-AXISCN0000000001"
    )
    record = mask_record(
        {
            "beneficiary_account": "5010 0123 456789",
            "account_id": "acc_HvYzq2Lk9",
            "utr": "918765432109",
            "assignee": "asha@example.com",
            "notes": {"email": world.EMAIL},
        }
    )
    assert record == {
        "beneficiary_account": "XXXXXXXXXX6789",
        "account_id": "acc_HvYzq2Lk9",
        "utr": "918765432109",
        "assignee": "asha@example.com",
        "notes": '{"email": "[EMAIL]"}',
    }


def test_formula_cells_are_neutralised_in_every_csv(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    texts = zip_texts(render_zip(build_packet(conn, fee_id(seeded), as_of=world.AS_OF)))
    cells = [
        cell
        for name, text in texts.items()
        if name.endswith(".csv")
        for row in csv.reader(io.StringIO(text))
        for cell in row
    ]
    assert any(c.startswith("'=HYPERLINK") for c in cells)
    assert any(c.startswith("'@SUM(1)") for c in cells)
    bad = [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))]
    bad += [c for c in cells if c.startswith("-") and not re.fullmatch(r"-\d+(\.\d\d)?", c)]
    assert bad == []
    summary = {r["field"]: r for r in csv_rows(texts[f"packet-{fee_id(seeded)}/summary.csv"])}
    assert summary["difference"]["paise"] == "-590"  # numbers are never prefixed


def test_the_same_packet_gives_the_same_bytes(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    first = build_packet(conn, fee_id(seeded), as_of=world.AS_OF)
    again = build_packet(conn, fee_id(seeded), as_of=world.AS_OF)
    assert first == again
    assert render_pdf(first) == render_pdf(again)
    assert render_zip(first) == render_zip(again)
    with zipfile.ZipFile(io.BytesIO(render_zip(first))) as archive:
        assert {i.date_time for i in archive.infolist()} == {(2026, 1, 1, 0, 0, 0)}


def test_the_audit_head_is_the_chain_head_and_the_latest_anchor_is_checked(
    conn: sqlite3.Connection,
    seeded: tuple[str, dict[str, int]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    elsewhere = build_packet(conn, fee_id(seeded), anchor=tmp_path / "none.jsonl")
    assert (elsewhere.anchor.status, elsewhere.anchor.seq) == ("none", None)
    # The reviewer's comment anchored the head it made, without a key: unsigned.
    unsigned = build_packet(conn, fee_id(seeded), as_of=world.AS_OF)
    assert (unsigned.anchor.status, unsigned.anchor.seq) == ("unsigned", unsigned.audit_seq)
    monkeypatch.setenv("RAZORRECON_ANCHOR_KEY", "packet-test-key")
    comment(conn, fee_id(seeded), actor="ravi@example.com", note="second look", request_id="n2")
    anchored = read_anchors(conn)
    assert anchored.lines == 2
    top = max(anchored.required)
    packet = build_packet(conn, fee_id(seeded), as_of=world.AS_OF)
    head = audit_sql.head(conn)
    assert head is not None and (packet.audit_seq, packet.audit_hash) == head
    assert (packet.anchor.seq, packet.anchor.hash) == (top, anchored.required[top]) == head
    assert packet.anchor.hmac_ok and packet.anchor.matches_chain
    assert packet.anchor.file.endswith(".anchors.jsonl")
    rows = csv_rows(zip_texts(render_zip(packet))[f"packet-{fee_id(seeded)}/audit_head.csv"])
    assert [(r["item"], r["seq"], r["hash"]) for r in rows] == [
        ("chain_head", str(head[0]), head[1]),
        ("latest_anchor", str(head[0]), head[1]),
    ]
    assert (rows[1]["hmac"], rows[1]["matches_chain"]) == ("verified", "yes")
    monkeypatch.setenv("RAZORRECON_ANCHOR_KEY", "another-key")
    assert build_packet(conn, fee_id(seeded)).anchor.status == "HMAC does not match"


def test_exporting_a_packet_is_audited_and_anchored(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    before = audit_sql.head(conn)
    assert before is not None
    anchors = read_anchors(conn).lines
    data = export_packet(conn, fee_id(seeded), "zip", actor="asha@example.com")
    entry = conn.execute(
        "SELECT seq, actor, action, entity_type, entity_id, payload_json FROM audit_log"
        " ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    payload = json.loads(entry[5])
    assert entry[:5] == (
        before[0] + 1,
        "asha@example.com",
        "packet.exported",
        "exception",
        str(fee_id(seeded)),
    )
    assert payload["sha256"] == hashlib.sha256(data).hexdigest()
    assert (payload["format"], payload["audit_seq"], payload["audit_hash"]) == ("zip", *before)
    result = verify(conn)
    assert result.ok and result.anchors_checked == anchors + 1, result.problem
    assert result.head_seq == before[0] + 1


def test_a_viewer_cannot_export_a_packet_and_the_refusal_is_audited(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    with pytest.raises(RefusedError, match="reviewer"):
        export_packet(conn, fee_id(seeded), "pdf", actor="viewer@example.com")
    actions = [r[0] for r in conn.execute("SELECT action FROM audit_log ORDER BY seq")]
    assert actions[-1] == "access.refused" and "packet.exported" not in actions


def test_an_unknown_exception_has_no_packet(conn: sqlite3.Connection) -> None:
    with pytest.raises(NotFoundError, match="no exception with id 9999"):
        build_packet(conn, 9999)


def test_the_message_goes_to_the_bank_for_a_bank_credit_and_to_razorpay_otherwise(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    bank = build_packet(conn, seeded[1]["UNIDENTIFIED_BANK_CREDIT"], as_of=world.AS_OF)
    assert bank.recipient == BANK
    assert bank.message.startswith(f"To: {BANK}\n")
    assert "HDFCXX9999999999" in bank.message and "₹12,345.00" in bank.message
    assert bank.field("bank_dates") is not None
    assert "2026-06-26" in bank.message
    late = build_packet(conn, seeded[1]["SETTLED_LATE"], as_of=world.AS_OF)
    assert late.recipient == RAZORPAY and "which settlement" in late.message


def test_a_verified_cached_model_answer_is_the_packets_answer_and_a_stale_one_is_not(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    exception_id = fee_id(seeded)
    evidence = gather_evidence(conn, exception_id)
    rules = explain(evidence)
    key = redact_evidence(evidence)[0].digest(PROMPT_VERSION)

    def cache(answer: dict[str, object]) -> None:
        with transaction(conn):
            cache_db.cache_put(
                conn,
                evidence_hash=key,
                exception_id=exception_id,
                model="gemini-test",
                answer_json=json.dumps({"answer": answer, "tool_calls": []}),
                tokens=10,
                now=world.AS_OF,
            )

    # A model's answer: its own words (the rules' recommendation says "Write off", which a
    # model may not: see core.investigate.verify.status_claims).
    model = {
        **rules.to_dict(),
        "summary": "The fee on pay_FEE001 was ₹29.50, not ₹23.60.",
        "recommendation": "Ask Razorpay support why pay_FEE001 was charged ₹29.50.",
    }
    cache(model)
    answer = build_packet(conn, exception_id, as_of=world.AS_OF).investigator
    assert answer.source == "gemini-test (cached)"
    assert answer.summary == "The fee on pay_FEE001 was ₹29.50, not ₹23.60."
    cache({**model, "summary": "Settled twice, see pay_INVENTED1 for ₹99,999.00."})
    answer = build_packet(conn, exception_id, as_of=world.AS_OF).investigator
    assert (answer.source, answer.summary) == ("deterministic", rules.summary)


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "core", "packet", *args],
        cwd=ROOT,
        capture_output=True,
        check=False,
        timeout=120,
    )


def test_packet_cli_writes_pdf_and_zip_by_suffix_and_to_stdout(
    seeded: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    db, exception_id = str(seeded[0]), str(fee_id(seeded))
    pdf = _cli("--db", db, "--exception", exception_id, "--out", str(tmp_path / "p.pdf"))
    assert pdf.returncode == 0, pdf.stderr
    assert (tmp_path / "p.pdf").read_bytes().startswith(b"%PDF")
    zipped = _cli("--db", db, "--exception", exception_id, "--out", str(tmp_path / "p.zip"))
    assert zipped.returncode == 0, zipped.stderr
    assert f"packet-{exception_id}/summary.csv" in zip_texts((tmp_path / "p.zip").read_bytes())
    out = _cli("--db", db, "--exception", exception_id, "--out", "-", "--format", "zip")
    assert out.returncode == 0 and out.stdout.startswith(b"PK"), out.stderr
    assert b"wrote the escalation packet" in out.stderr
    conn = connect(seeded[0])
    try:
        exported = conn.execute(
            "SELECT actor FROM audit_log WHERE action = 'packet.exported'"
        ).fetchall()
    finally:
        conn.close()
    assert [r[0] for r in exported] == [os_operator().actor] * 3


def test_packet_cli_unknown_exception_or_format_exits_2_with_a_message(
    seeded: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    db = str(seeded[0])
    missing = _cli("--db", db, "--exception", "9999", "--out", str(tmp_path / "p.pdf"))
    assert missing.returncode == 2
    assert b"no exception with id 9999" in missing.stderr
    assert not (tmp_path / "p.pdf").exists()
    wrong = _cli("--db", db, "--exception", str(fee_id(seeded)), "--out", str(tmp_path / "p.txt"))
    assert wrong.returncode == 2 and b"name a .pdf or .zip file" in wrong.stderr
    stdout = _cli("--db", db, "--exception", str(fee_id(seeded)), "--out", "-")
    assert stdout.returncode == 2 and b"--format" in stdout.stderr
    nodb = _cli("--db", str(tmp_path / "none.sqlite"), "--exception", "1", "--out", "x.pdf")
    assert nodb.returncode == 2 and b"no such database file" in nodb.stderr


def test_the_download_made_for_a_reviewer_is_audited_under_their_name(
    seeded: tuple[str, dict[str, int]],
) -> None:
    make = ui_packet._maker(str(seeded[0]), fee_id(seeded), "pdf", "asha@example.com")
    assert make().startswith(b"%PDF")
    conn = connect(seeded[0])
    try:
        row = conn.execute(
            "SELECT actor, payload_json FROM audit_log WHERE action = 'packet.exported'"
        ).fetchone()
    finally:
        conn.close()
    assert row[0] == "asha@example.com" and json.loads(row[1])["format"] == "pdf"


@pytest.fixture
def app_db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    path = db_url
    conn = connect(path)
    build_app(conn, payments=300, seed=5)
    add_people(conn)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", path)
    monkeypatch.delenv("RAZORRECON_DEMO", raising=False)
    yield path


def _investigation(email: str) -> AppTest:
    at = signed_in(email)
    at.run()
    at.switch_page("pages/investigation.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.usefixtures("streamlit_navigation_v2")
def test_a_reviewer_gets_both_packet_buttons_and_a_viewer_gets_them_disabled(
    app_db: str,
) -> None:
    reviewer = _investigation("asha@example.com")
    buttons = {b.key: b for b in reviewer.get("download_button")}
    assert {keys.PACKET_PDF, keys.PACKET_ZIP} <= set(buttons)
    assert not buttons[keys.PACKET_PDF].proto.disabled
    assert not buttons[keys.PACKET_ZIP].proto.disabled
    assert "PDF" in buttons[keys.PACKET_PDF].proto.label
    viewer = _investigation("viewer@example.com")
    buttons = {b.key: b for b in viewer.get("download_button")}
    assert buttons[keys.PACKET_PDF].proto.disabled and buttons[keys.PACKET_ZIP].proto.disabled
    assert any("packet needs the reviewer role" in c.value for c in viewer.caption)


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium")
def test_clicking_the_pdf_button_in_a_browser_downloads_the_packet_and_audits_it(
    seeded: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api")
    database, exception_id = seeded[0], fee_id(seeded)
    with (
        running_server(database, tmp_path / "streamlit.log") as server,
        playwright_api.sync_playwright() as p,
    ):
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = chromium.new_page(viewport={"width": 1440, "height": 2000})
            page.goto(f"{server.url}/investigation?exception={exception_id}")
            wait_rendered(page)
            assert page.get_by_label("Exception id").input_value() == str(exception_id)
            with page.expect_download(timeout=120_000) as download:
                page.get_by_role("button", name="Escalation packet (PDF)").click()
            saved = tmp_path / download.value.suggested_filename
            download.value.save_as(saved)
        finally:
            chromium.close()
    assert saved.name == f"escalation-{exception_id}.pdf"
    text = pdf_text(saved.read_bytes())
    assert "pay_FEE001" in text and "AXISCN0000000001" in text
    assert world.EMAIL not in text and ACCOUNT not in text
    conn = connect(database)
    try:
        rows = conn.execute(
            "SELECT actor, entity_id, payload_json FROM audit_log WHERE action = 'packet.exported'"
        ).fetchall()
    finally:
        conn.close()
    assert len(rows) == 1 and rows[0][1] == str(exception_id)
    assert rows[0][0].startswith("local:")
    assert json.loads(rows[0][2])["sha256"] == hashlib.sha256(saved.read_bytes()).hexdigest()


def test_the_page_names_the_packet_as_core_does_without_importing_the_investigator() -> None:
    from core.review.packet import file_name as core_file_name

    assert ui_packet.file_name(7, "pdf") == core_file_name(7, "pdf")
    assert ui_packet.file_name(12, "zip") == core_file_name(12, "zip")
    # The page module itself does not import core.review.packet (which pulls in the
    # investigator's dependencies); it is imported when a packet is made.
    import ast
    from pathlib import Path

    tree = ast.parse(Path(ui_packet.__file__).read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert all(n.module != "core.review.packet" for n in top)


def test_the_message_to_the_bank_names_its_line_by_date_amount_and_utr_not_our_file(
    conn: sqlite3.Connection, seeded: tuple[str, dict[str, int]]
) -> None:
    bank = build_packet(conn, seeded[1]["UNIDENTIFIED_BANK_CREDIT"], as_of=world.AS_OF)
    assert bank.recipient == BANK
    assert "bank.csv" not in bank.message and "bank.csv" not in bank.subject
    assert "credit of ₹12,345.00 on 26 Jun 2026" in bank.subject
    record = next(line for line in bank.message.splitlines() if "Record:" in line)
    assert "₹12,345.00" in record and "26 Jun 2026" in record and "NEFT CR-" in record
    assert "HDFCXX9999999999" in bank.message
    # The packet's own facts (not sent) still name the line as our records do.
    assert bank.field("entity") is not None and "bank.csv:16" in str(bank.field("entity"))
