"""Per-thread timeline of a CLI command: start, end, wall and thread CPU of named functions.

    python -m benchmarks.timeline \\
        "core.db.staging:write_staged_file,core.books.ledger:derive_in_memory" \\
        reconcile DATASET_DIR --db X.sqlite --out results.csv --as-of 2026-06-30T23:59:59+05:30

Each `module:attribute` (a dotted attribute for a method) is wrapped before the command runs
(`core.__main__.main`, in this process), so it is caught where callers look it up by module
attribute at call time. Prints one line per call to standard error, by start time, then the
end. Measures; asserts nothing (docs/benchmark.md, issue 16's rounds).
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import time
from typing import Any

_T0 = time.perf_counter()
_CALLS: list[tuple[float, float, float, str, str]] = []


def _wrap(module_name: str, attribute: str) -> None:
    owner: Any = importlib.import_module(module_name)
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    function = getattr(owner, name)

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        began, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            ended = time.perf_counter()
            thread = threading.current_thread().name
            label = f"{module_name}.{attribute}"
            _CALLS.append((began - _T0, ended - _T0, time.thread_time() - cpu, thread, label))

    setattr(owner, name, timed)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for target in argv[0].split(","):
        module_name, attribute = target.split(":")
        _wrap(module_name, attribute)
    import core.__main__ as cli

    sys.argv = ["core", *argv[1:]]
    code = cli.main(argv[1:])
    for began, ended, cpu, thread, label in sorted(_CALLS):
        print(
            f"{began:7.2f} {ended:7.2f} wall {ended - began:6.2f} cpu {cpu:6.2f}"
            f" {thread:20s} {label}",
            file=sys.stderr,
        )
    print(f"end {time.perf_counter() - _T0:.2f}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
