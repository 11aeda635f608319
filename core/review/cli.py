"""`python -m core review ...` (human decisions) and `python -m core exceptions list`.

review resolve|escalate|reopen|assign|investigate EXCEPTION_ID --db PATH
    --request-id ID [--note TEXT] [--assignee EMAIL] [--expected-version N] [--json]
    [--resolution explained|corrected_at_source|written_off --amount RUPEES] [--actor EMAIL]
review comment --db PATH --exception ID --text TEXT [--attach FILE]... [--request-id ID]
    [--expected-version N] [--actor EMAIL] [--json]   (or: comment ID --note TEXT ...)
review approve|reject|withdraw APPROVAL_ID --db PATH --request-id ID [--note TEXT] [--actor EMAIL]
review approvals --db PATH [--all] [--json]
review show EXCEPTION_ID --db PATH [--json]
exceptions list --db PATH [--status STATUS[,STATUS]] [--reason-code CODE] [--assignee NAME]
    [--limit N] [--json]

The actor is the operating-system account running the command (getpass.getuser(), which
owns the database file anyway); `--actor EMAIL` acts as that user only if they are an
active user with the role the action needs, else exit 3 (refused, audited).

Exit 0 on success or an idempotent replay, 3 when the rules refuse, 2 on bad input.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core import access
from core.calendar import IST
from core.cli_types import MAX_ID, bounded_int, record_id
from core.db import database_path, open_database
from core.db.backend import is_postgres_url
from core.errors import EXIT_OK, InputError, NotFoundError, Problem
from core.money import MoneyFormatError, format_inr, parse_rupees
from core.review.actions import RESOLUTIONS, act
from core.review.approvals import approve, list_approvals, reject, withdraw
from core.review.comments import NewAttachment, add_comment, max_attachment_bytes
from core.review.model import ActionResult
from core.review.queries import audit_trail, get_exception, history, list_exceptions

ACTIONS = ("resolve", "escalate", "reopen", "assign", "investigate")


@contextmanager
def existing_database(path: str) -> Iterator[sqlite3.Connection]:
    """Open a database that must already exist (a typo must not create an empty one)."""
    path = database_path(path)  # a URL of a scheme we do not serve is refused, naming ours
    if path != ":memory:" and not is_postgres_url(path) and not Path(path).is_file():
        raise NotFoundError(f"{path}: no such database file")
    with open_database(path) as conn:
        access.seed_admins(conn, access.config_admins())
        yield conn


def acting(args: argparse.Namespace) -> access.Actor:
    """--actor EMAIL (checked against the users table by core), else the OS account."""
    return str(args.actor) if args.actor is not None else access.os_operator()


def register(subparsers: Any) -> None:
    review = subparsers.add_parser("review", help="decide on exceptions (idempotent, audited)")
    actions = review.add_subparsers(dest="review_action", metavar="ACTION")
    actions.required = True
    for name in ACTIONS:
        p = actions.add_parser(name, help=f"{name} an exception")
        p.add_argument("exception_id", type=record_id, metavar="EXCEPTION_ID")
        p.add_argument("--db", required=True, metavar="PATH")
        p.add_argument("--actor", metavar="EMAIL", help="act as this user (needs the role)")
        p.add_argument("--request-id", required=True, metavar="ID")
        p.add_argument(
            "--note",
            required=name in ("resolve", "escalate", "reopen"),
            metavar="TEXT",
        )
        p.add_argument("--assignee", required=name == "assign", metavar="EMAIL")
        p.add_argument("--expected-version", type=bounded_int(0, MAX_ID), metavar="N")
        if name == "resolve":
            p.add_argument("--resolution", choices=RESOLUTIONS, default="explained")
            p.add_argument("--amount", metavar="RUPEES", help="the amount written off")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        p.set_defaults(func=_run_action, action_name=name)
    register_comment(actions)
    for name in ("approve", "reject", "withdraw"):
        p = actions.add_parser(
            name,
            help=f"{name} a write-off awaiting four eyes"
            + (" (its maker only)" if name == "withdraw" else ""),
        )
        p.add_argument("approval_id", type=record_id, metavar="APPROVAL_ID")
        p.add_argument("--db", required=True, metavar="PATH")
        p.add_argument("--actor", metavar="EMAIL", help="act as this user (needs the role)")
        p.add_argument("--request-id", required=True, metavar="ID")
        p.add_argument("--note", required=name != "approve", metavar="TEXT")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        p.set_defaults(func=_run_decision, action_name=name)
    pending = actions.add_parser("approvals", help="write-offs awaiting approval")
    pending.add_argument("--db", required=True, metavar="PATH")
    pending.add_argument("--all", action="store_true", help="decided ones too (latest first)")
    pending.add_argument("--json", action="store_true")
    pending.set_defaults(func=_run_approvals)
    show = actions.add_parser("show", help="an exception and its history")
    show.add_argument("exception_id", type=record_id, metavar="EXCEPTION_ID")
    show.add_argument("--db", required=True, metavar="PATH")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_run_show)

    exceptions = subparsers.add_parser("exceptions", help="the exception queue")
    sub = exceptions.add_subparsers(dest="exceptions_action", metavar="ACTION")
    sub.required = True
    lst = sub.add_parser(
        "list",
        help="list exceptions, largest exposure first",
        description="List exceptions, largest exposure first. 'due': the date a reviewer"
        " should have decided it by: working days from the IST date it opened, fewer for"
        " larger exposures (docs/review.md, *Due date*).",
    )
    lst.add_argument("--db", required=True, metavar="PATH")
    lst.add_argument("--status", metavar="STATUS", help="one status, or several comma-separated")
    lst.add_argument("--reason-code", metavar="CODE")
    lst.add_argument("--assignee", metavar="NAME")
    lst.add_argument("--limit", type=bounded_int(1, MAX_ID), metavar="N")
    lst.add_argument("--json", action="store_true", help="a JSON list of objects")
    lst.set_defaults(func=_run_list)
    sync = sub.add_parser(
        "sync",
        help="bring the queue in line with the latest completed run, if it is not",
        description="Sync the exception queue with the latest completed run when the command"
        " that stored the run stopped before its sync (killed, or its audit anchor refused)."
        " Waits for a run in progress (one run at a time); idempotent and audited; writes"
        " nothing when the queue is in line already (docs/review.md, *A run stored but not"
        " synced*).",
    )
    sync.add_argument("--db", required=True, metavar="PATH")
    sync.set_defaults(func=_run_sync)
    recount = sub.add_parser(
        "recount",
        help="count the Overview's stored exception totals again if they drifted",
        description="Compare the stored exception totals (the Overview's and the close"
        " report's counts and exposure) with a count and a sum over the exceptions, and"
        " count them again when they differ (audited; writes nothing when they hold)."
        " `audit verify` reports such a drift.",
    )
    recount.add_argument("--db", required=True, metavar="PATH")
    recount.set_defaults(func=_run_recount)


def _amount(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return parse_rupees(text)
    except MoneyFormatError as exc:
        raise InputError([Problem("--amount", 0, "", str(exc))]) from None


def _run_action(args: argparse.Namespace) -> int:
    extra: dict[str, Any] = {}
    if args.action_name == "resolve":
        extra = {"resolution": args.resolution, "amount": _amount(args.amount)}
    with existing_database(args.db) as conn:
        result = act(
            conn,
            args.action_name,
            args.exception_id,
            actor=acting(args),
            request_id=args.request_id,
            note=args.note,
            assignee=args.assignee,
            expected_version=args.expected_version,
            **extra,
        )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        print(_describe(result))
    return EXIT_OK


def register_comment(actions: Any) -> None:
    p = actions.add_parser("comment", help="comment on an exception, with attachments")
    p.add_argument("exception_id", type=record_id, nargs="?", metavar="EXCEPTION_ID")
    p.add_argument("--exception", type=record_id, dest="exception", metavar="ID")
    p.add_argument("--db", required=True, metavar="PATH")
    p.add_argument("--actor", metavar="EMAIL", help="act as this user (needs the role)")
    p.add_argument("--text", "--note", dest="text", required=True, metavar="TEXT")
    p.add_argument("--attach", action="append", default=[], metavar="FILE")
    p.add_argument(
        "--request-id",
        metavar="ID",
        help="idempotency key (default: from the exception, actor, text and files, so "
        "running the same command again adds nothing)",
    )
    p.add_argument("--expected-version", type=bounded_int(0, MAX_ID), metavar="N")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run_comment)


def _attachment_file(name: str, cap: int) -> NewAttachment:
    """A file to attach, read only when within the cap (a larger one is refused unread)."""
    path = Path(name)
    if not path.is_file():
        raise InputError([Problem(name, 0, "", "no such file to attach")])
    size = path.stat().st_size
    if size > cap:
        raise InputError(
            [
                Problem(
                    name,
                    0,
                    "",
                    f"is {size:,} bytes, over the {cap // 1024:,} KiB limit for an attachment "
                    "(RAZORRECON_MAX_ATTACHMENT_KB); nothing was saved",
                )
            ]
        )
    return NewAttachment(path.name, path.read_bytes())


def _run_comment(args: argparse.Namespace) -> int:
    ids = {i for i in (args.exception_id, args.exception) if i is not None}
    if len(ids) != 1:
        raise InputError([Problem("--exception", 0, "", "give one exception id")])
    (exception_id,) = ids
    cap = max_attachment_bytes()
    files = [_attachment_file(name, cap) for name in args.attach]
    actor = acting(args)
    rid = args.request_id
    if rid is None:
        who = actor.actor if isinstance(actor, access.Principal) else actor
        parts = [str(exception_id), who, args.text.strip()]
        parts += [hashlib.sha256(f.content).hexdigest() + f.filename for f in files]
        rid = "cli-" + hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]
    with existing_database(args.db) as conn:
        result = add_comment(
            conn,
            exception_id,
            actor=actor,
            body=args.text,
            request_id=rid,
            attachments=files,
            expected_version=args.expected_version,
        )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        attached = f", {len(result.attachment_ids)} attachment(s)" if result.attachment_ids else ""
        print(f"comment #{result.comment_id}{attached}: " + _describe(result))
    return EXIT_OK


def _run_decision(args: argparse.Namespace) -> int:
    decide = {"approve": approve, "reject": reject, "withdraw": withdraw}[args.action_name]
    with existing_database(args.db) as conn:
        result = decide(
            conn, args.approval_id, actor=acting(args), request_id=args.request_id, note=args.note
        )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        print(_describe(result))
    return EXIT_OK


def _run_approvals(args: argparse.Namespace) -> int:
    with existing_database(args.db) as conn:
        rows = list_approvals(conn, status=None if args.all else "pending")
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], ensure_ascii=False))
        return EXIT_OK
    for r in rows:
        checker = f", {r.status} by {r.checker}" if r.checker else ""
        print(
            f"#{r.id}  exception {r.exception_id}  write off {format_inr(r.amount)}  "
            f"(exposure {format_inr(r.exposure_amount or 0)})  by {r.maker}  "
            f"[{r.status}{checker}]: {r.note}"
        )
    print(f"{len(rows)} approval(s)")
    return EXIT_OK


def _describe(r: ActionResult) -> str:
    move = r.to_status if r.from_status == r.to_status else f"{r.from_status} -> {r.to_status}"
    who = f", assignee {r.assignee}" if r.assignee else ""
    text = f"{r.action}: exception {r.exception_id} {move}, version {r.version}{who}"
    if r.resolution:
        text += f", {r.resolution}" + (f" {format_inr(r.amount)}" if r.amount else "")
    if r.approval_id is not None and r.action == "resolve":
        text += f"; awaiting four-eyes approval #{r.approval_id}"
    text += f" (audit #{r.audit_seq})"
    if r.replayed:
        text += f"\nalready done under request id {r.request_id}: nothing changed"
    return text


def _run_show(args: argparse.Namespace) -> int:
    with existing_database(args.db) as conn:
        exc = get_exception(conn, args.exception_id)
        events = history(conn, args.exception_id)
        trail = audit_trail(conn, args.exception_id)
    if args.json:
        data = {
            "exception": exc.to_dict(),
            "history": [e.__dict__ for e in events],
            "audit": [a.__dict__ for a in trail],
        }
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(
        f"exception {exc.id}: {exc.entity_type} {exc.entity_id} {exc.reason_code} "
        f"[{exc.status}] exposure {format_inr(exc.exposure_amount)} ({exc.exposure_class}), "
        f"due {exc.due_date or '-'}, assignee {exc.assignee or '-'}, version {exc.version}"
    )
    for e in events:
        note = f": {e.note}" if e.note else ""
        when = dt.datetime.fromtimestamp(e.created_at, IST).isoformat(timespec="seconds")
        move = f"{e.from_status or '-'} -> {e.to_status}"
        print(f"  {when}  {e.actor}  {e.action}  {move}{note}")
    return EXIT_OK


def _run_sync(args: argparse.Namespace) -> int:
    from core.db import review as review_sql
    from core.db.run_lock import run_lock, say_waiting
    from core.review.sync import sync_unsynced

    with existing_database(args.db) as conn, run_lock(conn, "exceptions sync", on_wait=say_waiting):
        summary = sync_unsynced(conn)
        if summary is None:
            synced = review_sql.latest_synced_run(conn)
            where = "no run yet" if synced is None else f"run {synced}"
            print(f"the exception queue is in line with {where}; nothing written")
            return EXIT_OK
    print(
        f"exception queue synced with run {summary.run_id}: {summary.opened} opened, "
        f"{summary.reopened} reopened, {summary.auto_cleared} auto-cleared, "
        f"{summary.refreshed} refreshed, {summary.kept} kept; "
        f"{summary.audit_entries} audit entries"
    )
    return EXIT_OK


def _run_recount(args: argparse.Namespace) -> int:
    from core.review.sync import recount_exception_totals

    with existing_database(args.db) as conn:
        problem = recount_exception_totals(conn, access.os_operator().actor)
    if problem is None:
        print("the stored exception totals equal the exceptions; nothing written")
    else:
        print(f"counted again: {problem.split('; `python')[0]}")
    return EXIT_OK


def _run_list(args: argparse.Namespace) -> int:
    from core.review.sync import unsynced_warning

    statuses = tuple(s for s in (args.status or "").split(",") if s.strip()) or None
    with existing_database(args.db) as conn:
        warning = unsynced_warning(conn, args.db)
        if warning is not None:
            print(f"warning: {warning}", file=sys.stderr)
        rows = list_exceptions(
            conn,
            statuses=statuses,
            reason_code=args.reason_code,
            assignee=args.assignee,
            limit=args.limit,
        )
    if args.json:
        json.dump([r.to_dict() for r in rows], sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return EXIT_OK
    # Whole ids, never cut: a reviewer copies them into `investigate` and `review`.
    entities = [f"{r.entity_type} {r.entity_id}" for r in rows]
    width = max([28, *map(len, entities)])
    print(
        f"{'id':>7}  {'status':12}  {'reason_code':32}  {'entity':{width}}  {'exposure':>16}  due"
    )
    for r, entity in zip(rows, entities, strict=True):
        print(
            f"{r.id:>7}  {r.status:12}  {r.reason_code:32}  {entity:{width}}  "
            f"{format_inr(r.exposure_amount):>16}  {r.due_date or '-'}"
        )
    print(f"{len(rows)} exception(s)")
    return EXIT_OK
