"""SQL of reconciliation runs and their outcomes (tables `runs`, `outcomes`).

A run is written in two steps: `start_run` records it as 'running' (committed at once),
then `complete_run` inserts every outcome and marks it 'completed' in one transaction.
A crash in between leaves a 'running' run (with no outcomes, or with the copy of its base
run's that an incremental run makes early: `copy_base_outcomes`), which readers never take
for a result (`latest_completed_run` reads completed runs only) and `discard_stale_runs`
marks failed, removing its outcomes.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pa_json

from core.dataset import OUTCOME_COLUMNS as OUTCOME_FIELDS
from core.db import pg_bulk
from core.db.backend import is_postgres
from core.db.connection import connect, transaction
from core.db.staging import copy_table, foreign_keys_off

# Rows per INSERT statement: sqlite3 steps one statement per 256 rows instead of one per
# row (as core.db.raw does for the raw tables).
ROWS_PER_STATEMENT = 256
# sqlite3 binds None several times slower than an int or a str, so a missing value is bound
# as a sentinel of the other type and the statement's nullif() turns it back into NULL: 0 in
# a text column, '' in an integer column (SQLite never finds an integer equal to a text).
TEXT_NULL = 0
INTEGER_NULL = ""
# One column of outcomes: a list, or a numpy array (binds without a list in between).
OutcomeColumn = Sequence[Any] | np.ndarray[Any, Any]
# Bulk inserts touch three B-trees; a bigger page cache keeps the random-order one
# (by settlement) in memory. Negative = KiB.
_BULK_CACHE_KIB = 262_144


@dataclass(frozen=True)
class RunRecord:
    """One row of `runs`, JSON columns decoded.

    status: 'running', 'completed' or 'failed'. as_of, started_at, finished_at: Unix
    seconds. params: the EngineParams as a dict; input_hashes: name -> sha256; timings:
    step -> seconds; counts: outcome counts (see core.engine.results.counts).
    """

    id: int
    started_at: int
    finished_at: int | None
    status: str
    as_of: int
    source: str
    params: dict[str, Any]
    input_hashes: dict[str, Any]
    timings: dict[str, Any] | None
    counts: dict[str, Any] | None
    error: str | None
    # Migration 0095: 'full' or 'incremental'; an incremental run's base run; its scope
    # (what it re-reconciled) or why a day's load was reconciled in full.
    kind: str = "full"
    base_run_id: int | None = None
    scope: dict[str, Any] | None = None
    # Migration 0096: the run's snapshot files (core.snapshots), or None.
    snapshot: dict[str, Any] | None = None
    # Migration 0106: every import up to this id was in the data the run reconciled, none
    # after it; None for a run stored before the column (core.db.raw.reconciled_through).
    through_import_id: int | None = None


@dataclass(frozen=True)
class RunKind:
    """What a run was (migration 0095): 'full' or 'incremental', an incremental run's base
    run, and its scope (what it re-reconciled, or why a day was reconciled in full).
    Recorded by `complete_run` while the run is still running: once it is completed the
    database refuses to change it (migration 0117)."""

    kind: str
    base_run_id: int | None
    scope: dict[str, Any]


def _record(row: sqlite3.Row) -> RunRecord:
    def decoded(text: str | None) -> dict[str, Any] | None:
        return None if text is None else dict(json.loads(text))

    return RunRecord(
        id=int(row["id"]),
        started_at=int(row["started_at"]),
        finished_at=None if row["finished_at"] is None else int(row["finished_at"]),
        status=str(row["status"]),
        as_of=int(row["as_of"]),
        source=str(row["source"]),
        params=decoded(row["params_json"]) or {},
        input_hashes=decoded(row["input_hashes_json"]) or {},
        timings=decoded(row["timings_json"]),
        counts=decoded(row["counts_json"]),
        error=row["error"],
        **_kind_fields(row),
    )


def _kind_fields(row: sqlite3.Row) -> dict[str, Any]:
    """kind, base_run_id and scope of a runs row (migration 0095), when it has them."""
    if "kind" not in list(row.keys()):  # sqlite3.Row: `in` looks at values
        return {}
    keys = list(row.keys())
    scope = row["scope_json"]
    snapshot = row["snapshot_json"] if "snapshot_json" in keys else None
    through = row["through_import_id"] if "through_import_id" in keys else None
    return {
        "kind": str(row["kind"]),
        "base_run_id": None if row["base_run_id"] is None else int(row["base_run_id"]),
        "scope": None if scope is None else dict(json.loads(scope)),
        "snapshot": None if snapshot is None else dict(json.loads(snapshot)),
        "through_import_id": None if through is None else int(through),
    }


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def start_run(
    conn: sqlite3.Connection,
    *,
    as_of: int,
    source: str,
    params: dict[str, Any],
    input_hashes: dict[str, Any],
    started_at: int | None = None,
    run_id: int | None = None,
) -> int:
    """Record a new run as 'running' and commit; returns its id. With `run_id` (outcomes
    were staged under the id `next_run_id` promised) that id is taken, or
    sqlite3.IntegrityError raised when another run took it meanwhile."""
    if is_postgres(conn):  # the identity's next value (no staging files on PostgreSQL)
        with transaction(conn):
            row = conn.execute(
                "INSERT INTO runs (id, started_at, status, as_of, source, params_json,"
                " input_hashes_json) VALUES (coalesce(?, nextval(pg_get_serial_sequence("
                "'runs', 'id'))), ?, 'running', ?, ?, ?, ?) RETURNING id",
                (
                    run_id,
                    int(time.time() if started_at is None else started_at),
                    int(as_of),
                    source,
                    _json(params),
                    _json(input_hashes),
                ),
            ).fetchone()
        return int(row[0])
    with transaction(conn):
        cursor = conn.execute(
            "INSERT INTO runs (id, started_at, status, as_of, source, params_json,"
            " input_hashes_json) VALUES (?, ?, 'running', ?, ?, ?, ?)",
            (
                run_id,
                int(time.time() if started_at is None else started_at),
                int(as_of),
                source,
                _json(params),
                _json(input_hashes),
            ),
        )
        stored = cursor.lastrowid
    assert stored is not None
    return int(stored)


def next_run_id(conn: sqlite3.Connection) -> int:
    """The id the next `runs` row will get (INTEGER PRIMARY KEY: one above the largest)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) + 1 FROM runs").fetchone()[0])


