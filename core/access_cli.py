"""`python -m core users add|grant|deactivate|list`: people and their roles (admin only).

users add EMAIL --role ROLE --db PATH [--actor EMAIL]
users grant EMAIL --role ROLE --db PATH [--actor EMAIL]
users deactivate EMAIL --db PATH [--actor EMAIL]
users list --db PATH [--all] [--json]

The actor is the operating-system account running the command (it owns the database
file); `--actor EMAIL` acts as that user only if they are an active admin (else exit 3).
The configured first admins (RAZORRECON_ADMINS) are added before the command runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from dataclasses import asdict
from typing import Any

from core import access
from core.calendar import IST
from core.errors import EXIT_OK


def register(subparsers: Any) -> None:
    users = subparsers.add_parser("users", help="people and their roles (admin only, audited)")
    actions = users.add_subparsers(dest="users_action", metavar="ACTION")
    actions.required = True
    for name, needs_role in (("add", True), ("grant", True), ("deactivate", False)):
        p = actions.add_parser(name, help=f"{name} a user")
        p.add_argument("email", metavar="EMAIL")
        if needs_role:
            p.add_argument("--role", required=True, choices=access.ROLES)
        p.add_argument("--db", required=True, metavar="PATH")
        p.add_argument("--actor", metavar="EMAIL", help="act as this admin")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=_run_change, users_action=name)
    lst = actions.add_parser("list", help="the users and their roles")
    lst.add_argument("--db", required=True, metavar="PATH")
    lst.add_argument("--all", action="store_true", help="deactivated users too")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_run_list)


def _run_change(args: argparse.Namespace) -> int:
    from core.review.cli import acting, existing_database

    with existing_database(args.db) as conn:
        who = acting(args)
        if args.users_action == "add":
            change = access.add_user(conn, args.email, args.role, actor=who)
        elif args.users_action == "grant":
            change = access.grant(conn, args.email, args.role, actor=who)
        else:
            change = access.deactivate(conn, args.email, actor=who)
    if args.json:
        print(json.dumps(asdict(change)))
    else:
        state = "active" if change.active else "deactivated"
        done = f"audit #{change.audit_seq}" if change.changed else "nothing to change"
        print(f"{change.email}: {change.role}, {state} ({done})")
    return EXIT_OK


def _run_list(args: argparse.Namespace) -> int:
    from core.review.cli import existing_database

    with existing_database(args.db) as conn:
        users = access.list_users(conn, active_only=not args.all)
    if args.json:
        print(json.dumps([asdict(u) for u in users]))
        return EXIT_OK
    for u in users:
        since = dt.datetime.fromtimestamp(u.updated_at, IST).date().isoformat()
        state = "active" if u.active else "deactivated"
        print(f"{u.email:40}  {u.role:9}  {state:11}  since {since}  added by {u.added_by}")
    print(f"{len(users)} user(s)")
    return EXIT_OK
