"""Who may do what: identities, roles, and the refusals that protect the data.

An identity is the verified email an OpenID Connect provider vouches for (the app), the
operating-system account running the command line, or, on a machine's loopback address
only, the local single user. Roles are ordered; each includes the ones before it:

| role | may |
|---|---|
| viewer | read every page |
| reviewer | assign, investigate, comment, resolve, escalate, reopen |
| approver | approve or reject a write-off above the four-eyes threshold (not their own) |
| admin | import, replace, reconcile, sync, settings (bank mappings), manage users |

Roles attach to the email in the `users` table. The first admins come from configuration
(`RAZORRECON_ADMINS`); everyone else is added by an admin. A person who leaves is
deactivated: they can no longer act, and the trail keeps their name. Every change to a
user is audited; so is every refusal.

A `Principal` is an identity whose role the caller has already established by other
means (the OS account running the CLI owns the database file; the local single user);
a plain string actor is looked up in `users`, and only an active user passes.
"""

from __future__ import annotations

import getpass
import os
import re
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass

from core.audit import append
from core.db import access as access_sql
from core.db import transaction
from core.errors import ConfigError, InputError, Problem, RefusedError
from core.four_eyes import DEFAULT_FOUR_EYES_PAISE as DEFAULT_FOUR_EYES_PAISE
from core.four_eyes import FOUR_EYES_ENV as FOUR_EYES_ENV
from core.four_eyes import four_eyes_threshold as four_eyes_threshold

ROLES = ("viewer", "reviewer", "approver", "admin")
_LEVEL = {role: level for level, role in enumerate(ROLES)}
# permission -> the least role that holds it
PERMISSIONS = {"read": "viewer", "review": "reviewer", "approve": "approver", "admin": "admin"}
ADMINS_ENV = "RAZORRECON_ADMINS"
# An address as an identity provider vouches for it, lower case: a dot-atom local part
# (RFC 5321: letters, digits and ! # $ % & ' * + - / = ? ^ _ ` { | } ~, dots between) and
# a domain of letter-digit-hyphen labels with at least one dot. Brackets, parentheses,
# spaces, quotes, backslashes, colons, commas, angle brackets and non-ASCII are refused:
# no real address needs them, and `[text](//host)@example.com` rendered as a link on
# other people's screens (an independent attacker, F10).
_ATOM = r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_EMAIL = re.compile(rf"^{_ATOM}(?:\.{_ATOM})*@{_LABEL}(?:\.{_LABEL})+$", re.ASCII)


@dataclass(frozen=True)
class Principal:
    """An acting identity with its role. actor: what the audit trail records; source:
    'users' (the users table), 'os' (the account running the CLI), 'local' (the local
    single-user app on 127.0.0.1)."""

    actor: str
    role: str
    source: str = "users"

    def can(self, permission: str) -> bool:
        return _LEVEL[self.role] >= _LEVEL[PERMISSIONS[permission]]


Actor = str | Principal


@dataclass(frozen=True)
class User:
    email: str
    role: str
    active: bool
    added_by: str
    added_at: int
    updated_at: int


@dataclass(frozen=True)
class UserChange:
    """The answer to a user-management command; changed False means nothing to do."""

    email: str
    role: str
    active: bool
    changed: bool
    audit_seq: int | None = None


def _problem(field: str, message: str) -> InputError:
    return InputError([Problem("request", 0, field, message)])


def normalise_email(value: str | None) -> str:
    """The canonical spelling of an email (trimmed, lower case); InputError if not one."""
    text = (value or "").strip().lower()
    if not acceptable_email(text):
        raise _problem("email", f"{value!r} is not an email address")
    return text


def acceptable_email(text: str) -> bool:
    """Whether `text` (lower case) is an address this workbench accepts as an identity."""
    return bool(_EMAIL.fullmatch(text)) and len(text) <= 200


def check_role(role: str) -> str:
    if role not in _LEVEL:
        raise _problem("role", f"unknown role {role!r}; one of {', '.join(ROLES)}")
    return role


def role_includes(role: str, permission: str) -> bool:
    return _LEVEL[role] >= _LEVEL[PERMISSIONS[permission]]


def os_operator() -> Principal:
    """The operating-system account running the command line. It can open the database
    file directly, so it acts as admin; the trail records its login name."""
    return Principal(getpass.getuser(), "admin", "os")


