"""The guard triggers as the migrations create them, and whether the database still holds
them so (`audit verify`, docs/review.md "Audit trail").

A guard checked by name only passes when it is recreated under the same name doing nothing
(SQLite: `WHEN 0`; PostgreSQL: a function whose body returns at once) or, on PostgreSQL,
left but disabled. So each guard's definition in the database is compared with the one
its migration creates, read from the migration files themselves (`migrations/` or
`migrations_pg/`, the latest CREATE of a name winning, a DROP forgetting it): one source
of truth, which a writer of the database cannot change.

Compared in a normal form (`normal_form`): the statement's tokens, words in lower case,
string literals exact, whitespace and comments dropped. SQLite keeps a trigger's CREATE
text as it was given (sqlite_master.sql), so that is all. PostgreSQL gives the trigger
back as it parsed it (`pg_get_triggerdef`: the table qualified by its schema, each
condition in parentheses, literals cast, `'completed'::text`), so its form also drops the
current schema's qualifier, casts and parentheses: a guard's condition is a series of ORs
or of ANDs, or one AND such a series, and no other grouping of the same words fires less
often for a completed run. Its function is compared whole (`pg_get_functiondef`: header, language,
attributes, body) with its migration's CREATE FUNCTION, and it must be enabled as created
(`pg_trigger.tgenabled` 'O': not disabled, not only for replication).
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from core.db.backend import is_postgres
from core.db.migrate import available_migrations, split_statements

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>--[^\n]*|/\*.*?\*/)
    | (?P<dollar>\$(?P<tag>[A-Za-z_]*)\$(?P<body>.*?)\$(?P=tag)\$)
    | (?P<string>'(?:[^']|'')*')
    | (?P<quoted>"(?:[^"]|"")*")
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<cast>::)
    | (?P<other>[0-9]+|<>|<=|>=|!=|\|\||.)
    """,
    re.VERBOSE | re.DOTALL,
)
_ENABLED_AS_CREATED = "O"  # pg_trigger.tgenabled: fires in origin and local sessions
_NOT_AS_CREATED = {
    "D": "disabled",
    "R": "enabled only for replication sessions, so it never fires for the app",
    "A": "enabled ALWAYS, not as its migration created it",
}


@dataclass(frozen=True)
class Created:
    """A definition as a migration creates it: the migration's name and the statement."""

    migration: str
    sql: str


@dataclass(frozen=True)
class Definitions:
    """What the migrations of one database create, by name: triggers and functions."""

    triggers: dict[str, Created]
    functions: dict[str, Created]


def _tokens(sql: str) -> Iterator[tuple[str, str]]:
    """(kind, text) of every token of `sql` but whitespace and comments; a dollar-quoted
    body is one token whose text is its own normal form."""
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup or "other"
        if kind in ("space", "comment"):
            continue
        if match.group("dollar") is not None:
            yield "dollar", " ".join(normal_form(match.group("body")))
        elif kind == "word":
            yield kind, match.group().lower()
        else:
            yield kind, match.group()


def normal_form(sql: str, *, deparsed: bool = False, schema: str = "") -> tuple[str, ...]:
    """The tokens two definitions are compared by (module text). `deparsed`: PostgreSQL's
    form of a definition it gives back (`schema`'s qualifier, casts and parentheses
    dropped), for both the catalog's text and the migration's."""
    out: list[str] = []
    pending = list(_tokens(sql))
    i = 0
    while i < len(pending):
        kind, text = pending[i]
        i += 1
        if deparsed:
            if kind == "cast":
                i += 1  # the type's name
                continue
            if text in ("(", ")"):
                continue
            if kind == "word" and text == schema and i < len(pending) and pending[i][1] == ".":
                i += 1
                continue
            if out[-2:] == ["create", "or"] and text == "replace":
                out.pop()
                continue
        out.append(text)
    while out and out[-1] == ";":
        out.pop()
    return tuple(_set_clause_as_deparsed(_events_in_server_order(out)) if deparsed else out)


# pg_get_triggerdef writes a trigger's events in this order whatever order CREATE named them
_EVENT_ORDER = {"insert": 0, "delete": 1, "update": 2, "truncate": 3}


_SET_ENDS = {"as", "language", "security", "returns", "cost", "volatile", "stable", "immutable"}


def _set_clause_as_deparsed(tokens: list[str]) -> list[str]:
    """A function's `SET search_path = public, pg_temp` as pg_get_functiondef writes it
    (`SET search_path TO 'public', 'pg_temp'`): `to`, and its values unquoted, in both."""
    out = list(tokens)
    for i, token in enumerate(out[:-2]):
        if token == "set" and out[i + 2] in ("=", "to"):
            out[i + 2] = "to"
            j = i + 3
            while j < len(out) and out[j] not in _SET_ENDS:
                if len(out[j]) > 1 and out[j][0] == out[j][-1] == "'":
                    out[j] = out[j][1:-1]
                j += 1
    return out


