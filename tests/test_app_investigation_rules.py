"""The Investigation page shows the rules' (deterministic) answer beside a model's answer, so
a reviewer always sees the engine's facts whatever a model wrote (independent attacker,
finding 7). AppTest on a real SQLite file, the stand-in Gemini on 127.0.0.1 answering
through the real google-genai SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from core.db import connect
from core.db.migrate import migrate
from core.investigate.deterministic import explain
from core.investigate.gather import gather_evidence
from core.money import format_inr
from core.root_causes import sign_contradiction
from tests.app_builder import build
from tests.app_signin import signed_in
from tests.fake_gemini import FakeGemini, FakeRequest, Reply, answer
from tests.fake_gemini import running as fake_gemini
from tests.review_support import add_people
from ui import keys
from ui.format import md
from ui.investigator import RULES_HEADING

MODEL = "gemini-3.5-flash-lite"
pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


def _model_answer(request: FakeRequest) -> Reply:
    """A plain answer that passes every check: the entity and the difference, no claims."""
    evidence = request.evidence()
    exc: dict[str, Any] = evidence["exception"]
    difference = exc.get("difference") or 0
    causes = [c["root_cause"] for c in evidence["allowed_root_causes"]]
    cause = next(c for c in causes if not sign_contradiction(c, difference))
    return answer(
        {
            "root_cause": cause,
            "confidence": 0.7,
            "summary": f"MODEL VIEW: {exc['entity_id']} differs by {format_inr(abs(difference))}.",
            "recommendation": f"Ask Razorpay support about {exc['entity_id']}.",
            "requires_human_review": True,
            "cited_record_ids": [exc["entity_id"]],
            "cited_amounts_paise": [abs(difference)],
        }
    )


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with fake_gemini() as fake:
        fake.script[MODEL] = _model_answer
        yield fake


@pytest.fixture
def app_db(tmp_path: Path, gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "app.sqlite")
    conn = connect(path)
    migrate(conn)
    build(conn, payments=1500, seed=11)
    add_people(conn)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", path)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_MODELS", f"{MODEL}:10")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.url)
    return path


def test_a_model_answer_is_shown_with_the_rules_answer_beside_it(
    app_db: str, gemini: FakeGemini
) -> None:
    at: AppTest = signed_in("admin@example.com")
    at.run()
    at.switch_page("pages/investigation.py")
    at.run()
    at.button(key=keys.INVESTIGATE_ASK).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert gemini.requests, "the model was asked"
    exception_id = int(at.number_input(key=keys.INVESTIGATE_ID).value)
    captions = " ".join(c.value for c in at.caption)
    assert f"Source: {md(MODEL)}" in captions, captions
    texts = [m.value for m in at.markdown]
    assert any("MODEL VIEW" in t for t in texts)
    rules = explain(gather_evidence(app_db, exception_id))
    assert f"**{md(RULES_HEADING)}**" in texts
    assert md(rules.summary) in texts
    assert f"**Recommendation:** {md(rules.recommendation)}" in texts
