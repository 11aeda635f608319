"""The tool-calling loop end to end: the stand-in Gemini asks for tools, the real SDK and our
loop run them on the read-only allow-list, send the function responses, and the model's
answer is built from what the tools returned."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from core.db import connect
from core.investigate import ClientConfig, ModelSpec, investigate
from core.money import format_inr
from tests import investigate_world as world
from tests.fake_gemini import FakeGemini, FakeRequest, ToolUsingModel
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


def config(fake: FakeGemini, **overrides: Any) -> ClientConfig:
    values: dict[str, Any] = {
        "api_key": "test-key",
        "models": (ModelSpec(LITE, 5.0),),
        "base_url": fake.url,
        "clock": lambda: float(world.AS_OF),
    }
    values.update(overrides)
    return ClientConfig(**values)


def _settlement_of(request: FakeRequest) -> str:
    for item in request.evidence()["tool_results"]:
        if item["tool"] == "settlement":
            return str(item["records"][0]["id"])
    raise AssertionError("the evidence holds no settlement")


def _answer_from_arithmetic(request: FakeRequest, outputs: dict[str, Any]) -> dict[str, Any]:
    """Answers only with figures the settlement_arithmetic tool returned."""
    exc = request.evidence()["exception"]
    [record] = outputs["call-0"]["records"]
    net, rows = record["net_of_rows"], record["rows"]
    return {
        "root_cause": "SETTLED_TWICE",
        "confidence": 0.8,
        "summary": (
            f"{exc['entity_id']} is in {record['settlement_id']} twice: its {rows} rows net "
            f"{format_inr(net)}, {format_inr(exc['difference'])} more than once."
        ),
        "recommendation": f"Ask Razorpay to recover {format_inr(exc['difference'])}.",
        "requires_human_review": True,
        "cited_record_ids": [exc["entity_id"], record["settlement_id"]],
        "cited_amounts_paise": [net, exc["difference"]],
    }


def test_the_model_calls_a_tool_the_loop_runs_it_and_the_answer_uses_its_result(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    model = ToolUsingModel(
        plan=lambda r: [("settlement_arithmetic", {"settlement_id": _settlement_of(r)})],
        answer_from=_answer_from_arithmetic,
    )
    server.script[LITE] = model
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))

    # The model asked once, for the settlement of the duplicated payment.
    assert model.asked == [("call-0", "settlement_arithmetic", {"settlement_id": "setl_GOOD01"})]
    first, second = server.requests
    assert "tools" in first.body
    # Our loop sent the function call back with its response, matched by id and name.
    calls = [
        p["functionCall"]
        for c in second.body["contents"]
        for p in c["parts"]
        if "functionCall" in p
    ]
    assert calls == [
        {"id": "call-0", "name": "settlement_arithmetic", "args": {"settlement_id": "setl_GOOD01"}}
    ]
    [response] = second.function_responses
    assert (response["id"], response["name"]) == ("call-0", "settlement_arithmetic")

    # The tool really ran, with those arguments, on the database's rows.
    credit, debit = conn.execute(
        "SELECT sum(credit), sum(debit) FROM recon_rows WHERE settlement_id = 'setl_GOOD01'"
    ).fetchone()
    # (The gathered evidence may hold the same settlement's arithmetic already: the model's
    # call is the last item, appended by the loop.)
    ran = result.evidence.items[-1]
    assert (ran.tool, dict(ran.args)) == ("settlement_arithmetic", {"settlement_id": "setl_GOOD01"})
    assert ran.records[0]["net_of_rows"] == credit - debit

    # The answer shown is the model's, built from the tool's output, and it verified.
    assert result.source == LITE, result.fallback_reason
    assert format_inr(credit - debit) in result.summary
    assert credit - debit in result.cited_amounts
    assert "setl_GOOD01" in result.citations


def test_several_calls_in_one_turn_each_get_their_own_response(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded

    def answer_from(request: FakeRequest, outputs: dict[str, Any]) -> dict[str, Any]:
        answer = _answer_from_arithmetic(request, outputs)
        [payment] = outputs["call-1"]["records"]
        answer["summary"] += f" Its amount is {format_inr(payment['amount'])}."
        answer["cited_amounts_paise"].append(payment["amount"])
        return answer

    server.script[LITE] = ToolUsingModel(
        plan=lambda r: [
            ("settlement_arithmetic", {"settlement_id": _settlement_of(r)}),
            ("payment", {"payment_id": r.evidence()["exception"]["entity_id"]}),
        ],
        answer_from=answer_from,
    )
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    responses = server.requests[1].function_responses
    assert [(r["id"], r["name"]) for r in responses] == [
        ("call-0", "settlement_arithmetic"),
        ("call-1", "payment"),
    ]
    amount = conn.execute("SELECT amount FROM payments WHERE id = 'pay_DUP001'").fetchone()[0]
    assert result.source == LITE, result.fallback_reason
    assert format_inr(amount) in result.summary


def test_tool_output_reaches_the_model_redacted(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    conn.execute(
        "UPDATE payments SET notes = ? WHERE id = 'pay_OTHER1'",
        ('{"customer_name": "Meera Iyer", "pan": "AMZPI4821K"}',),
    )
    server.script[LITE] = ToolUsingModel(
        plan=lambda r: [("payment", {"payment_id": "pay_OTHER1"})],
        answer_from=lambda r, o: {
            "root_cause": "SETTLED_TWICE",
            "confidence": 0.5,
            "summary": "x",
            "recommendation": "y",
            "requires_human_review": True,
        },
    )
    investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    [response] = server.requests[1].function_responses
    output = response["response"]["output"]
    assert "pay_OTHER1" in output
    for secret in ("Meera", "Iyer", "AMZPI4821K"):
        assert secret not in server.requests[1].raw
    assert "[NAME]" in output and "[PAN]" in output
