"""Redaction of personal data, and the citation check's reading of ids and amounts."""

from __future__ import annotations

import pytest

from core.investigate.evidence import Evidence
from core.investigate.redact import redact_text
from core.investigate.result import Answer
from core.investigate.service import redact_evidence
from core.investigate.tools import ToolResult
from core.investigate.verify import amounts_in_text, check_citations


@pytest.mark.parametrize(
    ("text", "gone", "marker"),
    [
        ("mail asha.verma@example.com now", "asha.verma@example.com", "[EMAIL]"),
        ("UPI/412345678901/asha@okhdfcbank/pay", "asha@okhdfcbank", "[VPA]"),
        ("paid by 9876543210@ybl", "9876543210@ybl", "[VPA]"),
        ("call +91 98765 43210 today", "98765 43210", "[PHONE]"),
        ("call +91-9876543210", "9876543210", "[PHONE]"),
        ("call 09876543210", "9876543210", "[PHONE]"),
        ("mobile 919876543210", "9876543210", "[PHONE]"),
        ("ring +44 20 7946 0958", "7946 0958", "[PHONE]"),
        ("card 4111 1111 1111 1111 used", "4111 1111 1111 1111", "[CARD]"),
        ("card 4111-1111-1111-1111", "4111-1111-1111-1111", "[CARD]"),
        ("card 4111111111111111", "4111111111111111", "[CARD]"),
        ("card 4111 XXXX XXXX 1111", "4111 XXXX XXXX 1111", "[CARD]"),
    ],
)
def test_personal_data_is_replaced_by_a_marker(text: str, gone: str, marker: str) -> None:
    out = redact_text(text)
    assert gone not in out
    assert marker in out


@pytest.mark.parametrize(
    "text",
    [
        "NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-AXISCN1153863727",
        "IMPS/P2A/412345678901/RAZORPAY",
        "settled on 2026-06-30 for 13500000 paise",
        "setl_GOOD01 payment:pay_FEE001:setl_GOOD01:0",
        "1234567890123",  # 13 digits failing the Luhn check: a reference, not a card
    ],
)
def test_references_dates_and_ids_survive(text: str) -> None:
    assert redact_text(text) == text


def test_evidence_redaction_keeps_ids_and_amounts_but_not_free_text_contacts() -> None:
    evidence = Evidence(
        exception={"id": 1, "entity_id": "pay_A1234", "expected_amount": 500},
        items=(
            ToolResult(
                "bank_lines",
                {"utr": "UTR123456789012"},
                (
                    {
                        "id": "bank.csv:4",
                        "utr": "UTR123456789012",
                        "narration": "from a@okaxis ph 9876543210",
                        "credit": 500,
                    },
                ),
            ),
        ),
    )
    redacted = redact_evidence(evidence)[0]
    record = redacted.items[0].records[0]
    assert record["narration"] == "from [VPA] ph [PHONE]"
    assert record["id"] == "bank.csv:4" and record["utr"] == "UTR123456789012"
    assert record["credit"] == 500
    assert redacted.digest("v") != evidence.digest("v")
    assert redacted.digest("v") == redact_evidence(evidence)[0].digest("v")


def test_amounts_are_read_in_rupees_lakhs_and_paise() -> None:
    found = dict(
        amounts_in_text(
            "₹1,35,000.00 short; Rs. 250 fee; INR 1.5 L; 4,500.50 and 700 paise; 18% GST; "
            "2026-06-30"
        )
    )
    assert found == {
        "₹1,35,000.00": 13500000,
        "Rs. 250": 25000,
        "INR 1.5 L": 15000000,
        "4,500.50": 450050,
        "700 paise": 700,
    }


def test_an_id_seen_only_in_a_narration_cannot_be_cited() -> None:
    evidence = Evidence(
        exception={"id": 1, "entity_id": "pay_A1234", "expected_amount": 500},
        items=(ToolResult("bank_lines", {}, ({"id": "b.csv:2", "narration": "see pay_FAKE999"},)),),
    )
    base = {
        "root_cause": "X",
        "confidence": 1.0,
        "recommendation": "r",
        "requires_human_review": True,
    }
    bad = Answer(summary="pay_FAKE999 is the cause", citations=("pay_FAKE999",), **base)
    good = Answer(summary="pay_A1234 of ₹5.00 in b.csv:2", citations=("pay_A1234",), **base)
    assert check_citations(bad, evidence).unknown_ids == ("pay_FAKE999",)
    assert check_citations(good, evidence).ok
