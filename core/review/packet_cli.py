"""`python -m core packet --db PATH --exception ID --out FILE.pdf|FILE.zip [--format pdf|zip]`.

Writes one exception's escalation packet (core.review.packet): the format comes from the
suffix of --out, or --format (needed for `-`, standard output, and for a device or FIFO).
The file is written beside the target and renamed over it (core.outputs), so a failure
never leaves half a packet. The export is recorded in the audit trail as the operating
system account running the command (`--actor EMAIL`: as that user, with the reviewer role).

Exit 0 when written, 2 for an unknown exception, database or format, 3 when refused.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from core import access
from core.cli_types import record_id, unix_seconds
from core.errors import EXIT_OK, InputError, Problem
from core.outputs import output_target, place_output, temporary_for
from core.review.cli import existing_database
from core.review.packet import FORMATS, export_packet


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "packet", help="write an exception's escalation packet (PDF or ZIP of CSVs)"
    )
    p.add_argument("--db", required=True, metavar="PATH")
    p.add_argument("--exception", required=True, type=record_id, metavar="ID")
    p.add_argument("--out", required=True, metavar="FILE", help=".pdf or .zip (- for stdout)")
    p.add_argument("--format", choices=FORMATS, help="default: from the suffix of --out")
    p.add_argument("--actor", metavar="EMAIL", help="export as this user (needs the role)")
    p.add_argument(
        "--as-of", type=unix_seconds, metavar="UNIX", help="date the packet (default: now)"
    )
    p.set_defaults(func=run)


def chosen_format(out: str, fmt: str | None) -> str:
    if fmt is not None:
        return fmt
    suffix = output_target(out).suffix.lstrip(".")
    if suffix in FORMATS:
        return suffix
    raise InputError(
        [Problem(str(out), 0, "", "name a .pdf or .zip file, or give --format pdf|zip")]
    )


def run(args: argparse.Namespace) -> int:
    fmt = chosen_format(args.out, args.format)
    target = output_target(args.out)
    actor: access.Actor = str(args.actor) if args.actor is not None else access.os_operator()
    with existing_database(args.db) as conn:
        content = export_packet(conn, args.exception, fmt, actor=actor, as_of=args.as_of)
    tmp = temporary_for(target)
    try:
        tmp.write_bytes(content)
        place_output(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    print(
        f"wrote the escalation packet for exception {args.exception} ({fmt}, "
        f"{len(content):,} bytes) to {target.label}",
        file=sys.stderr if target.kind == "stdout" else sys.stdout,
    )
    return EXIT_OK
