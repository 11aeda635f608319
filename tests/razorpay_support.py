"""Helpers shared by the Razorpay tests: settings for the fake, dataset comparison, snapshots."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pandas as pd

from core.dataset import Dataset
from core.razorpay.config import RazorpaySettings, RetryPolicy
from tests.conftest import SPEC_EXAMPLE
from tests.fake_razorpay import KEY_ID, KEY_SECRET, FakeRazorpay

SPEC_DATASET = SPEC_EXAMPLE / "dataset"
# every IST day on which the spec example has a payment, refund, settlement or recon row
SPEC_FROM = dt.date(2026, 5, 16)
SPEC_TO = dt.date(2026, 6, 30)
AFTER_SPEC = dt.date(2026, 7, 15)  # "today" for the syncs: every synced day is over
RAW_TABLES = ("payments", "refunds", "settlements", "recon_rows", "bank_lines")
KEYS = {"payments": "id", "refunds": "id", "settlements": "id", "recon": "row_key", "bank": "id"}

FAST_RETRIES = RetryPolicy(
    max_attempts=4, budget=200, backoff_base=0.001, backoff_cap=0.005, read_timeout=2.0
)


def fake_settings(fake: FakeRazorpay, policy: RetryPolicy = FAST_RETRIES) -> RazorpaySettings:
    return RazorpaySettings(KEY_ID, KEY_SECRET, base_url=fake.base_url, retry=policy)


def sync_env(fake: FakeRazorpay, db: Path) -> dict[str, str]:
    """Environment for `python -m core sync` against the fake with fast retries."""
    return {
        "RAZORPAY_KEY_ID": KEY_ID,
        "RAZORPAY_KEY_SECRET": KEY_SECRET,
        "RAZORPAY_BASE_URL": fake.base_url,
        "RAZORPAY_BACKOFF_BASE": "0.001",
        "RAZORPAY_BACKOFF_CAP": "0.005",
        "RAZORPAY_RETRY_BUDGET": "200",
        "DATABASE_URL": str(db),
    }


def sorted_frame(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    return frame.sort_values(key, kind="stable").reset_index(drop=True)


def assert_same_entities(actual: Dataset, expected: Dataset, *, bank: bool = False) -> None:
    """The frames hold the same rows (order aside), with the same columns and dtypes."""
    names = ["payments", "refunds", "settlements", "recon", *(["bank"] if bank else [])]
    for name in names:
        pd.testing.assert_frame_equal(
            sorted_frame(getattr(actual, name), KEYS[name]),
            sorted_frame(getattr(expected, name), KEYS[name]),
            obj=name,
        )


def snapshot(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every raw row (import id included) and every import: what 'changes nothing' compares."""
    tables = {
        t: [tuple(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY 1")] for t in RAW_TABLES
    }
    tables["imports"] = [tuple(r) for r in conn.execute("SELECT * FROM imports ORDER BY id")]
    return tables


def day_bounds(day: dt.date) -> tuple[int, int]:
    from core.razorpay.client import ist_day_bounds

    return ist_day_bounds(day)


class FakeClock:
    """Simulated time for the pacer and the backoff: `sleep` records the wait and moves the
    clock on; `advance` moves it for work that takes time (a request's latency). `monotonic`
    and `time` read the same clock (Unix seconds), so a Retry-After date can be placed on it.
    """

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds

    @property
    def slept(self) -> float:
        return sum(self.sleeps)
