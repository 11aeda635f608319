"""`python -m core import DATASET_DIR --db PATH [--amount-unit auto|paise|rupees] [--replace]`."""

from __future__ import annotations

import argparse

from core.errors import EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "import",
        help="validate a dataset folder and store it in the database",
        description=(
            "Read payments, refunds, settlements, settlement_recon (CSV or JSON) and "
            "bank_statement.csv from DATASET_DIR, validate every cell, and store them in one "
            "transaction. Bad input: exit 2, one line per problem, nothing written."
        ),
    )
    parser.add_argument("dataset_dir", metavar="DATASET_DIR")
    parser.add_argument("--db", metavar="PATH", help="SQLite file (default: DATABASE_URL)")
    parser.add_argument(
        "--amount-unit",
        choices=("auto", "paise", "rupees"),
        default="auto",
        help="units of the Razorpay files' amounts (default: detect per file)",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="empty the raw tables first (exceptions and the audit trail are kept)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.db import open_database
    from core.ingest.load import load_dataset, store_dataset

    # Validate before opening the database, so a refused import never touches the file.
    dataset, loaded = load_dataset(args.dataset_dir, args.amount_unit)
    with open_database(args.db) as conn:
        report = store_dataset(
            conn,
            dataset,
            source=loaded.source,
            location=loaded.location,
            content_hash=loaded.content_hash,
            replace=args.replace,
            files=loaded.files,
        )
    print("\n".join(report.lines()))
    return EXIT_OK
