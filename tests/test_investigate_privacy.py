"""Privacy: PAN, Aadhaar, bank account numbers, an IFSC written with an account, and
personal names (narration name fields, the customer's name in notes) never reach a model,
while every UTR the evidence holds does, so citations keep their UTRs. The UTR/account
reading is the importer's own (`core.ingest.utr`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.db import connect
from core.ingest.utr import account_numbers, extract_utr
from core.investigate import ClientConfig, ModelSpec, investigate
from core.investigate.redact import Redactor, narration_name, redact_text, verhoeff_digit
from core.investigate.tools import ID_FIELDS
from tests import investigate_world as world
from tests.fake_gemini import FakeGemini, answer
from tests.fake_gemini import running as fake_gemini

LITE = "gemini-3.5-flash-lite"
AADHAAR = "234123412346"  # Verhoeff-valid
FIRST_NAMES = ("AARAV", "PRIYA", "ROHAN", "KAVYA", "VIVAAN", "ANANYA", "ISHAAN", "NANDINI")
LAST_NAMES = ("KULKARNI", "CHATTERJEE", "DESHPANDE", "RAGHAVAN", "MALHOTRA", "NAMBIAR")


@pytest.mark.parametrize(
    ("text", "gone", "marker"),
    [
        ("KYC PAN ABCDE1234F verified", "ABCDE1234F", "[PAN]"),
        ("pan abcpd1234q", "abcpd1234q", "[PAN]"),
        (f"aadhaar {AADHAAR} seen", AADHAAR, "[AADHAAR]"),
        ("aadhaar 2341 2341 2346 seen", "2341 2341 2346", "[AADHAAR]"),
        ("aadhaar 9999-8888-7777 seen", "9999-8888-7777", "[AADHAAR]"),
        ("refund to A/C 50200012345678", "50200012345678", "[ACCOUNT]"),
        ("refund to A/C NO: 000123456789", "000123456789", "[ACCOUNT]"),
        ("TO A/C XXXXXXXX5678 credited", "XXXXXXXX5678", "[ACCOUNT]"),
        ("ACCOUNT NO 123456789 IFSC HDFC0001234", "HDFC0001234", "[IFSC]"),
        ("NEFT-HDFCN12345678901-A B-ACCT 4111111111111111-HDFC0001234", "HDFC0001234", "[IFSC]"),
        ("UPI/412345678901/ROHAN DESHPANDE/rohan@okaxis/HDFC BANK", "ROHAN DESHPANDE", "[NAME]"),
        ("IMPS/P2A/623412341234/PRIYA NAMBIAR/KKBK0000123", "PRIYA NAMBIAR", "[NAME]"),
        ("NEFT-HDFCN52022062412345678-KAVYA MALHOTRA-SALARY", "KAVYA MALHOTRA", "[NAME]"),
        ("UPI-ANANYA RAGHAVAN-ANANYA@OKSBI-SBIN0001234-412345678901", "RAGHAVAN", "[NAME]"),
    ],
)
def test_each_identifier_is_replaced_by_its_marker(text: str, gone: str, marker: str) -> None:
    out = redact_text(text)
    assert gone not in out
    assert marker in out


@pytest.mark.parametrize(
    ("narration", "utr"),
    [
        ("UPI/412345678901/ROHAN DESHPANDE/rohan@okaxis/HDFC BANK", "412345678901"),
        ("IMPS/P2A/623412341234/PRIYA NAMBIAR/KKBK0000123", "623412341234"),
        ("NEFT-HDFCN52022062412345678-KAVYA MALHOTRA-SALARY", "HDFCN52022062412345678"),
        ("NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-AXISCN1153863727", "AXISCN1153863727"),
    ],
)
def test_a_narrations_utr_survives_its_redaction(narration: str, utr: str) -> None:
    assert extract_utr(narration, None) == utr  # the importer reads the same UTR
    assert utr in redact_text(narration)


def test_a_utr_shaped_like_an_aadhaar_is_kept_when_it_is_the_lines_utr() -> None:
    line = {"id": "bank.csv:9", "utr": AADHAAR, "narration": f"UPI/{AADHAAR}/X Y/pay"}
    redactor = Redactor.for_records([line], ID_FIELDS)
    assert redactor.value(line, keep=ID_FIELDS)["narration"].startswith(f"UPI/{AADHAAR}/")
    # Anywhere else the same digits are not protected by the line: a stray number is not a UTR.
    assert AADHAAR not in Redactor.for_records([], ID_FIELDS).text(f"id {AADHAAR}")


def test_an_account_number_is_never_kept_as_a_utr() -> None:
    narration = "IMPS/P2A/623412341234/A/C 50200012345678/PRIYA NAMBIAR"
    assert account_numbers(narration) == ("50200012345678",)
    assert extract_utr(narration, None) == "623412341234"
    out = redact_text(narration)
    assert "50200012345678" not in out and "623412341234" in out


def test_a_business_name_in_a_narration_is_kept() -> None:
    narration = "NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-AXISCN1153863727"
    assert narration_name(narration) is None
    assert redact_text(narration) == narration


def test_the_customers_name_in_notes_is_redacted_wherever_it_is_written() -> None:
    payment = {
        "id": "pay_N0TES1",
        "notes": json.dumps({"customer_name": "Ishaan Kulkarni", "order": "42"}),
        "description": "Order for Ishaan",
    }
    line = {"id": "bank.csv:3", "utr": None, "narration": "BY CLG ISHAAN KULKARNI REFUND"}
    redactor = Redactor.for_records([payment, line], ID_FIELDS)
    shown = [redactor.value(r, keep=ID_FIELDS) for r in (payment, line)]
    text = json.dumps(shown)
    assert "Ishaan" not in text and "ISHAAN" not in text and "KULKARNI" not in text.upper()
    assert shown[0]["id"] == "pay_N0TES1" and "[NAME]" in shown[1]["narration"]
    assert json.loads(shown[0]["notes"])["order"] == "42"


def test_an_unlabelled_long_number_is_redacted_once_the_evidence_utrs_are_known() -> None:
    line = {"id": "bank.csv:4", "utr": "AXISCN1153863727", "narration": "FT - DR - 50200012345678"}
    redactor = Redactor.for_records([line], ID_FIELDS)
    assert redactor.value(line, keep=ID_FIELDS)["narration"] == "FT - DR - [ACCOUNT]"


# --- end to end: what the stand-in Gemini receives -----------------------------------------


@pytest.fixture
def seeded(db_url: str) -> Iterator[tuple[sqlite3.Connection, dict[str, int]]]:
    conn = connect(db_url)
    ids = world.build(conn)
    yield conn, ids
    conn.close()


@pytest.fixture
def server() -> Iterator[FakeGemini]:
    with fake_gemini() as fake:
        fake.default = answer("{no answer needed}")
        yield fake


def _config(fake: FakeGemini) -> ClientConfig:
    return ClientConfig(
        api_key="test-key",
        models=(ModelSpec(LITE, 5.0),),
        base_url=fake.url,
        clock=lambda: float(world.AS_OF),
        breaker_threshold=1_000_000,
        max_tool_rounds=0,
    )


CASES = ("BANK_SHORT_CREDIT", "SETTLED_TWICE", "REFUND_AMOUNT_DIFFERS")


def _requests(conn: sqlite3.Connection, ids: dict[str, int], fake: FakeGemini) -> list[Any]:
    start = len(fake.requests)
    for case in CASES:
        investigate(conn, ids[case], use_cache=False, client_config=_config(fake))
    return fake.requests[start:]


def _plant(conn: sqlite3.Connection, planted: dict[str, str]) -> None:
    conn.execute("UPDATE settlements SET utr = ? WHERE id = 'setl_SHRT01'", (planted["utr"],))
    conn.execute(
        "UPDATE bank_lines SET utr = ?, narration = ? WHERE id = 'bank.csv:14'",
        (planted["utr"], planted["narration"]),
    )
    notes = {"customer_name": planted["name"].title(), "pan": planted["pan"]}
    conn.execute(
        "UPDATE payments SET notes = ?, description = ? WHERE id = 'pay_DUP001'",
        (json.dumps(notes), f"Order for {planted['first'].title()}, Aadhaar {planted['aadhaar']}"),
    )
    conn.execute(
        "UPDATE refunds SET notes = ? WHERE id = 'rfnd_AMT001'",
        (json.dumps({"reason": f"refund to {planted['account_text']} IFSC {planted['ifsc']}"}),),
    )


def _aadhaar(body: str, grouped: bool) -> str:
    number = body + verhoeff_digit(body)
    return f"{number[:4]} {number[4:8]} {number[8:]}" if grouped else number


identities = st.fixed_dictionaries(
    {
        "first": st.sampled_from(FIRST_NAMES),
        "last": st.sampled_from(LAST_NAMES),
        "pan": st.from_regex(r"[A-Z]{5}[0-9]{4}[A-Z]", fullmatch=True),
        "aadhaar": st.builds(
            _aadhaar, st.from_regex(r"[2-9][0-9]{10}", fullmatch=True), st.booleans()
        ),
        "account": st.from_regex(r"[1-9][0-9]{8,17}", fullmatch=True),
        "label": st.sampled_from(["A/C", "A/C NO:", "ACCOUNT NO", "ACCT", "AC NO."]),
        "ifsc": st.from_regex(r"[A-Z]{4}0[A-Z0-9]{6}", fullmatch=True),
        "channel": st.sampled_from(["UPI", "IMPS", "NEFT"]),
        "rrn": st.from_regex(r"[1-9][0-9]{11}", fullmatch=True),
        "neft_utr": st.from_regex(r"[A-Z]{4}N[0-9]{11}", fullmatch=True),
    }
)


def _planted(identity: dict[str, str]) -> dict[str, str]:
    name = f"{identity['first']} {identity['last']}"
    account_text = f"{identity['label']} {identity['account']}"
    if identity["channel"] == "UPI":
        utr = identity["rrn"]
        narration = f"UPI/{utr}/{name}/PAYMENT FROM PHONE"
    elif identity["channel"] == "IMPS":
        utr = identity["rrn"]
        narration = f"IMPS/P2A/{utr}/{name}/{account_text}"
    else:
        utr = identity["neft_utr"]
        narration = f"NEFT-{utr}-{name}-{account_text}-{identity['ifsc']}"
    return {
        **identity,
        "name": name,
        "utr": utr,
        "narration": narration,
        "account_text": account_text,
    }


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(identity=identities)
def test_generated_identifiers_never_reach_the_model_and_every_utr_does(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
    server: FakeGemini,
    identity: dict[str, str],
) -> None:
    conn, ids = seeded
    planted = _planted(identity)
    secrets = [
        planted["pan"],
        planted["aadhaar"],
        planted["account"],
        planted["ifsc"],
        planted["first"],
        planted["last"],
    ]
    # A secret that is also (part of) the UTR, or of the world's own text, proves nothing.
    if not server.requests:
        _requests(conn, ids, server)  # the requests as they are before anything is planted
    baseline = " ".join(r.raw for r in server.requests[: len(CASES)]).lower()
    for secret in secrets:
        assume(secret.lower() not in planted["utr"].lower())
        assume(secret.lower() not in baseline)
    _plant(conn, planted)
    requests = _requests(conn, ids, server)
    assert len(requests) == len(CASES)
    raw = " ".join(r.raw for r in requests)
    for secret in secrets:
        assert secret.lower() not in raw.lower(), f"{secret!r} reached the model"
    # Every UTR the evidence holds is still there, in its id field and in the narration.
    assert planted["utr"] in raw
    [short] = [r for r in requests if r.evidence()["exception"]["entity_id"] == "setl_SHRT01"]
    lines = [
        rec
        for item in short.evidence()["tool_results"]
        if item["tool"] == "bank_lines"
        for rec in item["records"]
    ]
    assert lines and all(rec["utr"] == planted["utr"] for rec in lines)
    assert planted["utr"] in lines[0]["narration"]["untrusted_text"]
    assert "[NAME]" in lines[0]["narration"]["untrusted_text"]


def test_common_words_of_a_remark_are_not_blanked_elsewhere() -> None:
    line = {
        "id": "bank.csv:5",
        "utr": "HDFCN52022062412",
        "narration": "NEFT-HDFCN52022062412-SALARY FOR JUNE",
    }
    payment = {"id": "pay_W0RDS1", "description": "Order for a chair"}
    redactor = Redactor.for_records([line, payment], ID_FIELDS)
    assert redactor.value(payment, keep=ID_FIELDS)["description"] == "Order for a chair"
