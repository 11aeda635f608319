"""A dataset folder too large to hold at once, imported, reconciled and stored in the
database window by window (`python -m core reconcile DIR --stream --db DB`; docs/scale.md,
*10M in the database*).

1. The folder is streamed into a window store (`core.ingest.stream`): the large CSVs a
   block at a time, never whole.
2. The raw tables are replaced in one transaction, window by window: each window's owned
   rows (`core.engine.distributed.read_owned_rows`; every row is owned by exactly one
   window) are written by `core.db.raw.write_frame`, the ledger once; one `imports` row.
3. One run: `runs` row 'running' (`core.db.runs.start_run`), then `complete_run` is fed
   the outcomes window by window (each window reconciled by
   `distributed.reconcile_stored_window`, cut by `core.engine.persist.outcome_chunks`):
   one transaction, so the run is completed with every outcome or not at all, while no
   more than one window's outcomes are in memory. Counts are added up per window.
4. The exception queue is synced (`core.review.sync_exceptions`) and the run's summary
   stored for the Overview page: its whole-run parts added up window by window from the
   frames in hand (`core.views.summary_ahead`: the captured payments as the raw tables
   are written, the PENDING lines and payments per settlement as each window is
   reconciled), stored by `store_summary_ahead`; computed in SQL
   (`core.views.runs.run_summary`) only when an import came in meanwhile.

The same functions write SQLite and PostgreSQL (COPY through core.db.pg_bulk there).
Outcomes are those of the in-memory engine (`reconcile`), row for row: the partitioned
engine's identity (docs/engine.md, *Partitions*).

Progress is reported as `ProgressFn(fraction, message)`, the shape the app's bootstrap
and its Data page use; the CLI draws it with tqdm (`tqdm_progress_fn`).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.books.ledger import Windows, mark_building, rebuild_after_run
from core.db.run_lock import holding_run_lock
from core.engine.params import EngineParams
from core.engine.partition import DEFAULT_DAYS_PER_WINDOW
from core.views.summary_ahead import SummaryAhead, combine, summary_ahead

ProgressFn = Callable[[float, str], None]
HASH_BLOCK = 1 << 20

# Where each step's progress starts and ends (fractions of the whole).
IMPORT_SPAN = (0.0, 0.4)
RAW_SPAN = (0.4, 0.55)
RECONCILE_SPAN = (0.55, 0.92)


@dataclass(frozen=True)
class StreamedRun:
    """What `stream_folder_into_db` stored: the run, the import, rows and outcomes, timings
    (step -> seconds) and the exception queue's sync summary."""

    run_id: int
    import_id: int
    windows: int
    raw_rows: dict[str, int]
    outcomes: int
    counts: dict[str, Any]
    timings: dict[str, float]
    sync: Any


def _noop(_fraction: float, _message: str) -> None:
    return None


class _SummaryParts:
    """The run summary's whole-run parts (core.views.summary_ahead), added frame by frame
    as the build holds them: every payment and every outcome of the run is in exactly one
    frame. `seconds`: the time spent on them. Spoilt when the raw tables were not stored
    as the frames hold them (a key held twice, resolved by the store: a guard, as the
    import refuses ids repeated across blocks)."""

    def __init__(self) -> None:
        self.parts: list[SummaryAhead] = []
        self.seconds = 0.0
        self.spoilt = False

    def add(self, payments: pd.DataFrame | None, outcomes: pd.DataFrame | None) -> None:
        began = time.perf_counter()
        part = summary_ahead(payments, [] if outcomes is None else [(outcomes, None)])
        self.parts.append(part)
        self.seconds += time.perf_counter() - began

    def clear(self) -> None:
        self.parts.clear()

    def whole(self) -> SummaryAhead | None:
        return None if self.spoilt else combine(self.parts)


