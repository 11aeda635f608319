"""`python -m core reconcile DATASET_DIR --out results.csv [...]` (spec section 8).

Exit 0 when the run completed (exceptions found are a normal result); exit 2 naming file,
line and column on bad input, with nothing written: the dataset is loaded and reconciled
before anything touches the disk, results.csv is written to a temporary file and moved
into place only after the database (with --db) has taken the run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from core.calendar import IST, CalendarParams, load_holidays
from core.engine.params import EngineParams
from core.errors import ConfigError, InputError, Problem, folder_problem
from core.reconcile_options import add_reconcile_arguments


def parse_as_of(text: str | None) -> int:
    """An ISO 8601 instant (or date) to Unix seconds; no offset means IST (spec 1).

    A date alone means the end of that IST day. None means now.
    """
    if text is None:
        return int(time.time())
    value = text.strip()
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value)
            moment = dt.datetime.combine(day, dt.time(23, 59, 59), tzinfo=IST)
        else:
            moment = dt.datetime.fromisoformat(value)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=IST)
    except ValueError as exc:
        raise ConfigError(f"--as-of: not an ISO 8601 date-time: {text!r}") from exc
    return int(moment.timestamp())


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reconcile",
        help="reconcile a dataset folder into results.csv (and a database)",
        description="Reconcile a dataset folder (spec section 2) and write results.csv.",
    )
    add_reconcile_arguments(parser)
    parser.set_defaults(func=run)


def params_from_args(args: argparse.Namespace) -> EngineParams:
    holidays: frozenset[dt.date] = frozenset()
    if args.holidays is not None:
        if not args.holidays.is_file():
            raise InputError([Problem(str(args.holidays), 0, "", "holiday file not found")])
        holidays = load_holidays(args.holidays)
    return EngineParams(
        calendar=CalendarParams(
            settlement_days=args.settlement_days,
            international_days=args.international_days,
            grace_days=args.grace_days,
            bank_days=args.bank_days,
            holidays=holidays,
        )
    )


def _run_streamed(args: argparse.Namespace, params: EngineParams, as_of: int) -> int:
    """--stream: the folder imported in blocks into a window store, then reconciled."""
    import tempfile

    from core.engine.distributed import run_store
    from core.ingest.stream import stream_folder_to_store

    if args.db is not None:
        return _run_streamed_into_db(args, params, as_of)
    from tqdm import tqdm  # type: ignore[import-untyped]

    with ExitStack() as stack:
        root: Path = args.store
        if root is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="razorrecon-"))
            root = Path(folder) / "store"
        root.parent.mkdir(parents=True, exist_ok=True)
        bar = stack.enter_context(tqdm(desc="import", unit=" rows", unit_scale=True))
        began = time.perf_counter()
        stream_folder_to_store(
            args.dataset_dir,
            root,
            params,
            as_of,
            days_per_window=args.days_per_window,
            amount_unit=args.amount_unit,
            progress=lambda _file, rows: bar.update(rows),
        )
        bar.close()
        print(
            f"imported {args.dataset_dir} into {root} in {time.perf_counter() - began:.2f}s",
            file=sys.stderr,
        )
        return run_store(args, params, as_of, root)
    raise AssertionError("unreachable")


def _run_streamed_into_db(args: argparse.Namespace, params: EngineParams, as_of: int) -> int:
    """--stream --db: imported, reconciled and stored window by window (core.streamed);
    results.csv is then written from the stored run."""
    from core.db import open_database
    from core.db.run_lock import run_lock, say_waiting
    from core.db.runs import read_outcome_frame
    from core.engine.results import print_run_report, write_results_csv_to
    from core.outputs import output_target, place_output, temporary_for
    from core.streamed import stream_folder_into_db, tqdm_progress_fn

    target = output_target(args.out)
    temporary = temporary_for(target)
    try:
        with (
            open_database(args.db) as conn,
            run_lock(conn, "reconcile --stream --db", on_wait=say_waiting),
        ):
            update, close = tqdm_progress_fn("reconcile --stream --db")
            try:
                stored = stream_folder_into_db(
                    conn,
                    args.dataset_dir,
                    params,
                    as_of,
                    store=args.store,
                    days_per_window=args.days_per_window,
                    amount_unit=args.amount_unit,
                    progress=update,
                )
            finally:
                close()
            began = time.perf_counter()
            outcomes = read_outcome_frame(conn, stored.run_id)
            write_results_csv_to(outcomes, temporary)
            place_output(temporary, target)
            write_csv = time.perf_counter() - began
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    print_run_report(
        to_stdout=target.kind == "stdout",
        source=str(args.dataset_dir),
        as_of=as_of,
        out=str(args.out),
        stored=f"run {stored.run_id} stored in {_shown(args.db)} ({stored.windows} windows)",
        outcomes=outcomes,
        timings={**stored.timings, "write_csv_s": round(write_csv, 3)},
    )
    return 0


def run(args: argparse.Namespace) -> int:
    from core.db import open_database
    from core.db.run_lock import run_lock, say_waiting
    from core.engine.results import print_run_report, write_results_csv_to
    from core.outputs import output_target, place_output, temporary_for
    from core.pipeline import load_folder, reconcile_loaded, staging_folder, store_folder_run

    as_of = parse_as_of(args.as_of)
    params = params_from_args(args)
    if not args.dataset_dir.is_dir():
        raise InputError([folder_problem(args.dataset_dir, "dataset folder")])
    from core.engine.store_layout import is_store

    if is_store(args.dataset_dir):
        from core.engine.distributed import run_store

        return run_store(args, params, as_of)
    if args.stream:
        return _run_streamed(args, params, as_of)
    from core.ingest.mappings import saved_mappings_in

    # Statement column mappings saved in the database apply (read before anything is written).
    mappings = saved_mappings_in(args.db) if args.db is not None else ()
    # The files' sha256 is recorded only with --db (the run's input hashes): skipped without.
    loaded = load_folder(args.dataset_dir, args.amount_unit, mappings, hashing=args.db is not None)

    out: Path = args.out
    target = output_target(out)  # a folder is refused; a device or FIFO is never replaced
    temporary = temporary_for(target)
    run_id: int | None = None
    try:
        with ExitStack() as stack:
            conn = None
            staging = None
            if args.db is not None:
                # Opened only once the input is known good; the raw tables are staged on
                # worker threads while this one reconciles and writes results.csv.
                conn = stack.enter_context(open_database(args.db))
                # One run at a time (core.db.run_lock): waited for before anything is staged.
                stack.enter_context(run_lock(conn, "reconcile --db", on_wait=say_waiting))
                staging = stack.enter_context(staging_folder(conn, loaded))
            from core.books.store import pricing_plans

            pricing = pricing_plans(conn) if conn is not None else ()
            if args.partitions or args.scheduler or args.store:
                from core.engine.distributed import reconcile_loaded_by_windows

                folder_run = reconcile_loaded_by_windows(args, loaded, params, as_of, pricing)
            else:
                folder_run = reconcile_loaded(loaded, params, as_of, pricing)
            timings = dict(folder_run.timings)
            began = time.perf_counter()
            write_results_csv_to(folder_run.outcomes, temporary)
            timings["write_csv_s"] = round(time.perf_counter() - began, 3)
            if conn is not None:
                stored = store_folder_run(conn, folder_run, staging=staging)
                run_id = stored.run_id
                timings = {**stored.timings, **timings}
        place_output(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise

    print_run_report(
        to_stdout=target.kind == "stdout",
        source=str(args.dataset_dir),
        as_of=as_of,
        out=str(out),
        stored=None if run_id is None else f"run {run_id} stored in {_shown(args.db)}",
        outcomes=folder_run.outcomes,
        timings=timings,
    )
    return 0


def _shown(database: Path) -> str:
    """`--db` as the run report names it (core.db.backend.shown: no password)."""
    from core.db.backend import shown

    return shown(database)
