"""`evaluation.py --investigator model`: the investigator scored as a reviewer meets it, the
model's verified answers first (core.investigate.evaluation.predict_with_model), against a
stand-in Gemini on 127.0.0.1 reached by the real google-genai SDK."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator

import pandas as pd
import pytest

from core.evaluation import main as evaluation_main
from core.evaluation import run_evaluation
from core.investigate import ClientConfig, ModelSpec
from core.investigate.evaluation import predict_with_model
from core.money import format_inr
from core.root_causes import sign_contradiction
from tests.fake_gemini import FakeGemini, FakeRequest, Reply, answer
from tests.fake_gemini import running as fake_gemini

LITE = "gemini-3.5-flash-lite"


@pytest.fixture
def server() -> Iterator[FakeGemini]:
    with fake_gemini() as fake:
        yield fake


def _last_fitting_cause(picked: dict[str, str], request: FakeRequest) -> Reply:
    """A model with its own mind: the LAST allowed cause that fits the sign (the rules'
    order puts their choice first), citing the entity and every figure; it notes its pick."""
    exc = request.evidence()["exception"]
    difference = exc.get("difference")
    causes = [c["root_cause"] for c in request.evidence()["allowed_root_causes"]]
    fitting = [c for c in causes if sign_contradiction(c, difference) is None] or causes
    picked[str(exc["entity_id"])] = fitting[-1]
    figures = [
        a
        for a in (exc.get("expected_amount"), exc.get("actual_amount"), difference)
        if isinstance(a, int) and a
    ]
    said = " and ".join(format_inr(abs(a)) for a in figures)
    return answer(
        {
            "root_cause": fitting[-1],
            "confidence": 0.6,
            "summary": f"{exc['entity_type']} {exc['entity_id']}: compared {said}.",
            "recommendation": "Raise it with Razorpay support.",
            "requires_human_review": True,
            "cited_record_ids": [exc["entity_id"]],
            "cited_amounts_paise": [abs(a) for a in figures],
        }
    )


def test_the_model_scored_is_the_model_shown_and_says_who_answered(server: FakeGemini) -> None:
    picked: dict[str, str] = {}
    server.script[LITE] = functools.partial(_last_fitting_cause, picked)
    config = ClientConfig(api_key="test-key", models=(ModelSpec(LITE, 3.0),), base_url=server.url)
    frames: list[pd.DataFrame] = []

    def predictor(conn: sqlite3.Connection, run_id: int) -> pd.DataFrame:
        frames.append(predict_with_model(conn, run_id, client_config=config))
        return frames[-1]

    report = run_evaluation(600, 7, root_cause_predictor=predictor, money_model=False)
    score = report.full.investigator
    assert score is not None and score.labelled > 0
    assert server.requests, "the model was asked"
    # Every labelled exception was answered by someone, and the model answered some.
    assert sum(score.by_source.values()) == score.labelled
    assert score.by_source.get(LITE, 0) > 0
    assert f"{LITE} {score.by_source[LITE]:,}" in score.who()
    # Where the model's answer was shown, what is scored is the model's own pick.
    (frame,) = frames
    shown = frame[frame["source"] == LITE]
    assert len(shown) > 0
    pairs = zip(shown["entity_id"], shown["root_cause"], strict=True)
    assert all(cause == picked[entity] for entity, cause in pairs)


def test_scoring_the_model_without_a_key_exits_2_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("GEMINI_API_KEY", "LLM_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    code = evaluation_main(["--payments", "300", "--investigator", "model", "--no-ambiguous"])
    assert code == 2
    assert "GEMINI_API_KEY" in capsys.readouterr().err
