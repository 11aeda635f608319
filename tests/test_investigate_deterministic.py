"""The deterministic investigator: a root cause per reason code, chosen from evidence."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pandas as pd
import pytest

from core import audit
from core.db import connect
from core.errors import InputError, NotFoundError
from core.investigate import ClientConfig, gather_evidence, investigate, root_cause_accuracy
from core.investigate.deterministic import Policy, explain
from core.investigate.evidence import Evidence
from core.investigate.result import UNCLASSIFIED
from core.investigate.service import NO_KEY, redact_evidence
from core.investigate.verify import amounts_in_text, check_citations
from core.root_causes import CAUSES_BY_CODE, ROOT_CAUSES
from tests import investigate_world as world

NO_MODEL = ClientConfig()


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "LLM_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def seeded(db_url: str) -> Iterator[tuple[sqlite3.Connection, dict[str, int]]]:
    conn = connect(db_url)
    ids = world.build(conn)
    yield conn, ids
    conn.close()


def test_the_world_covers_every_reason_code_and_root_cause(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    codes = {r[0] for r in conn.execute("SELECT reason_code FROM exceptions")}
    assert codes == set(CAUSES_BY_CODE)
    assert set(ids) == set(ROOT_CAUSES)


@pytest.mark.parametrize("cause", sorted(ROOT_CAUSES))
def test_deterministic_root_cause_for_each_fault(
    seeded: tuple[sqlite3.Connection, dict[str, int]], cause: str
) -> None:
    conn, ids = seeded
    result = investigate(conn, ids[cause], client_config=NO_MODEL)
    assert result.root_cause == cause
    assert result.source == "deterministic"
    assert result.model is None
    assert result.fallback_reason == NO_KEY
    assert result.confidence >= 0.9
    assert str(result.evidence.exception["entity_id"]) in result.summary
    assert result.recommendation


@pytest.mark.parametrize("cause", sorted(ROOT_CAUSES))
def test_deterministic_summaries_cite_only_what_the_evidence_holds(
    seeded: tuple[sqlite3.Connection, dict[str, int]], cause: str
) -> None:
    conn, ids = seeded
    evidence = gather_evidence(conn, ids[cause])
    answer = explain(evidence)
    assert answer.citations, "every summary names at least one record"
    check = check_citations(answer, redact_evidence(evidence)[0])
    assert not check.unknown_ids
    # An amount the rules work out (a fee before GST) is the difference of two evidence
    # amounts; the only other amounts named are the policy's thresholds ("10 rupees").
    known = evidence.amounts()
    policy = Policy.from_env()
    thresholds = {policy.materiality_paise, policy.review_amount_paise}
    for written in check.unknown_amounts:
        if written.isdigit():
            paise = int(written)
        else:
            [(_, read)] = amounts_in_text(written)
            assert read is not None, written
            paise = read
        if paise in thresholds:
            continue
        assert any(abs(paise - v) in known or paise + v in known for v in known), written


def test_fee_and_gst_are_told_apart_by_the_recon_rows_tax(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    fee = investigate(conn, ids["FEE_CHARGED_DIFFERENTLY"], client_config=NO_MODEL)
    gst = investigate(conn, ids["GST_CHARGED_DIFFERENTLY"], client_config=NO_MODEL)
    assert "₹29.50 against ₹23.60" in fee.summary
    assert "GST is ₹8.80 against ₹7.20" in gst.summary
    assert fee.reason_code == gst.reason_code == "SETTLEMENT_AMOUNT_DISCREPANCY"


def test_money_at_risk_needs_a_human_and_a_late_settlement_does_not(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    assert investigate(conn, ids["SETTLED_TWICE"], client_config=NO_MODEL).requires_human_review
    late = investigate(conn, ids["SETTLED_LATE"], client_config=NO_MODEL)
    assert not late.requires_human_review


def test_missing_records_lower_the_confidence_and_ask_for_a_human(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    evidence = gather_evidence(conn, ids["SETTLED_AMOUNT_LOWER"])
    thin = Evidence(exception=evidence.exception, items=())
    answer = explain(thin)
    assert answer.root_cause == "SETTLED_AMOUNT_LOWER"  # from the exception's own amounts
    assert answer.confidence < 0.8
    assert answer.requires_human_review


def test_an_unknown_reason_code_is_unclassified_not_guessed() -> None:
    answer = explain(
        Evidence(
            exception={"entity_type": "payment", "entity_id": "pay_X1234", "reason_code": "NEW"},
            items=(),
        )
    )
    assert answer.root_cause == UNCLASSIFIED
    assert answer.confidence == 0.0
    assert answer.requires_human_review


def test_investigating_changes_no_financial_data_and_records_an_audit_entry(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    before = world.snapshot(conn)
    for exception_id in ids.values():
        investigate(conn, exception_id, client_config=NO_MODEL)
    assert world.snapshot(conn) == before
    entries = world.audit_entries(conn, "investigate")
    assert sorted(int(e["entity_id"]) for e in entries) == sorted(ids.values())
    assert all(e["payload"]["source"] == "deterministic" for e in entries)
    assert audit.verify(conn).ok


def test_investigate_accepts_a_path_and_names_a_missing_exception(db_url: str) -> None:
    conn = connect(db_url)
    ids = world.build(conn)
    conn.close()
    result = investigate(db_url, ids["NOT_SETTLED"], client_config=NO_MODEL)
    assert result.root_cause == "NOT_SETTLED"
    with pytest.raises(NotFoundError, match="no exception with id 9999"):
        investigate(db_url, 9999, client_config=NO_MODEL)


def test_root_cause_accuracy_scores_the_labels(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    by_id = {eid: cause for cause, eid in ids.items()}
    rows = [  # world.EXTRA: reused codes on new entity types, not labelled here
        r
        for r in conn.execute("SELECT id, entity_type, entity_id FROM exceptions").fetchall()
        if r[0] in by_id
    ]
    truth = pd.DataFrame(
        {
            "entity_type": [r[1] for r in rows] + ["payment"],
            "entity_id": [r[2] for r in rows] + ["pay_NEVERFLAGGED"],
            "root_cause": [by_id[r[0]] for r in rows] + ["NOT_SETTLED"],
        }
    )
    # One wrong label: the investigator must be scored down for it.
    truth.loc[truth["entity_id"] == "pay_GST001", "root_cause"] = "FEE_CHARGED_DIFFERENTLY"
    score = root_cause_accuracy(conn, truth)
    assert score.labelled == len(ids)
    assert score.correct == len(ids) - 1
    assert score.accuracy == pytest.approx((len(ids) - 1) / len(ids))
    assert score.missed == 1
    assert score.confusions == (("FEE_CHARGED_DIFFERENTLY", "GST_CHARGED_DIFFERENTLY", 1),)
    assert any("Root-cause accuracy" in line for line in score.lines())


def test_root_cause_accuracy_refuses_a_frame_without_labels(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, _ = seeded
    with pytest.raises(InputError, match="root_cause"):
        root_cause_accuracy(conn, pd.DataFrame({"entity_type": [], "entity_id": []}))


def test_dispute_rules_cite_the_dispute_its_rows_and_the_money(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    lost = investigate(conn, ids["DISPUTE_LOST_FUNDS"], client_config=NO_MODEL)
    assert "Dispute disp_LOST01 on payment pay_LOST01" in lost.summary
    assert "was lost: ₹300.00 debited and not reversed" in lost.summary
    assert "adjustment:adj_LOST010:setl_GOOD01:0" in lost.citations
    assert 30000 in lost.cited_amounts
    won = investigate(conn, ids["DISPUTE_REVERSAL_NOT_CREDITED"], client_config=NO_MODEL)
    assert "of ₹250.00 debited only ₹50.00 was reversed: ₹200.00 is still owed" in won.summary
    opened = investigate(conn, ids["DISPUTE_AWAITING_RESPONSE"], client_config=NO_MODEL)
    assert "is open (respond by 2026-07-03): ₹120.00 has been debited" in opened.summary
    assert "by 2026-07-03" in opened.recommendation
    for answer in (lost, won, opened):
        assert answer.requires_human_review


def test_a_dispute_without_its_record_is_explained_from_the_exception_alone() -> None:
    exception = {
        "entity_type": "dispute",
        "entity_id": "disp_GONE0001",
        "reason_code": "DISPUTE_OPEN",
        "expected_amount": 0,
        "actual_amount": 5000,
    }
    answer = explain(Evidence(exception=exception, items=()))
    assert answer.root_cause == "DISPUTE_AWAITING_RESPONSE"
    assert answer.confidence < 0.8


def test_an_international_amount_mismatch_is_told_in_inr_with_the_conversion() -> None:
    from core.investigate.tools import ToolResult

    payment = {"id": "pay_USD1", "amount": 6000, "currency": "USD", "base_amount": 501000}
    row = {"row_key": "payment:pay_USD1:setl_A:1", "entity_id": "pay_USD1", "type": "payment"}
    answer = explain(
        Evidence(
            exception={
                "entity_type": "payment",
                "entity_id": "pay_USD1",
                "reason_code": "AMOUNT_MISMATCH",
                "expected_amount": 501000,
                "actual_amount": 491000,
            },
            items=(
                ToolResult("payment", {"payment_id": "pay_USD1"}, (payment,)),
                ToolResult("recon_rows", {"entity_id": "pay_USD1"}, ({**row, "amount": 491000},)),
            ),
        )
    )
    # 6000 US cents are never compared with 491000 paise: less was settled than converted.
    assert answer.root_cause == "SETTLED_AMOUNT_LOWER"
    assert "USD 60.00, converted by Razorpay to ₹5,010.00" in answer.summary
    assert "₹100.00 less" in answer.summary


def test_a_second_reason_code_never_cites_the_primary_codes_amounts_as_its_own(
    tmp_path_factory: pytest.TempPathFactory, db_url: str
) -> None:
    """A new user's walkthrough (#89): a settlement discrepancy whose payment was also
    overcharged read "the contracted plan allows ₹1,594.36": the exception's expected
    amount, which is the settlement code's net credit, not the plan's fee (₹32.64)."""
    import json

    from core.__main__ import main
    from core.benchmark.generator import generate
    from core.books.pricing import PricingRule
    from core.books.store import save_pricing_plan
    from core.money import format_rupees

    folder = tmp_path_factory.mktemp("ambiguous") / "data"
    generate(folder, payments=600, seed=7, ambiguous=True)
    out = folder.parent / "results.csv"
    plan = json.loads((folder / "pricing_plan.json").read_text(encoding="utf-8"))
    conn = connect(db_url)
    try:
        save_pricing_plan(  # the merchant's plan: the benchmark's prices
            conn,
            effective_from=int(plan["effective_from"]),
            rules=tuple(PricingRule(**rule) for rule in plan["rules"]),
            actor="cfo@example.com",
            request_id="plan",
        )
    finally:
        conn.close()
    argv = ["reconcile", str(folder), "--out", str(out), "--db", db_url]
    assert main([*argv, "--as-of", "2026-06-30T23:59:59+05:30"]) == 0
    conn = connect(db_url)
    try:
        exception_id, expected = conn.execute(
            "SELECT id, expected_amount FROM exceptions"
            " WHERE reason_code = 'SETTLEMENT_AMOUNT_DISCREPANCY'"
            " AND reason_codes LIKE '%FEE_OVERCHARGED%' ORDER BY id LIMIT 1"
        ).fetchone()
        answer = explain(gather_evidence(conn, exception_id))
    finally:
        conn.close()

    text = answer.summary
    assert "Second reason code FEE_OVERCHARGED" in text, text
    assert "the contracted plan allows" not in text
    assert format_rupees(expected, symbol=True) not in text.split("Second reason code")[1]


def test_the_explanation_says_what_closing_the_books_means_for_the_exception(
    benchmark_1500: object, tmp_path: object
) -> None:
    """The guide: the investigator must explain what closing the books adds. An exception
    of a closed month is told that its change reaches the next open month as a prior-period
    adjustment; one of an open month, that settling it before the close keeps it inside."""
    from pathlib import Path

    from tests.books_late_support import close, migrated, reconciled

    db = Path(str(tmp_path)) / "books.sqlite"
    with migrated(db) as conn:
        reconciled(conn, Path(str(benchmark_1500)))
        close(conn, "2026-05")

        ist_month = "strftime('%Y-%m', datetime(entity_created_at + 19800, 'unixepoch'))"

        def one(month: str) -> int:
            return int(
                conn.execute(
                    f"SELECT id FROM exceptions WHERE entity_type = 'payment' AND {ist_month} = ?"
                    " ORDER BY id LIMIT 1",
                    (month,),
                ).fetchone()[0]
            )

        may = explain(gather_evidence(conn, one("2026-05"))).summary
        june = explain(gather_evidence(conn, one("2026-06"))).summary

    assert "Its month, 2026-05, was closed in the books on " in may
    assert "reaches the next open month as a prior-period adjustment" in may
    assert "Its month, 2026-06, is still open in the books" in june
