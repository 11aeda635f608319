"""`python -m core import-day DAY_DIR --db PATH [...]`: merge a day's files into the
database and reconcile incrementally (docs/engine.md, "Incremental runs").

The day's folder has the layout of a full dataset folder (spec section 2); its rows are
upserted into the raw tables (a stored id is replaced: a correction), then only what they
and the new as-of can change is reconciled again and every other outcome is carried
forward from the latest completed run (the stored state read from the snapshot that run
left beside the database when verified, else from the tables). `--full` reconciles
everything instead (so does the command when the latest run cannot be carried forward, and
says why). A day that would move a stored row's status backwards or lower its
amount_refunded (an older file) is refused unless `--accept-older`. A run that could not
leave its snapshot (a FIFO at a file's name, a full disk) is stored all the same and says
why on stderr in one line. Exit 0 done, 2 bad input (file, line, column; nothing written),
3 refused (an older file: file, line and the status or amount column; nothing written).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from core.calendar import IST
from core.engine.cli import params_from_args, parse_as_of
from core.errors import InputError, folder_problem
from core.reconcile_options import add_import_day_arguments


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import-day",
        help="merge a day's files into the database and reconcile incrementally",
        description=(
            "Upsert a day's dataset folder into the raw tables and reconcile only what it "
            "(and the new as-of) can change; every other outcome is carried forward."
        ),
    )
    add_import_day_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.db import open_database
    from core.db.backend import shown
    from core.db.run_lock import run_lock, say_waiting
    from core.engine.results import summary_lines
    from core.pipeline import SNAPSHOTS_BESIDE, reconcile_day_into_db

    as_of = parse_as_of(args.as_of)
    params = params_from_args(args)
    if not args.day_dir.is_dir():
        raise InputError([folder_problem(args.day_dir, "dataset folder")])
    with open_database(args.db) as conn, run_lock(conn, "import-day", on_wait=say_waiting):
        result = reconcile_day_into_db(
            conn,
            args.day_dir,
            params=params,
            as_of=as_of,
            amount_unit=args.amount_unit,
            full=args.full,
            accept_older=args.accept_older,
            snapshots=None if args.no_snapshots else (args.snapshots or SNAPSHOTS_BESIDE),
        )
    as_of_text = dt.datetime.fromtimestamp(as_of, tz=IST).isoformat()
    print(f"merged {args.day_dir} into {shown(args.db)}; reconciled as of {as_of_text}")
    # What `import` says of the same files: layouts, skipped lines, lines stored already.
    if result.imported is not None:
        unchanged = "the raw tables are unchanged, the run below reconciled them again"
        for line in result.imported.lines(unchanged):
            print(line)
    scope = result.scope
    if result.kind == "incremental":
        print(
            f"run {result.run.run_id}: incremental over run {result.base_run_id}:"
            f" {scope['reconciled']} outcomes reconciled, {scope['carried_forward']} carried"
            " forward"
        )
    else:
        print(f"run {result.run.run_id}: full ({scope['reason']})")
    print(f"stored state read from the {result.read_from}")
    if result.snapshot_note:
        print(f"note: {result.snapshot_note}", file=sys.stderr, flush=True)
    for line in summary_lines(result.summary_frame()):
        print(line)
    timings = result.run.timings
    print("timings: " + ", ".join(f"{k.removesuffix('_s')} {v:.2f}s" for k, v in timings.items()))
    return 0