def _integer_fields(conn: sqlite3.Connection) -> frozenset[str]:
    """The outcome fields stored as INTEGER (their NULL sentinel is INTEGER_NULL)."""
    return frozenset(
        str(r["name"])
        for r in conn.execute("PRAGMA table_info(outcomes)")
        if str(r["type"]).upper() == "INTEGER"
    )


def _insert_statement(rows: int, nullable: dict[str, int | str]) -> str:
    """INSERT of `rows` outcomes (run_id, then every OUTCOME_FIELDS entry). A field in
    `nullable` holds missing values as the given sentinel, turned back into NULL by
    nullif(); other fields bind plainly (a function call per value costs time)."""

    def bound(name: str) -> str:
        if name not in nullable:
            return "?"
        sentinel = nullable[name]
        return f"nullif(?, {sentinel!r})" if isinstance(sentinel, str) else f"nullif(?, {sentinel})"

    row = "(" + ", ".join(["?", *(bound(name) for name in OUTCOME_FIELDS)]) + ")"
    return (
        f"INSERT INTO outcomes (run_id, {', '.join(OUTCOME_FIELDS)}) "
        f"VALUES {', '.join([row] * rows)}"
    )


def _insert_outcomes(
    conn: sqlite3.Connection,
    run_id: int,
    columns: Sequence[OutcomeColumn],
    integer_fields: frozenset[str],
) -> None:
    """One piece of outcomes (one value sequence per OUTCOME_FIELDS entry, None for NULL;
    lists or numpy arrays), ROWS_PER_STATEMENT rows per statement, the remainder one row
    at a time, in order."""
    count = len(columns[0]) if columns else 0
    if any(len(column) != count for column in columns):
        raise ValueError("outcome columns differ in length")
    block = np.empty((count, len(OUTCOME_FIELDS) + 1), dtype=object)
    block[:, 0] = run_id
    nullable: dict[str, int | str] = {}
    for j, (name, column) in enumerate(zip(OUTCOME_FIELDS, columns, strict=True), start=1):
        if isinstance(column, np.ndarray) and column.dtype.kind in "iu":
            block[:, j] = column.tolist()  # Python ints; an integer array holds no NULL
            continue
        block[:, j] = column
        missing = np.equal(block[:, j], None)  # type: ignore[call-overload]  # stubs lack None
        if missing.any():
            sentinel = INTEGER_NULL if name in integer_fields else TEXT_NULL
            block[missing, j] = sentinel
            nullable[name] = sentinel
    whole = count - count % ROWS_PER_STATEMENT
    width = ROWS_PER_STATEMENT * block.shape[1]
    if whole:
        conn.executemany(
            _insert_statement(ROWS_PER_STATEMENT, nullable),
            block[:whole].reshape(-1, width).tolist(),
        )
    if whole < count:
        conn.executemany(_insert_statement(1, nullable), block[whole:].tolist())


