"""The evidence tools: read-only, allow-listed, plain data out, refusals audited."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from core.db import connect
from core.db import investigate as db
from core.db.backend import is_postgres
from core.investigate import ALLOWED_TOOLS, EvidenceTools, ToolRefused
from core.investigate.tools import run_context
from tests import investigate_world as world


@pytest.fixture
def seeded(db_url: str) -> Iterator[sqlite3.Connection]:
    conn = connect(db_url)
    world.build(conn)
    yield conn
    conn.close()


@pytest.fixture
def tools(seeded: sqlite3.Connection) -> Iterator[EvidenceTools]:
    with db.read_only(seeded) as ro:
        yield EvidenceTools(ro, context=run_context(ro, 1))


def test_the_allow_list_is_exactly_the_read_only_evidence_tools() -> None:
    assert {
        "payment",
        "refund",
        "settlement",
        "recon_rows",
        "bank_lines",
        "dispute",
        "settlement_arithmetic",
        "calendar_status",
        "related_exceptions",
        "instant_settlement",
        "transfer",
    } == ALLOWED_TOOLS


def test_the_tools_connection_cannot_write(seeded: sqlite3.Connection) -> None:
    with db.read_only(seeded) as ro:
        # SQLite: PRAGMA query_only; PostgreSQL: a READ ONLY transaction
        with pytest.raises(sqlite3.DatabaseError, match=r"readonly|read-only"):
            ro.execute("UPDATE exceptions SET status = 'RESOLVED'")
        if not is_postgres(seeded):
            assert ro.execute("PRAGMA query_only").fetchone()[0] == 1
    statuses = seeded.execute("SELECT DISTINCT status FROM exceptions").fetchall()
    assert "RESOLVED" not in {r[0] for r in statuses}


def test_an_in_memory_database_is_switched_to_query_only_and_back() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (x)")
    with db.read_only(conn) as ro, pytest.raises(sqlite3.OperationalError):
        ro.execute("INSERT INTO t VALUES (1)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.close()


def test_payment_tool_returns_frozen_plain_data_without_contact_fields(
    tools: EvidenceTools,
) -> None:
    result = tools.call("payment", {"payment_id": "pay_FEE001"})
    assert dataclasses.is_dataclass(result)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.tool = "other"  # type: ignore[misc]
    [record] = result.records
    assert record["amount"] == 100000 and record["fee"] == 2360
    assert record["expected_net_credit"] == 97640
    assert record["captured"] is True
    assert "email" not in record and "contact" not in record
    assert all(isinstance(v, str | int | bool | float | type(None)) for v in record.values())


def test_settlement_arithmetic_sums_the_rows_and_bank_credits(tools: EvidenceTools) -> None:
    [record] = tools.call("settlement_arithmetic", {"settlement_id": "setl_SUM001"}).records
    assert record["settlement_amount"] - record["net_of_rows"] == record["difference"] == 5000
    assert record["bank_credits"] == 1
    assert record["bank_difference"] == 0


def test_bank_lines_by_utr_amount_and_date(tools: EvidenceTools) -> None:
    by_utr = tools.call("bank_lines", {"utr": "utr-axiscn0000000003"})
    assert [r["id"] for r in by_utr.records] == ["bank.csv:12", "bank.csv:13"]
    by_amount = tools.call("bank_lines", {"amount_paise": 1234500, "date": "2026-06-25"})
    assert [r["id"] for r in by_amount.records] == ["bank.csv:16"]
    narrow = tools.call(
        "bank_lines", {"amount_paise": 1234500, "date": "2026-06-20", "window_days": 1}
    )
    assert narrow.records == () and narrow.note == "no bank lines"


def test_calendar_status_uses_the_runs_as_of_and_working_days(tools: EvidenceTools) -> None:
    [record] = tools.call(
        "calendar_status", {"entity_type": "payment", "entity_id": "pay_LATE01"}
    ).records
    assert record["created_date"] == "2026-06-22"
    assert record["due_date"] == "2026-06-24"
    assert record["late_after"] == "2026-06-25"
    assert record["settled_dates"] == ["2026-06-29"]
    assert record["settled_late"] is True
    assert record["as_of_date"] == "2026-06-30"


def test_related_exceptions_share_a_settlement(
    tools: EvidenceTools, seeded: sqlite3.Connection
) -> None:
    own = seeded.execute("SELECT id FROM exceptions WHERE entity_id = 'pay_DUP001'").fetchone()[0]
    seeded.execute(
        "UPDATE exceptions SET settlement_id = 'setl_GOOD01' WHERE entity_type = 'payment'"
    )
    result = tools.call("related_exceptions", {"exception_id": own})
    assert own not in [r["exception_id"] for r in result.records]
    assert "pay_FEE001" in [r["entity_id"] for r in result.records]


@pytest.mark.parametrize(
    ("name", "args", "reason"),
    [
        ("execute_sql", {"sql": "DELETE FROM audit_log"}, "not on the allow-list"),
        ("update_exception", {"status": "RESOLVED"}, "not on the allow-list"),
        ("payment", {"payment_id": "pay_FEE001", "sql": "x"}, "unknown argument"),
        ("payment", {"payment_id": 42}, "must be a string"),
        ("payment", {}, "arguments must be one of"),
        ("calendar_status", {"entity_type": "order", "entity_id": "x"}, "must be one of"),
    ],
)
def test_anything_off_the_allow_list_is_refused_and_reported(
    seeded: sqlite3.Connection, name: str, args: dict[str, Any], reason: str
) -> None:
    reported: list[tuple[str, dict[str, Any], str]] = []
    with db.read_only(seeded) as ro:
        tools = EvidenceTools(ro, on_refused=lambda n, a, r: reported.append((n, dict(a), r)))
        with pytest.raises(ToolRefused, match=reason):
            tools.call(name, args)
    assert len(reported) == 1 and reported[0][0] == name and reason in reported[0][2]


def test_the_connection_is_not_reachable_through_the_public_surface(tools: EvidenceTools) -> None:
    public = {n: getattr(tools, n) for n in dir(tools) if not n.startswith("_")}
    assert not any(isinstance(v, sqlite3.Connection) for v in public.values())