def local_user() -> Principal:
    """The single local user of an app bound to the loopback address (no identity provider
    configured, no demo): clearly labelled, admin, never reachable from another machine."""
    return Principal(f"local:{getpass.getuser()}", "admin", "local")


def _user(row: sqlite3.Row) -> User:
    return User(
        email=str(row["email"]),
        role=str(row["role"]),
        active=bool(row["active"]),
        added_by=str(row["added_by"]),
        added_at=int(row["added_at"]),
        updated_at=int(row["updated_at"]),
    )


def get_user(conn: sqlite3.Connection, email: str) -> User | None:
    row = access_sql.get_user(conn, email.strip().lower())
    return None if row is None else _user(row)


def list_users(conn: sqlite3.Connection, *, active_only: bool = False) -> list[User]:
    return [_user(r) for r in access_sql.list_users(conn, active_only=active_only)]


def assignable(conn: sqlite3.Connection) -> list[str]:
    """Emails of the active people who can work an exception (reviewer or above)."""
    return [u.email for u in list_users(conn, active_only=True) if role_includes(u.role, "review")]


def principal(conn: sqlite3.Connection, who: Actor) -> Principal:
    """The acting identity: a Principal as given; a string only as an active user."""
    if isinstance(who, Principal):
        return who
    name = (who or "").strip().lower()
    if not name:
        raise _problem("actor", "is required and must not be blank")
    user = get_user(conn, name)
    if user is None:
        raise RefusedError(f"{name!r} is not a user here; an admin adds people (users add)")
    if not user.active:
        raise RefusedError(f"{name} was deactivated on this workbench and can no longer act")
    if not acceptable_email(user.email):  # added before addresses were checked this closely
        raise RefusedError(
            f"{name!r} is not an address this workbench accepts (brackets, parentheses, "
            "spaces and the like); an admin deactivates it (users deactivate)"
        )
    return Principal(user.email, user.role)


def refuse(
    conn: sqlite3.Connection,
    actor: str,
    message: str,
    *,
    action: str,
    entity_type: str = "access",
    entity_id: str = "",
    details: dict[str, object] | None = None,
) -> RefusedError:
    """Audit a refusal (its own transaction, so it stays) and return the error to raise."""
    with transaction(conn):
        append(
            conn,
            actor=actor or "unknown",
            action="access.refused",
            entity_type=entity_type,
            entity_id=entity_id or action,  # the audit needs an id: the act refused
            payload={"attempted": action, "reason": message, **(details or {})},
        )
    return RefusedError(message)


def require(
    conn: sqlite3.Connection,
    who: Actor,
    permission: str,
    *,
    action: str,
    entity_type: str = "access",
    entity_id: str = "",
) -> Principal:
    """The acting Principal if it holds `permission`; else an audited RefusedError."""
    try:
        acting = principal(conn, who)
    except RefusedError as exc:
        name = who.actor if isinstance(who, Principal) else str(who or "").strip().lower()
        raise refuse(
            conn, name, str(exc), action=action, entity_type=entity_type, entity_id=entity_id
        ) from None
    if not acting.can(permission):
        needed = PERMISSIONS[permission]
        raise refuse(
            conn,
            acting.actor,
            f"{acting.actor} is {acting.role}; {action} needs the {needed} role",
            action=action,
            entity_type=entity_type,
            entity_id=entity_id,
        )
    return acting


# -- user management (admin) --------------------------------------------------------------


def _change(
    conn: sqlite3.Connection,
    acting: Principal,
    email: str,
    *,
    role: str,
    active: bool,
    event: str,
    before: User | None,
    now: int,
) -> UserChange:
    if before is None:
        access_sql.insert_user(conn, email, role, acting.actor, now)
    else:
        access_sql.update_user(conn, email, role=role, active=active, now=now)
    seq = append(
        conn,
        actor=acting.actor,
        action=f"user.{event}",
        entity_type="user",
        entity_id=email,
        payload={
            "role": role,
            "active": active,
            "previous_role": None if before is None else before.role,
            "previously_active": None if before is None else before.active,
        },
        now=now,
    )
    return UserChange(email, role, active, True, seq)


