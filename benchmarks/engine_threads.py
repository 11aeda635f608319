"""The engine serial and on two threads, on one loaded dataset (docs/benchmark.md, "Whole
process on wide data", fourth round).

    python -m benchmarks.engine_threads DATASET_DIR [--as-of ISO] [--repeat 2]

Loads the folder once (as `reconcile` without `--db` does: no file hashes), then runs
`core.engine.reconcile` with threads=1 and threads=2 in turn, `--repeat` times, and prints
for each run its wall seconds, the process's CPU seconds (user + sys, every thread) and the
calling thread's own CPU seconds: CPU above wall means both cores were busy; the calling
thread's share is the engine's critical path on a quiet machine. Also checks that every run
gives the same frame as the first. Prints; asserts nothing; the machine's load average is
printed beside each run (it is shared: wall seconds move with it, CPU seconds much less).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import pandas as pd

from core.engine import EngineParams, reconcile
from core.engine.cli import parse_as_of
from core.pipeline import load_folder


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset_dir", type=Path)
    parser.add_argument("--as-of", default="2026-06-30T23:59:59+05:30")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    as_of = parse_as_of(args.as_of)

    began, cpu = time.perf_counter(), _cpu()
    dataset = load_folder(args.dataset_dir, hashing=False).dataset
    print(f"load: {time.perf_counter() - began:.2f} s wall, {_cpu() - cpu:.2f} CPU s ({_load()})")
    first: pd.DataFrame | None = None
    for _ in range(args.repeat):
        for threads in (1, 2):
            began, cpu, own = time.perf_counter(), _cpu(), time.thread_time()
            outcomes = reconcile(dataset, EngineParams(), as_of, threads=threads)
            wall = time.perf_counter() - began
            cpu, own = _cpu() - cpu, time.thread_time() - own
            if first is None:
                first = outcomes
            same = outcomes.equals(first)
            print(
                f"reconcile threads={threads}: {wall:.2f} s wall, {cpu:.2f} CPU s,"
                f" calling thread {own:.2f} CPU s, same outcomes: {same} (load {_load()})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
