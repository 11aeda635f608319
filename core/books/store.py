"""The books over what the database holds: the roll-forward of its raw tables and latest
run, and the merchant's pricing plan (stored, versioned, audited)."""

from __future__ import annotations

import sqlite3
import time

import pandas as pd

from core.books.pricing import GST_BP, PricingPlan, PricingRule
from core.books.rollforward import ledger_events
from core.db import books as books_sql
from core.db.books import exception_keys
from core.db.connection import transaction
from core.db.raw import read_dataset
from core.db.runs import latest_completed_run


def stored_events(conn: sqlite3.Connection) -> pd.DataFrame:
    """The receivable's events over the raw tables, with the differences that the latest
    completed run flagged as exceptions explained (none when there is no run)."""
    run = latest_completed_run(conn)
    flagged = exception_keys(conn, run.id) if run is not None else frozenset()
    return ledger_events(read_dataset(conn), flagged)


def months_of(events: pd.DataFrame) -> list[str]:
    """The IST months ('YYYY-MM') that have events, latest first."""
    if events.empty:
        return []
    # Distinct days first: a month's name per event was 25 CPU s at 1M payments.
    days = pd.unique(events["day"])
    return sorted({f"{d.year:04d}-{d.month:02d}" for d in days}, reverse=True)


# Who stores the benchmark's plan on the app's first start (core.bootstrap).
BENCHMARK_PLAN_ACTOR = "benchmark"


def pricing_plans(conn: sqlite3.Connection) -> tuple[PricingPlan, ...]:
    """Every stored version of the merchant's pricing plan, oldest first. The benchmark's
    plan (stored by the first start) is the benchmark's contract, not the merchant's: it
    applies only while the data are the benchmark's (the latest import's source). After a
    Replace with the merchant's own files it prices nothing: a new user's walkthrough had
    every UPI payment of its upload "overcharged" against the benchmark's 0% UPI rule."""
    from core.views.common import SYNTHETIC_SOURCES

    source = books_sql.latest_import_source(conn)
    benchmark = source is None or source in SYNTHETIC_SOURCES
    rows = books_sql.pricing_rows(conn, not_by=None if benchmark else BENCHMARK_PLAN_ACTOR)
    return tuple(PricingPlan.from_json(*row) for row in rows)


def save_pricing_plan(
    conn: sqlite3.Connection,
    *,
    effective_from: int,
    rules: tuple[PricingRule, ...],
    actor: str,
    request_id: str,
    gst_bp: int = GST_BP,
    now: int | None = None,
) -> int:
    """Store a new version of the pricing plan, audited; its version. Idempotent: the same
    request_id again returns the version it made and writes nothing."""
    from core.audit import append

    if not rules:
        raise ValueError("a pricing plan needs at least one rule")
    plan = PricingPlan(0, int(effective_from), tuple(rules), int(gst_bp))
    stamp = int(time.time()) if now is None else int(now)
    with transaction(conn):
        found = books_sql.plan_for_request(conn, request_id)
        if found is not None:
            return found
        version = books_sql.insert_plan(
            conn,
            effective_from=plan.effective_from,
            gst_bp=plan.gst_bp,
            rules_json=plan.rules_json(),
            created_at=stamp,
            created_by=actor,
            request_id=request_id,
        )
        append(
            conn,
            actor=actor,
            action="pricing_plan_saved",
            entity_type="pricing_plan",
            entity_id=str(version),
            payload={
                "effective_from": plan.effective_from,
                "gst_bp": plan.gst_bp,
                "rules": plan.rules_json(),
                "request_id": request_id,
            },
            now=stamp,
        )
    return version