def folder_hashes(folder: Path, amount_unit: str) -> dict[str, str]:
    """sha256 of each file in the folder, read a block at a time (files of gigabytes), and
    of all of them in name order with the amount unit ('dataset')."""
    hashes: dict[str, str] = {}
    combined = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        digest = hashlib.sha256()
        with path.open("rb") as stream:
            while block := stream.read(HASH_BLOCK):
                digest.update(block)
        hashes[path.name] = digest.hexdigest()
        combined.update(f"{path.name}:{hashes[path.name]}\n".encode())
    combined.update(f"amount_unit:{amount_unit}\n".encode())
    hashes["dataset"] = combined.hexdigest()
    return hashes


def add_counts(total: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """Two `core.engine.results.counts` added up (every entry is a count or a sum)."""
    merged: dict[str, Any] = dict(total)
    for key, value in part.items():
        if isinstance(value, dict):
            inner = dict(merged.get(key, {}))
            for name, n in value.items():
                inner[name] = int(inner.get(name, 0)) + int(n)
            merged[key] = dict(sorted(inner.items()))
        else:
            merged[key] = int(merged.get(key, 0)) + int(value)
    return merged


def _span(progress: ProgressFn, span: tuple[float, float]) -> Callable[[float, str], None]:
    low, high = span

    def report(fraction: float, message: str) -> None:
        progress(low + (high - low) * min(1.0, max(0.0, fraction)), message)

    return report


def _import_progress(folder: Path, block_bytes: int, report: ProgressFn) -> Any:
    """core.ingest.stream's (file, rows) callback as a fraction of the blocks to read."""
    from core.ingest.stream import STREAMED

    sizes = [
        (folder / f"{stem}.csv").stat().st_size
        for stem in STREAMED.values()
        if (folder / f"{stem}.csv").is_file()
    ]
    blocks = max(1, sum(-(-size // block_bytes) for size in sizes))
    seen = {"blocks": 0, "rows": 0}

    def update(file: str, rows: int) -> None:
        seen["blocks"] += 1
        seen["rows"] += rows
        report(seen["blocks"] / blocks, f"Importing {file}: {seen['rows']:,} rows read")

    return update


def _store_raw(
    conn: sqlite3.Connection,
    root: Path,
    windows: int,
    *,
    source: str,
    location: str,
    content_hash: str,
    has_bank_statement: bool,
    report: ProgressFn,
    summary: _SummaryParts,
) -> tuple[int, dict[str, int]]:
    """Replace the raw tables with the store's rows, window by window, in one transaction;
    record one import. Returns (import id, rows per raw table); `summary` is given the
    payments written (their captured totals).

    SQLite: the windows are staged first (`_store_raw_staged`), then copied in one
    transaction; when that cannot be done (inside a transaction, a key repeated, the
    promised import id taken meanwhile) and on PostgreSQL, each window is appended inside
    the transaction (`_store_raw_appended`)."""
    from core.db.backend import is_postgres

    if not is_postgres(conn) and not conn.in_transaction:
        done = _store_raw_staged(
            conn,
            root,
            windows,
            source=source,
            location=location,
            content_hash=content_hash,
            has_bank_statement=has_bank_statement,
            report=report,
            summary=summary,
        )
        if done is not None:
            return done
        summary.clear()  # nothing was written: the appended path reads the rows again
    return _store_raw_appended(
        conn,
        root,
        windows,
        source=source,
        location=location,
        content_hash=content_hash,
        has_bank_statement=has_bank_statement,
        report=report,
        summary=summary,
    )


def _import_record(
    import_id: int, written: dict[str, int], has_bank_statement: bool, **where: str
) -> str:
    import json

    from core.db.raw import RAW_TABLES

    record = {
        **where,
        "has_bank_statement": has_bank_statement,
        "written": {RAW_TABLES[t][0]: n for t, n in written.items()},
        "streamed": True,
        "exclusive": True,
        "import_id": import_id,
        "replaced": True,
    }
    return json.dumps(record, sort_keys=True)


def _store_raw_staged(
    conn: sqlite3.Connection,
    root: Path,
    windows: int,
    *,
    source: str,
    location: str,
    content_hash: str,
    has_bank_statement: bool,
    report: ProgressFn,
    summary: _SummaryParts,
) -> tuple[int, dict[str, int]] | None:
    """SQLite: every window's rows written into one staging file through ADBC (Arrow
    columns bound in C, no Python object per value; core.db.staging), its indexes built
    there by one sort each; then, in one transaction, the raw tables emptied and each
    copied from the staging file as whole records and index entries (the in-memory
    import's fast path). None, with nothing changed, when a table's rows repeat a key or
    the import id the rows carry was taken meanwhile."""
    from core.db import raw, transaction
    from core.db.staging import (
        attached,
        foreign_keys_off,
        staging_directory,
        table_schema,
        write_staged_parts,
    )
    from core.engine.distributed import read_ledger, read_owned_rows

    promised = raw.next_import_id(conn)
    schemas = {table: table_schema(conn, table) for table, _, _ in raw.RAW_TABLES.values()}
    written = dict.fromkeys(raw.RAW_TABLES, 0)

    def part(frames: dict[str, pd.DataFrame]) -> dict[str, Any]:
        for attribute, frame in frames.items():
            written[attribute] += len(frame)
        if "payments" in frames:
            summary.add(frames["payments"], None)
        return {raw.RAW_TABLES[a][0]: raw.arrow_rows(a, f, promised) for a, f in frames.items()}

    def parts() -> Iterator[dict[str, Any]]:
        yield part(read_ledger(root))
        for k in range(windows):
            yield part(read_owned_rows(root, k))
            report((k + 1) / windows, f"Storing the raw tables: window {k + 1} of {windows}")
        report(1.0, "Storing the raw tables: building their indexes")

    with staging_directory() as folder:
        staged = write_staged_parts(folder / "raw.sqlite", schemas, parts())
        if staged.refused:
            return None
        report(1.0, "Storing the raw tables: copying them into the database")
        taken = False
        try:
            with (
                attached(conn, {"raw_stage": staged.path}),
                foreign_keys_off(conn),
                transaction(conn),
            ):
                raw.clear_raw_tables(conn)
                try:
                    import_id = raw.insert_import(
                        conn,
                        source=source,
                        location=location,
                        content_hash=content_hash,
                        imported_at=int(time.time()),
                        report_json="{}",
                        import_id=promised,
                    )
                except sqlite3.IntegrityError:
                    taken = True
                    raise
                for attribute in raw.RAW_TABLES:
                    raw.copy_staged_table(conn, "raw_stage", attribute)
                raw.update_import_report(
                    conn,
                    import_id,
                    _import_record(
                        import_id,
                        written,
                        has_bank_statement,
                        source=source,
                        location=location,
                        content_hash=content_hash,
                    ),
                )
        except sqlite3.IntegrityError:
            if taken:
                return None
            raise
    return import_id, written


def _store_raw_appended(
    conn: sqlite3.Connection,
    root: Path,
    windows: int,
    *,
    source: str,
    location: str,
    content_hash: str,
    has_bank_statement: bool,
    report: ProgressFn,
    summary: _SummaryParts,
) -> tuple[int, dict[str, int]]:
    """The raw tables replaced inside one transaction, every window appended with the
    indexes dropped and built once at the end (core.db.raw.raw_tables_filled_in_bulk)."""
    from core.db import raw, transaction
    from core.engine.distributed import read_ledger, read_owned_rows

    written = dict.fromkeys(raw.RAW_TABLES, 0)
    with transaction(conn):
        raw.clear_raw_tables(conn)
        import_id = raw.insert_import(
            conn,
            source=source,
            location=location,
            content_hash=content_hash,
            imported_at=int(time.time()),
            report_json="{}",
        )
        with raw.bulk_writes(conn, 256 << 20), raw.raw_tables_filled_in_bulk(conn) as fill:
            for table, frame in read_ledger(root).items():  # payments are row tables
                written[table] += raw.append_frame(conn, fill, table, frame, import_id)
            for k in range(windows):
                for table, frame in read_owned_rows(root, k).items():
                    written[table] += raw.append_frame(conn, fill, table, frame, import_id)
                    if table == "payments":
                        summary.add(frame, None)
                report((k + 1) / windows, f"Storing the raw tables: window {k + 1} of {windows}")
            report(1.0, "Storing the raw tables: building their indexes")
        # A key met twice was resolved (the last row kept): the tables hold fewer rows than
        # the frames, whose summary would count both (the SQL summary is computed then).
        summary.spoilt = summary.spoilt or bool(fill.resolved)
        record = _import_record(
            import_id,
            written,
            has_bank_statement,
            source=source,
            location=location,
            content_hash=content_hash,
        )
        raw.update_import_report(conn, import_id, record)
    return import_id, written


def _window_chunks(
    root: Path,
    windows: int,
    params: EngineParams,
    as_of: int,
    pricing: tuple[Any, ...],
    totals: dict[str, Any],
    report: ProgressFn,
    summary: _SummaryParts,
) -> Iterator[Sequence[np.ndarray[Any, Any]]]:
    """Each window reconciled in turn, its owned outcomes cut into insert chunks; `totals`
    collects the counts as they go (complete_run reads them after the last chunk),
    `summary` the run summary's parts."""
    from core.engine.distributed import reconcile_stored_window
    from core.engine.persist import OUTCOME_KEY, outcome_chunks
    from core.engine.results import counts

    settings = params.to_dict()
    for k in range(windows):
        outcomes: pd.DataFrame = reconcile_stored_window(str(root), k, settings, as_of, pricing)
        if len(outcomes):
            totals.update(add_counts(totals, counts(outcomes)))
            summary.add(None, outcomes)
            # In the outcomes table's key order (it is clustered by run, entity type, id):
            # each window's rows go into the B-tree in one sweep instead of at random places.
            outcomes = outcomes.sort_values(list(OUTCOME_KEY), kind="stable")
        yield from outcome_chunks(outcomes)
        report((k + 1) / windows, f"Reconciling and saving: window {k + 1} of {windows}")


def _window_outcomes(
    root: Path,
    windows: int,
    params: EngineParams,
    as_of: int,
    pricing: tuple[Any, ...],
    totals: dict[str, Any],
    report: ProgressFn,
    summary: _SummaryParts,
) -> Iterator[pd.DataFrame]:
    """Each window reconciled in turn (its owned outcomes, in the outcomes table's key
    order); `totals` collects the counts as they go, `summary` the run summary's parts."""
    from core.engine.distributed import reconcile_stored_window
    from core.engine.persist import OUTCOME_KEY
    from core.engine.results import counts

    settings = params.to_dict()
    for k in range(windows):
        outcomes: pd.DataFrame = reconcile_stored_window(str(root), k, settings, as_of, pricing)
        if len(outcomes):
            totals.update(add_counts(totals, counts(outcomes)))
            summary.add(None, outcomes)
            yield outcomes.sort_values(list(OUTCOME_KEY), kind="stable")
        report((k + 1) / windows, f"Reconciling and saving: window {k + 1} of {windows}")


def _complete_run_staged(
    conn: sqlite3.Connection,
    run_id: int,
    windows: Iterator[pd.DataFrame],
    *,
    timings: dict[str, Any],
    counts: dict[str, Any],
    through_import_id: int,
) -> None:
    """SQLite: every window's outcomes written under `run_id` into one staging file through
    ADBC (no Python object per value), then copied into outcomes by `complete_run` in one
    statement (whole records when outcomes is empty: core.db.staging). `counts` is filled
    while the windows are staged, before complete_run reads it."""
    from core.db import runs as db_runs
    from core.db.staging import (
        attached,
        foreign_keys_off,
        staging_directory,
        table_schema,
        write_staged_parts,
    )
    from core.engine.persist import outcome_table

    name = db_runs.STAGED_OUTCOMES
    schema = {name: table_schema(conn, name)}
    columns = db_runs.outcome_table_columns(conn)
    parts = ({name: outcome_table(frame, run_id, columns)} for frame in windows)
    with staging_directory() as folder:
        staged = write_staged_parts(folder / "outcomes.sqlite", schema, parts)
        if staged.refused:  # a repeated outcome key: what the inserts would refuse as well
            raise sqlite3.IntegrityError(staged.refused[name])
        # Keys off so SQLite copies whole records: every staged row carries this run's id.
        with attached(conn, {"staged_outcomes": staged.path}), foreign_keys_off(conn):
            db_runs.complete_run(
                conn,
                run_id,
                staged=("staged_outcomes", run_id),
                timings=timings,
                counts=counts,
                through_import_id=through_import_id,
            )


@holding_run_lock("a streamed import")
def stream_folder_into_db(
    conn: sqlite3.Connection,
    folder: str | Path,
    params: EngineParams,
    as_of: int,
    *,
    store: Path | None = None,
    days_per_window: int = DEFAULT_DAYS_PER_WINDOW,
    amount_unit: str = "auto",
    source: str = "files",
    block_bytes: int | None = None,
    progress: ProgressFn = _noop,
    actor: str = "",
    how: str = "reconcile --stream --db",
) -> StreamedRun:
    """Import `folder` (API CSVs of any size) into the database and reconcile it there,
    window by window of settlement days: the raw tables replaced, a run with every
    outcome, the exception queue synced, the run's summary precomputed. Nothing is written
    to the database when the folder is bad (InputError names the problems first).
    `store`: keep the window store there (default: a temporary folder beside nothing).
    One `run.reconciled` audit entry by `actor` (the signed-in person in the app, default
    the operating-system login) names the import and the run (core.activity)."""
    from core.activity import record_run
    from core.books.store import pricing_plans
    from core.calendar import WorkingCalendar
    from core.db import runs as db_runs
    from core.db.backend import is_postgres
    from core.ingest.stream import BLOCK_BYTES, stream_folder_to_store
    from core.review import sync_exceptions
    from core.views.runs import run_summary
    from core.views.summary_ahead import store_summary_ahead

    folder = Path(folder)
    block = BLOCK_BYTES if block_bytes is None else block_bytes
    timings: dict[str, float] = {}
    with ExitStack() as stack:
        if store is None:
            work = stack.enter_context(tempfile.TemporaryDirectory(prefix="razorrecon-stream-"))
            root = Path(work) / "store"
        else:
            root = store
            root.parent.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        progress(0.0, f"Importing {folder.name}")
        meta = stream_folder_to_store(
            folder,
            root,
            params,
            as_of,
            days_per_window=days_per_window,
            amount_unit=amount_unit,
            block_bytes=block,
            progress=_import_progress(folder, block, _span(progress, IMPORT_SPAN)),
        )
        hashes = folder_hashes(folder, amount_unit)
        timings["import_s"] = round(time.perf_counter() - began, 3)

        began = time.perf_counter()
        parts = _SummaryParts()  # the run summary's, added up as the frames pass
        import_id, written = _store_raw(
            conn,
            root,
            meta.windows,
            source=source,
            location=str(folder),
            content_hash=hashes["dataset"],
            has_bank_statement=meta.has_bank_statement,
            report=_span(progress, RAW_SPAN),
            summary=parts,
        )
        timings["store_dataset_s"] = round(time.perf_counter() - began, 3)
        books = Windows(root, meta.windows, mark_building(conn))  # docs/books.md

        began = time.perf_counter()
        pricing = pricing_plans(conn)
        db_runs.discard_stale_runs(conn, older_than_seconds=0)  # run lock held: none in progress
        run_id = db_runs.start_run(
            conn,
            as_of=as_of,
            source=source,
            params=params.to_dict(),
            input_hashes={**hashes, "import": hashes["dataset"]},
        )
        totals: dict[str, Any] = {}
        try:
            if is_postgres(conn) or conn.in_transaction:
                db_runs.complete_run(
                    conn,
                    run_id,
                    chunks=_window_chunks(
                        root,
                        meta.windows,
                        params,
                        as_of,
                        pricing,
                        totals,
                        _span(progress, RECONCILE_SPAN),
                        parts,
                    ),
                    timings={**timings, "windows": meta.windows},
                    counts=totals,
                    through_import_id=import_id,  # replaced: the tables hold it alone
                )
            else:
                _complete_run_staged(
                    conn,
                    run_id,
                    _window_outcomes(
                        root,
                        meta.windows,
                        params,
                        as_of,
                        pricing,
                        totals,
                        _span(progress, RECONCILE_SPAN),
                        parts,
                    ),
                    timings={**timings, "windows": meta.windows},
                    counts=totals,
                    through_import_id=import_id,  # replaced: the tables hold it alone
                )
        except BaseException as exc:
            db_runs.fail_run(conn, run_id, f"{type(exc).__name__}: {exc}")
            raise
        timings["reconcile_persist_s"] = round(time.perf_counter() - began, 3)

        began = time.perf_counter()
        progress(0.93, "Updating the exception queue")
        summary = sync_exceptions(
            conn, run_id, calendar=WorkingCalendar(params.calendar.holidays), due_from=as_of
        )
        timings["sync_s"] = round(time.perf_counter() - began, 3)
        began = time.perf_counter()
        progress(0.97, "Summarising the run")
        # Stored from the parts added up window by window while the tables still hold this
        # build's import alone; else (an import came in meanwhile) computed in SQL.
        whole = parts.whole()
        if whole is None or not store_summary_ahead(conn, run_id, whole, import_id):
            run_summary(conn, run_id)
        timings["summary_s"] = round(time.perf_counter() - began, 3)
        timings["summary_parts_s"] = round(parts.seconds, 3)
        timings["books_ledger_s"] = rebuild_after_run(conn, progress, books)  # docs/books.md
        db_runs.update_timings(conn, run_id, {**timings, "windows": meta.windows})
        record_run(
            conn,
            run_id,
            actor=actor,
            how=how,
            imported={
                "import_id": import_id,
                "source": source,
                "location": str(folder),
                "content_hash": hashes["dataset"],
                "replaced": True,
                "files": {name: digest for name, digest in hashes.items() if name != "dataset"},
                "written": {str(k): int(v) for k, v in written.items()},
            },
            sync=summary,
        )
        progress(1.0, f"Run #{run_id} stored: {int(totals.get('outcomes', 0)):,} outcomes")
        if store is None:
            shutil.rmtree(root, ignore_errors=True)
        return StreamedRun(
            run_id=run_id,
            import_id=import_id,
            windows=meta.windows,
            raw_rows=written,
            outcomes=int(totals.get("outcomes", 0)),
            counts=totals,
            timings=timings,
            sync=summary,
        )
    raise AssertionError("unreachable")


def tqdm_progress_fn(description: str) -> tuple[ProgressFn, Callable[[], None]]:
    """A ProgressFn drawn as a tqdm bar on stderr (0-100 %, the step as its text), and the
    function that closes it: the CLI's bar and the app's `st.progress` are fed alike."""
    from tqdm import tqdm  # type: ignore[import-untyped]

    bar = tqdm(total=100, desc=description, unit="%", bar_format="{l_bar}{bar}| {elapsed}")

    def update(fraction: float, message: str) -> None:
        bar.set_description_str(f"{description}: {message}", refresh=False)
        bar.update(round(100 * min(1.0, max(0.0, fraction))) - bar.n)

    return update, bar.close


__all__ = [
    "ProgressFn",
    "StreamedRun",
    "add_counts",
    "folder_hashes",
    "stream_folder_into_db",
    "tqdm_progress_fn",
]
