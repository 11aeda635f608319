"""The options of `reconcile` and `import-day`, kept apart from core.engine.cli and
core.incremental_cli (whose imports bring pandas and the engine): `python -m core` reads a
command line with these very parsers before pandas is imported, to start parsing the big
CSV files (`reconcile`) or hashing the base run's snapshot (`import-day`) early
(core.__main__)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from core.calendar import CALENDAR_LIMITS, CalendarParams, calendar_days_problem

AMOUNT_UNITS = ("auto", "paise", "rupees")


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {value}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {value}")
    return value


def _calendar_days(name: str) -> Callable[[str], int]:
    """An option's type: a whole number of working days within CALENDAR_LIMITS[name]."""

    def parse(text: str) -> int:
        value = _non_negative(text)
        problem = calendar_days_problem(value, CALENDAR_LIMITS[name])
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value

    return parse


def add_calendar_arguments(parser: argparse.ArgumentParser) -> None:
    """The calendar (spec section 5) and amount-unit options every reconciling command takes;
    `core.engine.cli.params_from_args` reads them back."""
    defaults = CalendarParams()
    for name in CALENDAR_LIMITS:
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=_calendar_days(name),
            default=getattr(defaults, name),
            help=f"working days, 0 to {CALENDAR_LIMITS[name]} (default {getattr(defaults, name)})",
        )
    parser.add_argument("--holidays", type=Path, help="file of ISO dates, one per line")
    parser.add_argument("--amount-unit", choices=AMOUNT_UNITS, default="auto")


def add_as_of_argument(parser: argparse.ArgumentParser) -> None:
    """`--as-of`, read back by `core.engine.cli.parse_as_of`."""
    parser.add_argument(
        "--as-of", dest="as_of", help="ISO 8601 instant; no offset means IST (default: now)"
    )


def add_reconcile_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option and argument of `reconcile` (core.engine.cli.register)."""
    parser.add_argument("dataset_dir", metavar="DATASET_DIR", type=Path)
    parser.add_argument(
        "--out", required=True, type=Path, help="results.csv to write (- for standard output)"
    )
    add_as_of_argument(parser)
    add_calendar_arguments(parser)
    parser.add_argument("--db", type=Path, help="also store dataset and run in this SQLite file")
    partitioned = parser.add_argument_group(
        "partitioned runs (docs/engine.md, Partitions; docs/scale.md)"
    )
    partitioned.add_argument(
        "--partitions",
        action="store_true",
        help="reconcile window by window of settlement days (same outcomes, less memory)",
    )
    partitioned.add_argument(
        "--days-per-window", type=_positive, default=5, help="settlement days per window"
    )
    partitioned.add_argument(
        "--scheduler",
        help="run one Dask task per window: 'local' (a LocalCluster of 2 workers here) or a "
        "dask.distributed scheduler address (tcp://host:8786; needs --store on shared storage)",
    )
    partitioned.add_argument(
        "--stream",
        action="store_true",
        help="import the folder in blocks into the window store (for datasets too large to "
        "hold at once; API CSV files), then reconcile it window by window",
    )
    partitioned.add_argument(
        "--store",
        type=Path,
        help="write the window-partitioned Parquet store here (default: a temporary folder); "
        "DATASET_DIR may itself be such a store",
    )


def add_import_day_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option and argument of `import-day` (core.incremental_cli.register)."""
    parser.add_argument("day_dir", metavar="DAY_DIR", type=Path)
    parser.add_argument(
        "--db", required=True, type=Path, help="the database: a SQLite file or postgresql:// URL"
    )
    add_as_of_argument(parser)
    add_calendar_arguments(parser)
    parser.add_argument(
        "--full", action="store_true", help="reconcile every entity, not only what changed"
    )
    parser.add_argument(
        "--accept-older",
        dest="accept_older",
        action="store_true",
        help="take rows the day would move backwards (a status captured back to authorized,"
        " an amount_refunded lowered, ...) as corrections; without it such a day is refused"
        " as an older file",
    )
    snapshots = parser.add_mutually_exclusive_group()
    snapshots.add_argument(
        "--snapshots",
        type=Path,
        metavar="DIR",
        help="folder for the snapshot of the reconciled state the next day starts from"
        " (default: DB.snapshots beside a SQLite file; none for PostgreSQL unless named)",
    )
    snapshots.add_argument(
        "--no-snapshots",
        dest="no_snapshots",
        action="store_true",
        help="read the raw tables and the base run from the database; leave no snapshot",
    )


class _Refused(Exception):
    """A command line the parser would refuse (argparse would print and exit)."""


class _SilentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Refused(message)


def _parse_quietly(
    prog: str, add_arguments: Callable[[argparse.ArgumentParser], None], argv: list[str]
) -> argparse.Namespace | None:
    """The command's arguments (the words after the command) read by the same options as
    the command's own parser, or None where that parser would refuse the line. Prints
    nothing and never exits: help is no option here, so `-h` is refused too."""
    parser = _SilentParser(prog=prog, add_help=False)
    add_arguments(parser)
    try:
        return parser.parse_args(argv)
    except _Refused:
        return None


def parse_reconcile_quietly(argv: list[str]) -> argparse.Namespace | None:
    """`reconcile`'s arguments read quietly (`_parse_quietly`)."""
    return _parse_quietly("reconcile", add_reconcile_arguments, argv)


def parse_import_day_quietly(argv: list[str]) -> argparse.Namespace | None:
    """`import-day`'s arguments read quietly (`_parse_quietly`)."""
    return _parse_quietly("import-day", add_import_day_arguments, argv)
