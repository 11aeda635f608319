"""`python -m core COMMAND ...`: the command line.

Each command lives in the module that owns its domain and is imported only when used, so
`python -m core reconcile` never pays for the investigator or the Razorpay SDK. A module
in COMMAND_MODULES exposes `register(subparsers)`, which adds its sub-parser(s) and sets
`func(args) -> int` as the handler. Domain errors become exit codes here and nowhere else.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sqlite3
import sys
from collections.abc import Sequence

from core.errors import ConfigError, RazorReconError

# A command allocates gigabytes once and exits; both settings below are about that, set
# before NumPy and Arrow are imported, and an explicit setting wins.
# NumPy's huge-page advice makes the kernel compact memory at first touch (measured here:
# 1 GB touched in 1.06 s with it, 0.50 s without).
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
# Arrow's allocator: jemalloc instead of the default mimalloc. 1M reconcile, five runs each
# alternated: files -> results.csv 6.59 s mean (6.00-7.27) against 7.57 s (6.65-8.63); with
# --db 16.6 s and 1.84 GB peak against 18.4 s and 2.0-2.2 GB.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
# import-day: jemalloc keeps the pages it frees for the rest of the process (read at its
# start only: Arrow's `jemalloc_set_decay_ms` reaches new arenas, not the ones in use), so
# the incremental run's frames reuse the snapshot read's pages instead of faulting fresh
# ones. In-memory harness at 1M: 165-200k minor faults per run with the default decay,
# 15-100k with this (docs/benchmark.md, *Incremental runs*, fifth round).
if sys.argv[1:2] == ["import-day"]:
    os.environ.setdefault("JE_ARROW_MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1")


def early_parse_folder(argv: Sequence[str]) -> str | None:
    """The DATASET_DIR of a `reconcile` command line that stores and hashes nothing (no
    --db, no --stream), read by the command's own options (core.reconcile_options: no
    pandas), or None: for any other command, for help, and for a line the command would
    refuse. argparse reads the line again in `main` and alone decides what runs; a wrong
    guess costs a wasted parse, never a different result (the load takes an early parse
    only of the very file and columns it reads, unhashed)."""
    if list(argv[:1]) != ["reconcile"]:
        return None
    from core.reconcile_options import parse_reconcile_quietly

    args = parse_reconcile_quietly(list(argv[1:]))
    if args is None or args.db is not None or args.stream:
        return None
    return str(args.dataset_dir)


def start_early_parse(argv: Sequence[str]) -> None:
    """`reconcile DIR` without --db: its big CSV files are scanned and parsed by Arrow on
    threads started now, so pandas and the engine import while Arrow parses
    (core.ingest.readers.prefetch_large_csvs; docs/benchmark.md, sixth round)."""
    folder = early_parse_folder(argv)
    if folder is None or os.environ.get("RAZORRECON_EARLY_PARSE", "1") == "0":
        return
    from pathlib import Path

    from core.ingest.readers import prefetch_large_csvs

    with contextlib.suppress(OSError):
        prefetch_large_csvs(Path(folder))


def start_snapshot_hashing(argv: Sequence[str]) -> None:
    """`import-day ... --db FILE`: the base run's snapshot files hashed on a thread while
    the command's modules import (core.snapshot_ahead; a wrong guess costs the hashing
    only: the command checks every file as before)."""
    if list(argv[:1]) != ["import-day"] or os.environ.get("RAZORRECON_EARLY_PARSE", "1") == "0":
        return
    from core.reconcile_options import parse_import_day_quietly

    args = parse_import_day_quietly(list(argv[1:]))
    if args is None or args.no_snapshots:
        return
    from core.snapshot_ahead import hash_ahead, snapshot_paths

    folder = None if args.snapshots is None else str(args.snapshots)
    with contextlib.suppress(OSError):
        hash_ahead(snapshot_paths(str(args.db), folder))


COMMAND_MODULES: dict[str, str] = {
    "import": "core.ingest.cli",
    "bank-mapping": "core.ingest.cli",
    "generate": "core.benchmark.cli",
    "reconcile": "core.engine.cli",
    "import-day": "core.incremental_cli",
    "exceptions": "core.review.cli",
    "investigate": "core.investigate.cli",
    "review": "core.review.cli",
    "packet": "core.review.packet_cli",
    "audit": "core.audit.cli",
    "users": "core.access_cli",
    "sync": "core.razorpay.cli",
    "export": "core.razorpay.cli",
    "rollforward": "core.books.cli",
    "journal": "core.books.cli",
    "close-report": "core.books.cli",
    "close": "core.books.cli",
    "pricing": "core.books.cli",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core", description="RazorRecon: Razorpay reconciliation."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    modules = [COMMAND_MODULES[only]] if only in COMMAND_MODULES else COMMAND_MODULES.values()
    for module_name in dict.fromkeys(modules):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if only is not None and exc.name and module_name.startswith(exc.name):
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = args_list[0] if args_list and not args_list[0].startswith("-") else None
    parser = build_parser(command)
    args = parser.parse_args(args_list)
    from core.leftovers import remove_dead_leftovers_once

    # Staging folders and temporaries of a killed earlier command go first.
    remove_dead_leftovers_once()
    if hasattr(args, "db") and (args.db is not None or command != "reconcile"):
        # A command on a database: migration 0120's Python step, registered by core.activity
        # (core.db.migrate cannot import it), must be loaded before the database is opened.
        import core.activity  # noqa: F401
    try:
        return int(args.func(args))
    except RazorReconError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except sqlite3.OperationalError as exc:
        # A lock wait that ran out, in any command: one line and exit 3, as a run that waited
        # for another run (core.db.run_lock). Any other database error stays a traceback.
        from core.db.connection import lock_timeout_error

        busy = lock_timeout_error(exc, getattr(args, "db", None))
        if busy is None:
            raise
        print(f"error: {busy}", file=sys.stderr)
        return busy.exit_code
    except sqlite3.DatabaseError as exc:
        # PostgreSQL's "permission denied": what to grant to whom (docs/postgres.md).
        from core.db.connection import database_path
        from core.db.migrate import permission_refusal

        db = getattr(args, "db", None)
        refused = permission_refusal(exc, database_path(db) if db else database_path())
        if refused is None:
            raise
        print(f"error: {refused}", file=sys.stderr)
        return ConfigError(refused).exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours.
        sys.stderr.close()
        return 0


# Commands whose process ends right after the handler returns without freeing what it
# holds: `reconcile` has closed (and fsynced) every file and database by then, `import-day`
# its database (committed) and snapshot files (closed, renamed) and joined its threads,
# and tearing down a million-row dataset object by object costs the user a second (0.2 s
# for a day's run at 1M) for nothing.
EXIT_WITHOUT_FREEING = frozenset({"reconcile", "import-day"})


def exit_now(code: int) -> None:
    """Flush standard output and error, then end the process without freeing its memory
    (os._exit: no interpreter teardown, no atexit handlers, no garbage collection)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed: a reader went away
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    start_early_parse(sys.argv[1:])
    start_snapshot_hashing(sys.argv[1:])
    code = main()
    if sys.argv[1:2] and sys.argv[1] in EXIT_WITHOUT_FREEING:
        exit_now(code)
    sys.exit(code)