def _events_in_server_order(tokens: list[str]) -> list[str]:
    """A CREATE TRIGGER's `INSERT OR UPDATE OR DELETE ...` in PostgreSQL's order."""
    if tokens[:2] != ["create", "trigger"] or "on" not in tokens:
        return tokens
    start = next((i + 1 for i, t in enumerate(tokens) if t in ("before", "after", "of")), None)
    if start is None or tokens[start - 1] == "of":
        return tokens
    end = tokens.index("on", start)
    events: list[list[str]] = [[]]
    for token in tokens[start:end]:
        if token == "or":
            events.append([])
        else:
            events[-1].append(token)
    ordered = sorted(events, key=lambda event: _EVENT_ORDER.get(event[0] if event else "", 9))
    joined = [token for event in ordered for token in ["or", *event]][1:]
    return [*tokens[:start], *joined, *tokens[end:]]


def _statements(sql: str, dialect: str) -> list[str]:
    """A migration's statements: SQLite's split as it runs them (a trigger's body holds
    semicolons); PostgreSQL's at each top-level semicolon (dollar-quoted bodies hold them)."""
    if dialect != "postgresql":
        return split_statements(sql)
    statements: list[str] = []
    start = 0
    for match in _TOKEN.finditer(sql):
        if match.lastgroup == "other" and match.group() == ";":
            statements.append(sql[start : match.end()])
            start = match.end()
    if sql[start:].strip():
        statements.append(sql[start:])
    return statements


@functools.cache
def created_definitions(dialect: str = "sqlite") -> Definitions:
    """Every trigger and function the migrations of `dialect` leave, by name (the latest
    CREATE of a name; a DROP forgets it)."""
    triggers: dict[str, Created] = {}
    functions: dict[str, Created] = {}
    for migration, sql in available_migrations(dialect):
        for statement in _statements(sql, dialect):
            words = [text for _, text in _tokens(statement)][:8]
            if words[:2] == ["create", "or"] and words[2:3] == ["replace"]:
                words = ["create", *words[3:]]
            if words[:1] not in (["create"], ["drop"]) or len(words) < 3:
                continue
            found = {"trigger": triggers, "function": functions}.get(words[1])
            if found is None:
                continue
            name = words[4] if words[2:4] == ["if", "exists"] else words[2]
            if words[0] == "create":
                found[name] = Created(migration, statement.strip())
            else:
                found.pop(name, None)
    return Definitions(triggers, functions)


def _differs(held: str, created: Created, *, deparsed: bool, schema: str) -> bool:
    return normal_form(held, deparsed=deparsed, schema=schema) != normal_form(
        created.sql, deparsed=deparsed, schema=schema
    )


def guard_problems(conn: sqlite3.Connection, guards: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """What is wrong with each guard trigger (`guards`: table -> trigger names) that is not
    as its migration created it: 'missing' (none of that name on its table), disabled
    (PostgreSQL), or that its definition (or its function's) differs from the migration's.
    Guards as created are left out: {} when all hold."""
    wanted = {name: table for table, names in guards.items() for name in names}
    if not wanted:
        return {}
    if is_postgres(conn):
        return _postgres_problems(conn, wanted)
    created = created_definitions("sqlite").triggers
    rows = conn.execute(
        "SELECT name, tbl_name, sql FROM sqlite_master"
        f" WHERE type = 'trigger' AND name IN ({', '.join('?' for _ in wanted)})",
        list(wanted),
    )
    held = {str(r[0]): str(r[2]) for r in rows if str(r[1]) == wanted[str(r[0])]}
    problems: dict[str, str] = {}
    for name in wanted:
        if name not in held or name not in created:
            problems[name] = "missing"
        elif _differs(held[name], created[name], deparsed=False, schema=""):
            problems[name] = f"its definition is not the one {created[name].migration} creates"
    return problems


def _postgres_problems(conn: sqlite3.Connection, wanted: dict[str, str]) -> dict[str, str]:
    """guard_problems on PostgreSQL: each trigger's state, its definition as the server
    parsed it, and its function's."""
    created = created_definitions("postgresql")
    schema = str(conn.execute("SELECT current_schema()").fetchone()[0])
    rows = conn.execute(
        "SELECT t.tgname, c.relname, t.tgenabled, pg_get_triggerdef(t.oid),"
        " p.proname, pg_get_functiondef(t.tgfoid)"
        " FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        " JOIN pg_proc p ON p.oid = t.tgfoid"
        " WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal"
        f" AND t.tgname IN ({', '.join('?' for _ in wanted)})",
        list(wanted),
    )
    held = {str(r[0]): r for r in rows if str(r[1]) == wanted[str(r[0])]}
    problems: dict[str, str] = {}
    for name in wanted:
        row, trigger = held.get(name), created.triggers.get(name)
        if row is None or trigger is None:
            problems[name] = "missing"
            continue
        function = created.functions.get(str(row[4]))
        if str(row[2]) != _ENABLED_AS_CREATED:
            problems[name] = _NOT_AS_CREATED.get(str(row[2]), f"tgenabled {row[2]!r}")
        elif _differs(str(row[3]), trigger, deparsed=True, schema=schema):
            problems[name] = f"its definition is not the one {trigger.migration} creates"
        elif function is None or _differs(str(row[5]), function, deparsed=True, schema=schema):
            where = "no migration" if function is None else function.migration
            problems[name] = f"its function {row[4]} is not the one {where} creates"
    return problems
