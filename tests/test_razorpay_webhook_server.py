"""The webhook endpoint in a real `streamlit run serve.py` process, beside the app."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from core.db import connect
from core.razorpay.webhooks import sign
from serve import WEBHOOK_PATH
from tests.conftest import ROOT
from tests.fake_razorpay import read_items
from tests.razorpay_support import SPEC_DATASET

SECRET = "whsec_server_test"
STUB_APP = 'import streamlit as st\nst.title("stub app for the webhook test")\n'


class Served:
    def __init__(self, base_url: str, db: str) -> None:
        self.base_url = base_url
        self.db = db

    def post(self, body: bytes, headers: dict[str, str]) -> requests.Response:
        return requests.post(self.base_url + WEBHOOK_PATH, data=body, headers=headers, timeout=30)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        conn = connect(self.db)
        try:
            return [tuple(r) for r in conn.execute(sql)]
        finally:
            conn.close()


@pytest.fixture
def served(tmp_path: Path, db_url: str) -> Iterator[Served]:
    """serve.py as shipped, next to a stub app.py (the real app's first session would build the
    benchmark, which this test does not need), on an ephemeral port, writing to a SQLite file
    or a PostgreSQL database (tests/conftest.py's db_url; DATABASE_OWNER_URL is inherited).
    """
    site = tmp_path / "site"
    site.mkdir()
    shutil.copyfile(ROOT / "serve.py", site / "serve.py")
    (site / "app.py").write_text(STUB_APP, encoding="utf-8")
    db = db_url
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": db,
        "RAZORPAY_WEBHOOK_SECRET": SECRET,
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
    }
    command = [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.port", "0",
               "--server.headless", "true", "--server.address", "127.0.0.1"]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=site, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    reader = threading.Thread(
        target=lambda: [lines.put(line) for line in process.stdout],
        daemon=True,  # type: ignore[union-attr]
    )
    reader.start()
    try:
        port = None
        seen: list[str] = []
        while port is None:
            try:
                line = lines.get(timeout=60)
            except queue.Empty:
                pytest.fail("streamlit did not print its URL within 60s:\n" + "".join(seen))
            seen.append(line)
            match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if match:
                port = int(match.group(1))
        yield Served(f"http://127.0.0.1:{port}", db)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.mark.slow
def test_the_endpoint_beside_the_app_verifies_dedupes_and_applies_deliveries(
    served: Served,
) -> None:
    payment = next(p for p in read_items(SPEC_DATASET, "payments") if p["status"] == "captured")
    event = {
        "entity": "event",
        "event": "payment.captured",
        "contains": ["payment"],
        "payload": {"payment": {"entity": payment}},
        "created_at": 1_782_000_000,
    }
    body = json.dumps(event, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "X-Razorpay-Event-Id": "evt_Server01",
        "X-Razorpay-Signature": sign(body, SECRET),
    }

    forged = served.post(body, {**headers, "X-Razorpay-Signature": sign(body, "guess")})
    first = served.post(body, headers)
    again = served.post(body, headers)
    reserialised = served.post(json.dumps(event, indent=1).encode(), headers)

    assert (forged.status_code, forged.json()["verdict"]) == (401, "bad_signature")
    assert (first.status_code, first.json()["verdict"]) == (200, "accepted")
    assert (again.status_code, again.json()["verdict"]) == (200, "duplicate")
    assert reserialised.status_code == 401
    stored = served.query("SELECT id, status FROM payments")
    verdicts = [r[0] for r in served.query("SELECT verdict FROM razorpay_webhook_log ORDER BY id")]
    assert stored == [(payment["id"], "captured")]
    assert verdicts == ["accepted", "duplicate"]  # unsigned ones are counted, not logged
    # the app itself is still served on the same port
    assert requests.get(served.base_url + "/", timeout=30).status_code == 200
    assert requests.get(served.base_url + "/_stcore/health", timeout=30).text == "ok"
