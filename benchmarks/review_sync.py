"""Speed of `sync_exceptions` and `audit verify` at engine scale (prints; asserts nothing).

`python -m benchmarks.review_sync [--payments 1000000] [--exception-rate 0.05]` writes a
synthetic run of that many outcomes into a temporary SQLite file (WAL), then times: the
first sync (all exceptions open), a re-sync of the same run, a second run in which 10%
of the exceptions cleared and 10% are new, and a full `audit verify`.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from core.audit import verify
from core.db import connect, migrate, transaction
from core.review import sync_exceptions


def _write_run(conn: sqlite3.Connection, payments: int, exception_ids: range) -> int:
    """A run with `payments` outcomes, EXCEPTION for ids in `exception_ids`."""
    with transaction(conn):
        cur = conn.execute(
            "INSERT INTO runs (started_at, finished_at, status, as_of, source, params_json,"
            " input_hashes_json) VALUES (0, 1, 'completed', 0, 'bench', '{}', '{}')"
        )
        run_id = int(cur.lastrowid or 0)
        exc = set(exception_ids)
        rows = (
            (
                run_id,
                f"pay_{i:08d}",
                "EXCEPTION" if i in exc else "MATCHED",
                "AMOUNT_MISMATCH" if i in exc else "",
                "AMOUNT_MISMATCH" if i in exc else "",
                "amount_at_risk" if i in exc else "",
                (i % 997) * 100 if i in exc else 0,
            )
            for i in range(payments)
        )
        conn.executemany(
            "INSERT INTO outcomes (run_id, entity_type, entity_id, status, reason_code,"
            " reason_codes, exposure_class, exposure_amount)"
            " VALUES (?, 'payment', ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return run_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--payments", type=int, default=1_000_000)
    parser.add_argument("--exception-rate", type=float, default=0.05)
    args = parser.parse_args()
    n_exc = int(args.payments * args.exception_rate)
    with tempfile.TemporaryDirectory() as tmp:
        conn = connect(Path(tmp) / "bench.sqlite")
        migrate(conn)
        run1 = _write_run(conn, args.payments, range(n_exc))
        shift = n_exc // 10
        run2 = _write_run(conn, args.payments, range(shift, n_exc + shift))
        for label, run in (("first sync", run1), ("re-sync same run", run1), ("next run", run2)):
            start, cpu = time.perf_counter(), time.process_time()
            s = sync_exceptions(conn, run)
            took, cpu = time.perf_counter() - start, time.process_time() - cpu
            print(
                f"{label:18s} {took:6.2f} s wall {cpu:6.2f} s cpu  opened={s.opened} kept={s.kept} "
                f"reopened={s.reopened} auto_cleared={s.auto_cleared} audit={s.audit_entries}"
            )
        start, cpu = time.perf_counter(), time.process_time()
        result = verify(conn)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(
            f"audit verify       {took:6.2f} s wall {cpu:6.2f} s cpu  rows={result.rows_checked}"
            f" ok={result.ok}"
        )
        conn.close()


if __name__ == "__main__":
    main()
