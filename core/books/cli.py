"""The books' commands (docs/books.md): `rollforward --db PATH --month YYYY-MM [--json]`
(the Razorpay receivable), `journal --db PATH --month YYYY-MM [--format csv|tally]
[--ledgers FILE] [--basis closed|current]` (the basis it prints said on standard error),
`close-report --db PATH --month YYYY-MM --out ZIP [--pdf PDF]`, `close --db PATH --month
YYYY-MM [--actor EMAIL]` and
`pricing --db PATH --rules JSON --from DATE --actor WHO`. Exit 0 when it ran, whatever the
residual."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.cli_types import month
from core.errors import ConfigError

DB_HELP = "the database: a SQLite file or a postgresql:// URL"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rollforward",
        help="roll the Razorpay receivable forward over a month",
        description="Opening + movements = closing, tied out to the open items (docs/books.md).",
    )
    parser.add_argument("--db", required=True, type=Path, help=DB_HELP)
    parser.add_argument("--month", required=True, type=month, help="YYYY-MM (IST)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)

    journal = subparsers.add_parser(
        "journal",
        help="journal entries for a month: CSV or Tally XML vouchers",
        description="Balanced vouchers per settlement and the month's captures (docs/books.md).",
    )
    journal.add_argument("--db", required=True, type=Path, help=DB_HELP)
    journal.add_argument("--month", required=True, type=month, help="YYYY-MM (IST)")
    journal.add_argument(
        "--format",
        choices=("csv", "tally", "sources"),
        default="csv",
        help="sources: the source rows of the lines whose list is too long for one"
        " spreadsheet cell (the CSV counts them there), one per row",
    )
    journal.add_argument(
        "--ledgers", type=Path, help="JSON object: ledger key -> name in your chart of accounts"
    )
    journal.add_argument("--company", help="Tally company to import into (SVCURRENTCOMPANY)")
    journal.add_argument(
        "--basis",
        choices=("closed", "current"),
        help="closed: a closed month's vouchers as kept at its close (its default); current:"
        " today's data, what arrived after a close included (an open month's only basis)",
    )
    journal.set_defaults(func=run_journal)

    report = subparsers.add_parser(
        "close-report",
        help="the month-end close report: a CSV bundle (zip) and a PDF",
        description="Roll-forward, open exceptions, overcharges, journals, audit head.",
    )
    report.add_argument("--db", required=True, type=Path, help=DB_HELP)
    report.add_argument("--month", required=True, type=month, help="YYYY-MM (IST)")
    report.add_argument("--out", required=True, type=Path, help="the zip to write")
    report.add_argument("--pdf", type=Path, help="also write the PDF here")
    report.add_argument(
        "--gst-state",
        help="the merchant's GST registration state: the input tax credit is CGST + SGST in"
        " Razorpay's own state (core.books.gst.SUPPLIER_STATE, the default), else IGST",
    )
    report.set_defaults(func=run_report)

    close = subparsers.add_parser(
        "close",
        help="close a month (admin, audited): keep its roll-forward, balance by day and journal",
        description="Close a month as the Books page does (docs/books.md section 4): a close"
        " cannot be undone; data that arrive for the month later reach the next open month"
        " as prior-period adjustments. Closing a closed month changes nothing.",
    )
    close.add_argument("--db", required=True, type=Path, help=DB_HELP)
    close.add_argument("--month", required=True, type=month, help="YYYY-MM (IST)")
    close.add_argument(
        "--actor", help="who closes it: an admin on this workbench (default: your OS login)"
    )
    close.set_defaults(func=run_close)

    pricing = subparsers.add_parser(
        "pricing",
        help="store a new version of the contracted pricing plan",
        description="Rules as JSON: [{method, percent_bp, fixed_paise}] (docs/books.md).",
    )
    pricing.add_argument("--db", required=True, type=Path, help=DB_HELP)
    pricing.add_argument("--rules", required=True, type=Path, help="JSON file of rules")
    pricing.add_argument("--from", dest="effective_from", required=True, help="ISO date (IST)")
    pricing.add_argument("--actor", required=True, help="who enters the plan (audited)")
    pricing.set_defaults(func=run_pricing)


def report_lines(data: dict[str, Any]) -> list[str]:
    """The roll-forward as text lines, amounts in rupees; a closed month says who closed it
    and when, an open month after a closed one that it opens from that snapshot."""
    from core.money import format_rupees

    def line(label: str, amount: int) -> str:
        return f"  {label:<28} {format_rupees(amount):>18}"

    closed = data.get("closed")
    after = data.get("opens_from_closed")
    if closed:
        state = f" (closed by {closed['by']} at {closed['at_ist']}: the figures are as closed)"
    elif after:
        state = f" (open; opens from {after}'s closing as closed)"
    else:
        state = ""
    out = [f"Razorpay receivable, {data['month']}{state}", line("opening", data["opening"])]
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
    write_offs = data.get("write_offs_not_posted") or {"total": 0, "items": []}
    if write_offs["items"]:
        out.append(
            f"note: write-offs not posted ({len(write_offs['items'])}, review queue)"
            f" {format_rupees(write_offs['total']):>18}"
        )
        out.append(
            "  decided by the month's end and final; the Books do not post them: their money"
            " is still in the open items above (docs/books.md)"
        )
        for item in write_offs["items"]:
            approval = f", approval #{item['approval_id']}" if item["approval_id"] else ""
            out.append(
                f"    #{item['exception_id']} {item['entity_type']} {item['entity_id']}"
                f" {item['reason_code']} {format_rupees(item['amount'])}"
                f" ({item['decided_by']}, {item['decided_at_ist']}{approval})"
            )
    return out


def _database_exists(db: Path) -> bool:
    """A SQLite file that exists, or a PostgreSQL URL (argparse's Path keeps its text)."""
    from core.db.backend import is_postgres_url

    return is_postgres_url(str(db)) or db.is_file()


def run(args: argparse.Namespace) -> int:
    """What the Books page shows for the month (`books_month` over the ledger it reads): a
    closed month's snapshot, an open month after a closed one with its prior-period line."""
    from core.books.close import (
        books_month,
        closed_months,
        unposted_write_offs,
        write_offs_dict,
    )
    from core.books.ledger import ledger_for
    from core.db import open_database

    if not _database_exists(args.db):
        raise ConfigError(f"--db: no such database: {args.db}")
    with open_database(args.db) as conn:
        events = ledger_for(conn, args.month).events_for(args.month)
        result = books_month(events, args.month, closed_months(conn)).as_dict()
        result["write_offs_not_posted"] = write_offs_dict(unposted_write_offs(conn, args.month))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(report_lines(result)))
    return 0