# The keys an incremental run decided again: (entity types, entity ids), pairwise.
SkipKeys = tuple[Sequence[str], Sequence[str]]

# The staged outcomes table (core.db.staging) has the house table's name and shape.
STAGED_OUTCOMES = "outcomes"


@dataclass(frozen=True)
class CarryForward:
    """Outcomes a run takes over, row for row, from an earlier run of the same database
    (an incremental run's carried outcomes): every outcome of `base_run_id` except those
    whose key is in the skip list (`skip_types[i]`, `skip_ids[i]`: the keys the run decided
    again). `expected`: how many rows that must copy (the caller's count of the rows it
    carried in memory); any other count means the stored base run is not the one the caller
    carried from, and the run fails instead of storing a mixture."""

    base_run_id: int
    skip_types: Sequence[str]
    skip_ids: Sequence[str]
    expected: int
    # Rows of the base run already copied under the run (`copy_base_outcomes`, started
    # before the plan was known): the skipped keys are then deleted, not left out.
    copied: int | None = None


def copy_base_outcomes(
    path: str,
    *,
    base_run_id: int,
    as_of: int,
    source: str,
    params: dict[str, Any],
    input_hashes: dict[str, Any],
    skip: Future[SkipKeys | None] | None = None,
) -> tuple[int, int]:
    """Record a new run as 'running' and copy every outcome of `base_run_id` under it, on a
    connection of its own to the SQLite file `path` (for a worker thread: SQLite releases
    the GIL while it copies); returns (run id, rows the run holds). Committed, as a running
    run's rows that readers never take for a result; `complete_run` with a CarryForward
    whose `copied` is set then deletes the keys decided again that are still there.
    skip: the keys decided again (entity types, entity ids), or None, once known: the
    copy's transaction waits for them and deletes them before its commit (while the
    engine still reconciles, not after the day's store on the thread that stores it); the
    rows held are then those left. On failure the run is marked failed (its rows removed)
    before the error is raised."""
    conn = connect(path)
    # Its commit leaves the WAL to the run's checkpointer thread (core.db.connection.
    # background_checkpoints): checkpointing here would write and sync the ~250 MB copied
    # on the thread the day's store waits for.
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        run_id = start_run(
            conn, as_of=as_of, source=source, params=params, input_hashes=input_hashes
        )
        fields = ", ".join(OUTCOME_FIELDS)
        try:
            # Keys off: every row references the run just started, by construction (a
            # lookup in `runs` per row is ~8% of the copy).
            with foreign_keys_off(conn), transaction(conn):
                copied = conn.execute(
                    f"INSERT INTO outcomes (run_id, {fields}) SELECT ?, {fields}"
                    " FROM outcomes WHERE run_id = ?",
                    (run_id, base_run_id),
                ).rowcount
                keys = None if skip is None else skip.result()
                if keys is not None:
                    copied -= _drop_keys(conn, run_id, *keys)
        except BaseException as exc:
            fail_run(conn, run_id, f"{type(exc).__name__}: {exc}")
            raise
        return run_id, int(copied)
    finally:
        conn.close()


def _drop_keys(
    conn: sqlite3.Connection, run_id: int, types: Sequence[str], ids: Sequence[str]
) -> int:
    """Delete run `run_id`'s outcomes of the keys (types[i], ids[i]); how many went. One
    statement per entity type, the ids bound as one JSON array: the thread gives up the GIL
    for the whole statement (executemany takes it back at every row, and waits for it
    beside a busy Python thread); one primary-key seek per id, as executemany's."""
    by_type: dict[str, list[str]] = {}
    for kind, key in zip(types, ids, strict=True):
        by_type.setdefault(kind, []).append(key)
    removed = 0
    for kind, keys in by_type.items():
        removed += conn.execute(
            "DELETE FROM outcomes WHERE run_id = ? AND entity_type = ?"
            " AND entity_id IN (SELECT value FROM json_each(?))",
            (run_id, kind, json.dumps(keys)),
        ).rowcount
    return removed


