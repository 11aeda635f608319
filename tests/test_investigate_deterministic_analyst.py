"""The deterministic investigator as a senior analyst (issue 15): on the spec's worked
example, each weak case gets concrete, cross-entity advice with ids, amounts, direction,
deadline, a draft or a journal entry where due, materiality, and a human only when needed."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator

import pytest

from core.db import connect, migrate
from core.engine import EngineParams
from core.engine.cli import parse_as_of
from core.errors import ConfigError
from core.investigate import gather_evidence
from core.investigate.deterministic import MATERIALITY_ENV, Policy, explain
from core.investigate.evidence import Evidence
from core.investigate.result import Answer
from core.investigate.tools import ToolResult
from core.investigate.verify import amounts_in_text
from core.pipeline import reconcile_folder_into_db
from tests.conftest import SPEC_EXAMPLE

AS_OF = "2026-06-30T23:59:59+05:30"
DEFAULT = Policy()


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def spec_db(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[sqlite3.Connection]:
    """The spec example reconciled once per module, on SQLite and on PostgreSQL (the
    session's server, a database of its own: tests/conftest.py's pg_url, module-wide)."""
    name = ""
    if request.param == "postgres":
        from tests.postgres_server import PostgresServer

        server = request.getfixturevalue("postgres_server")
        assert isinstance(server, PostgresServer)
        name = server.fresh_database()
        conn = connect(server.url(name))
    else:
        conn = connect(tmp_path_factory.mktemp("spec") / "razorrecon.sqlite")
        migrate(conn)
    reconcile_folder_into_db(
        conn, SPEC_EXAMPLE / "dataset", params=EngineParams(), as_of=parse_as_of(AS_OF)
    )
    yield conn
    conn.close()
    if name:
        server.release_database(name)


def _exception_ids(conn: sqlite3.Connection) -> dict[str, int]:
    return {
        str(entity_id): int(eid)
        for eid, entity_id in conn.execute("SELECT id, entity_id FROM exceptions").fetchall()
    }


def _answer(conn: sqlite3.Connection, entity_id: str, policy: Policy = DEFAULT) -> Answer:
    return explain(gather_evidence(conn, _exception_ids(conn)[entity_id]), policy)


def test_every_spec_example_recommendation_names_its_ids_and_amounts(
    spec_db: sqlite3.Connection,
) -> None:
    rows = spec_db.execute("SELECT id, entity_id FROM exceptions").fetchall()
    assert len(rows) > 30
    for exception_id, entity_id in rows:
        answer = explain(gather_evidence(spec_db, int(exception_id)), DEFAULT)
        assert str(entity_id) in answer.recommendation, answer.recommendation
        named = [paise for _, paise in amounts_in_text(answer.recommendation) if paise]
        assert named, f"no amount in the advice for {entity_id}: {answer.recommendation}"
        assert set(named) & set(answer.cited_amounts)


def test_a_one_paisa_difference_is_written_off_below_materiality_not_raised_with_support(
    spec_db: sqlite3.Connection,
) -> None:
    answer = _answer(spec_db, "pay_Ionrec85Ljdtlb")
    assert answer.recommendation.startswith("Write off ₹0.01 on payment pay_Ionrec85Ljdtlb")
    assert "do not raise it with Razorpay support" in answer.recommendation
    assert "Draft to" not in answer.recommendation and answer.draft_message == ""
    assert answer.journal_entry.startswith("Dr Payment gateway charges ₹0.01")
    assert not answer.requires_human_review
    # With no materiality threshold the same paisa is chased, not written off.
    chased = _answer(spec_db, "pay_Ionrec85Ljdtlb", Policy(materiality_paise=0))
    assert chased.recommendation.startswith("Claim ₹0.01 back from Razorpay support")
    assert "pay_Ionrec85Ljdtlb" in chased.draft_message


def test_materiality_is_read_from_the_environment_and_a_bad_value_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MATERIALITY_ENV, "5000")
    assert Policy.from_env().materiality_paise == 5000
    monkeypatch.setenv(MATERIALITY_ENV, "ten rupees")
    with pytest.raises(ConfigError, match=MATERIALITY_ENV):
        Policy.from_env()
    monkeypatch.delenv(MATERIALITY_ENV)
    assert Policy.from_env() == Policy()


def test_a_fee_whose_gst_merely_followed_it_is_a_fee_difference_in_a_failed_settlement(
    spec_db: sqlite3.Connection,
) -> None:
    answer = _answer(spec_db, "pay_2y9rCXCU81tqCV")
    assert answer.root_cause == "FEE_CHARGED_DIFFERENTLY"
    assert "a fee of ₹16.03 before GST was charged" in answer.summary
    assert "GST ₹2.88 is 18% of that fee, so it merely followed the fee" in answer.summary
    assert "settlement setl_EssAtyPjtcIEb9 of ₹66,20,676.68, whose payout failed" in (
        answer.summary
    )
    assert "Settlement setl_EssAtyPjtcIEb9's payout failed" in answer.recommendation
    assert answer.recommendation.startswith("Claim ₹18.91 back from Razorpay support")


def test_a_refund_debited_twice_that_the_settlement_adds_up_with_is_claimed_back(
    spec_db: sqlite3.Connection,
) -> None:
    answer = _answer(spec_db, "rfnd_MSuPTFyCYsghg9")
    assert "₹4,48,021.01 really was taken twice" in answer.summary
    assert answer.recommendation.startswith("Claim ₹4,48,021.01 back from Razorpay")
    assert "do not book both" not in answer.recommendation
    assert "reverse the duplicate debit of ₹4,48,021.01" in answer.draft_message
    assert "rfnd_MSuPTFyCYsghg9" in answer.draft_message
    assert answer.journal_entry.startswith("Dr Razorpay receivable ₹4,48,021.01 / Cr Customer")
    assert answer.requires_human_review  # ₹4.48 lakh is above the review threshold


def test_a_duplicate_bank_credit_by_imps_and_neft_that_raised_the_balance_is_clawed_back(
    spec_db: sqlite3.Connection,
) -> None:
    answer = _answer(spec_db, "setl_13pIPuxKhxtuQx")
    assert answer.root_cause == "BANK_CREDITED_TWICE"
    assert "(IMPS, ₹15,86,353.60" in answer.summary and "(NEFT, ₹15,86,353.60" in answer.summary
    assert "raised the running balance" in answer.summary
    assert answer.recommendation.startswith("Razorpay paid settlement setl_13pIPuxKhxtuQx twice")
    assert "will claw it back" in answer.recommendation
    assert "confirm with the bank" not in answer.recommendation.lower()
    assert answer.journal_entry.startswith("Dr Bank ₹15,86,353.60 / Cr Razorpay suspense")


@pytest.mark.parametrize(
    ("entity_id", "amount", "days"),
    [
        ("pay_ODH5ms7ZitgwXr", "₹4,98,887.00", 34),
        ("setl_2PeM10pOuIJoE8", "₹13,14,236.32", 22),
        ("setl_r8NyjfPEPMnLJm", "₹9,49,914.38", 39),
    ],
)
def test_large_amounts_missing_weeks_after_due_need_a_human(
    spec_db: sqlite3.Connection, entity_id: str, amount: str, days: int
) -> None:
    answer = _answer(spec_db, entity_id)
    assert answer.requires_human_review
    assert f"{amount} is at stake" in answer.recommendation
    assert f"{days} days past due" in answer.recommendation
    assert f"is {days} days overdue" in answer.recommendation
    # Review follows amount and age: raise both thresholds and the same answer is routine.
    relaxed = _answer(
        spec_db, entity_id, Policy(review_amount_paise=10**12, review_overdue_days=90)
    )
    assert not relaxed.requires_human_review
    assert "No human review needed" in relaxed.recommendation


def test_a_mis_mapped_order_names_its_true_owner(spec_db: sqlite3.Connection) -> None:
    answer = _answer(spec_db, "pay_E7Qg1PcEix1ah7")
    assert answer.root_cause == "MAPPED_TO_OTHER_ORDER"
    owner = "Order order_HkopGZrnaYv2ZL belongs to payment pay_d7WkjzTvqNZcHL (₹2,74,080.00"
    assert owner in answer.summary
    assert "order order_HkopGZrnaYv2ZL belongs to payment pay_d7WkjzTvqNZcHL" in (
        answer.recommendation
    )
    assert "pay_d7WkjzTvqNZcHL" in answer.citations


def test_a_second_reason_code_is_explained_and_costs_confidence(
    spec_db: sqlite3.Connection,
) -> None:
    both = _answer(spec_db, "pay_5YRLtmkOAjF5a8")  # AMOUNT_MISMATCH;TIMING_WINDOW_EXCEEDED
    assert "Second reason code TIMING_WINDOW_EXCEEDED (SETTLED_LATE)" in both.summary
    assert "due on 2026-06-09 (T+2)" in both.summary and "settled on 2026-06-11" in both.summary
    evidence = gather_evidence(spec_db, _exception_ids(spec_db)["pay_5YRLtmkOAjF5a8"])
    one_code = {**evidence.exception, "reason_codes": "AMOUNT_MISMATCH"}
    alone = explain(Evidence(exception=one_code, items=evidence.items), DEFAULT)
    assert "Second reason code" not in alone.summary
    assert both.root_cause == alone.root_cause == "SETTLED_AMOUNT_LOWER"
    assert both.confidence < alone.confidence


def test_an_unexplained_settlement_difference_says_which_way_the_money_is_short(
    spec_db: sqlite3.Connection,
) -> None:
    answer = _answer(spec_db, "setl_tYcPsjkTbJmoCh")
    assert "Razorpay paid ₹1,086.93 less than the rows add up to" in answer.summary
    assert "-₹" not in answer.summary
    assert "Razorpay paid ₹1,086.93 less than the settlement's recon rows" in (
        answer.recommendation
    )
    assert "setl_tYcPsjkTbJmoCh" in answer.draft_message


def test_confidence_follows_the_ambiguity_and_is_not_a_constant(
    spec_db: sqlite3.Connection,
) -> None:
    answers = {
        entity_id: explain(gather_evidence(spec_db, eid), DEFAULT)
        for entity_id, eid in _exception_ids(spec_db).items()
    }
    assert len({a.confidence for a in answers.values()}) >= 3
    # A duplicate in a settlement that adds up neither with nor without it: combined faults.
    tangled = answers["pay_z0hEeJBP3gX3TC"]
    assert "one of several faults" in tangled.summary
    assert tangled.confidence < 0.8 and tangled.requires_human_review
    assert answers["pay_cPFibEZxq1WDmx"].confidence > tangled.confidence


def _refund_evidence(refund_created: int, payment_created: int) -> Evidence:
    refund = {
        "id": "rfnd_TIME0001",
        "payment_id": "pay_TIME0001",
        "amount": 50000,
        "created_at": refund_created,
        "created_date": "2026-06-01",
    }
    payment = {"id": "pay_TIME0001", "amount": 90000, "created_at": payment_created}
    row = {
        "row_key": "refund:rfnd_TIME0001:setl_TIME0001:1",
        "entity_id": "rfnd_TIME0001",
        "type": "refund",
        "debit": 51000,
        "credit": 0,
        "fee": 0,
        "settlement_id": "setl_TIME0001",
    }
    return Evidence(
        exception={
            "entity_type": "refund",
            "entity_id": "rfnd_TIME0001",
            "reason_code": "REFUND_AMOUNT_MISMATCH",
            "expected_amount": 50000,
            "actual_amount": 51000,
            "difference": 1000,
        },
        items=(
            ToolResult("refund", {"refund_id": "rfnd_TIME0001"}, (refund,)),
            ToolResult("payment", {"payment_id": "pay_TIME0001"}, (payment,)),
            ToolResult("recon_rows", {"entity_id": "rfnd_TIME0001"}, (row,)),
        ),
    )


def test_a_refund_created_before_its_payment_is_an_impossible_timeline() -> None:
    impossible = explain(_refund_evidence(1_780_000_000, 1_780_500_000), DEFAULT)
    possible = explain(_refund_evidence(1_780_500_000, 1_780_000_000), DEFAULT)
    assert "Impossible timeline: refund rfnd_TIME0001" in impossible.summary
    assert "before its payment pay_TIME0001" in impossible.summary
    assert impossible.requires_human_review
    assert "the timeline is impossible" in impossible.recommendation
    assert "Impossible" not in possible.summary
    assert impossible.confidence < possible.confidence
    # Debited ₹10 more than the refund: claimed back, with the draft and the entry.
    assert possible.recommendation.startswith("Claim ₹10.00 back from Razorpay support")
    assert possible.journal_entry.startswith("Dr Razorpay receivable ₹10.00")


def _duplicate_evidence(settlement_difference: int) -> Evidence:
    rows = tuple(
        {
            "row_key": f"payment:pay_DUPE0001:setl_DUPE0001:{n}",
            "entity_id": "pay_DUPE0001",
            "type": "payment",
            "credit": 70000,
            "debit": 0,
            "settlement_id": "setl_DUPE0001",
        }
        for n in (1, 2)
    )
    arithmetic = {"settlement_id": "setl_DUPE0001", "difference": settlement_difference}
    return Evidence(
        exception={
            "entity_type": "payment",
            "entity_id": "pay_DUPE0001",
            "reason_code": "DUPLICATE_RECONCILIATION_RECORD",
            "expected_amount": 70000,
            "actual_amount": 140000,
            "difference": 70000,
            "settlement_id": "setl_DUPE0001",
        },
        items=(
            ToolResult("recon_rows", {"entity_id": "pay_DUPE0001"}, rows),
            ToolResult("settlement_arithmetic", {"settlement_id": "setl_DUPE0001"}, (arithmetic,)),
        ),
    )


def test_a_duplicate_row_the_settlement_counts_once_is_booked_once_not_claimed() -> None:
    echo = explain(_duplicate_evidence(-70000), DEFAULT)
    assert "the report repeats a line" in echo.summary
    assert echo.recommendation.startswith("Book payment pay_DUPE0001 once")
    assert echo.journal_entry == ""
    twice = explain(_duplicate_evidence(0), DEFAULT)
    assert "₹700.00 really was paid twice" in twice.summary
    assert "Razorpay will claw it back" in twice.recommendation
    assert twice.journal_entry.startswith("Dr Razorpay receivable ₹700.00 / Cr Razorpay suspense")


def _bank_twice_evidence(second_balance: int) -> Evidence:
    settlement = {"id": "setl_BANK0001", "amount": 250000, "utr": "UTIBN12345678901"}
    lines = (
        {
            "id": "stmt.csv:4",
            "line_no": 4,
            "txn_date": "2026-06-02",
            "narration": "NEFT CR-RAZORPAY-UTIBN12345678901",
            "utr": "UTIBN12345678901",
            "credit": 250000,
            "balance": 1_000_000,
        },
        {
            "id": "stmt.csv:5",
            "line_no": 5,
            "txn_date": "2026-06-02",
            "narration": "NEFT CR-RAZORPAY-UTIBN12345678901",
            "utr": "UTIBN12345678901",
            "credit": 250000,
            "balance": second_balance,
        },
    )
    return Evidence(
        exception={
            "entity_type": "settlement",
            "entity_id": "setl_BANK0001",
            "reason_code": "DUPLICATE_BANK_CREDIT",
            "expected_amount": 250000,
            "actual_amount": 500000,
            "difference": 250000,
            "utr": "UTIBN12345678901",
        },
        items=(
            ToolResult("settlement", {"settlement_id": "setl_BANK0001"}, (settlement,)),
            ToolResult("bank_lines", {"utr": "UTIBN12345678901"}, lines),
        ),
    )


def test_a_repeated_statement_line_with_the_same_balance_is_not_a_second_payout() -> None:
    echo = explain(_bank_twice_evidence(1_000_000), DEFAULT)
    assert "the statement repeats one credit" in echo.summary
    assert "Ask the bank for a corrected statement" in echo.recommendation
    assert "Draft to the bank" in echo.recommendation
    paid = explain(_bank_twice_evidence(1_250_000), DEFAULT)
    assert "Razorpay paid twice" in paid.summary
    assert "Draft to Razorpay support" in paid.recommendation


def test_spec_example_advice_cites_evidence_amounts_or_the_policy_thresholds(
    spec_db: sqlite3.Connection,
) -> None:
    """Every ₹ amount in a summary or recommendation is an evidence amount, the difference
    or sum of two, or one of the policy's thresholds: nothing is made up."""
    thresholds = {DEFAULT.materiality_paise, DEFAULT.review_amount_paise}
    for exception_id in _exception_ids(spec_db).values():
        evidence = gather_evidence(spec_db, exception_id)
        answer = explain(evidence, DEFAULT)
        known = evidence.amounts()
        values = sorted(known)
        for written, paise in amounts_in_text(f"{answer.summary}\n{answer.recommendation}"):
            assert paise is not None, written
            if paise in known or paise in thresholds:
                continue
            assert any(paise + v in known or abs(paise - v) in known for v in values), (
                written,
                answer.summary,
            )
        assert not re.search(r"-₹", answer.recommendation)


def test_a_model_answer_without_the_new_fields_still_reads() -> None:
    data = {
        "root_cause": "SETTLED_LATE",
        "confidence": 0.5,
        "summary": "s",
        "recommendation": "r",
        "requires_human_review": False,
    }
    answer = Answer.from_dict(data)
    assert answer.draft_message == "" and answer.journal_entry == ""
    assert Answer.from_dict(answer.to_dict()) == answer
