"""A model must earn its place: its answer is shown only when the root cause is one of the
exception's, agrees with the sign of the difference, every figure verifies (in the
evidence, or a sum or difference of two evidence amounts) and it is as specific as the
rules' answer. The request follows Google's Gemini 3 guidance."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from core.db import connect
from core.investigate import ClientConfig, ModelSpec, gather_evidence, investigate
from core.investigate.prompt import SYSTEM_INSTRUCTION, TASK
from core.investigate.verify import derivable
from core.money import format_inr
from core.root_causes import CAUSES_BY_CODE, DIFFERENCE_SIGN, ROOT_CAUSES
from tests import investigate_world as world
from tests.fake_gemini import FakeGemini, Reply, answer
from tests.fake_gemini import running as fake_gemini

LITE = "gemini-3.5-flash-lite"


@pytest.fixture
def seeded(db_url: str) -> Iterator[tuple[sqlite3.Connection, dict[str, int]]]:
    conn = connect(db_url)
    ids = world.build(conn)
    yield conn, ids
    conn.close()


@pytest.fixture
def server() -> Iterator[FakeGemini]:
    with fake_gemini() as fake:
        yield fake


def config(fake: FakeGemini, model: str = LITE, **overrides: Any) -> ClientConfig:
    values: dict[str, Any] = {
        "api_key": "test-key",
        "models": (ModelSpec(model, 5.0),),
        "base_url": fake.url,
        "clock": lambda: float(world.AS_OF),
        "max_tool_rounds": 0,
    }
    values.update(overrides)
    return ClientConfig(**values)


def reply(cause: str, summary: str, ids: list[str], amounts: list[int]) -> Reply:
    return answer(
        {
            "root_cause": cause,
            "confidence": 0.9,
            "summary": summary,
            "recommendation": "Raise it with the counterparty quoting the ids above.",
            "requires_human_review": True,
            "cited_record_ids": ids,
            "cited_amounts_paise": amounts,
        }
    )


def _exception(conn: sqlite3.Connection, exception_id: int) -> sqlite3.Row:
    row: sqlite3.Row = conn.execute(
        "SELECT * FROM exceptions WHERE id = ?", (exception_id,)
    ).fetchone()
    return row


@pytest.mark.parametrize(
    ("case", "wrong"),
    [
        ("SETTLED_AMOUNT_LOWER", "SETTLED_AMOUNT_HIGHER"),
        ("BANK_SHORT_CREDIT", "BANK_EXCESS_CREDIT"),
    ],
)
def test_a_root_cause_contradicting_the_sign_of_the_difference_is_discarded(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini, case: str, wrong: str
) -> None:
    conn, ids = seeded
    exc = _exception(conn, ids[case])
    assert exc["difference"] < 0  # less arrived than expected
    server.script[LITE] = reply(
        wrong,
        f"{exc['entity_id']}: {format_inr(abs(exc['difference']))} more than expected.",
        [exc["entity_id"]],
        [abs(exc["difference"])],
    )
    result = investigate(conn, ids[case], client_config=config(server))
    assert result.source == "deterministic"
    assert result.root_cause == case
    assert result.fallback_reason is not None
    assert "contradicts the amounts" in result.fallback_reason and wrong in result.fallback_reason
    [entry] = world.audit_entries(conn, "investigate.answer_discarded")
    assert "contradicts" in entry["payload"]["reason"]


def test_the_same_answer_with_the_sign_that_fits_is_shown(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    exc = _exception(conn, ids["BANK_SHORT_CREDIT"])
    server.script[LITE] = reply(
        "BANK_SHORT_CREDIT",
        f"{exc['entity_id']}: the bank credited {format_inr(abs(exc['difference']))} less.",
        [exc["entity_id"]],
        [abs(exc["difference"])],
    )
    result = investigate(conn, ids["BANK_SHORT_CREDIT"], client_config=config(server))
    assert result.source == LITE, result.fallback_reason


def test_every_signed_cause_belongs_to_a_code_and_the_vocabulary() -> None:
    coded = {cause for causes in CAUSES_BY_CODE.values() for cause in causes}
    assert set(DIFFERENCE_SIGN) <= coded <= set(ROOT_CAUSES)
    assert set(DIFFERENCE_SIGN.values()) == {-1, 1}


def test_a_vague_model_summary_loses_to_the_deterministic_one(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = reply(
        "SETTLED_TWICE",
        "A payment seems to have been settled more than once; please check with Razorpay.",
        [],
        [],
    )
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == "deterministic"
    assert result.fallback_reason is not None
    assert "less specific than the rules' answer" in result.fallback_reason
    assert "pay_DUP001" in result.fallback_reason and "₹1,470.00" in result.fallback_reason
    assert "pay_DUP001" in result.summary  # the rules' answer, which names it, is shown


def test_a_model_summary_naming_the_entity_but_not_the_difference_also_loses(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = reply(
        "SETTLED_TWICE", "pay_DUP001 is in two recon rows.", ["pay_DUP001"], []
    )
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == "deterministic"
    assert result.fallback_reason is not None
    assert "does not name the difference ₹1,470.00" in result.fallback_reason


def test_an_amount_that_is_a_sum_of_two_evidence_amounts_verifies(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    evidence = gather_evidence(conn, ids["SETTLED_TWICE"])
    amount = conn.execute("SELECT amount FROM payments WHERE id = 'pay_DUP001'").fetchone()[0]
    out = amount + 147000  # the captured amount plus the duplicate credit
    assert out not in evidence.amounts()  # not stated anywhere: only derivable
    server.script[LITE] = reply(
        "SETTLED_TWICE",
        f"pay_DUP001 was captured for {format_inr(amount)} but {format_inr(147000)} was "
        f"credited again, {format_inr(out)} paid out against it.",
        ["pay_DUP001"],
        [amount, 147000, out],
    )
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == LITE, result.fallback_reason
    assert format_inr(out) in result.summary


def test_an_amount_that_is_a_difference_of_two_evidence_amounts_verifies(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    evidence = gather_evidence(conn, ids["SETTLED_AMOUNT_LOWER"])
    fee = conn.execute("SELECT fee FROM payments WHERE id = 'pay_LOW001'").fetchone()[0]
    shortfall_after_fee = 50000 + fee  # the missing ₹500 and the fee the row still took
    assert shortfall_after_fee not in evidence.amounts()
    assert derivable(shortfall_after_fee, evidence.amounts())
    server.script[LITE] = reply(
        "SETTLED_AMOUNT_LOWER",
        f"pay_LOW001 settles {format_inr(50000)} less; with its fee the row is "
        f"{format_inr(shortfall_after_fee)} below the captured amount.",
        ["pay_LOW001"],
        [50000, shortfall_after_fee],
    )
    result = investigate(conn, ids["SETTLED_AMOUNT_LOWER"], client_config=config(server))
    assert result.source == LITE, result.fallback_reason


def test_a_fabricated_amount_is_still_discarded(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    evidence = gather_evidence(conn, ids["SETTLED_TWICE"])
    invented = 777713
    assert not derivable(invented, evidence.amounts())  # neither held nor a sum/difference
    server.script[LITE] = reply(
        "SETTLED_TWICE",
        f"pay_DUP001 is settled twice: {format_inr(147000)} extra, {format_inr(invented)} due.",
        ["pay_DUP001"],
        [147000],
    )
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == "deterministic"
    assert result.fallback_reason is not None
    assert format_inr(invented) in result.fallback_reason


def test_a_sum_of_three_evidence_amounts_does_not_verify() -> None:
    amounts = frozenset({100_00, 250_00, 400_00})
    assert derivable(350_00, amounts) and derivable(150_00, amounts)
    assert not derivable(750_00, amounts)


def test_no_temperature_is_sent_to_gemini_3_models_and_zero_to_older_ones(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    for model in (LITE, "gemini-2.5-flash"):
        server.script[model] = answer("{broken")
        investigate(conn, ids["SETTLED_TWICE"], client_config=config(server, model=model))
    gemini3, gemini25 = server.requests
    assert "temperature" not in gemini3.body["generationConfig"]
    assert gemini25.body["generationConfig"]["temperature"] == 0


def test_the_schema_enum_holds_only_the_causes_of_the_exceptions_codes(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = answer("{broken")
    investigate(conn, ids["SETTLED_AMOUNT_LOWER"], client_config=config(server))
    investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    amount, twice = server.requests
    enum = amount.body["generationConfig"]["responseJsonSchema"]["properties"]["root_cause"]
    assert enum["enum"] == ["SETTLED_AMOUNT_LOWER", "SETTLED_AMOUNT_HIGHER"]
    listed = [c["root_cause"] for c in amount.evidence()["allowed_root_causes"]]
    assert listed == enum["enum"]
    other = twice.body["generationConfig"]["responseJsonSchema"]["properties"]["root_cause"]
    assert other["enum"] == ["SETTLED_TWICE"]


def test_the_prompt_puts_the_evidence_first_the_task_last_behind_a_stable_prefix(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = answer("{broken")
    cfg = config(server, max_tool_rounds=2)
    investigate(conn, ids["SETTLED_TWICE"], client_config=cfg)
    investigate(conn, ids["BANK_SHORT_CREDIT"], client_config=cfg)
    first, second = server.requests
    for request in (first, second):
        text = request.user_text
        assert text.startswith("<evidence>")
        assert text.rstrip().endswith(TASK)
        assert text.index("</evidence>") < text.index(TASK)
    # The fixed prefix (system instruction, glossary, tools) is byte-identical across
    # exceptions, so the API's implicit cache can serve it.
    assert first.body["systemInstruction"] == second.body["systemInstruction"]
    assert first.body["tools"] == second.body["tools"]
    system = first.body["systemInstruction"]["parts"][0]["text"]
    assert system == SYSTEM_INSTRUCTION
    for term in ("fee = base fee + GST", "difference = actual_amount - expected_amount", "T+N"):
        assert term in system


def test_schema_fields_and_tool_parameters_carry_descriptions(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = answer("{broken")
    investigate(conn, ids["SETTLED_TWICE"], client_config=config(server, max_tool_rounds=1))
    [request] = server.requests
    schema = request.body["generationConfig"]["responseJsonSchema"]
    for name, field in schema["properties"].items():
        assert field.get("description"), f"answer field {name} has no description"
    for declaration in request.body["tools"][0]["functionDeclarations"]:
        assert declaration["description"]
        # google-genai 3.3 writes this key in snake case on the wire.
        parameters = (
            declaration.get("parametersJsonSchema") or declaration["parameters_json_schema"]
        )
        properties = parameters["properties"]
        for name, parameter in properties.items():
            assert parameter.get("description"), f"{declaration['name']}.{name} undescribed"
