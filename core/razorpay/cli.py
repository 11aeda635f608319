"""`python -m core sync` and `python -m core export`."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from core.errors import EXIT_OK, ConfigError


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO date (YYYY-MM-DD): {text!r}") from exc


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sync = subparsers.add_parser(
        "sync",
        help="pull payments, refunds, settlements and settlement recon from Razorpay",
        description=(
            "Read-only sync from the Razorpay API for every IST day in [--from, --to]. Keys "
            "from RAZORPAY_KEY_ID / RAZORPAY_KEY_SECRET (rzp_test_ only unless "
            "RAZORPAY_ALLOW_LIVE=1); RAZORPAY_BASE_URL points elsewhere. An interrupted sync "
            "of the same range resumes after its watermark."
        ),
    )
    sync.add_argument("--db", default=None, help="SQLite file (default: DATABASE_URL)")
    sync.add_argument("--from", dest="date_from", type=_date, required=True, metavar="DATE")
    sync.add_argument("--to", dest="date_to", type=_date, required=True, metavar="DATE")
    sync.add_argument(
        "--restart",
        action="store_true",
        help="ignore the watermark of an unfinished sync of this range and start over",
    )
    sync.set_defaults(func=run_sync)

    export = subparsers.add_parser(
        "export",
        help="write the stored Razorpay data (and bank lines) as a dataset folder",
        description="Write payments, refunds, settlements, settlement recon and bank lines "
        "from the database as a dataset that `python -m core reconcile` reads.",
    )
    export.add_argument("out_dir", metavar="OUT_DIR")
    export.add_argument("--db", default=None, help="SQLite file (default: DATABASE_URL)")
    export.add_argument(
        "--overwrite", action="store_true", help="replace dataset files already in OUT_DIR"
    )
    export.set_defaults(func=run_export)


def run_sync(args: argparse.Namespace) -> int:
    from core.db import open_database
    from core.razorpay.config import settings_from_env
    from core.razorpay.sync import sync

    settings = settings_from_env()
    if args.date_from > args.date_to:
        raise ConfigError(f"--from {args.date_from} is after --to {args.date_to}")
    mode = "test" if settings.is_test_key else "LIVE"
    print(
        f"syncing {args.date_from} to {args.date_to} (IST) from {settings.base_url} "
        f"with {mode} key {settings.key_id}",
        file=sys.stderr,
    )
    with open_database(args.db) as conn:
        report = sync(conn, settings, args.date_from, args.date_to, restart=args.restart)
    resumed = " (resumed after the watermark)" if report.resumed else ""
    print(f"sync run {report.run_id} completed{resumed}")
    for r in report.resources:
        start = r.first_day.isoformat() if r.first_day else "nothing left"
        print(
            f"  {r.resource:<19} from {start:<12} {r.days:>4} days {r.items:>8} items "
            f"{r.inserted:>8} new {r.updated:>8} changed"
        )
    print(
        f"  {report.requests} requests, {report.retries} retries; {report.items} items, "
        f"{report.inserted} new, {report.updated} changed"
    )
    if report.retries:
        print(
            f"  {report.rate_limited} of the retries were rate limits (429); waited "
            f"{report.paced_seconds:.1f} s pacing and {report.backoff_seconds:.1f} s backing off"
        )
    return EXIT_OK


def run_export(args: argparse.Namespace) -> int:
    from core.db import open_database
    from core.razorpay.export import export_dataset

    with open_database(args.db) as conn:
        report = export_dataset(conn, args.out_dir, overwrite=args.overwrite)
    print(f"exported to {report.out_dir}")
    for name, count in report.counts:
        print(f"  {name:<24} {count:>8} rows")
    if report.bank_ids_preserved is False:
        print("  bank line ids were renumbered (see docs/razorpay.md)")
    return EXIT_OK