def discard_run(conn: sqlite3.Connection, run_id: int) -> None:
    """Remove a running run and its outcomes as if it had never been started (a copy begun
    for a run that is then stored another way: its id goes to the run that is)."""
    with transaction(conn):
        conn.execute("DELETE FROM outcomes WHERE run_id = ?", (run_id,))
        conn.execute("DELETE FROM runs WHERE id = ? AND status = 'running'", (run_id,))


def _carry_forward(conn: sqlite3.Connection, run_id: int, carry: CarryForward) -> None:
    """Copy the carried outcomes inside the database (one INSERT ... SELECT: no row goes
    through Python), in the caller's transaction; when they were copied already
    (`carry.copied`), delete the skipped keys from the copy instead."""
    if len(carry.skip_types) != len(carry.skip_ids):
        raise ValueError("skip keys differ in length")
    if carry.copied is not None:
        _drop_skipped(conn, run_id, carry)
        return
    keys = zip(carry.skip_types, carry.skip_ids, strict=True)
    table = "CREATE TEMP TABLE carry_skip (entity_type TEXT NOT NULL, entity_id TEXT NOT NULL,"
    table += " PRIMARY KEY (entity_type, entity_id))"
    if is_postgres(conn):
        conn.execute(table + " ON COMMIT DROP")
        conn.copy_rows("carry_skip", ["entity_type", "entity_id"], keys)  # type: ignore[attr-defined]
        conn.execute("ANALYZE carry_skip")
    else:
        conn.execute("DROP TABLE IF EXISTS temp.carry_skip")
        conn.execute(table + " WITHOUT ROWID")
        conn.executemany("INSERT OR IGNORE INTO temp.carry_skip VALUES (?, ?)", keys)
    fields = ", ".join(OUTCOME_FIELDS)
    cursor = conn.execute(
        f"INSERT INTO outcomes (run_id, {fields}) SELECT ?, {fields} FROM outcomes AS o"
        " WHERE o.run_id = ? AND NOT EXISTS (SELECT 1 FROM carry_skip AS s"
        " WHERE s.entity_type = o.entity_type AND s.entity_id = o.entity_id)",
        (run_id, carry.base_run_id),
    )
    copied = int(cursor.rowcount)
    if not is_postgres(conn):
        conn.execute("DROP TABLE temp.carry_skip")
    if copied != carry.expected:
        raise ValueError(
            f"run {carry.base_run_id} holds {copied} outcomes to carry forward,"
            f" {carry.expected} expected"
        )


def _drop_skipped(conn: sqlite3.Connection, run_id: int, carry: CarryForward) -> None:
    """The keys decided again deleted from a run holding a copy of its base run
    (`_drop_keys`), and the rows left checked against `carry.expected`."""
    assert carry.copied is not None
    left = carry.copied - _drop_keys(conn, run_id, carry.skip_types, carry.skip_ids)
    if left != carry.expected:
        raise ValueError(
            f"run {carry.base_run_id} holds {left} outcomes to carry forward,"
            f" {carry.expected} expected"
        )


def outcome_table_columns(conn: sqlite3.Connection) -> list[str]:
    """The columns of `outcomes` in table order (run_id, then the OUTCOME_FIELDS)."""
    if is_postgres(conn):
        return [
            str(r[0])
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = 'outcomes'"
                " ORDER BY ordinal_position"
            )
        ]
    return [str(r[1]) for r in conn.execute("PRAGMA table_info(outcomes)")]


