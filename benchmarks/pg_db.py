"""`reconcile DIR --db postgresql://…` as a whole process against a durable PostgreSQL server
started for it (tests/postgres_server.py with `durable=True`: fsync, synchronous_commit and
full_page_writes on, as `make bench` starts it), each run into a fresh clone of the migrated
template. Prints each run's wall, the client's `/usr/bin/time` line, the command's step
timings and the whole cluster's CPU (postmaster, its reaped and live children, from /proc);
with `--checksums`, md5 over the stored raw tables, outcomes and exceptions, to compare two
versions of the code. Prints; asserts nothing. docs/benchmark.md, "PostgreSQL --db at 1M,
the foreign keys".

    python -m benchmarks.pg_db DATASET_DIR [--runs N] [--checksums]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.postgres_server import OWNER_ROLE, PostgresServer

TICK = os.sysconf("SC_CLK_TCK")
AS_OF = "2026-06-30T23:59:59+05:30"
# Each table's rows in a stable order, and what of an exception is compared (its ids and
# times are the run's own).
CHECKED = (
    ("payments", "t", "row_order"),
    ("recon_rows", "t", "row_order"),
    ("outcomes", "t", "run_id, entity_type, entity_id"),
    (
        "exceptions",
        "(t.entity_type, t.entity_id, t.reason_code, t.status, t.exposure_amount)",
        "entity_type, entity_id",
    ),
)


def cluster_cpu(postmaster: int) -> float:
    """CPU seconds of the postmaster, its reaped children and its live children."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if int(entry.name) == postmaster:
            total += sum(int(x) for x in fields[11:15]) / TICK
        elif int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def checksums(url: str) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        for table, columns, order in CHECKED:
            row = conn.execute(
                f"SELECT count(*), md5(string_agg(md5({columns}::text), '' ORDER BY {order}))"
                f" FROM {table} t"
            ).fetchone()
            print(f"{table}: {row}", flush=True)
        print(f"audit_log: {conn.execute('SELECT count(*) FROM audit_log').fetchone()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pg_db", description=__doc__)
    parser.add_argument("dataset_dir", type=Path)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--checksums", action="store_true")
    args = parser.parse_args(argv)
    server = PostgresServer(durable=True).start()
    try:
        server.migrate_template()
        postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
        for run in range(1, args.runs + 1):
            name = server.fresh_database()
            os.environ["DATABASE_OWNER_URL"] = server.url(name, OWNER_ROLE)
            cpu, wall = cluster_cpu(postmaster), time.perf_counter()
            done = subprocess.run(
                ["/usr/bin/time", "-f", "%e s wall, %U + %S CPU s, %M KB peak",
                 sys.executable, "-m", "core", "reconcile", str(args.dataset_dir),
                 "--out", os.devnull, "--as-of", AS_OF, "--db", server.url(name)],
                capture_output=True, text=True,
            )  # fmt: skip
            print(
                f"run {run}: exit {done.returncode}, {time.perf_counter() - wall:.1f} s wall,"
                f" cluster CPU {cluster_cpu(postmaster) - cpu:.1f} s",
                flush=True,
            )
            for line in (done.stdout + done.stderr).splitlines():
                if line.startswith("timings:") or " wall, " in line or done.returncode:
                    print(f"  {line}", flush=True)
            if args.checksums:
                checksums(server.url(name, "postgres"))
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
