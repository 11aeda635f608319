"""The deterministic investigator on instant settlements and Route transfers: reused codes
on the new entity types, and the evidence shown for them (payouts and their UTRs; the
transfer and its rows)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from core.db import connect
from core.investigate import ClientConfig, gather_evidence, investigate
from core.investigate.deterministic import explain
from core.investigate.service import redact_evidence
from core.investigate.verify import check_citations
from tests import investigate_world as world


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "LLM_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def seeded(db_url: str) -> Iterator[tuple[sqlite3.Connection, dict[str, int]]]:
    conn = connect(db_url)
    world.build(conn)
    yield conn, dict(world.EXTRA)
    conn.close()


@pytest.mark.parametrize(
    ("label", "cause", "mentions"),
    [
        ("instant_duplicate", "BANK_CREDITED_TWICE", ("setlodp_DUP001", "bank.csv:18")),
        ("instant_short", "BANK_SHORT_CREDIT", ("KKBKH0000000S001", "₹4.00 short")),
        ("instant_missing", "BANK_CREDIT_MISSING", ("setlodp_MIS001", "KKBKH0000000M001")),
        ("transfer_duplicate", "SETTLED_TWICE", ("trf_DUP001", "2 recon rows")),
        ("transfer_unknown", "UNKNOWN_ENTITY", ("trf_GHOST1", "transfers")),
    ],
)
def test_reused_codes_on_new_entity_types(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
    label: str,
    cause: str,
    mentions: tuple[str, ...],
) -> None:
    conn, extra = seeded
    result = investigate(conn, extra[label], client_config=ClientConfig())
    assert result.root_cause == cause
    assert result.confidence >= 0.9
    for text in mentions:
        assert text in result.summary
    evidence = gather_evidence(conn, extra[label])
    assert check_citations(explain(evidence), redact_evidence(evidence)[0]).ok


def test_instant_settlement_evidence_shows_payouts_and_their_bank_lines(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, extra = seeded
    evidence = gather_evidence(conn, extra["instant_duplicate"])
    instant = evidence.records("instant_settlement", instant_settlement_id="setlod_DUP001")
    assert [p["utr"] for p in instant[0]["payouts"]] == ["KKBKH0000000D001"]
    lines = evidence.records("bank_lines", utr="KKBKH0000000D001")
    assert {line["id"] for line in lines} == {"bank.csv:17", "bank.csv:18"}


def test_transfer_evidence_shows_the_transfer_and_its_rows(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, _ = seeded
    exception_id = conn.execute(
        "SELECT id FROM exceptions WHERE entity_id = 'trf_REVS01'"
    ).fetchone()[0]
    evidence = gather_evidence(conn, exception_id)
    transfer = evidence.records("transfer", transfer_id="trf_REVS01")[0]
    assert transfer["reversed_by_rows"] == 6000
    assert [r["entity_id"] for r in transfer["reversal_rows"]] == ["rvrsl_REVS01"]
    assert [r["type"] for r in evidence.records("recon_rows", entity_id="trf_REVS01")] == [
        "transfer"
    ]
    assert evidence.records("payment", payment_id="pay_FEE001")


def test_evidence_for_an_unknown_instant_settlement_or_transfer_does_not_crash(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, _ = seeded
    for entity_type, entity_id, code in (
        ("instant_settlement", "setlod_NOPE", "MISSING_BANK_ENTRY"),
        ("transfer", "trf_NOPE", "TRANSFER_AMOUNT_MISMATCH"),
    ):
        exception_id = world.exception(conn, entity_type, entity_id, code, expected=1, actual=0)
        conn.commit()
        answer = explain(gather_evidence(conn, exception_id))
        assert answer.requires_human_review
        assert entity_id in answer.summary