def complete_run(
    conn: sqlite3.Connection,
    run_id: int,
    *,
    chunks: Iterable[Sequence[OutcomeColumn]] = (),
    staged: tuple[str, int] | None = None,
    carry: CarryForward | None = None,
    timings: dict[str, Any],
    counts: dict[str, Any],
    finished_at: int | None = None,
    started_at: int | None = None,
    through_import_id: int | None = None,
    kind: RunKind | None = None,
) -> None:
    """Insert the run's outcomes and mark it completed, in one transaction: either every
    outcome is there and the run is 'completed', or nothing changed. started_at: recorded
    as the run's start, when given. through_import_id: the last import the run's data
    included (core.db.raw.reconciled_through); None: not known (the next day's run then
    compares the imports' seconds with started_at, as for runs stored before it). kind:
    what the run was (`RunKind`); None leaves the columns' defaults (a full run).

    carry: outcomes copied from an earlier run inside the database (`CarryForward`), before
    the chunks and the staged rows (then those hold only the outcomes decided again: the
    carry's deletes and count check come first).

    staged: (alias, run id) of an attached staging file whose STAGED_OUTCOMES table holds
    the outcomes under that run id, copied in one statement: whole records when they carry
    this run's id, there is no carry, `outcomes` is empty and foreign keys are off (core.db.
    staging); and/or
    chunks: the outcomes in pieces, each piece one sequence of values per OUTCOME_FIELDS
    entry, None for NULL (lists or numpy arrays; pieces keep the Python objects of a big
    run small). Rows go ROWS_PER_STATEMENT per INSERT, NULLs as sentinels (see above).
    On PostgreSQL the chunks go in by COPY (no staging files there).
    """
    if is_postgres(conn):
        _complete_run_postgres(
            conn,
            run_id,
            chunks,
            carry,
            timings,
            counts,
            finished_at,
            started_at,
            through_import_id,
            kind,
        )
        return
    previous_cache = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute(f"PRAGMA cache_size = {-_BULK_CACHE_KIB}")
    try:
        with transaction(conn):
            state = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            if state is None or state["status"] != "running":
                raise ValueError(f"run {run_id} is not running")
            if staged is not None and carry is None:
                _insert_staged(conn, run_id, staged, whole=True)
            if carry is not None:
                _carry_forward(conn, run_id, carry)
                if staged is not None:  # the fresh rows, once the decided-again keys are gone
                    _insert_staged(conn, run_id, staged, whole=False)
            integer_fields = _integer_fields(conn)
            for columns in chunks:
                if len(columns) != len(OUTCOME_FIELDS):
                    raise ValueError(f"expected {len(OUTCOME_FIELDS)} columns, got {len(columns)}")
                _insert_outcomes(conn, run_id, columns, integer_fields)
            _restamp(conn, run_id, started_at)
            _mark_completed(conn, run_id, timings, counts, finished_at, through_import_id, kind)
    finally:
        conn.execute(f"PRAGMA cache_size = {int(previous_cache)}")


def _insert_staged(
    conn: sqlite3.Connection, run_id: int, staged: tuple[str, int], *, whole: bool
) -> None:
    """The staged outcomes (alias, run id they carry) into the run: whole records when
    `whole` (`outcomes` empty) and they carry its id; else row by row under `run_id` (a
    transfer needs an empty table: beside a carried copy it would not be one)."""
    alias, staged_run = staged
    if not alias.isidentifier():
        raise ValueError(f"bad alias {alias!r}")
    if whole and staged_run == run_id:
        copy_table(conn, alias, STAGED_OUTCOMES)
        return
    # staged under an id another run took, or beside carried rows: every row gets this id
    fields = ", ".join(OUTCOME_FIELDS)
    conn.execute(
        f"INSERT INTO outcomes (run_id, {fields}) SELECT ?, {fields}"
        f" FROM {alias}.{STAGED_OUTCOMES}",
        (run_id,),
    )


def _mark_completed(
    conn: sqlite3.Connection,
    run_id: int,
    timings: dict[str, Any],
    counts: dict[str, Any],
    finished_at: int | None,
    through_import_id: int | None,
    kind: RunKind | None,
) -> None:
    # None: a run stored without one (core.engine.perf, a test's database migrated only
    # part of the way, without the column of migration 0106) writes what it did before.
    # Written while the run is still running: once completed, the database refuses to
    # change it (migration 0113).
    if through_import_id is not None:
        conn.execute(
            "UPDATE runs SET through_import_id = ? WHERE id = ?", (through_import_id, run_id)
        )
    if kind is not None:
        conn.execute(
            "UPDATE runs SET kind = ?, base_run_id = ?, scope_json = ? WHERE id = ?",
            (kind.kind, kind.base_run_id, _json(kind.scope), run_id),
        )
    conn.execute(
        "UPDATE runs SET status = 'completed', finished_at = ?, timings_json = ?,"
        " counts_json = ? WHERE id = ?",
        (
            int(time.time() if finished_at is None else finished_at),
            _json(timings),
            _json(counts),
            run_id,
        ),
    )


