"""The incremental row of `make bench`: 50,000 new payments on top of 1,000,000.

`python -m benchmarks.incremental WORK_DIR [--payments 1000000] [--new 50000]` generates a
benchmark of payments + new payments (core.benchmark), loads it, and cuts it in two: the
day's load is the `new` most recent payments and every other row that arrived at or after
the first of them (refunds, recon rows, settlements, bank lines, ...); the base is the rest.
It reconciles the base in full (the previous run) and builds the state a full run leaves
for the next incremental run (`build_state`: each row's family and the key index), then
times the incremental run of the day (core.engine.incremental: merge, plan with that
state, reconcile the affected sub-dataset, carry the rest forward, the next state)
`--repeat` times, and a full run over the union once for comparison. It prints and
asserts nothing else (the target, <= 2 s, is printed beside the figure by run.py).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.dataset import DATASET_TABLES, Dataset
from core.engine import EngineParams, reconcile
from core.engine.incremental import build_state, merge_rows, reconcile_incremental


def split_day(dataset: Dataset, new: int) -> tuple[Dataset, Dataset]:
    """(base, day): the day holds the `new` latest payments and every row of any table that
    arrived at or after the first of them."""
    created = dataset.payments["created_at"].to_numpy(dtype=np.int64)
    cut = int(np.sort(created)[len(created) - new])
    base: dict[str, pd.DataFrame] = {}
    day: dict[str, pd.DataFrame] = {}
    for table in DATASET_TABLES:
        frame: pd.DataFrame = getattr(dataset, table)
        if table == "bank":
            cut_day = pd.Timestamp(cut + 19_800, unit="s").strftime("%Y-%m-%d")
            late = (frame["txn_date"].astype("string") >= cut_day).to_numpy(dtype=bool)
        else:
            when = frame["created_at"]
            if table == "recon":
                when = frame["settled_at"].fillna(frame["created_at"]).fillna(0)
            late = when.to_numpy(dtype=np.int64) >= cut
        base[table] = frame[~late].reset_index(drop=True)
        day[table] = frame[late].reset_index(drop=True)
    flag = dataset.has_bank_statement
    return Dataset(**base, has_bank_statement=flag), Dataset(**day, has_bank_statement=flag)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.incremental")
    parser.add_argument("work", type=Path)
    parser.add_argument("--payments", type=int, default=1_000_000)
    parser.add_argument("--new", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    from core.benchmark import generate
    from core.ingest import load_dataset

    folder = args.work / f"incremental-{args.payments}-{args.new}"
    if not (folder / "payments.csv").is_file():
        generate(folder, payments=args.payments + args.new, seed=args.seed)
    dataset, _ = load_dataset(folder, overlap_large_files=True)
    base, day = split_day(dataset, args.new)
    del dataset
    params = EngineParams()
    as_of_day = int(day.payments["created_at"].max())
    base_as_of = int(base.payments["created_at"].max())
    previous = reconcile(base, params, base_as_of)
    began_cpu = time.process_time()
    state = build_state(base)
    result: dict[str, object] = {
        "build_state_cpu_s": round(time.process_time() - began_cpu, 3),
        "mimalloc_purge_delay": os.environ.get("MIMALLOC_PURGE_DELAY", "default"),
        "base_payments": len(base.payments),
        "new_payments": len(day.payments),
        "day_rows": {t: len(getattr(day, t)) for t in DATASET_TABLES},
    }
    seconds, cpu, steps, usage = [], [], [], []
    for _ in range(args.repeat):
        before = resource.getrusage(resource.RUSAGE_SELF)
        began, began_cpu = time.perf_counter(), time.process_time()
        merged, replaced = merge_rows(base, day)
        merge_cpu = round(time.process_time() - began_cpu, 3)
        step = reconcile_incremental(
            merged, day, replaced, previous, params, as_of_day, state=state
        )
        seconds.append(round(time.perf_counter() - began, 3))
        cpu.append(round(time.process_time() - began_cpu, 3))
        steps.append({"merge_cpu_s": merge_cpu, **step.cpu_seconds})
        after = resource.getrusage(resource.RUSAGE_SELF)
        usage.append(  # user s, system s, minor page faults (system time: first touches)
            [
                round(after.ru_utime - before.ru_utime, 2),
                round(after.ru_stime - before.ru_stime, 2),
                after.ru_minflt - before.ru_minflt,
            ]
        )
    result["incremental_s"], result["incremental_cpu_s"] = seconds, cpu
    result["steps_cpu_s"] = steps
    result["user_sys_faults"] = usage
    result["stats"] = step.stats
    # The whole outcome frame is built on first use (IncrementalResult.outcomes), outside
    # the runs above: what a caller that needs it (not import-day) pays on top.
    began_cpu = time.process_time()
    outcomes = step.outcomes
    result["whole_frame_cpu_s"] = round(time.process_time() - began_cpu, 3)
    began, began_cpu = time.perf_counter(), time.process_time()
    full = reconcile(merged, params, as_of_day)
    result["full_s"] = round(time.perf_counter() - began, 3)
    result["full_cpu_s"] = round(time.process_time() - began_cpu, 3)
    result["identical"] = bool(full.equals(outcomes))
    result["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


TARGET = "<= 2 s"
PURGE_DELAY = "-1"


def bench_lines(work: Path, measure: Callable[[list[str], Path], Any]) -> list[str]:
    """`make bench`'s incremental rows: this module run as its own process (measured from
    outside by run.py's `measure`), its two incremental runs printed beside the target."""
    log = work / "log-incremental"
    # Arrow's allocator (mimalloc) keeps freed pages for reuse instead of purging them: the
    # carry forward allocates a 1M-row frame per run, and first touches of purged pages
    # are system time (docs/benchmark.md, *Incremental runs*).
    command = ["env", f"MIMALLOC_PURGE_DELAY={PURGE_DELAY}", sys.executable]
    command += ["-m", "benchmarks.incremental", str(work), "--repeat", "5"]
    m = measure(command, log)
    title = "incremental: 50,000 new payments on top of 1,000,000 (engine, in memory)"
    if m.exit_code:
        return [f"{title}: failed (exit {m.exit_code}): {m.error.splitlines()[-1:]}"]
    found = json.loads((log / "stdout.txt").read_text().strip().splitlines()[-1])
    stats = found["stats"]
    lines = [title]
    for i, (wall, cpu, steps) in enumerate(
        zip(found["incremental_s"], found["incremental_cpu_s"], found["steps_cpu_s"], strict=True),
        start=1,
    ):
        parts = ", ".join(f"{k.removesuffix('_cpu_s')} {v:.2f}" for k, v in steps.items())
        lines.append(f"  run {i}: {wall:.2f} s wall, {cpu:.2f} s CPU ({parts})   target {TARGET}")
    lines.append(
        f"  re-reconciled {stats['reconciled']:,} outcomes, carried forward"
        f" {stats['carried_forward']:,}; full run over the union {found['full_s']:.2f} s"
        f" wall, {found['full_cpu_s']:.2f} s CPU; the whole outcome frame built on demand"
        f" after the runs {found.get('whole_frame_cpu_s', 0):.2f} s CPU;"
        f" identical: {found['identical']}; process peak {found['peak_mb']:,} MB,"
        f" {m.seconds:.0f} s in all (generate, load, base run);"
        f" build_state {found['build_state_cpu_s']:.2f} s CPU once after the base run;"
        f" MIMALLOC_PURGE_DELAY={found['mimalloc_purge_delay']}"
    )
    return lines
