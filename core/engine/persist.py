"""Store a run and its outcomes (the SQL is in core.db.runs)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from core.dataset import OUTCOME_COLUMNS
from core.db import pg_bulk
from core.db import runs as db_runs
from core.db.backend import is_postgres
from core.db.staging import (
    StagedFile,
    StagedTable,
    arrow_column,
    attached,
    foreign_keys_off,
    staging_directory,
    table_schema,
    worth_staging,
    write_staged_file,
)
from core.engine.params import EngineParams
from core.engine.part import AMOUNT_COLUMNS
from core.engine.results import counts as outcome_counts

# Rows converted to Python values at a time while persisting (bounds memory on big runs).
CHUNK_ROWS = 100_000
# The outcomes table's key after run_id (migration 0021: clustered, WITHOUT ROWID).
OUTCOME_KEY = ("entity_type", "entity_id")


def _column(series: pd.Series, name: str) -> list[Any]:
    """A column as Python values with None for null, cheaply: repeated strings (status,
    codes) are converted once per distinct value, not once per row."""
    if name in AMOUNT_COLUMNS:
        values: list[Any] = series.to_numpy(dtype=np.int64).tolist()
        return values
    if name in ("entity_created_at", "entity_id", "order_id", "utr", "settlement_id"):
        loose: Any = series  # pandas-stubs do not accept na_value=None
        return list(loose.to_numpy(dtype=object, na_value=None).tolist())
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    lookup = np.array([*uniques.tolist(), None], dtype=object)
    return list(lookup[codes].tolist())


def outcome_columns(outcomes: pd.DataFrame) -> list[list[Any]]:
    """The outcomes as Python value lists, one per OUTCOME_COLUMNS entry."""
    return [_column(outcomes[name], name) for name in OUTCOME_COLUMNS]


def _array(series: pd.Series, name: str) -> np.ndarray[Any, Any]:
    """A column as a numpy array for binding: int64 for amounts, else objects with None for
    null. No Python list in between, and repeated strings are converted once."""
    if name in AMOUNT_COLUMNS:
        return series.to_numpy(dtype=np.int64)
    if name in ("entity_created_at", "entity_id", "order_id", "utr", "settlement_id"):
        loose: Any = series  # pandas-stubs do not accept na_value=None
        return np.asarray(loose.to_numpy(dtype=object, na_value=None))
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    lookup = np.array([*uniques.tolist(), None], dtype=object)
    return lookup[codes]


def outcome_chunks(
    outcomes: pd.DataFrame, size: int = CHUNK_ROWS
) -> Iterator[list[np.ndarray[Any, Any]]]:
    """The outcomes over consecutive slices of `size` rows, each slice one array per
    OUTCOME_COLUMNS entry (the values of `outcome_columns`, as arrays that bind fast)."""
    for start in range(0, len(outcomes), size):
        part = outcomes.iloc[start : start + size]
        yield [_array(part[name], name) for name in OUTCOME_COLUMNS]


def outcome_arrow_chunks(
    outcomes: pd.DataFrame, size: int = CHUNK_ROWS
) -> Iterator[list[pa.Array]]:
    """`outcome_chunks` as Arrow arrays (int64 amounts and times, text else): what the
    PostgreSQL path writes as COPY CSV without a Python object per value."""
    for start in range(0, len(outcomes), size):
        part = outcomes.iloc[start : start + size]
        yield [arrow_column(part[name], _dtype(name)) for name in OUTCOME_COLUMNS]


def outcome_rows(outcomes: pd.DataFrame) -> Iterator[tuple[Any, ...]]:
    """The outcomes as tuples in core.db.runs.OUTCOME_FIELDS order."""
    return zip(*outcome_columns(outcomes), strict=True)


def _dtype(name: str) -> str:
    """The Dataset-style dtype an outcome column is stored as (see core.db.staging)."""
    if name in AMOUNT_COLUMNS:
        return "int64"
    return "Int64" if name == "entity_created_at" else "string"


@dataclass(frozen=True)
class StagedOutcomes:
    """A run's outcomes in a staging file (core.db.staging), in the house table's shape,
    every row under `run_id` (the id `next_run_id` promised when they were staged)."""

    file: StagedFile
    run_id: int


def outcome_table(outcomes: pd.DataFrame, run_id: int, columns: list[str]) -> pa.Table:
    """The outcomes as rows of the outcomes table (`columns`: its columns in table order,
    `core.db.runs.outcome_table_columns`), every row under `run_id`."""
    arrays = {name: arrow_column(outcomes[name], _dtype(name)) for name in OUTCOME_COLUMNS}
    arrays["run_id"] = pa.array(np.full(len(outcomes), run_id, dtype=np.int64))
    return pa.Table.from_arrays([arrays[c] for c in columns], names=columns)


def outcomes_to_stage(conn: sqlite3.Connection, outcomes: pd.DataFrame) -> tuple[StagedTable, int]:
    """The outcomes as the staged table `stage_outcomes` writes, and the run id every row
    carries (the one `next_run_id` promises). Reads `conn`: call it on the connection's
    thread."""
    run_id = db_runs.next_run_id(conn)
    rows = outcome_table(outcomes, run_id, db_runs.outcome_table_columns(conn))
    schema = table_schema(conn, db_runs.STAGED_OUTCOMES)
    return StagedTable(db_runs.STAGED_OUTCOMES, schema, rows), run_id


def write_staged_outcomes(table: StagedTable, run_id: int, path: Path) -> StagedOutcomes:
    """Write `outcomes_to_stage`'s table to a new staging file (any thread: touches no
    house connection)."""
    return StagedOutcomes(write_staged_file(path, [table]), run_id)


def stage_outcomes(conn: sqlite3.Connection, outcomes: pd.DataFrame, path: Path) -> StagedOutcomes:
    """Write the outcomes to a new staging file for `persist_run`, under the next run id."""
    return write_staged_outcomes(*outcomes_to_stage(conn, outcomes), path)


def persist_run(
    conn: sqlite3.Connection,
    outcomes: pd.DataFrame,
    *,
    params: EngineParams,
    as_of: int,
    source: str,
    input_hashes: dict[str, Any],
    timings: dict[str, Any],
    staged: StagedOutcomes | None = None,
    through_import_id: int | None = None,
    kind: db_runs.RunKind | None = None,
) -> int:
    """Store one run: a `runs` row (parameters, input hashes, timings, counts, the last
    import its data included: core.db.raw.reconciled_through, what the run was: `kind`)
    and every outcome. The run
    is committed as 'running' first; outcomes and the switch to 'completed' go in one
    transaction, so a crash leaves a recognisable 'running' run with
    no outcomes. On an error the run is marked 'failed' and the error re-raised.
    Returns the run id.

    Outside a caller's transaction a large run's outcomes are staged first and copied in
    one statement (core.db.staging); `staged` passes what `stage_outcomes` wrote already.
    """
    if staged is None and worth_staging(conn, len(outcomes)):
        with staging_directory() as folder:
            staged = stage_outcomes(conn, outcomes, folder / "outcomes.sqlite")
            return persist_run(
                conn,
                outcomes,
                params=params,
                as_of=as_of,
                source=source,
                input_hashes=input_hashes,
                timings=timings,
                staged=staged,
                through_import_id=through_import_id,
                kind=kind,
            )
    began = time.perf_counter()
    run_id = _start_run(conn, params, as_of, source, input_hashes, staged)
    try:
        if staged is None:
            db_runs.complete_run(
                conn,
                run_id,
                chunks=(
                    # COPY; outcomes' indexes built after a large load, then analysed
                    pg_bulk.bulk_outcome_chunks(conn, outcome_arrow_chunks(outcomes), len(outcomes))
                    if is_postgres(conn)
                    else outcome_chunks(outcomes)
                ),
                timings=timings,
                counts=outcome_counts(outcomes),
                through_import_id=through_import_id,
                kind=kind,
            )
        else:
            # Keys off so SQLite copies whole records: the staged rows carry this run's id
            # (or get it in the copy), so they reference this run by construction.
            with attached(conn, {"staged_outcomes": staged.file.path}), foreign_keys_off(conn):
                db_runs.complete_run(
                    conn,
                    run_id,
                    staged=("staged_outcomes", staged.run_id),
                    timings=timings,
                    counts=outcome_counts(outcomes),
                    through_import_id=through_import_id,
                    kind=kind,
                )
    except BaseException as exc:
        db_runs.fail_run(conn, run_id, f"{type(exc).__name__}: {exc}")
        raise
    all_timings = {**timings, "persist_s": round(time.perf_counter() - began, 3)}
    db_runs.update_timings(conn, run_id, all_timings)
    return run_id


def _start_run(
    conn: sqlite3.Connection,
    params: EngineParams,
    as_of: int,
    source: str,
    input_hashes: dict[str, Any],
    staged: StagedOutcomes | None,
) -> int:
    """Record the run as 'running', under the id its staged outcomes carry while free."""

    def start(run_id: int | None) -> int:
        return db_runs.start_run(
            conn,
            as_of=as_of,
            source=source,
            params=params.to_dict(),
            input_hashes=input_hashes,
            run_id=run_id,
        )

    if staged is not None:
        try:
            return start(staged.run_id)
        except sqlite3.IntegrityError:
            pass  # another run took the id meanwhile: complete_run relabels the rows
    return start(None)