def _restamp(conn: sqlite3.Connection, run_id: int, started_at: int | None) -> None:
    if started_at is not None:
        conn.execute("UPDATE runs SET started_at = ? WHERE id = ?", (int(started_at), run_id))


def _complete_run_postgres(
    conn: sqlite3.Connection,
    run_id: int,
    chunks: Iterable[Sequence[OutcomeColumn]],
    carry: CarryForward | None,
    timings: dict[str, Any],
    counts: dict[str, Any],
    finished_at: int | None,
    started_at: int | None,
    through_import_id: int | None,
    kind: RunKind | None,
) -> None:
    from core.db.pg_bulk import copy_outcome_chunk

    with transaction(conn):
        state = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if state is None or state["status"] != "running":
            raise ValueError(f"run {run_id} is not running")
        if carry is not None:
            _carry_forward(conn, run_id, carry)
        for columns in chunks:
            if len(columns) != len(OUTCOME_FIELDS):
                raise ValueError(f"expected {len(OUTCOME_FIELDS)} columns, got {len(columns)}")
            copy_outcome_chunk(conn, run_id, OUTCOME_FIELDS, columns)
        _restamp(conn, run_id, started_at)
        _mark_completed(conn, run_id, timings, counts, finished_at, through_import_id, kind)


def update_timings(conn: sqlite3.Connection, run_id: int, timings: dict[str, Any]) -> None:
    """Replace a run's timings (used to add the time the persisting itself took)."""
    with transaction(conn):
        conn.execute("UPDATE runs SET timings_json = ? WHERE id = ?", (_json(timings), run_id))


def fail_run(conn: sqlite3.Connection, run_id: int, error: str) -> None:
    """Mark a running run failed (its outcomes, if any, are removed)."""
    with transaction(conn):
        conn.execute("DELETE FROM outcomes WHERE run_id = ?", (run_id,))
        conn.execute(
            "UPDATE runs SET status = 'failed', finished_at = ?, error = ?"
            " WHERE id = ? AND status = 'running'",
            (int(time.time()), error[:2000], run_id),
        )


def discard_stale_runs(
    conn: sqlite3.Connection,
    *,
    older_than_seconds: int = 3600,
    now: int | None = None,
    keep: int | None = None,
) -> list[int]:
    """Mark failed every run still 'running' that started more than `older_than_seconds`
    ago (its process died mid-way), but `keep` (the caller's own); returns their ids. A
    caller holding the run lock (core.db.run_lock) passes 0: no other run is in progress."""
    current = int(time.time() if now is None else now)
    cutoff = current - int(older_than_seconds)
    with transaction(conn):
        stale = [
            int(r["id"])
            for r in conn.execute(
                "SELECT id FROM runs WHERE status = 'running' AND started_at <= ? AND id <> ?"
                " ORDER BY id",
                (cutoff, 0 if keep is None else keep),  # run ids start at 1
            )
        ]
        for run_id in stale:
            conn.execute("DELETE FROM outcomes WHERE run_id = ?", (run_id,))
            conn.execute(
                "UPDATE runs SET status = 'failed', finished_at = ?, error = ? WHERE id = ?",
                (current, "abandoned: still running when discarded", run_id),
            )
    return stale


def get_run(conn: sqlite3.Connection, run_id: int) -> RunRecord | None:
    row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else _record(row)


def latest_completed_run(conn: sqlite3.Connection) -> RunRecord | None:
    """The most recent completed run (highest id), or None."""
    row = conn.execute(
        "SELECT * FROM runs WHERE status = 'completed' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return None if row is None else _record(row)


def latest_completed_run_id(conn: sqlite3.Connection) -> int | None:
    """The id of `latest_completed_run`, without reading its row."""
    row = conn.execute("SELECT MAX(id) FROM runs WHERE status = 'completed'").fetchone()
    return None if row[0] is None else int(row[0])


# Outcomes sort by their ids' bytes, as SQLite and the engine do; a PostgreSQL database
# created with a language collation (en_US.UTF-8) would otherwise order them differently.
BYTE_ORDER_PG = 'entity_type COLLATE "C", entity_id COLLATE "C"'


def list_runs(conn: sqlite3.Connection, limit: int = 50) -> list[RunRecord]:
    """Most recent runs first, whatever their status."""
    rows = conn.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (int(limit),))
    return [_record(r) for r in rows]


