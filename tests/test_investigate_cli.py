"""`python -m core investigate EXCEPTION_ID --db PATH [--json] [--no-cache]`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.__main__ import main
from core.db import connect
from tests import investigate_world as world
from tests.fake_gemini import FakeGemini
from tests.fake_gemini import running as fake_gemini
from tests.test_investigate_gemini import LITE, good_answer

ROOT = Path(__file__).resolve().parent.parent
REQUIRED_KEYS = {
    "exception_id",
    "source",
    "model",
    "root_cause",
    "confidence",
    "summary",
    "evidence",
    "recommendation",
    "requires_human_review",
    "fallback_reason",
}


@pytest.fixture
def seeded(db_url: str) -> dict[str, int]:
    conn = connect(db_url)
    ids = world.build(conn)
    conn.close()
    return ids


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGemini]:
    with fake_gemini() as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", "cli-key")
        monkeypatch.setenv("GEMINI_MODELS", f"{LITE}:5")
        yield fake


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "LLM_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_json_output_without_a_key_is_the_deterministic_answer(
    db_url: str, seeded: dict[str, int]
) -> None:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k and "BASE_URL" not in k}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "investigate",
            str(seeded["BANK_SHORT_CREDIT"]),
            "--db",
            str(db_url),
            "--json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) >= REQUIRED_KEYS
    assert data["exception_id"] == seeded["BANK_SHORT_CREDIT"]
    assert data["source"] == "deterministic" and data["model"] is None
    assert "GEMINI_API_KEY" in data["fallback_reason"]
    assert data["root_cause"] == "BANK_SHORT_CREDIT"
    assert data["evidence"]["exception"]["entity_id"] == "setl_SHRT01"
    assert {i["tool"] for i in data["evidence"]["items"]} >= {"settlement", "bank_lines"}


def test_human_output_names_the_model_and_the_cache(
    db_url: str,
    seeded: dict[str, int],
    server: FakeGemini,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.script[LITE] = good_answer
    exception_id = str(seeded["SETTLED_TWICE"])
    assert main(["investigate", exception_id, "--db", str(db_url)]) == 0
    first = capsys.readouterr().out
    assert f"Source:      {LITE}\n" in first
    assert "Root cause:  SETTLED_TWICE" in first
    assert "Human review required: yes" in first

    assert main(["investigate", exception_id, "--db", str(db_url)]) == 0
    assert f"Source:      {LITE} (cached)" in capsys.readouterr().out
    assert len(server.requests) == 1

    assert main(["investigate", exception_id, "--db", str(db_url), "--no-cache", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == LITE
    assert len(server.requests) == 2


def test_human_output_shows_the_rules_answer_beside_a_models(
    db_url: str,
    seeded: dict[str, int],
    server: FakeGemini,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.script[LITE] = good_answer
    exception_id = str(seeded["SETTLED_TWICE"])
    assert main(["investigate", exception_id, "--db", str(db_url), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["source"] == LITE
    assert shown["rules_summary"] and shown["rules_summary"] != shown["summary"]
    assert main(["investigate", exception_id, "--db", str(db_url)]) == 0
    text = capsys.readouterr().out
    assert f"Rules' summary:        {shown['rules_summary']}\n" in text
    assert f"Rules' recommendation: {shown['rules_recommendation']}\n" in text


def test_human_output_shows_why_the_fallback_answered(
    db_url: str,
    seeded: dict[str, int],
    server: FakeGemini,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.fake_gemini import error

    server.script[LITE] = error(503)
    assert main(["investigate", str(seeded["SETTLED_TWICE"]), "--db", str(db_url)]) == 0
    out = capsys.readouterr().out
    assert f"Source:      deterministic ({LITE}: HTTP 503" in out
    assert f"model {LITE} -> transient: HTTP 503" in out


def test_an_unknown_exception_exits_2_with_a_message(
    db_url: str, seeded: dict[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["investigate", "4242", "--db", str(db_url)]) == 2
    assert "no exception with id 4242" in capsys.readouterr().err


def test_a_missing_database_is_named_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.sqlite"
    assert main(["investigate", "1", "--db", str(missing)]) == 2
    assert f"no database at {missing}" in capsys.readouterr().err
    assert not missing.exists()
