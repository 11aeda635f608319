"""CPU of the Books ledger's derivation alone, on a dataset folder.

    python -m benchmarks.ledger_cpu DATASET_DIR [--as-of ISO] [--profile]

Loads and reconciles the folder, then times `core.books.ledger.derive_in_memory` (what a
`reconcile --db` run's ledger worker computes) with process CPU and wall; `--profile` prints
cProfile's 45 costliest calls instead. Measures; asserts nothing (docs/benchmark.md, *Books
ledger at 1M*).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from core.books.ledger import derive_in_memory
from core.engine.cli import parse_as_of
from core.engine.params import EngineParams
from core.engine.reconcile import reconcile
from core.pipeline import load_folder


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ledger_cpu")
    parser.add_argument("dataset_dir")
    parser.add_argument("--as-of", dest="as_of", default="2026-06-30T23:59:59+05:30")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    loaded = load_folder(args.dataset_dir, hashing=False)
    outcomes = reconcile(loaded.dataset, EngineParams(), parse_as_of(args.as_of))
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(derive_in_memory, loaded.dataset, outcomes)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(45)
        return
    cpu, wall = time.process_time(), time.perf_counter()
    _, events = derive_in_memory(loaded.dataset, outcomes)
    print(
        f"ledger cpu {time.process_time() - cpu:.2f} s, wall {time.perf_counter() - wall:.2f} s,"
        f" {events:,} events"
    )


if __name__ == "__main__":
    main()