def read_outcomes(
    conn: sqlite3.Connection, run_id: int, *, status: str | None = None
) -> list[sqlite3.Row]:
    """The outcomes of one run (optionally of one status), sorted like results.csv."""
    query = f"SELECT {', '.join(OUTCOME_FIELDS)} FROM outcomes WHERE run_id = ?"
    params: list[Any] = [run_id]
    if status is not None:
        query += " AND status = ?"
        params.append(status)
    query += " ORDER BY " + (BYTE_ORDER_PG if is_postgres(conn) else "entity_type, entity_id")
    return list(conn.execute(query, params))


def count_outcomes(conn: sqlite3.Connection, run_id: int) -> int:
    row = conn.execute("SELECT COUNT(*) FROM outcomes WHERE run_id = ?", (run_id,)).fetchone()
    return int(row[0])


def record_snapshot(conn: sqlite3.Connection, run_id: int, snapshot: dict[str, Any] | None) -> None:
    """Record (or, with None, forget) the snapshot files of a run (core.snapshots)."""
    with transaction(conn):
        conn.execute(
            "UPDATE runs SET snapshot_json = ? WHERE id = ?",
            (None if snapshot is None else _json(snapshot), run_id),
        )


_OUTCOME_TEXT = frozenset(
    {
        "entity_type", "entity_id", "status", "reason_code", "reason_codes", "settlement_id",
        "exposure_class", "match_method", "order_id", "utr",
    }
)  # fmt: skip


def _outcome_json_rows(
    conn: sqlite3.Connection, names: list[str], row: str, run_id: int
) -> Iterator[bytes]:
    """A run's outcomes, one JSON object per row (SQLite's json_object), in batches."""
    cursor = conn.cursor()
    cursor.row_factory = None
    order = "entity_type, entity_id"
    cursor.execute(
        f"SELECT CAST({row} AS BLOB) FROM outcomes WHERE run_id = ? ORDER BY {order}", (run_id,)
    )
    while batch := cursor.fetchmany(100_000):
        yield b"\n".join([r[0] for r in batch])
    cursor.close()


def read_outcome_frame(conn: sqlite3.Connection, run_id: int) -> pd.DataFrame:
    """A run's outcomes as the engine's frame (OUTCOME_COLUMNS; amounts int64,
    entity_created_at Int64, text Arrow-backed), sorted by entity_type then entity_id.
    Each row comes out of SQLite as one JSON object, and out of PostgreSQL as a line of
    COPY's CSV, parsed by Arrow in C: a Python object per cell is the slow way."""
    names = list(OUTCOME_FIELDS)
    row = "json_object(" + ", ".join(f"'{i}', {name}" for i, name in enumerate(names)) + ")"
    schema = pa.schema(
        [(str(i), pa.string() if n in _OUTCOME_TEXT else pa.int64()) for i, n in enumerate(names)]
    )
    if is_postgres(conn):  # COPY in CSV (core.db.pg_bulk.csv_table)
        types = dict(zip(names, schema.types, strict=True))
        data = pg_bulk.csv_table(conn, "outcomes", types, BYTE_ORDER_PG, "run_id = ?", (run_id,))
    else:
        batches = [
            pa_json.read_json(
                pa.BufferReader(lines),
                read_options=pa_json.ReadOptions(block_size=len(lines) + 1, use_threads=False),
                parse_options=pa_json.ParseOptions(explicit_schema=schema),
            )
            for lines in _outcome_json_rows(conn, names, row, run_id)
        ]
        data = pa.concat_tables(batches) if batches else schema.empty_table()
    data = data.combine_chunks()
    frame: dict[str, Any] = {}
    for i, name in enumerate(names):
        column = data.column(i)
        if name in _OUTCOME_TEXT:
            frame[name] = pd.arrays.ArrowStringArray(column.cast(pa.large_string()))
        elif name == "entity_created_at":
            frame[name] = pd.Series(
                column.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
            )
        else:
            frame[name] = column.to_numpy().astype(np.int64)
    return pd.DataFrame(frame, columns=names)