def run_journal(args: argparse.Namespace) -> int:
    """The month's vouchers on its basis (`month_journal`): CSV or Tally XML on standard
    output; which basis, and for today's data of a closed month what differs from the
    journal kept at its close, on standard error."""
    from core.books.close import month_journal
    from core.books.journal import Ledgers, journal_csv, journal_sources_csv, tally_xml
    from core.db import open_database

    if not _database_exists(args.db):
        raise ConfigError(f"--db: no such database: {args.db}")
    ledgers = Ledgers()
    if args.ledgers is not None:
        try:
            names = json.loads(args.ledgers.read_text(encoding="utf-8"))
            ledgers = Ledgers.from_mapping(dict(names))
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigError(f"--ledgers: {exc}") from exc
    with open_database(args.db) as conn:
        journal = month_journal(conn, args.month, args.basis, ledgers)
    vouchers = list(journal.vouchers)
    if args.format == "csv":
        text = journal_csv(vouchers)
    elif args.format == "sources":
        text = journal_sources_csv(vouchers)
    else:
        text = tally_xml(vouchers, args.company)
    sys.stdout.write(text)
    print("\n".join([*journal.basis_lines(), *journal.change_lines()]), file=sys.stderr)
    return 0


def run_report(args: argparse.Namespace) -> int:
    from core.books.gst import SUPPLIER_STATE
    from core.books.report import build_report, bundle, pdf
    from core.db import open_database

    if not _database_exists(args.db):
        raise ConfigError(f"--db: no such database: {args.db}")
    with open_database(args.db) as conn:
        state = args.gst_state or SUPPLIER_STATE
        report = build_report(conn, args.month, merchant_state=state)
    args.out.write_bytes(bundle(report))
    print(f"close report {args.month} -> {args.out} ({len(report.files)} files)")
    if args.pdf is not None:
        args.pdf.write_bytes(pdf(report))
        print(f"PDF -> {args.pdf}")
    return 0


def run_close(args: argparse.Namespace) -> int:
    """Close the month as the Books page's "Close" does: the same admin check (the OS login
    acts as admin, as `users` and `review` have it; --actor must be an active admin), the
    same events (the stored ledger when current), the same audited `close_month`."""
    import uuid

    from core import access
    from core.books.close import close_month, closed_months
    from core.books.ledger import ledger_for
    from core.db import open_database
    from core.money import format_rupees

    if not _database_exists(args.db):
        raise ConfigError(f"--db: no such database: {args.db}")
    with open_database(args.db) as conn:
        who = args.actor if args.actor is not None else access.os_operator()
        acting = access.require(
            conn, who, "admin", action="close a month", entity_type="month", entity_id=args.month
        )
        was = closed_months(conn).get(args.month)
        events = ledger_for(conn, args.month).events_for(args.month)
        closed = close_month(
            conn,
            events,
            args.month,
            actor=acting.actor,
            request_id=f"cli-close-{args.month}-{uuid.uuid4().hex}",
        )
    snapshot = closed.snapshot
    said = "was already closed" if was is not None else "closed"
    print(
        f"{args.month} {said}: {closed.label()}; closing"
        f" {format_rupees(snapshot.closing, symbol=True)}, open items"
        f" {format_rupees(sum(v for _, v in snapshot.open_items), symbol=True)}, residual"
        f" {format_rupees(snapshot.residual, symbol=True)}"
    )
    return 0


def run_pricing(args: argparse.Namespace) -> int:
    import hashlib

    from core.books.pricing import PricingRule
    from core.books.store import save_pricing_plan
    from core.db import open_database
    from core.engine.cli import parse_as_of

    try:
        text = args.rules.read_text(encoding="utf-8")
        rules = tuple(
            PricingRule(str(r["method"]), int(r.get("percent_bp", 0)), int(r.get("fixed_paise", 0)))
            for r in json.loads(text)
        )
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"--rules: {exc}") from exc
    start = parse_as_of(f"{args.effective_from}T00:00:00")
    # The same file, date and actor again is the same request: nothing new is stored.
    request = hashlib.sha256(f"{text}|{start}|{args.actor}".encode()).hexdigest()
    with open_database(args.db) as conn:
        version = save_pricing_plan(
            conn,
            effective_from=start,
            rules=rules,
            actor=args.actor,
            request_id=f"cli-{request}",
        )
    print(f"pricing plan version {version} in force from {args.effective_from}")
    return 0
