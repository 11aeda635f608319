"""`python -m core audit verify|export`.

audit verify --db PATH [--anchor SEQ:HASH] [--anchors FILE] [--json]
    exit 0 when the chain holds, matches its anchors (RAZORRECON_ANCHOR_DIR) and replays to
    the exceptions' current state; 1 naming the first broken row, seq or exception.
audit export --db PATH --out FILE [--actor NAME] [--action ACTION] [--entity-type TYPE]
    [--entity-id ID] [--since ISO] [--until ISO]
    CSV for .csv, JSON lines for .jsonl/.ndjson.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from core.audit.chain import export, parse_time, verify
from core.db.audit import AuditFilter
from core.errors import EXIT_FAILED_CHECK, EXIT_OK
from core.review.cli import existing_database


def register(subparsers: Any) -> None:
    audit = subparsers.add_parser("audit", help="verify or export the audit trail")
    sub = audit.add_subparsers(dest="audit_action", metavar="ACTION")
    sub.required = True
    v = sub.add_parser("verify", help="recompute the hash chain")
    v.add_argument("--db", required=True, metavar="PATH")
    v.add_argument("--anchor", metavar="SEQ:HASH", help="a head recorded earlier; must remain")
    v.add_argument(
        "--anchors", metavar="FILE", help="anchor file to check against (default: see docs)"
    )
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=_run_verify)
    e = sub.add_parser("export", help="write the trail to CSV or JSON lines")
    e.add_argument("--db", required=True, metavar="PATH")
    e.add_argument(
        "--out", required=True, metavar="FILE", help=".csv, .jsonl or .ndjson (- for stdout)"
    )
    e.add_argument("--format", choices=("csv", "jsonl"), help="default: from the suffix")
    e.add_argument("--actor", metavar="NAME")
    e.add_argument("--action", metavar="ACTION")
    e.add_argument("--entity-type", metavar="TYPE")
    e.add_argument("--entity-id", metavar="ID")
    e.add_argument("--since", metavar="ISO", help="from this date/time (IST if no offset)")
    e.add_argument("--until", metavar="ISO", help="up to this date (inclusive) or time")
    e.set_defaults(func=_run_export)


def _run_verify(args: argparse.Namespace) -> int:
    with existing_database(args.db) as conn:
        result = verify(conn, anchor=args.anchor, anchors_path=args.anchors)
    if args.json:
        print(json.dumps(result.__dict__))
    elif result.ok:
        print(
            f"audit chain holds: {result.rows_checked} row(s), {result.anchors_checked} "
            f"anchor(s), exceptions, users and approvals match the trail; "
            f"head {result.head_seq}:{result.head_hash}"
        )
    else:
        print(f"audit chain BROKEN: {result.problem}")
        if result.broken_seq is not None:
            print(f"first broken row: seq {result.broken_seq}")
        if result.broken_exception is not None:
            print(f"exception changed outside the trail: {result.broken_exception}")
        if result.broken_user is not None:
            print(f"user changed outside the trail: {result.broken_user}")
        if result.broken_approval is not None:
            print(f"approval changed outside the trail: {result.broken_approval}")
        for violation in result.violations:  # every entry its actor could not make
            print(f"not allowed: {violation}")
    if not args.json:
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return EXIT_OK if result.ok else EXIT_FAILED_CHECK


def _run_export(args: argparse.Namespace) -> int:
    where = AuditFilter(
        actor=args.actor,
        action=args.action,
        entity_type=args.entity_type,
        entity_id=args.entity_id,
        since=parse_time(args.since, field="since") if args.since else None,
        until=parse_time(args.until, field="until", end=True) if args.until else None,
    )
    with existing_database(args.db) as conn:
        written = export(conn, args.out, where, fmt=args.format)
    print(
        f"wrote {written} audit row(s) to {args.out}",
        file=sys.stderr if args.out == "-" else sys.stdout,
    )
    return EXIT_OK
