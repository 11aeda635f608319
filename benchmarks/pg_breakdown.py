"""Where `reconcile --db postgresql://…` spends its time: per step, wall seconds, this
process's CPU seconds and its server backend's CPU seconds (read from /proc, so the server
must run on this machine). Prints; asserts nothing. docs/benchmark.md, "PostgreSQL --db
at 1M".

    DATABASE_OWNER_URL=postgresql://owner@host/db \\
    python -m benchmarks.pg_breakdown DATASET_DIR postgresql://app@host/db [--as-of ISO]

The database should be new (a clone of a migrated template): the run replaces its raw
tables and adds a run, its outcomes and its exceptions.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def backend_cpu(pid: int) -> float:
    """utime + stime of a local PostgreSQL backend, seconds."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@contextmanager
def step(name: str, pid: int) -> Iterator[None]:
    wall, cpu, server = time.perf_counter(), client_cpu(), backend_cpu(pid)
    yield
    print(
        f"{name:<16} wall {time.perf_counter() - wall:8.2f} s   client CPU"
        f" {client_cpu() - cpu:7.2f} s   server backend CPU {backend_cpu(pid) - server:7.2f} s",
        flush=True,
    )


def timed(module: Any, attribute: str, name: str, pid: int) -> None:
    """Wrap module.attribute so each call is measured as step `name`."""
    original: Callable[..., Any] = getattr(module, attribute)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with step(name, pid):
            return original(*args, **kwargs)

    setattr(module, attribute, wrapper)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pg_breakdown", description=__doc__)
    parser.add_argument("dataset_dir", type=Path)
    parser.add_argument("url")
    parser.add_argument("--as-of", default="2026-06-30T23:59:59+05:30")
    args = parser.parse_args(argv)

    import core.ingest
    import core.pipeline
    import core.review
    from core.db import open_database
    from core.engine import EngineParams
    from core.engine.cli import parse_as_of

    with open_database(args.url) as conn:
        pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        with step("load", pid):
            loaded = core.pipeline.load_folder(args.dataset_dir)
        with step("reconcile", pid):
            run = core.pipeline.reconcile_loaded(loaded, EngineParams(), parse_as_of(args.as_of))
        timed(core.ingest, "store_dataset", "store_dataset", pid)
        timed(core.pipeline, "persist_run", "persist", pid)
        timed(core.review, "sync_exceptions", "sync", pid)
        with step("store, total", pid):
            stored = core.pipeline.store_folder_run(conn, run)
        print(f"run {stored.run_id}: {stored.sync}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
