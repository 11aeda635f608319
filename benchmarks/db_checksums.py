"""Checksums of what a `reconcile --db` stored, to show a speed change stores the same data.

    python -m benchmarks.db_checksums A.sqlite [B.sqlite]

Per table, a sha256 over its rows in rowid order, leaving out the columns that hold wall
clock times (`*_at`, `ts`, `synced_at`...), the audit chain's hashes (they cover those
times) and the run's timings; the queue-search documents as (rowid, ids, notes). With two
databases, prints the tables that differ. Prints, asserts nothing else (docs/benchmark.md,
"`--db` at 1M, fourth round").
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys

# Wall-clock columns (and what covers them) per table; every other column is compared.
CLOCK: dict[str, frozenset[str]] = {
    "app_run_summaries": frozenset({"computed_at"}),
    "audit_log": frozenset({"created_at", "prev_hash", "hash"}),
    "runs": frozenset({"started_at", "finished_at", "timings_json"}),
    "exceptions": frozenset({"opened_at", "updated_at", "closed_at"}),
    "exception_events": frozenset({"created_at"}),
    "exception_syncs": frozenset({"synced_at"}),
    "books_ledger": frozenset({"built_at"}),
    "imports": frozenset({"imported_at", "report_json"}),
    "schema_migrations": frozenset({"applied_at"}),
}


def checksums(path: str) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'exception_search_%'"
            " ORDER BY name"
        )
    ]
    found: dict[str, str] = {}
    for name in names:
        if name == "exception_search":
            sql = "SELECT rowid, ids, notes FROM exception_search ORDER BY rowid"
        else:
            columns = [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{name}")')]
            kept = [c for c in columns if c not in CLOCK.get(name, frozenset())]
            rowid = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = ? AND sql LIKE '%WITHOUT ROWID%'",
                (name,),
            ).fetchone()
            order = ", ".join(kept) if rowid else "rowid"
            sql = f'SELECT {", ".join(kept)} FROM "{name}" ORDER BY {order}'
        digest = hashlib.sha256()
        rows = 0
        for row in conn.execute(sql):
            digest.update(repr(tuple(row)).encode())
            rows += 1
        found[name] = f"{rows} {digest.hexdigest()[:16]}"
    return found


def main(paths: list[str]) -> None:
    sums = [checksums(p) for p in paths]
    for name in sorted(set().union(*sums)):
        values = [s.get(name, "-") for s in sums]
        mark = "" if len(set(values)) == 1 else "  DIFFERS"
        print(f"{name:32} {' | '.join(values)}{mark}")


if __name__ == "__main__":
    main(sys.argv[1:])
