"""`python -m core import DATASET_DIR --db PATH [--amount-unit auto|paise|rupees] [--replace]`
and `python -m core bank-mapping save|list`."""

from __future__ import annotations

import argparse
from typing import Any

from core.errors import EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "import",
        help="validate a dataset folder and store it in the database",
        description=(
            "Read payments, refunds, settlements, settlement_recon (CSV or JSON) and "
            "a bank_statement (.csv, .txt, .xlsx or .xls) from DATASET_DIR, validate every "
            "cell, and store them in one "
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
    parser.add_argument(
        "--accept-older",
        dest="accept_older",
        action="store_true",
        help="take rows the files would move backwards (a status captured back to authorized,"
        " an amount_refunded lowered, ...) as corrections; without it such an import is"
        " refused (exit 3)",
    )
    parser.set_defaults(func=run)
    register_bank_mapping(subparsers)


def register_bank_mapping(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "bank-mapping",
        help="save or list column mappings for bank statement layouts",
        description=(
            "A statement whose header is not recognised is read through a column mapping "
            "saved once: each --map names a header cell and one of our fields "
            "(txn_date, value_date, narration, reference, credit, debit, amount, direction, "
            "balance). Later imports whose header matches use it automatically."
        ),
    )
    actions = parser.add_subparsers(dest="mapping_command", metavar="ACTION")
    actions.required = True
    save = actions.add_parser("save", help="check a mapping against a statement and save it")
    save.add_argument("--db", metavar="PATH", help="SQLite file (default: DATABASE_URL)")
    save.add_argument("--file", required=True, metavar="STATEMENT", help="a statement file")
    save.add_argument(
        "--map", action="append", default=[], metavar="'Header=field'", help="repeatable"
    )
    save.add_argument("--name", default="", help="a name for the layout (default: file name)")
    save.add_argument(
        "--actor", metavar="EMAIL", help="act as this admin (default: the OS account)"
    )
    save.set_defaults(func=run_mapping_save)
    listing = actions.add_parser("list", help="the saved mappings (latest versions)")
    listing.add_argument("--db", metavar="PATH", help="SQLite file (default: DATABASE_URL)")
    listing.add_argument("--all", action="store_true", help="every version")
    listing.set_defaults(func=run_mapping_list)


def run_mapping_save(args: argparse.Namespace) -> int:
    from pathlib import Path

    from core.db import open_database
    from core.errors import InputError, Problem
    from core.ingest.mappings import mapping_for_statement, parse_assignments, save_mapping

    path = Path(args.file)
    if not path.is_file():
        raise InputError([Problem(args.file, 0, "", "no such file")])
    mapping = mapping_for_statement(
        path.name, path.read_bytes(), parse_assignments(args.map), name=args.name
    )
    from core import access
    from core.review.cli import acting

    with open_database(args.db) as conn:
        # Saving a mapping changes how statements import: an admin's act, never a typed name.
        who = access.require(
            conn, acting(args), "admin", action="bank_mapping.save", entity_id=mapping.name
        )
        saved = save_mapping(conn, mapping, actor=who.actor)
    print(f"Saved mapping {saved.describe()}")
    return EXIT_OK


def run_mapping_list(args: argparse.Namespace) -> int:
    from core.db import open_database
    from core.ingest.mappings import mapping_history, saved_mappings

    with open_database(args.db) as conn:
        mappings = mapping_history(conn) if args.all else saved_mappings(conn)
    for mapping in mappings:
        print(mapping.describe())
        print(f"  header: {', '.join(mapping.header)}")
    if not mappings:
        print("No saved bank mappings.")
    return EXIT_OK


def _saved_mappings(db: str | None) -> tuple[Any, ...]:
    from core.ingest.mappings import saved_mappings_in

    return saved_mappings_in(db)


def run(args: argparse.Namespace) -> int:
    from core import access
    from core.activity import record_import
    from core.audit.rawcheck import refuse_unrecorded_changes
    from core.db import open_database
    from core.db.run_lock import run_lock, say_waiting
    from core.ingest.load import load_dataset, store_dataset

    # Validate before opening the database, so a refused import never touches the file.
    dataset, loaded = load_dataset(args.dataset_dir, args.amount_unit, _saved_mappings(args.db))
    # Not inside a run (core.db.run_lock): rows stored after a run read the stored state but
    # before it recorded itself would count as reconciled by it, and the next day's run
    # would carry forward outcomes without them.
    with open_database(args.db) as conn, run_lock(conn, "import", on_wait=say_waiting):
        if not args.replace:  # adding to rows no audited action stored would vouch for them
            refuse_unrecorded_changes(conn, macs=False)
        report = store_dataset(
            conn,
            dataset,
            source=loaded.source,
            location=loaded.location,
            content_hash=loaded.content_hash,
            replace=args.replace,
            files=loaded.files,
            accept_older=args.accept_older,
            actor=access.os_operator().actor,
        )
        record_import(conn, report, actor=access.os_operator().actor, how="import")
    print("\n".join(report.lines()))
    return EXIT_OK
