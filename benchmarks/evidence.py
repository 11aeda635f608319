"""The Investigation page's evidence for every kind of exception, measured (never asserted):
`python -m benchmarks.evidence --db PATH [--repeats N]`.

`benchmarks.ui --every-page` renders the Investigation page for one exception (the queue's
first). What the page reads depends on the exception's kind: a transfer's evidence reads the
recon rows naming the transfer, a dispute's those naming the dispute, a settlement's the
bank lines of its UTR. So this times `core.views.exception.evidence` (the investigator's
tools, as the page calls them) for the lowest-numbered exception of each (entity type,
reason code), first call and the median of the rest, wall and CPU, beside the page's 1 s
target (issue 16 item 3). Pending migrations are applied first, as the app does on start.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_S = 1.0


def measure_evidence(database: Path, repeats: int = 3) -> list[dict[str, Any]]:
    """One row per (entity type, reason code): its exception id, the first call's wall and
    CPU seconds, and the median of `repeats - 1` more calls."""
    from core.db import connect, migrate
    from core.views.exception import evidence

    conn = connect(database)
    try:
        migrate(conn)  # as the app does on start: pending migrations (indexes) first
        kinds = conn.execute(
            "SELECT entity_type, reason_code, min(id), count(*) FROM exceptions"
            " GROUP BY entity_type, reason_code ORDER BY entity_type, reason_code"
        ).fetchall()
        rows = []
        for entity_type, reason_code, exception_id, count in kinds:
            samples = []
            for _ in range(max(2, repeats)):
                wall, cpu = time.perf_counter(), time.process_time()
                sections = evidence(conn, int(exception_id))
                samples.append((time.perf_counter() - wall, time.process_time() - cpu))
            rows.append(
                {
                    "entity_type": entity_type,
                    "reason_code": reason_code,
                    "exceptions": int(count),
                    "exception_id": int(exception_id),
                    "sections": len(sections),
                    "first_s": round(samples[0][0], 3),
                    "first_cpu_s": round(samples[0][1], 3),
                    "rerun_s": round(statistics.median(w for w, _ in samples[1:]), 3),
                }
            )
        return rows
    finally:
        conn.close()


def evidence_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| entity type | reason code | exceptions | first call s (CPU) | rerun s | target |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        slow = max(r["first_s"], r["rerun_s"]) > TARGET_S
        lines.append(
            f"| {r['entity_type']} | {r['reason_code']} | {r['exceptions']:,} |"
            f" {r['first_s']:.3f} ({r['first_cpu_s']:.3f}) | {r['rerun_s']:.3f} |"
            f" {'**over 1 s**' if slow else '< 1 s'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.evidence", description=__doc__)
    parser.add_argument("--db", type=Path, required=True, help="a reconciled SQLite database")
    parser.add_argument("--repeats", type=int, default=3, help="calls per exception (>= 2)")
    args = parser.parse_args(argv)
    print(evidence_table(measure_evidence(args.db, args.repeats)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
