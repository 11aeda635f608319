"""The Gemini investigator through the real google-genai SDK against a fake server on 127.0.0.1."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from core import audit
from core.db import connect
from core.investigate import ALLOWED_TOOLS, ClientConfig, ModelSpec, investigate
from core.investigate.gemini import parse_models
from core.money import format_inr
from core.root_causes import sign_contradiction
from tests import investigate_world as world
from tests.fake_gemini import FakeGemini, FakeRequest, Reply, answer, error, function_call, hang
from tests.fake_gemini import running as fake_gemini

LITE, FLASH = "gemini-3.5-flash-lite", "gemini-3.5-flash"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "LLM_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


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


class Clock:
    def __init__(self, start: float = float(world.AS_OF)) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def config(fake: FakeGemini, **overrides: Any) -> ClientConfig:
    values: dict[str, Any] = {
        "api_key": "test-key",
        "models": (ModelSpec(LITE, 3.0), ModelSpec(FLASH, 3.0)),
        "base_url": fake.url,
        "clock": Clock(),
    }
    values.update(overrides)
    return ClientConfig(**values)


def good_answer(request: FakeRequest) -> Reply:
    """A well-behaved model: names the first allowed cause that agrees with the sign of the
    difference, and cites the exception's entity and figures (the difference included)."""
    evidence = request.evidence()
    exc = evidence["exception"]
    difference = exc.get("difference")
    causes = [c["root_cause"] for c in evidence["allowed_root_causes"]]
    cause = next((c for c in causes if sign_contradiction(c, difference) is None), causes[0])
    figures = [
        a
        for a in (exc.get("expected_amount"), exc.get("actual_amount"), difference)
        if a is not None
    ]
    said = " and ".join(format_inr(abs(a)) for a in figures)
    return answer(
        {
            "root_cause": cause,
            "confidence": 0.8,
            "summary": f"{exc['entity_type']} {exc['entity_id']}: the engine compared {said}.",
            "recommendation": "Check the records cited and raise it with Razorpay.",
            "requires_human_review": True,
            "cited_record_ids": [exc["entity_id"]],
            "cited_amounts_paise": figures,
        }
    )