def add_user(conn: sqlite3.Connection, email: str, role: str, *, actor: Actor) -> UserChange:
    """Add a person with a role (or reactivate a deactivated one). Repeating it is a no-op;
    adding an active person with another role is refused (use grant)."""
    address, role = normalise_email(email), check_role(role)
    acting = require(
        conn, actor, "admin", action="users add", entity_type="user", entity_id=address
    )
    now = int(time.time())
    with transaction(conn):
        before = get_user(conn, address)
        if before is not None and before.active:
            if before.role == role:
                return UserChange(address, role, True, False)
            raise RefusedError(f"{address} is already a {before.role}; change the role with grant")
        event = "added" if before is None else "reactivated"
        return _change(
            conn, acting, address, role=role, active=True, event=event, before=before, now=now
        )


def grant(conn: sqlite3.Connection, email: str, role: str, *, actor: Actor) -> UserChange:
    """Give an active person another role (the new role replaces the old)."""
    address, role = normalise_email(email), check_role(role)
    acting = require(
        conn, actor, "admin", action="users grant", entity_type="user", entity_id=address
    )
    now = int(time.time())
    with transaction(conn):
        before = get_user(conn, address)
        if before is None or not before.active:
            raise RefusedError(f"{address} is not an active user; add them first")
        if before.role == role:
            return UserChange(address, role, True, False)
        if before.email == acting.actor and role != "admin":
            raise RefusedError("you cannot take away your own admin role; ask another admin")
        return _change(
            conn,
            acting,
            address,
            role=role,
            active=True,
            event="role_changed",
            before=before,
            now=now,
        )


def deactivate(conn: sqlite3.Connection, email: str, *, actor: Actor) -> UserChange:
    """A person who leaves: they can no longer act; their history stays. An address stored
    before addresses were checked this closely is found as stored, so it can be removed."""
    stored = get_user(conn, email or "")
    address = stored.email if stored is not None else normalise_email(email)
    acting = require(
        conn, actor, "admin", action="users deactivate", entity_type="user", entity_id=address
    )
    now = int(time.time())
    with transaction(conn):
        before = get_user(conn, address)
        if before is None:
            raise RefusedError(f"{address} is not a user here")
        if not before.active:
            return UserChange(address, before.role, False, False)
        if before.email == acting.actor:
            raise RefusedError("you cannot deactivate yourself; ask another admin")
        return _change(
            conn,
            acting,
            address,
            role=before.role,
            active=False,
            event="deactivated",
            before=before,
            now=now,
        )


# -- configuration ------------------------------------------------------------------------


def config_admins(value: str | None = None) -> list[str]:
    """The first admins: RAZORRECON_ADMINS, comma-separated emails."""
    raw = os.environ.get(ADMINS_ENV, "") if value is None else value
    try:
        return sorted({normalise_email(part) for part in raw.split(",") if part.strip()})
    except InputError as exc:
        raise ConfigError(f"{ADMINS_ENV}: {exc}") from None


def seed_admins(
    conn: sqlite3.Connection, emails: Iterable[str], *, actor: str = "config"
) -> list[str]:
    """Insert the configured admins that are not users yet (audited, idempotent); a person
    an admin deactivated stays deactivated. The emails added."""
    wanted = [normalise_email(e) for e in emails]
    added: list[str] = []
    if not [e for e in wanted if get_user(conn, e) is None]:
        return added  # the usual case: no write, no lock
    now = int(time.time())
    seeder = Principal(actor, "admin", "config")
    with transaction(conn):
        for email in wanted:
            if get_user(conn, email) is None:
                _change(
                    conn,
                    seeder,
                    email,
                    role="admin",
                    active=True,
                    event="added",
                    before=None,
                    now=now,
                )
                added.append(email)
    return added


def seed_users(conn: sqlite3.Connection, users: dict[str, str], *, actor: str) -> list[str]:
    """Insert (email -> role) people not yet known, as `actor` (the demo's personas)."""
    now = int(time.time())
    seeder = Principal(actor, "admin", "config")
    added: list[str] = []
    with transaction(conn):
        for email, role in users.items():
            address, role_ = normalise_email(email), check_role(role)
            if get_user(conn, address) is None:
                _change(
                    conn,
                    seeder,
                    address,
                    role=role_,
                    active=True,
                    event="added",
                    before=None,
                    now=now,
                )
                added.append(address)
    return added
