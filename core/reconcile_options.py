"""The `reconcile` command's options, kept apart from core.engine.cli (whose import brings
pandas and the engine): `python -m core` reads a command line with this very parser before
pandas is imported, to start parsing the big CSV files early (core.__main__)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from core.calendar import CalendarParams

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


def add_calendar_arguments(parser: argparse.ArgumentParser) -> None:
    """The calendar (spec section 5) and amount-unit options every reconciling command takes;
    `core.engine.cli.params_from_args` reads them back."""
    defaults = CalendarParams()
    parser.add_argument("--settlement-days", type=_non_negative, default=defaults.settlement_days)
    parser.add_argument(
        "--international-days", type=_non_negative, default=defaults.international_days
    )
    parser.add_argument("--grace-days", type=_non_negative, default=defaults.grace_days)
    parser.add_argument("--bank-days", type=_non_negative, default=defaults.bank_days)
    parser.add_argument("--holidays", type=Path, help="file of ISO dates, one per line")
    parser.add_argument("--amount-unit", choices=AMOUNT_UNITS, default="auto")


def add_reconcile_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option and argument of `reconcile` (core.engine.cli.register)."""
    parser.add_argument("dataset_dir", metavar="DATASET_DIR", type=Path)
    parser.add_argument(
        "--out", required=True, type=Path, help="results.csv to write (- for standard output)"
    )
    parser.add_argument(
        "--as-of", dest="as_of", help="ISO 8601 instant; no offset means IST (default: now)"
    )
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


class _Refused(Exception):
    """A command line the parser would refuse (argparse would print and exit)."""


class _SilentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Refused(message)


def parse_reconcile_quietly(argv: list[str]) -> argparse.Namespace | None:
    """`reconcile`'s arguments (the words after the command) read by the same options as the
    command's own parser, or None where that parser would refuse the line. Prints nothing
    and never exits: help is no option here, so `-h` is refused too."""
    parser = _SilentParser(prog="reconcile", add_help=False)
    add_reconcile_arguments(parser)
    try:
        return parser.parse_args(argv)
    except _Refused:
        return None
