"""SQL for core.demo: what a database holds beyond the synthetic benchmark."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

# Tables whose every row is something a person (or the deployment's Razorpay account) put
# there, with how core.demo names their rows.
PEOPLES_TABLES = {
    "review_comments": "comment(s)",
    "review_attachments": "attachment(s)",
    "approvals": "approval request(s)",
    "razorpay_sync_runs": "Razorpay sync run(s)",
    "razorpay_webhook_inbox": "webhook deliveries",
}
# Tables with an actor column, and how core.demo names their rows.
ACTOR_TABLES = {"audit_log": "audit entries", "exception_events": "exception events"}


@dataclass(frozen=True)
class BeyondBenchmark:
    imports: int
    other_sources: tuple[str, ...]
    users: tuple[str, ...]
    counts: dict[str, int]  # what -> rows
    actors: dict[str, tuple[str, ...]]  # what -> actors other than the system's


def _marks(values: tuple[str, ...]) -> str:
    return ", ".join("?" for _ in values)


def _column(conn: sqlite3.Connection, sql: str, args: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(r[0]) for r in conn.execute(sql, args).fetchall())


def beyond_benchmark(
    conn: sqlite3.Connection,
    synthetic_sources: tuple[str, ...],
    personas: tuple[str, ...],
    system_actors: tuple[str, ...],
) -> BeyondBenchmark:
    imports = int(conn.execute("SELECT count(*) FROM imports").fetchone()[0])
    sources = _column(
        conn,
        f"SELECT DISTINCT source FROM imports WHERE source NOT IN ({_marks(synthetic_sources)})"
        " ORDER BY source",
        synthetic_sources,
    )
    users = _column(
        conn,
        f"SELECT email FROM users WHERE email NOT IN ({_marks(personas)}) ORDER BY email",
        personas,
    )
    counts = {
        what: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        for table, what in PEOPLES_TABLES.items()
    }
    actors = {
        what: _column(
            conn,
            f"SELECT DISTINCT actor FROM {table} WHERE actor NOT IN ({_marks(system_actors)})"
            " ORDER BY actor",
            system_actors,
        )
        for table, what in ACTOR_TABLES.items()
    }
    return BeyondBenchmark(imports, sources, users, counts, actors)