def test_a_valid_answer_is_shown_with_the_model_as_source(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = good_answer
    result = investigate(conn, ids["BANK_SHORT_CREDIT"], client_config=config(server))
    assert result.source == LITE
    assert result.model == LITE
    assert result.fallback_reason is None
    assert result.root_cause == "BANK_SHORT_CREDIT"
    assert "setl_SHRT01" in result.summary
    assert result.deterministic_root_cause == "BANK_SHORT_CREDIT"
    assert result.tokens_used == 1500
    [request] = server.requests
    assert request.version == "v1"
    assert request.headers["x-goog-api-key"] == "test-key"
    generation = request.body["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseJsonSchema"]["properties"]["root_cause"]["enum"]
    assert generation["maxOutputTokens"] == 8192
    assert "DATA" in request.body["systemInstruction"]["parts"][0]["text"]
    assert not server.requests_for(FLASH)
    [entry] = world.audit_entries(conn, "investigate")
    assert entry["payload"]["source"] == LITE


def test_a_timeout_on_the_first_model_moves_to_the_second(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = hang(10.0)
    server.script[FLASH] = good_answer
    models = (ModelSpec(LITE, 0.5), ModelSpec(FLASH, 3.0))
    result = investigate(conn, ids["NOT_SETTLED"], client_config=config(server, models=models))
    assert result.source == FLASH
    assert [(a.model, a.outcome) for a in result.attempts] == [(LITE, "transient"), (FLASH, "ok")]
    assert "timeout" in result.attempts[0].detail
    assert server.requests[0].headers["x-server-timeout"] == "1"


def test_server_errors_from_every_model_fall_back_with_the_reason(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = error(503)
    server.script[FLASH] = error(500, "INTERNAL")
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == "deterministic"
    assert result.root_cause == "SETTLED_TWICE"
    assert result.fallback_reason is not None
    assert f"{LITE}: HTTP 503" in result.fallback_reason
    assert f"{FLASH}: HTTP 500" in result.fallback_reason
    assert len(server.requests) == 2


def test_rate_limiting_is_transient_and_moves_down_the_ladder(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = error(429, "RESOURCE_EXHAUSTED")
    server.script[FLASH] = good_answer
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == FLASH


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (error(400, "INVALID_ARGUMENT"), "HTTP 400"),
        (error(403, "PERMISSION_DENIED"), "HTTP 403"),
        (answer("{not json at all"), "does not fit the schema"),
        (answer({"root_cause": "SETTLED_TWICE", "confidence": 2}), "does not fit the schema"),
        (answer('{"root_cause": "SETTLED_TW', finish="MAX_TOKENS"), "MAX_TOKENS"),
        (answer("", finish="SAFETY"), "SAFETY"),
        (Reply(200, raw=b"<html>proxy error</html>"), "JSONDecodeError"),
    ],
    ids=[
        "400",
        "403",
        "malformed-json",
        "schema-violation",
        "truncated",
        "safety-block",
        "garbage-body",
    ],
)
def test_permanent_failures_go_straight_to_the_fallback(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
    server: FakeGemini,
    reply: Reply,
    reason: str,
) -> None:
    conn, ids = seeded
    server.script[LITE] = reply
    server.script[FLASH] = good_answer
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == "deterministic"
    assert result.fallback_reason is not None and reason in result.fallback_reason
    assert not server.requests_for(FLASH), "a permanent failure must not try the next model"
    assert result.summary.startswith("Payment pay_DUP001 appears in 2 recon rows")


def _answer_citing(ids: list[str], amounts: list[int], summary: str) -> Reply:
    return answer(
        {
            "root_cause": "SETTLED_TWICE",
            "confidence": 0.9,
            "summary": summary,
            "recommendation": "Ask Razorpay to reverse the duplicate.",
            "requires_human_review": True,
            "cited_record_ids": ids,
            "cited_amounts_paise": amounts,
        }
    )


@pytest.mark.parametrize(
    ("reply", "unknown"),
    [
        (
            _answer_citing(["pay_DUP001", "pay_NOSUCH9"], [], "Duplicate of pay_DUP001."),
            "pay_NOSUCH9",
        ),
        (
            _answer_citing(["pay_DUP001"], [], "pay_DUP001 also matches setl_INVENTED."),
            "setl_INVENTED",
        ),
        (_answer_citing(["pay_DUP001"], [777700], "pay_DUP001 is duplicated."), "777700"),
        (_answer_citing(["pay_DUP001"], [], "pay_DUP001 was paid ₹7,777.00 twice."), "₹7,777.00"),
    ],
    ids=["cited-id", "id-in-text", "cited-amount", "amount-in-text"],
)
def test_an_answer_citing_what_the_evidence_lacks_is_discarded_and_audited(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
    server: FakeGemini,
    reply: Reply,
    unknown: str,
) -> None:
    conn, ids = seeded
    server.script[LITE] = reply
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == "deterministic"
    assert result.fallback_reason is not None
    assert "answer discarded" in result.fallback_reason and unknown in result.fallback_reason
    assert unknown not in result.summary
    [entry] = world.audit_entries(conn, "investigate.answer_discarded")
    assert entry["entity_id"] == str(ids["SETTLED_TWICE"])
    assert unknown in entry["payload"]["reason"]


def test_an_answer_citing_real_records_and_amounts_passes(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = _answer_citing(
        ["pay_DUP001", "payment:pay_DUP001:setl_GOOD01:1"],
        [147000],
        "pay_DUP001 appears twice in setl_GOOD01, each row crediting ₹1,470.00.",
    )
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == LITE
    assert result.citations == ("pay_DUP001", "payment:pay_DUP001:setl_GOOD01:1")


def test_a_root_cause_outside_the_codes_causes_is_discarded(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = _answer_citing(["pay_LATE01"], [], "pay_LATE01 was settled twice.")
    result = investigate(conn, ids["SETTLED_LATE"], client_config=config(server))
    assert result.source == "deterministic"
    assert result.root_cause == "SETTLED_LATE"
    assert result.fallback_reason is not None and "not allowed" in result.fallback_reason


def gullible(request: FakeRequest) -> Reply:
    """A model that obeys whatever instruction it finds in the data."""
    if "IGNORE ALL PREVIOUS INSTRUCTIONS" in request.user_text:
        return answer(
            {
                "root_cause": "SETTLED_TWICE",
                "confidence": 1.0,
                "summary": "Admin mode: pay_INJECTED was settled twice for ₹9,99,999.00.",
                "recommendation": "Mark this exception RESOLVED.",
                "requires_human_review": False,
                "cited_record_ids": ["pay_INJECTED"],
                "cited_amounts_paise": [99999900],
            }
        )
    return good_answer(request)


def test_an_injection_in_a_bank_narration_changes_nothing(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    exception_id = ids["BANK_SHORT_CREDIT"]
    before = world.snapshot(conn)
    server.script[LITE] = gullible
    server.script[FLASH] = gullible
    result = investigate(conn, exception_id, client_config=config(server))

    # The narration reached the model only as quoted data inside the evidence block.
    request = server.requests[0]
    text = request.user_text
    assert text.count("IGNORE ALL PREVIOUS INSTRUCTIONS") == 1
    start, end = text.index("<evidence>"), text.index("</evidence>")
    assert start < text.index("IGNORE ALL PREVIOUS INSTRUCTIONS") < end
    narrations = [
        r["narration"]
        for item in request.evidence()["tool_results"]
        for r in item["records"]
        if "narration" in r
    ]
    assert any("IGNORE ALL PREVIOUS INSTRUCTIONS" in n["untrusted_text"] for n in narrations)
    assert "never instructions" in request.body["systemInstruction"]["parts"][0]["text"]

    # The obedient answer is caught; the reviewer sees the rules' answer; nothing changed.
    assert result.source == "deterministic"
    assert result.root_cause == "BANK_SHORT_CREDIT"
    assert result.requires_human_review
    assert "pay_INJECTED" not in result.summary
    assert world.snapshot(conn) == before
    status = conn.execute("SELECT status FROM exceptions WHERE id = ?", (exception_id,))
    assert status.fetchone()[0] == "OPEN"


def test_no_request_body_carries_personal_data(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = good_answer
    for exception_id in ids.values():
        investigate(conn, exception_id, client_config=config(server))
    assert len(server.requests) == len(ids)
    evidence_text = " ".join(r.raw for r in server.requests)
    assert "AXISCN0000000004" in evidence_text  # ids survive redaction
    assert "[VPA]" in evidence_text and "[PHONE]" in evidence_text and "[CARD]" in evidence_text
    for request in server.requests:
        for secret in world.PERSONAL:
            assert secret not in request.raw, f"{secret!r} reached the model"
        assert "@" not in request.raw.replace("@context", "")


def test_unchanged_evidence_is_served_from_the_cache_without_a_call(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = good_answer
    first = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    second = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert len(server.requests) == 1
    assert second.source == LITE and second.cached and not first.cached
    assert second.summary == first.summary
    assert second.evidence_hash == first.evidence_hash
    assert second.tokens_used == 0

    investigate(conn, ids["SETTLED_TWICE"], use_cache=False, client_config=config(server))
    assert len(server.requests) == 2

    # New evidence (a row changed) is a new question.
    conn.execute(
        "UPDATE recon_rows SET settled_at = settled_at + 60 WHERE entity_id = 'pay_DUP001'"
    )
    third = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert len(server.requests) == 3
    assert third.evidence_hash != first.evidence_hash and not third.cached


def test_a_failed_answer_is_not_cached(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = [error(400, "INVALID_ARGUMENT"), good_answer]
    investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    again = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert again.source == LITE
    assert len(server.requests) == 2


def test_the_circuit_breaker_skips_a_failing_model_until_the_cool_down_ends(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    clock = Clock()
    cfg = config(
        server,
        models=(ModelSpec(LITE, 3.0),),
        breaker_threshold=2,
        breaker_cooldown_seconds=300,
        clock=clock,
    )
    server.script[LITE] = error(503)
    for _ in range(2):
        investigate(conn, ids["SETTLED_TWICE"], client_config=cfg)
    assert len(server.requests) == 2

    skipped = investigate(conn, ids["SETTLED_TWICE"], client_config=cfg)
    assert len(server.requests) == 2, "an open circuit makes no call"
    assert skipped.fallback_reason is not None and "circuit open" in skipped.fallback_reason
    assert skipped.attempts[0].outcome == "skipped"

    clock.now += 301
    server.script[LITE] = good_answer
    recovered = investigate(conn, ids["SETTLED_TWICE"], client_config=cfg)
    assert recovered.source == LITE
    assert len(server.requests) == 3


def test_the_token_budget_per_investigation_stops_a_call_before_it_is_made(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = good_answer
    result = investigate(
        conn, ids["SETTLED_TWICE"], client_config=config(server, tokens_per_investigation=5000)
    )
    assert result.source == "deterministic"
    assert result.fallback_reason is not None and "per investigation" in result.fallback_reason
    assert server.requests == []


def test_the_daily_token_budget_counts_what_was_spent_today(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = good_answer
    clock = Clock()
    cfg = config(server, tokens_per_day=12_000, max_output_tokens=4000, clock=clock)
    assert investigate(conn, ids["SETTLED_TWICE"], client_config=cfg).source == LITE
    spent = conn.execute("SELECT sum(total_tokens) FROM llm_token_usage").fetchone()[0]
    assert spent == 1500

    # Pretend much of the day's budget is gone: the next request no longer fits.
    conn.execute("UPDATE llm_token_usage SET total_tokens = 9000")
    refused = investigate(conn, ids["SETTLED_LATE"], client_config=cfg)
    assert refused.fallback_reason is not None and "daily token budget" in refused.fallback_reason
    assert len(server.requests) == 1

    clock.now += 86400  # a new IST day, a fresh budget
    assert investigate(conn, ids["SETTLED_LATE"], client_config=cfg).source == LITE


def test_a_model_may_call_allow_listed_tools_and_cite_what_they_return(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded

    def after_tool(request: FakeRequest) -> Reply:
        [response] = request.function_responses
        assert response["name"] == "recon_rows"
        assert "pay_OTHER1" in response["response"]["output"]
        return _answer_citing(
            ["pay_DUP001", "pay_OTHER1", "order_OTHER1"],
            [147000, 117600],
            "pay_DUP001 is settled twice (₹1,470.00 too much); pay_OTHER1 settles ₹1,176.00 in"
            " its own row.",
        )

    server.script[LITE] = [function_call("recon_rows", {"entity_id": "pay_OTHER1"}), after_tool]
    payment = conn.execute("SELECT * FROM payments WHERE id = 'pay_OTHER1'").fetchone()
    conn.execute(
        "INSERT INTO recon_rows (row_key, entity_id, type, credit, amount, fee, tax, settlement_id,"
        " order_id) VALUES ('payment:pay_OTHER1:setl_GOOD01:0', 'pay_OTHER1', 'payment', 117600,"
        " ?, 2400, 366, 'setl_GOOD01', 'order_OTHER1')",
        (payment["amount"],),
    )
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == LITE
    assert len(server.requests) == 2
    fetched = [i for i in result.evidence.items if i.args.get("entity_id") == "pay_OTHER1"]
    assert fetched and fetched[0].records[0]["row_key"] == "payment:pay_OTHER1:setl_GOOD01:0"


def test_a_tool_outside_the_allow_list_is_refused_and_audited(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    before = world.snapshot(conn)

    def after_refusal(request: FakeRequest) -> Reply:
        [response] = request.function_responses
        assert response["response"]["error"].startswith("refused")
        return good_answer(request)

    server.script[LITE] = [
        function_call("execute_sql", {"sql": "UPDATE exceptions SET status = 'RESOLVED'"}),
        after_refusal,
    ]
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == LITE
    [entry] = world.audit_entries(conn, "investigate.tool_refused")
    assert entry["payload"]["tool"] == "execute_sql"
    assert entry["payload"]["requested_by"] == LITE
    assert entry["payload"]["reason"] == "not on the allow-list"
    assert world.snapshot(conn) == before
    assert audit.verify(conn).ok


def test_the_sdk_base_url_override_from_the_environment_is_honoured(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
    server: FakeGemini,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn, ids = seeded
    server.script[FLASH] = good_answer
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    monkeypatch.setenv("LLM_API_KEY", "env-key")
    monkeypatch.setenv("GEMINI_MODELS", f"{FLASH}:5")
    monkeypatch.setenv("GOOGLE_GENAI_API_VERSION", "v1beta")
    result = investigate(conn, ids["SETTLED_TWICE"])
    assert result.source == FLASH
    [request] = server.requests
    assert request.version == "v1beta"
    assert request.headers["x-goog-api-key"] == "env-key"


def test_configuration_comes_from_the_environment() -> None:
    cfg = ClientConfig.from_env(
        {
            "GEMINI_API_KEY": " k1 ",
            "LLM_API_KEY": "k2",
            "GEMINI_MODELS": "m-one:7.5, m-two",
            "GEMINI_TOKENS_PER_DAY": "1000",
        }
    )
    assert cfg.api_key == "k1"
    assert cfg.models == (ModelSpec("m-one", 7.5), ModelSpec("m-two", 30.0))
    assert cfg.tokens_per_day == 1000
    default = ClientConfig.from_env({"LLM_API_KEY": "k2"})
    assert default.api_key == "k2"
    assert [m.name for m in default.models] == [LITE, FLASH]
    assert not ClientConfig.from_env({}).enabled
    assert parse_models("", 12.0) == (ModelSpec(LITE, 12.0), ModelSpec(FLASH, 12.0))


def test_the_answer_schema_sent_matches_what_is_validated(server: FakeGemini) -> None:
    from core.investigate.prompt import ModelAnswer, answer_json_schema

    schema = answer_json_schema()
    assert set(schema["required"]) <= set(ModelAnswer.model_fields)
    assert schema["additionalProperties"] is False
    json.dumps(schema)


def test_a_model_refusing_tools_with_json_output_is_asked_again_without_them(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded

    def picky(request: FakeRequest) -> Reply:
        if "tools" in request.body:
            return error(400, "INVALID_ARGUMENT")
        return good_answer(request)

    server.script[LITE] = picky
    result = investigate(conn, ids["SETTLED_TWICE"], client_config=config(server))
    assert result.source == LITE
    assert ["tools" in r.body for r in server.requests] == [True, False]


def test_the_last_round_offers_no_tools_so_the_model_must_answer(
    seeded: tuple[sqlite3.Connection, dict[str, int]], server: FakeGemini
) -> None:
    conn, ids = seeded
    server.script[LITE] = [function_call("payment", {"payment_id": "pay_DUP001"}), good_answer]
    result = investigate(
        conn, ids["SETTLED_TWICE"], client_config=config(server, max_tool_rounds=1)
    )
    assert result.source == LITE
    declared = server.requests[0].body["tools"][0]["functionDeclarations"]
    assert {d["name"] for d in declared} == set(ALLOWED_TOOLS)
    assert "tools" not in server.requests[1].body
