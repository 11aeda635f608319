"""`python -m core rollforward --db PATH --month YYYY-MM [--json]`: the month's roll-forward
of the Razorpay receivable (docs/books.md). Exit 0 when it ran, whatever the residual."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from core.errors import ConfigError

MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


def _month(text: str) -> str:
    if not MONTH.match(text):
        raise argparse.ArgumentTypeError(f"not a month YYYY-MM: {text!r}")
    return text


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rollforward",
        help="roll the Razorpay receivable forward over a month",
        description="Opening + movements = closing, tied out to the open items (docs/books.md).",
    )
    parser.add_argument("--db", required=True, type=Path, help="the SQLite file")
    parser.add_argument("--month", required=True, type=_month, help="YYYY-MM (IST)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def report_lines(data: dict[str, Any]) -> list[str]:
    """The roll-forward as text lines, amounts in rupees."""
    from core.money import format_rupees

    def line(label: str, amount: int) -> str:
        return f"  {label:<28} {format_rupees(amount):>18}"

    out = [f"Razorpay receivable, {data['month']}", line("opening", data["opening"])]
    out += [line(k, v) for k, v in data["movements"].items() if v]
    out.append(line("closing", data["closing"]))
    out.append("open items")
    out += [line(k, v) for k, v in data["open_items"].items() if v]
    out.append(line("residual (unexplained)", data["residual"]))
    for item in data["drilldown"]:
        out.append(
            f"    {item['day']} {item['entity_type']} {item['entity_id']}"
            f" {format_rupees(item['amount'])}"
        )
    return out


def run(args: argparse.Namespace) -> int:
    from core.books.rollforward import month_rollforward
    from core.books.store import stored_events
    from core.db import open_database

    if not args.db.is_file():
        raise ConfigError(f"--db: no such database: {args.db}")
    with open_database(args.db) as conn:
        result = month_rollforward(stored_events(conn), args.month).as_dict()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(report_lines(result)))
    return 0
