"""Import -> reconcile -> persist -> sync exceptions: the one path every caller takes.

The CLI's `reconcile --db`, the app's bootstrap and its Data page all call these, so a run
made from files and a run made from the database are recorded the same way: a `runs` row
with parameters, input hashes, timings and counts, every outcome, and the exception queue
brought up to date by `core.review.sync_exceptions`.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core.activity import default_actor, import_facts, record_run
from core.books.pricing import PricingPlan
from core.calendar import WorkingCalendar
from core.dataset import DATASET_FILES, DATASET_TABLES, Dataset
from core.db.backend import is_postgres
from core.db.connection import background_checkpoints, rollback_journal_while_new
from core.db.run_lock import database_file, holding_run_lock, holds_run_lock
from core.db.runs import RunKind, discard_stale_runs, get_run, update_timings
from core.db.staging import StagedTable, staging_directory, worth_staging
from core.engine import EngineParams, persist_run, reconcile
from core.engine.persist import (
    StagedOutcomes,
    outcomes_to_stage,
    write_staged_outcomes,
)
from core.errors import RazorReconError, RunNotSyncedError, StorageError
from core.ingest.mappings import BankMapping
from core.ingest.report import ImportReport
from core.ingest.stage import RawStaging

if TYPE_CHECKING:  # import-day never derives the books: the ledger loads when a run does
    from core.books.carry import Started
    from core.books.ledger import Computed, InMemory
    from core.ingest.statements import PlacedLines
    from core.views.summary_ahead import SummaryAhead


@dataclass(frozen=True)
class FolderRun:
    """A dataset folder loaded and reconciled, nothing written yet.

    folder: where the files were; dataset: what the importer made of them; report: the
    importer's report; outcomes: the engine's frame; input_hashes: file name -> sha256
    (plus 'dataset', the hash of all of them together); timings: step -> seconds.
    """

    folder: Path
    dataset: Dataset
    report: ImportReport
    outcomes: pd.DataFrame
    params: EngineParams
    as_of: int
    input_hashes: dict[str, str]
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    """A run stored in the database.

    run_id: the `runs` row; outcomes: the engine's frame; timings: step -> seconds;
    sync: what `core.review.sync_exceptions` returned (opened / kept / cleared counts).
    An incremental day's run holds its outcomes as parts (`parts`: the
    core.engine.incremental.IncrementalResult, `whole` None) and builds the frame on first
    use of `outcomes`.
    """

    run_id: int
    whole: pd.DataFrame | None
    timings: dict[str, float]
    input_hashes: dict[str, str]
    sync: Any = None
    parts: Any = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def outcomes(self) -> pd.DataFrame:
        """The run's outcome frame (built from `parts` on first use when not kept whole)."""
        if self.whole is not None:
            return self.whole
        if self.parts is None:
            raise ValueError(f"run {self.run_id} holds no outcomes")
        frame: pd.DataFrame = self.parts.outcomes
        return frame


def file_hashes(folder: str | Path, known: dict[str, str] | None = None) -> dict[str, str]:
    """sha256 of each dataset file present, and of all of them in name order ('dataset').
    known: file name -> sha256 already computed (the importer hashes what it reads)."""
    root = Path(folder)
    hashes: dict[str, str] = {}
    combined = hashlib.sha256()
    names = sorted({*DATASET_FILES, *(known or {})})  # spreadsheets and .txt statements too
    for name in names:
        path = root / name
        if path.is_file():
            digest = (known or {}).get(name) or hashlib.sha256(path.read_bytes()).hexdigest()
            hashes[name] = digest
            combined.update(f"{name}:{digest}\n".encode())
    hashes["dataset"] = combined.hexdigest()
    return hashes


def dataset_hashes(dataset: Dataset) -> dict[str, str]:
    """sha256 of each table's content (row order included) and of all of them together."""
    hashes: dict[str, str] = {}
    combined = hashlib.sha256()
    for name in DATASET_TABLES:
        frame: pd.DataFrame = getattr(dataset, name)
        digest = hashlib.sha256(
            pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()
            + ",".join(frame.columns).encode()
        ).hexdigest()
        hashes[name] = digest
        combined.update(f"{name}:{digest}\n".encode())
    combined.update(f"has_bank_statement:{dataset.has_bank_statement}".encode())
    hashes["dataset"] = combined.hexdigest()
    return hashes


@dataclass(frozen=True)
class LoadedFolder:
    """A dataset folder read and validated, not reconciled yet: folder, dataset, the
    importer's report, input_hashes (as FolderRun's) and timings ('load_s')."""

    folder: Path
    dataset: Dataset
    report: ImportReport
    input_hashes: dict[str, str]
    timings: dict[str, float]

    def reconciled(
        self, outcomes: pd.DataFrame, params: EngineParams, as_of: int, timings: dict[str, float]
    ) -> FolderRun:
        """This folder with the engine's outcomes (however they were computed: in one run or
        by windows), its timings followed by the reconcile's."""
        return FolderRun(
            folder=self.folder,
            dataset=self.dataset,
            report=self.report,
            outcomes=outcomes,
            params=params,
            as_of=as_of,
            input_hashes=self.input_hashes,
            timings={**self.timings, **timings},
        )


def load_folder(
    folder: str | Path,
    amount_unit: str = "auto",
    bank_mappings: Sequence[BankMapping] = (),
    *,
    hashing: bool = True,
    required_files: bool = True,
) -> LoadedFolder:
    """Load a dataset folder (core.ingest). Writes nothing; raises InputError (file, line,
    column) on bad input. bank_mappings: saved statement column mappings to apply.
    required_files: False for a day merged into stored data (core.ingest.load_dataset).

    hashing: False skips the files' sha256 (~0.6 CPU s for 560 MB), for a caller that
    stores nothing (`reconcile` without `--db`): `input_hashes` is then empty and the
    report's `content_hash` ''. Such a LoadedFolder must not be stored or staged."""
    from core.ingest import load_dataset

    began = time.perf_counter()
    # Overlapping the big files is faster; the import command reads them in turn instead.
    dataset, report = load_dataset(
        Path(folder),
        amount_unit,
        bank_mappings,
        overlap_large_files=True,
        hashing=hashing,
        required_files=required_files,
    )
    loaded = time.perf_counter()
    # The importer's content hash covers the files and the amount-unit setting.
    read = {f.file: f.sha256 for f in report.files if f.sha256}
    hashes = {**file_hashes(folder, read), "import": report.content_hash} if hashing else {}
    return LoadedFolder(Path(folder), dataset, report, hashes, {"load_s": round(loaded - began, 3)})


def reconcile_loaded(
    loaded: LoadedFolder,
    params: EngineParams,
    as_of: int,
    pricing: tuple[PricingPlan, ...] = (),
) -> FolderRun:
    """Reconcile a loaded folder (with the merchant's pricing plans, when given). Writes
    nothing."""
    began = time.perf_counter()
    outcomes = reconcile(loaded.dataset, params, as_of, pricing)
    done = time.perf_counter()
    return loaded.reconciled(outcomes, params, as_of, {"reconcile_s": round(done - began, 3)})


def reconcile_folder(
    folder: str | Path, params: EngineParams, as_of: int, amount_unit: str = "auto"
) -> FolderRun:
    """Load a dataset folder (core.ingest) and reconcile it. Writes nothing; raises
    InputError (file, line, column) on bad input."""
    return reconcile_loaded(load_folder(folder, amount_unit), params, as_of)


@contextmanager
def staging_folder(
    conn: sqlite3.Connection, loaded: LoadedFolder | FolderRun
) -> Iterator[RawStaging | None]:
    """Start staging a folder's raw tables for `store_folder_run` on worker threads (see
    core.ingest.stage), so that they are written while this thread reconciles."""
    from core.ingest.stage import staging_raw_tables

    with staging_raw_tables(
        conn, loaded.dataset, loaded.report.content_hash, replace=True
    ) as staging:
        yield staging


@holding_run_lock("a reconcile run")
def store_folder_run(
    conn: sqlite3.Connection,
    run: FolderRun,
    *,
    source: str = "files",
    staging: RawStaging | None = None,
    actor: str = "",
    how: str = "reconcile --db",
) -> RunResult:
    """Store a reconciled folder: the dataset (replacing the raw tables, so the database
    holds what was reconciled), the run with its outcomes, then sync the exceptions; then
    one `run.reconciled` audit entry by `actor` (default the operating-system login) with
    the import (core.activity).

    A large run is staged (core.db.staging): the outcomes on a worker thread, the raw
    tables on two more (`staging`, when the caller started them before reconciling; else
    `store_dataset` starts them), then each is copied in. With `staging`, the outcomes are
    written once the raw tables' writers are done, beside the raw tables' copy, and the
    Books ledger is derived after them, beside the run's store and sync: both cores work
    on the critical path (the raw writers) first, and the tail has work for both."""
    from core.books.ledger import Computed, mark_building
    from core.ingest import store_dataset
    from core.views.summary_ahead import summary_ahead

    began = time.perf_counter()
    with ExitStack() as stack:
        # A new database file takes the first load through a rollback journal (every page
        # written once, not into the WAL and again by a checkpoint); WAL again at the end.
        stack.enter_context(rollback_journal_while_new(conn))
        staging_outcomes: Future[StagedOutcomes] | None = None
        if worth_staging(conn, len(run.outcomes)):
            # Written on a worker thread while this one copies the raw tables in.
            folder = stack.enter_context(staging_directory())
            worker = stack.enter_context(ThreadPoolExecutor(1, "staging-outcomes"))
            table, run_id = outcomes_to_stage(conn, run.outcomes)
            path = folder / "outcomes.sqlite"
            staging_outcomes = worker.submit(_outcomes_after_staging, staging, table, run_id, path)
            stack.enter_context(background_checkpoints(conn))
        # The Books ledger derives from the dataset and these outcomes alone: on a worker
        # thread while this one stores them (docs/books.md "The stored ledger").
        ledger_worker = stack.enter_context(ThreadPoolExecutor(1, "books-ledger"))
        deriving = ledger_worker.submit(
            _books_after_staging, staging, staging_outcomes, run.dataset, run.outcomes
        )
        # The Overview's run summary from the same frames, after the ledger on its thread:
        # that core is idle while this one stores the run and syncs the queue.
        summarising = ledger_worker.submit(
            summary_ahead, run.dataset.payments, [(run.outcomes, None)]
        )
        imported = store_dataset(
            conn,
            run.dataset,
            source=source,
            location=str(run.folder),
            content_hash=run.report.content_hash,
            replace=True,
            files=run.report.files,
            staging=staging,
        )
        # The raw tables are now exactly run.dataset (replaced): the books derive from it.
        books = Computed(deriving, mark_building(conn))
        timings = {**run.timings, "store_dataset_s": round(time.perf_counter() - began, 3)}
        staged = staging_outcomes.result() if staging_outcomes is not None else None
        stored = _persist_and_sync(
            conn,
            run.outcomes,
            run.params,
            run.as_of,
            source,
            run.input_hashes,
            timings,
            staged,
            books=books,
            # replaced: the raw tables hold exactly this import, what was reconciled
            through_import_id=imported.import_id,
            run_summary=None if imported.import_id is None else (summarising, imported.import_id),
        )
    record_run(
        conn,
        stored.run_id,
        actor=actor,
        how=how,
        imported=import_facts(imported),
        sync=stored.sync,
    )
    return stored


def _outcomes_after_staging(
    staging: RawStaging | None, table: StagedTable, run_id: int, path: Path
) -> StagedOutcomes:
    """core.engine.persist.write_staged_outcomes, once the raw tables' staging writers are
    done: the house copy waits for those, not for the outcomes (needed only after it), so
    the raw writers get both cores and the outcomes are written beside the copy."""
    if staging is not None:
        wait(staging.pending)  # their errors are store_dataset's to raise
    return write_staged_outcomes(table, run_id, path)


def _books_after_staging(
    staging: RawStaging | None,
    staging_outcomes: Future[StagedOutcomes] | None,
    dataset: Dataset,
    outcomes: pd.DataFrame,
) -> tuple[Any, int]:
    """core.books.ledger.derive_in_memory, once the raw tables' staging writers and then
    the outcomes' are done: their rows are freed by then, so the ledger's working memory
    (~0.65 GB at 1M payments) comes on top of the staged copy's, not theirs (peak RSS),
    and the outcomes, which the run's store waits for, are not slowed by it."""
    from core.books.ledger import derive_in_memory

    if staging is not None:
        wait(staging.pending)  # their errors are store_dataset's to raise
        if staging_outcomes is not None:
            wait([staging_outcomes])  # its error is persist's to raise
    return derive_in_memory(dataset, outcomes)


def reconcile_folder_into_db(
    conn: sqlite3.Connection,
    folder: str | Path,
    *,
    params: EngineParams,
    as_of: int,
    amount_unit: str = "auto",
    source: str = "files",
    actor: str = "",
    how: str = "reconcile --db",
) -> RunResult:
    """Load, reconcile, store dataset and run, sync exceptions (nothing is written when the
    input is bad). The raw tables are staged while the engine runs; the statement column
    mappings saved in the database apply. Audited as `store_folder_run`."""
    from core.books.store import pricing_plans
    from core.ingest.mappings import saved_mappings

    loaded = load_folder(folder, amount_unit, saved_mappings(conn))
    pricing = pricing_plans(conn)
    with staging_folder(conn, loaded) as staging:
        run = reconcile_loaded(loaded, params, as_of, pricing)
        return store_folder_run(conn, run, source=source, staging=staging, actor=actor, how=how)


@holding_run_lock("a reconcile of the stored tables")
def reconcile_database(
    conn: sqlite3.Connection,
    params: EngineParams,
    as_of: int,
    source: str,
    *,
    actor: str = "",
    how: str = "reconcile",
) -> RunResult:
    """Reconcile the raw tables already in the database (any import or API sync), store the
    run and sync the exceptions; one `run.reconciled` audit entry by `actor` (default the
    operating-system login; core.activity). Refused when a raw table's count is not what
    the audited writes left (core.audit.rawcheck); the MACs of every row are `audit
    verify`'s and the month close's to check (their cost: 24 CPU s at 1M payments)."""
    from core.audit.rawcheck import refuse_unrecorded_changes
    from core.db.raw import latest_import_id, read_dataset

    refuse_unrecorded_changes(conn, macs=False)
    from core.razorpay.webhooks import clear_marks, open_marks
    from core.views.summary_ahead import summary_ahead

    # Webhook marks up to here are answered by this run; later ones stay open.
    marks_through = max((mark[0] for mark in open_marks(conn)), default=0)
    began = time.perf_counter()
    from core.books.ledger import InMemory, mark_building
    from core.books.store import pricing_plans

    version = mark_building(conn)  # read whole below: the books derive from it
    through = latest_import_id(conn)  # before the read: a later import is not claimed
    dataset = read_dataset(conn)
    loaded = time.perf_counter()
    outcomes = reconcile(dataset, params, as_of, pricing_plans(conn))
    done = time.perf_counter()
    timings = {"load_s": round(loaded - began, 3), "reconcile_s": round(done - loaded, 3)}
    with ThreadPoolExecutor(1, "run-summary") as worker:
        # The Overview's run summary from the frames just read, on a thread of its own while
        # the run is stored (as `reconcile --db`); the tables are `dataset` while `through`
        # is the latest import (an import after it: not stored, the caller computes it).
        summarising = worker.submit(summary_ahead, dataset.payments, [(outcomes, None)])
        result = _persist_and_sync(
            conn,
            outcomes,
            params,
            as_of,
            source,
            dataset_hashes(dataset),
            timings,
            books=InMemory(dataset, version),
            through_import_id=through,
            run_summary=None if through is None else (summarising, through),
        )
    if marks_through:
        clear_marks(conn, through_id=marks_through, run_id=result.run_id)
    record_run(conn, result.run_id, actor=actor, how=how, sync=result.sync)
    return result


def _persist_and_sync(
    conn: sqlite3.Connection,
    outcomes: pd.DataFrame | None,
    params: EngineParams,
    as_of: int,
    source: str,
    input_hashes: dict[str, str],
    timings: dict[str, float],
    staged: StagedOutcomes | None = None,
    *,
    counts: dict[str, Any] | None = None,
    carry: tuple[Any, pd.DataFrame, pd.DataFrame] | None = None,
    books: InMemory | Computed | None = None,
    parts: Any = None,
    on_stored: Callable[[int], None] | None = None,
    run_id: int | None = None,
    scope: Any = None,
    through_import_id: int | None,
    run_summary: tuple[Future[SummaryAhead], int] | None = None,
    kind: RunKind | None = None,
) -> RunResult:
    """Store the run (outcomes; or, with `carry`, the fresh ones and a copy of the carried
    rows: outcomes may then be None, `parts` building them on demand) and sync the exception
    queue; `on_stored` is called with the run's id between the two. run_id: the running run
    that already holds the carry's copy (`_BaseCopy`), with `carry` only. scope: the
    carry's core.review.sync.SyncScope, with `carry` only. staged: the outcomes (with
    `carry`: the fresh ones) in a staging file; counts: the run's counts when computed
    already (with `carry` only). through_import_id: the last import the run's data
    included (core.db.raw.reconciled_through), recorded on the run. run_summary: the run's
    summary being computed from its frames, and the import after which the raw tables are
    what it was computed from: stored once the run is synced (`_store_summary`). kind:
    what the run was (core.db.runs.RunKind), recorded as it completes."""
    from core.review import sync_exceptions

    # A run some killed process left 'running' is marked failed first: any other than this
    # one's, holding the run lock (no other run is in progress), else those over an hour old.
    discard_stale_runs(conn, older_than_seconds=0 if holds_run_lock(conn) else 3600, keep=run_id)
    if carry is not None:  # an incremental run: carried rows copied inside the database
        run_id = _persist_carried(
            conn,
            carry,
            params,
            as_of,
            source,
            input_hashes,
            timings,
            run_id,
            staged,
            counts,
            through_import_id,
            kind,
        )
    else:
        if outcomes is None:
            raise ValueError("a run stored without its outcomes")
        run_id = persist_run(
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
    if on_stored is not None:
        on_stored(run_id)
    began = time.perf_counter()
    # Due dates count the run's own working days: its holidays are no working days either.
    # They count from the run's as-of (the books' date), not the wall clock.
    try:
        summary = sync_exceptions(
            conn,
            run_id,
            calendar=WorkingCalendar(params.calendar.holidays),
            due_from=as_of,
            scope=scope if carry is not None else None,
        )
    except RazorReconError as exc:  # the run stands (committed): say so, and how to sync it
        where = None if is_postgres(conn) else database_file(conn)
        raise RunNotSyncedError(run_id, exc, where) from exc
    stored = get_run(conn, run_id)
    all_timings = {
        **(stored.timings if stored and stored.timings else timings),
        "sync_s": round(time.perf_counter() - began, 3),
        # docs/books.md "The stored ledger": derived after a full run, not an incremental one
        **({} if carry is not None else {"books_ledger_s": _rebuild_books(conn, books, run_id)}),
    }
    all_timings.update(_store_summary(conn, run_id, run_summary))
    update_timings(conn, run_id, all_timings)
    return RunResult(
        run_id=run_id,
        whole=outcomes,
        parts=parts,
        timings=all_timings,
        input_hashes=input_hashes,
        sync=summary,
    )


def _store_summary(
    conn: sqlite3.Connection, run_id: int, summary: tuple[Future[SummaryAhead], int] | None
) -> dict[str, float]:
    """Store the completed run's summary for the Overview (core.views.summary_ahead), once
    its worker is done: {'run_summary_s': seconds waited and stored}, or {} when there was
    none to store or an import came after the run's own (the Overview computes it then)."""
    from core.views.summary_ahead import store_summary_ahead

    if summary is None:
        return {}
    computing, import_id = summary
    began = time.perf_counter()
    if not store_summary_ahead(conn, run_id, computing.result(), import_id):
        return {}
    return {"run_summary_s": round(time.perf_counter() - began, 3)}


def _rebuild_books(
    conn: sqlite3.Connection, books: InMemory | Computed | None, run_id: int
) -> float:
    """core.books.ledger.rebuild_after_run, imported only by a run that derives the books
    (an incremental run does not: import-day never loads the ledger's modules). A ledger
    derived on a worker from the run's outcomes (`Computed`) is recorded against `run_id`."""
    from core.books.ledger import Computed, rebuild_after_run

    if isinstance(books, Computed):
        books = books.for_run(run_id)
    return rebuild_after_run(conn, source=books)


# --- incremental runs (docs/engine.md, "Incremental runs") ----------------------------


@dataclass(frozen=True)
class DayRunResult:
    """A day's load merged into the raw tables and reconciled.

    run: the stored run; kind: 'incremental' or 'full'; base_run_id: the run whose
    outcomes were carried forward (None for a full run); scope: what was re-reconciled
    (core.engine.incremental stats: 'reconciled', 'carried_forward', ...), or, for a full
    run, 'reason'.
    """

    run: RunResult
    kind: str
    base_run_id: int | None
    scope: dict[str, Any]
    # Where the stored state came from: 'snapshot of run N', or 'tables (why not a snapshot)'.
    read_from: str = "tables"
    # The outcome columns summary_lines and counts read, when the run's whole frame was
    # never built (an incremental run); None: read them from run.outcomes.
    counted: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    # The store's report of the day's files (None when nothing was stored).
    imported: ImportReport | None = field(default=None, repr=False, compare=False)
    # Why the run left no snapshot although it was to leave one (its files could not be
    # written or named: a FIFO at a file's name, a full disk), in one line; '' otherwise.
    snapshot_note: str = ""

    def summary_frame(self) -> pd.DataFrame:
        """A frame core.engine.results.summary_lines can read, without building the run's
        whole outcome frame when it was stored as parts."""
        return self.counted if self.counted is not None else self.run.outcomes


def qualify_bank_lines(dataset: Dataset, day: str) -> Dataset:
    """The dataset with each bank line's id and file prefixed by the day folder's name
    (`2026-06-03/bank_statement.csv:7`): every day's statement is called
    bank_statement.*, and a line's id is its file and line number, so without the prefix
    one day's lines would replace another's."""
    if len(dataset.bank) == 0:
        return dataset
    bank = dataset.bank.copy()
    for column in ("id", "file"):
        bank[column] = (day + "/" + bank[column].astype("string")).astype("string")
    return replace(dataset, bank=bank)


def _base_run_reason(
    conn: sqlite3.Connection, base: Any, params: EngineParams, pricing_hash: str
) -> str | None:
    """Why a day's load must be reconciled in full whatever it holds, or None when the base
    run can be carried forward as far as the database tells (core.engine.incremental.
    needs_full_run then looks at the tables)."""
    from core.db.raw import latest_import

    if base is None:
        return "no completed run to carry forward"
    if base.params != params.to_dict():
        return f"the parameters differ from run {base.id}'s"
    if base.input_hashes.get("pricing", "none") != pricing_hash:
        return f"the pricing plans differ from run {base.id}'s"
    if base.through_import_id is None:
        # Stored before migration 0106: whole seconds are all that is known of its data,
        # and they counted an import in its second, or a webhook's between its read and
        # its store, as reconciled (its snapshot then stood at the day's import without
        # those rows). One full run from the tables; every run after it records its own.
        return f"run {base.id} does not record the last import it reconciled"
    latest = latest_import(conn)
    latest_id = 0 if latest is None else latest.id  # as core.db.raw.latest_import_id
    snapshot_import = (base.snapshot or {}).get("import_id")
    if base.through_import_id != latest_id or (
        snapshot_import is not None and latest_id != snapshot_import
    ):
        return f"data imported after run {base.id} was not reconciled by it"
    return None


class _BaseCopy:
    """The base run's outcomes being copied under a new running run on a thread (core.db.
    runs.copy_base_outcomes), or nothing to copy (`copying` None). The copy's transaction
    waits for `skip`: the keys decided again (`drop_early`, once the engine's plan is
    known), or None (`release`: a day found to need a full run; `carried` and leaving the
    `with` give it too, so the copy never waits for long). `carried` hands the copy to the
    incremental run's carry, or discards it (the run is stored another way); leaving the
    `with` on an error with the run still running marks it failed, so no run is left half
    written."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        copying: Future[tuple[int, int]] | None,
        skip: Future[Any] | None = None,
    ) -> None:
        self._conn = conn
        self._copying = copying
        self._skip = skip
        self._sent: tuple[list[str], list[str]] | None = None

    def __enter__(self) -> _BaseCopy:
        return self

    def drop_early(self, previous: pd.DataFrame, carried: Any) -> None:
        """Have the copy delete the keys of `previous`'s rows not `carried` (the engine's
        mask) in its own transaction, before the day's store needs the writer."""
        if self._skip is None or self._skip.done():
            return
        self._sent = _key_lists(previous, ~np.asarray(carried, dtype=bool))
        self._skip.set_result(self._sent)

    def release(self) -> None:
        """Let the copy commit with nothing deleted (no plan will come, or it is wanted
        now), so its write lock is not held while the engine reconciles a full run."""
        if self._skip is not None and not self._skip.done():
            self._skip.set_result(None)

    def carried(self, carry: Any) -> tuple[Any, int | None]:
        """(the carry with the copied rows counted, the run holding them), once the copy is
        done; with no carry (every row stored) the copy is discarded: (None, None)."""
        from core.db.runs import discard_run

        if self._copying is None:
            return carry, None
        self.release()
        run_id, copied = self._copying.result()
        if carry is None:
            discard_run(self._conn, run_id)
            return None, None
        forward, fresh, counted = carry
        if self._sent is not None:  # deleted by the copy: none left to delete, rows checked
            if (list(forward.skip_types), list(forward.skip_ids)) != self._sent:
                raise ValueError("the keys deleted from the copy are not the run's")
            forward = replace(forward, skip_types=[], skip_ids=[])
        return (replace(forward, copied=copied), fresh, counted), run_id

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        from core.db.runs import discard_run, fail_run
        from core.errors import OlderRowsError

        if self._copying is None:
            return
        self.release()
        try:
            run_id, _ = self._copying.result()
        except Exception:  # the copy failed and marked its run failed (carried raises it)
            return
        run = get_run(self._conn, run_id)
        if run is None or run.status != "running":
            return
        if kind is None or issubclass(kind, OlderRowsError):  # refused: as if never begun
            discard_run(self._conn, run_id)
        else:
            fail_run(self._conn, run_id, f"{kind.__name__}: {error}")


def _copy_base_early(
    conn: sqlite3.Connection,
    base: Any,
    params: EngineParams,
    as_of: int,
    source: str,
    input_hashes: dict[str, str],
) -> _BaseCopy:
    """Start copying `base`'s outcomes under a new run on a thread with its own connection
    (a SQLite file only: PostgreSQL and in-memory databases copy when the run is stored)."""
    from core.db.audit import main_database_file
    from core.db.backend import is_postgres
    from core.db.runs import copy_base_outcomes

    path = "" if base is None or is_postgres(conn) else main_database_file(conn)
    if not path:
        return _BaseCopy(conn, None)
    pool = ThreadPoolExecutor(1, "carried-copy")
    skip: Future[Any] = Future()
    copying = pool.submit(
        copy_base_outcomes,
        path,
        base_run_id=base.id,
        as_of=as_of,
        source=source,
        params=params.to_dict(),
        input_hashes=input_hashes,
        skip=skip,
    )
    pool.shutdown(wait=False)
    return _BaseCopy(conn, copying, skip)


IMPORT_DAY_OLDER_HINT = "import-day --accept-older takes it as a correction"

# `reconcile_day_into_db(snapshots=...)`: beside a SQLite database (`<file>.snapshots/`).
SNAPSHOTS_BESIDE = "beside"


def snapshot_folder(conn: sqlite3.Connection, wanted: str | Path | None) -> Path | None:
    """Where a day's run keeps its snapshot (core.snapshots): `wanted` itself (a folder
    named by hand may be a link or a mount); with SNAPSHOTS_BESIDE, `<database
    file>.snapshots` beside a SQLite file (none for an in-memory database or PostgreSQL,
    which need a folder named); None: no snapshots.

    A symbolic link at the folder beside the database is refused (StorageError, exit 4,
    before anything is read or written), as a link at the audit anchor file's path is
    (core.audit.anchor): a folder named by hand (`--snapshots DIR`), not a link planted
    beside the database, puts the snapshots elsewhere."""
    from core.db.audit import main_database_file

    if wanted is None:
        return None
    if wanted != SNAPSHOTS_BESIDE:
        return Path(wanted)
    file = main_database_file(conn)  # '' for PostgreSQL and in-memory databases
    if not file:
        return None
    beside = Path(file).with_name(Path(file).name + ".snapshots")
    if beside.is_symlink():
        raise StorageError(
            f"{beside} is a symbolic link: snapshots are not written or read through a link"
            " beside the database (pass --snapshots DIR to keep them in another folder, or"
            " --no-snapshots); nothing was stored"
        )
    return beside


def _key_mask(outcomes: pd.DataFrame, keep: dict[str, Any]) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which rows of an outcome frame (sorted by entity_type) have a key in `keep`
    (entity_type -> Arrow array of entity ids)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def joined(name: str) -> Any:
        values = pa.array(outcomes[name].array)
        return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values

    types, ids = joined("entity_type"), joined("entity_id")
    result = np.zeros(len(outcomes), dtype=bool)
    runs = pc.run_end_encode(types)
    start = 0
    for end, entity_type in zip(runs.run_ends.to_pylist(), runs.values.to_pylist(), strict=True):
        wanted = keep.get(str(entity_type))
        if wanted is not None and len(wanted):
            found = pc.is_in(ids.slice(start, end - start), value_set=wanted)
            result[start:end] = found.fill_null(False).to_numpy(zero_copy_only=False)
        start = int(end)
    return result


def _carry_plan(
    result: Any, previous: pd.DataFrame, base_id: int
) -> tuple[Any, pd.DataFrame, pd.DataFrame] | None:
    """(CarryForward, the outcomes decided again, the columns counts() reads of the whole
    frame) to store an incremental run as a copy of the base run's carried rows inside the
    database plus the fresh rows; None (store every row) when the counts do not add up to
    the engine's own (a run it did in full)."""
    from core.db.runs import CarryForward

    keep, stats = result.plan.keep, result.stats
    if result.fresh is not None and result.carried is not None:
        # The engine's own split (no second probe of the 1M outcome ids, no full frame).
        fresh_rows, skipped = result.fresh, ~result.carried
        total = result.outcome_count()
    else:
        outcomes = result.outcomes
        fresh = _key_mask(outcomes, keep)
        fresh_rows, skipped, total = outcomes[fresh], _key_mask(previous, keep), len(outcomes)
    carried = len(previous) - int(skipped.sum())
    if (
        len(fresh_rows) != stats.get("reconciled")
        or carried != stats.get("carried_forward")
        or len(fresh_rows) + carried != total
    ):
        return None
    skip_types, skip_ids = _key_lists(previous, skipped)
    forward = CarryForward(
        base_run_id=base_id, skip_types=skip_types, skip_ids=skip_ids, expected=carried
    )
    return forward, fresh_rows, _counted_frame(fresh_rows, previous, ~skipped)


def _sync_scope(previous: pd.DataFrame, fresh: pd.DataFrame, carried: Any, base_id: int) -> Any:
    """The exception sync's scope of an incremental run (core.review.sync.SyncScope): the
    entities of the base run's EXCEPTION rows not `carried` and of the fresh EXCEPTION rows."""
    from core.review.sync import SyncScope

    dropped = _exceptions(previous) & ~np.asarray(carried, dtype=bool)
    keys = [*_entity_keys(previous, dropped), *_entity_keys(fresh, _exceptions(fresh))]
    return SyncScope(base_id, keys)


def _exceptions(outcomes: pd.DataFrame) -> Any:
    """Which rows of an outcome frame are EXCEPTION outcomes (a numpy bool mask)."""
    return outcomes["status"].eq("EXCEPTION").to_numpy(dtype=bool, na_value=False)


def _key_lists(outcomes: pd.DataFrame, mask: Any) -> tuple[list[str], list[str]]:
    """(entity types, entity ids) of the rows of `outcomes` chosen by the bool `mask`, in
    row order (Arrow filters: no pandas row selection)."""
    import pyarrow as pa

    chosen = pa.array(np.asarray(mask, dtype=bool))
    types = _arrow_column(outcomes, "entity_type").filter(chosen).to_pylist()
    return types, _arrow_column(outcomes, "entity_id").filter(chosen).to_pylist()


def _entity_keys(outcomes: pd.DataFrame, mask: Any) -> list[tuple[str, str]]:
    """(entity_type, entity_id) of the rows of `outcomes` chosen by `mask`, in row order."""
    return list(zip(*_key_lists(outcomes, mask), strict=True))


def _arrow_column(frame: pd.DataFrame, name: str) -> Any:
    """A column of a frame as an Arrow (chunked) array, its chunks as they are."""
    import pyarrow as pa

    return pa.array(frame[name].array)


# The outcome columns core.engine.results.counts reads.
_COUNTED = ("entity_type", "status", "reason_code", "exposure_class", "exposure_amount")


def _counted_frame(fresh: pd.DataFrame, previous: pd.DataFrame, carried: Any) -> pd.DataFrame:
    """The columns counts() and summary_lines() read of the outcome frame made of `fresh`
    and the `carried` rows of `previous`, without building that frame (both give sums per
    key, sorted by key: row order does not matter)."""
    mask = np.asarray(carried, dtype=bool)
    columns: dict[str, Any] = {}
    for name in _COUNTED:
        # The column's own array filtered (Arrow text by Arrow's filter, categoricals by
        # their codes): no Python object per row.
        kept = pd.Series(previous[name].array[mask])
        columns[name] = pd.concat([fresh[name].reset_index(drop=True), kept], ignore_index=True)
    return pd.DataFrame(columns)


def _persist_carried(
    conn: sqlite3.Connection,
    carry: tuple[Any, pd.DataFrame, pd.DataFrame],
    params: EngineParams,
    as_of: int,
    source: str,
    input_hashes: dict[str, str],
    timings: dict[str, float],
    run_id: int | None = None,
    staged: StagedOutcomes | None = None,
    counts: dict[str, Any] | None = None,
    through_import_id: int | None = None,
    kind: RunKind | None = None,
) -> int:
    """persist_run's twin for an incremental run: the carried outcomes are copied from the
    base run inside the database (core.db.runs.CarryForward), only the fresh ones are
    written from here (or copied from `staged`, `_stage_fresh`'s file); same runs row,
    counts and failure handling. run_id: a running run holding the base run's copy already
    (its start recorded as now, as a run started here). counts: the counts of the carry's
    counted frame, when computed already."""
    from core.db import runs as db_runs
    from core.db.staging import attached, foreign_keys_off
    from core.engine.persist import outcome_chunks
    from core.engine.results import counts as outcome_counts

    forward, fresh, counted = carry
    began = time.perf_counter()
    started_at = None
    if run_id is None:
        run_id = db_runs.start_run(
            conn, as_of=as_of, source=source, params=params.to_dict(), input_hashes=input_hashes
        )
    else:
        started_at = int(time.time())
    if counts is None:
        counts = outcome_counts(counted)
    try:
        with ExitStack() as stack:
            if staged is not None:
                # Keys off: the fresh rows get this run's id in the copy (they reference it
                # by construction), and nothing references an outcome.
                stack.enter_context(attached(conn, {"staged_fresh": staged.file.path}))
                stack.enter_context(foreign_keys_off(conn))
            db_runs.complete_run(
                conn,
                run_id,
                chunks=outcome_chunks(fresh) if staged is None else (),
                staged=None if staged is None else ("staged_fresh", staged.run_id),
                carry=forward,
                timings=timings,
                counts=counts,
                started_at=started_at,
                through_import_id=through_import_id,
                kind=kind,
            )
    except BaseException as exc:
        db_runs.fail_run(conn, run_id, f"{type(exc).__name__}: {exc}")
        raise
    db_runs.update_timings(
        conn, run_id, {**timings, "persist_s": round(time.perf_counter() - began, 3)}
    )
    return run_id


@dataclass(frozen=True)
class _FreshAhead:
    """What `_stage_fresh`'s worker made: the fresh outcomes' staging file and the run's
    counts."""

    staged: StagedOutcomes
    counts: dict[str, Any]


def _stage_fresh(
    conn: sqlite3.Connection,
    stack: ExitStack,
    carry: tuple[Any, pd.DataFrame, pd.DataFrame] | None,
    run_id: int | None,
    staging: RawStaging | None,
) -> Future[_FreshAhead] | None:
    """An incremental run's fresh outcomes written to a staging file, and its counts, on a
    worker thread while this one stores the day's raw tables (their bind from Python and
    the counts were on the critical path after the store). None (stored from chunks, as
    before) without a running run holding the carried copy (PostgreSQL, an in-memory
    database) or for fewer fresh rows than are worth staging. The folder and the thread
    belong to `stack`."""
    from core.db.runs import STAGED_OUTCOMES, outcome_table_columns
    from core.db.staging import table_schema

    if carry is None or run_id is None or not worth_staging(conn, len(carry[1])):
        return None
    columns = outcome_table_columns(conn)
    schema = table_schema(conn, STAGED_OUTCOMES)
    path = stack.enter_context(staging_directory()) / "fresh.sqlite"
    worker = stack.enter_context(ThreadPoolExecutor(1, "staging-fresh"))
    return worker.submit(_write_fresh, staging, carry, run_id, columns, schema, path)


def _write_fresh(
    staging: RawStaging | None,
    carry: tuple[Any, pd.DataFrame, pd.DataFrame],
    run_id: int,
    columns: list[str],
    schema: tuple[str, ...],
    path: Path,
) -> _FreshAhead:
    """`_stage_fresh`'s work (touches no house connection), once the day's raw staging
    writers are done: the store waits for those, not for this."""
    from core.db.runs import STAGED_OUTCOMES
    from core.engine.persist import outcome_table
    from core.engine.results import counts as outcome_counts

    if staging is not None:
        wait(staging.pending)  # their errors are store_dataset's to raise
    _, fresh, counted = carry
    table = StagedTable(STAGED_OUTCOMES, schema, outcome_table(fresh, run_id, columns))
    return _FreshAhead(write_staged_outcomes(table, run_id, path), outcome_counts(counted))


def _bank_in_read_order(dataset: Dataset) -> Dataset:
    """The dataset with its bank lines ordered as core.db.raw.read_dataset reads them (file,
    then line number, byte order): a merged day appends its lines at the end."""
    import pyarrow as pa
    import pyarrow.compute as pc

    bank = dataset.bank
    if len(bank) == 0:
        return dataset
    keys = pa.table({"file": pa.array(bank["file"].array), "line_no": bank["line_no"].to_numpy()})
    order = pc.sort_indices(keys, sort_keys=[("file", "ascending"), ("line_no", "ascending")])
    positions = order.to_numpy()
    if (positions == np.arange(len(bank))).all():
        return dataset
    return replace(dataset, bank=bank.iloc[positions].reset_index(drop=True))


def _replay_delta(stored: Dataset, outcomes: pd.DataFrame, delta: Any) -> tuple[Any, Any]:
    """A day written as a snapshot delta (core.snapshots.Delta) replayed on the tables and
    outcomes before it: the same merge and carry forward its run made (merge_rows, then
    the bank lines in read order as its snapshot kept them; the fresh outcomes among the
    carried ones)."""
    from core.engine.incremental import combine_outcomes, merge_rows

    merged, _ = merge_rows(stored, delta.day)
    return _bank_in_read_order(merged), combine_outcomes(delta.fresh, outcomes, delta.carried)


def _read_state(
    conn: sqlite3.Connection, base: Any, folder: Path | None
) -> tuple[Dataset, pd.DataFrame | None, Any, str]:
    """The raw tables, the base run's outcomes (None: read them from the tables when
    needed) and its IncrementalState (None when the snapshot holds none): from the base
    run's snapshot when it is verified, else the tables; and where they came from
    ('snapshot of run N', or 'tables (why not the snapshot)')."""
    from core.db.raw import latest_import, read_dataset
    from core.snapshots import load_snapshot

    if base is not None and folder is not None and base.through_import_id is not None:
        latest = latest_import(conn)
        loaded = load_snapshot(
            folder, base.snapshot, None if latest is None else latest.id, _replay_delta
        )
        if loaded.snapshot is not None:
            snap = loaded.snapshot
            return snap.dataset, snap.outcomes, snap.state, f"snapshot of run {base.id}"
        why = loaded.reason
    elif base is not None and folder is not None:  # stored before migration 0106
        why = f"run {base.id} does not record the last import it reconciled"
    else:
        why = "no snapshot folder" if folder is None else "no base run"
    return read_dataset(conn), None, None, f"tables ({why})"


@holding_run_lock("import-day")
def reconcile_day_into_db(
    conn: sqlite3.Connection,
    folder: str | Path,
    *,
    params: EngineParams,
    as_of: int,
    amount_unit: str = "auto",
    source: str = "files",
    full: bool = False,
    snapshots: str | Path | None = SNAPSHOTS_BESIDE,
    accept_older: bool = False,
    actor: str = "",
) -> DayRunResult:
    """Merge a day's folder into the raw tables (upsert by key: new ids are added, a row
    with a stored key replaces it; a table the folder has no file for adds nothing, once
    the database holds an import: a correction, unless it would move the stored row's
    status backwards or lower a growing amount, an older file: then the day is refused with
    nothing written unless
    `accept_older`, core.ingest.lifecycle) and reconcile: incrementally from the latest completed
    run (core.engine.incremental) when that run can be carried forward, else (or with
    `full`) every entity. Then store the run, record its kind, sync the exceptions.
    Nothing is written when the folder is bad.

    The raw tables and the base run's outcomes come from the base run's snapshot
    (core.snapshots, in `snapshot_folder(conn, snapshots)`) when it is verified, else from
    the tables; an incremental run's carried outcomes are copied inside the database; the
    new run leaves a snapshot for the next day (docs/engine.md, "Stored incremental
    runs"). One `run.reconciled` audit entry by `actor` (default the operating-system
    login) records the day's import and the run (core.activity). Refused when a raw
    table's count is not what the audited writes left (core.audit.rawcheck; the MACs of
    every row are `audit verify`'s and the month close's to check)."""
    from core.audit.rawcheck import refuse_unrecorded_changes
    from core.db.raw import latest_import_id

    refuse_unrecorded_changes(conn, macs=False)
    from core.ingest.mappings import saved_mappings
    from core.ingest.stage import staging_raw_tables
    from core.ingest.statements import place_among_stored

    keep_in = snapshot_folder(conn, snapshots)  # a link beside the database: refused first
    # A day merged into stored data need not hold every file the spec requires (a day without
    # payments, or without a settlement, is normal): a table without a file adds no rows and
    # the stored ones stay. The first import into an empty database still needs them.
    first = latest_import_id(conn) == 0
    loaded = load_folder(folder, amount_unit, saved_mappings(conn), required_files=first)
    where = Path(folder).resolve()
    # The statement's lines an earlier day stored already (an overlapping download) are
    # not stored again, and none replaces a stored line (core.ingest.statements).
    placed = place_among_stored(
        conn, qualify_bank_lines(loaded.dataset, where.name), str(where), loaded.report.content_hash
    )
    day = placed.dataset
    # The day's raw tables staged on worker threads while this one reads the stored state
    # and reconciles; store_dataset upserts them from there (core.ingest.stage).
    stored_before = latest_import_id(conn)
    try:
        with staging_raw_tables(conn, day, loaded.report.content_hash, replace=False) as staging:
            done = _reconcile_loaded_day(
                conn,
                folder,
                loaded,
                placed,
                staging,
                params,
                as_of,
                source,
                full,
                keep_in,
                accept_older,
                actor or default_actor(),
            )
    except BaseException:
        # The day's rows may be stored (committed) before the run failed: recorded, so the
        # raw tables' counts stay explained and running the day again is not refused.
        _record_import_of_failed_day(conn, stored_before, where, loaded, actor)
        raise
    record_run(
        conn,
        done.run.run_id,
        actor=actor,
        how="import-day",
        imported=import_facts(done.imported),
        sync=done.run.sync,
    )
    return done


def _record_import_of_failed_day(
    conn: sqlite3.Connection, before: int, where: Path, loaded: LoadedFolder, actor: str
) -> None:
    """A `data.imported` entry (core.activity) for the import an `import-day` stored before
    its run failed (none when nothing was stored: the latest import is still `before`),
    recording the raw tables' counts (core.audit.rawcheck). Best effort: the run's own
    error is the one raised; without the entry the next run names the tables instead."""
    from core.activity import record_stored_import
    from core.db.raw import latest_import_id

    try:
        if conn.in_transaction:
            return
        after = latest_import_id(conn)
        if after != before:
            record_stored_import(
                conn,
                after,
                actor=actor or default_actor(),
                how="import-day (its run failed)",
                facts={"location": str(where), "content_hash": loaded.report.content_hash},
            )
    except Exception:  # the run's error is what the caller must see
        return


def _reconcile_loaded_day(
    conn: sqlite3.Connection,
    folder: str | Path,
    loaded: LoadedFolder,
    placed: PlacedLines,
    staging: RawStaging | None,
    params: EngineParams,
    as_of: int,
    source: str,
    full: bool,
    keep_in: Path | None,
    accept_older: bool = False,
    actor: str = "",
) -> DayRunResult:
    """`reconcile_day_into_db` once the day is loaded and its bank lines placed (its raw
    tables being staged); `keep_in`: its snapshot folder (snapshot_folder), or None."""
    from core.books.store import pricing_plans
    from core.db.backend import is_postgres
    from core.db.raw import latest_import_id, reconciled_through
    from core.db.runs import latest_completed_run, read_outcome_frame
    from core.engine.incremental import (
        merge_rows,
        needs_full_run,
        pricing_fingerprint,
        reconcile_incremental,
    )
    from core.ingest import store_dataset
    from core.ingest.lifecycle import COMPARED, OLDER_SHOWN, older_problems, stored_changes
    from core.ingest.load import locate_rows
    from core.snapshots import wants_delta
    from core.views.summary_ahead import summary_ahead

    day = placed.dataset
    pricing = pricing_plans(conn)
    pricing_hash = pricing_fingerprint(pricing)
    began = time.perf_counter()
    base = latest_completed_run(conn)
    hashes = {**loaded.input_hashes, "pricing": pricing_hash}
    reason = "a full run was asked for" if full else None
    reason = reason or _base_run_reason(conn, base, params, pricing_hash)
    # The base run's outcomes copied under the new run on a thread of their own while this
    # one reads the stored state and reconciles: that copy needs the base run only, not the
    # plan (the keys decided again are deleted by it once the engine's plan names them).
    copy = _copy_base_early(conn, base if reason is None else None, params, as_of, source, hashes)
    with copy:
        read_at = latest_import_id(conn)  # before the read: a later import is not claimed
        stored, previous, state, read_from = _read_state(conn, base, keep_in)
        merged, replaced = merge_rows(stored, day)
        # The stored rows the day replaces, compared with its rows before any work: a status
        # moved backwards (or a growing amount lowered) is an older file (refused here;
        # checked again where it is stored).
        changes = stored_changes(day, {a: getattr(replaced, a) for a in COMPARED})
        if changes.backward and not accept_older:
            moves = changes.backward
            where = locate_rows(moves[:OLDER_SHOWN], loaded.report.files, str(folder), None)
            raise older_problems(
                moves, where=where, location=str(folder), hint=IMPORT_DAY_OLDER_HINT
            )
        reason = reason or needs_full_run(stored, merged)
        if reason is not None:
            copy.release()
        read = time.perf_counter()
        timings = {**loaded.timings, "read_db_s": round(read - began, 3)}
        scope: dict[str, Any]
        carry: tuple[Any, pd.DataFrame, pd.DataFrame] | None = None
        delta: tuple[Any, Any, Any] | None = None  # (base record, fresh, carried)
        # The whole outcome frame, built only when a step below needs it (an incremental run
        # stored as fresh rows + carried copies with a snapshot delta never does).
        outcomes: pd.DataFrame | None = None
        result: Any = None
        sync_scope: Any = None  # the exception sync's, of a run stored as a carry
        if reason is None:
            assert base is not None
            if previous is None:
                previous = read_outcome_frame(conn, base.id)
            timings["read_base_s"] = round(time.perf_counter() - read, 3)
            started = time.perf_counter()
            result = reconcile_incremental(
                merged,
                day,
                replaced,
                previous,
                params,
                as_of,
                pricing,
                state=state,
                on_carry=functools.partial(copy.drop_early, previous),
            )
            scope, kind = dict(result.stats), "incremental"
            timings.update(result.cpu_seconds)
            base_id: int | None = base.id
            carry = _carry_plan(result, previous, base.id)
            if carry is None:
                outcomes = result.outcomes
            elif result.fresh is not None and result.carried is not None:
                sync_scope = _sync_scope(previous, result.fresh, result.carried, base.id)
            state = result.state
            if read_from.startswith("snapshot") and wants_delta(base.snapshot, day):
                delta = (base.snapshot, result.fresh, result.carried)
        else:
            started = time.perf_counter()
            outcomes = reconcile(merged, params, as_of, pricing)
            scope, kind, base_id = {"reason": reason}, "full", None
            state = None  # built on the snapshot's thread, for the next day
        timings["reconcile_s"] = round(time.perf_counter() - started, 3)
        with ExitStack() as writing:
            if not is_postgres(conn):  # WAL pages moved to the file on another thread
                writing.enter_context(background_checkpoints(conn))
            snapshot: Future[Any] | None = None
            if keep_in is not None:  # written on a thread while the run is stored
                writer = writing.enter_context(ThreadPoolExecutor(1, "snapshot"))
                if delta is not None and delta[1] is not None and delta[2] is not None:
                    snapshot = writer.submit(_delta_files, keep_in, day, delta, state, merged)
                else:
                    whole = outcomes if outcomes is not None else result.outcomes
                    snapshot = writer.submit(_snapshot_files, keep_in, merged, whole, state)
                writing.callback(_discard_unnamed, snapshot)
            # The Overview's run summary from the merged tables and the run's outcome frames,
            # on a thread of its own while the run is stored (the store waits on its disk).
            summarising = writing.enter_context(ThreadPoolExecutor(1, "run-summary")).submit(
                summary_ahead, merged.payments, _outcome_parts(outcomes, result, previous)
            )
            # The Books ledger's carry (core.books.carry) computed on a thread while the run is
            # stored: the day's families from now, the change once the run's flags are stored.
            carrying: Started | None = None
            if base_id is not None:
                from core.books.carry import continue_carry, start_carry

                # Not joined here: the carry below waits for its work (timed in books_ledger_s).
                pool = ThreadPoolExecutor(1, "ledger")
                writing.callback(pool.shutdown, wait=False)
                carrying = start_carry(
                    conn, pool, before=stored, after=merged, day=day, base_run_id=base_id
                )
                if carrying is not None and previous is not None and result.fresh is not None:
                    # The run's flags are known from the engine's frames: the change is
                    # computed while the run is written, not after (checked at the carry).
                    from core.books.carry import carry_with_flags

                    carrying = carry_with_flags(
                        pool,
                        carrying,
                        before=stored,
                        after=merged,
                        day=day,
                        flags=functools.partial(
                            _engine_flags, previous, result.fresh, result.carried
                        ),
                    )

            def flags_stored(run_id: int) -> None:
                nonlocal carrying
                if carrying is not None and carrying.change is None and base_id is not None:
                    carrying = continue_carry(
                        conn,
                        pool,
                        carrying,
                        before=stored,
                        after=merged,
                        day=day,
                        base_run_id=base_id,
                        run_id=run_id,
                    )

            # The copy's transaction ends before the day's begins: one writer at a time.
            carry, run_id = copy.carried(carry)
            fresh_ahead = _stage_fresh(conn, writing, carry, run_id, staging)
            began = time.perf_counter()
            imported = store_dataset(
                conn,
                day,
                source=source,
                location=str(folder),
                content_hash=loaded.report.content_hash,
                replace=False,
                files=loaded.report.files,
                staging=staging,
                placed=placed,
                accept_older=accept_older,
                compared=(read_at, changes),
                older_hint=IMPORT_DAY_OLDER_HINT,
                actor=actor or default_actor(),
            )
            timings["store_dataset_s"] = round(time.perf_counter() - began, 3)
            # The run's data and its snapshot's: an import stored between the read and the
            # day's own (a webhook) is in neither, so neither may claim the day's import.
            through = reconciled_through(conn, read_at, imported.import_id)
            # The tables are `merged` once the day's own import is stored only when no other
            # came between the read and it (one after it is checked where it is stored).
            own = imported.import_id
            summary = (summarising, own) if own is not None and read_at < own == through else None
            ahead = fresh_ahead.result() if fresh_ahead is not None else None
            stored_run = _persist_and_sync(
                conn,
                outcomes,
                params,
                as_of,
                source,
                hashes,
                timings,
                ahead.staged if ahead is not None else None,
                counts=ahead.counts if ahead is not None else None,
                carry=carry,
                parts=result,
                on_stored=flags_stored,
                run_id=run_id,
                scope=sync_scope,
                through_import_id=through,
                run_summary=summary,
                kind=RunKind(kind, base_id, scope),
            )
            snapshot_note = ""
            if snapshot is not None:
                stored_run, snapshot_note = _leave_snapshot(conn, snapshot, stored_run, through)
        # docs/engine.md "The Books ledger after import-day": the day's change, not a rebuild
        from core.books.carry import carry_ledger_forward

        carry_ledger_forward(
            conn,
            before=stored,
            after=merged,
            day=day,
            base_run_id=base_id,
            run_id=stored_run.run_id,
            import_id=imported.import_id,
            started=carrying,
        )
        counted = carry[2] if carry is not None else None
        return DayRunResult(
            stored_run, kind, base_id, scope, read_from, counted, imported, snapshot_note
        )


def _outcome_parts(
    outcomes: pd.DataFrame | None, result: Any, previous: pd.DataFrame | None
) -> list[tuple[pd.DataFrame, Any]]:
    """A day's run's outcomes as core.views.summary_ahead reads them: the whole frame when
    it was built; else (an incremental run stored as a carry) the engine's fresh rows and
    the rows of the base run's frame it carried, as the run stores them (_carry_plan)."""
    if outcomes is not None:
        return [(outcomes, None)]
    if result.fresh is not None and result.carried is not None and previous is not None:
        return [(result.fresh, None), (previous, result.carried)]
    return [(result.outcomes, None)]


def _engine_flags(
    previous: pd.DataFrame, fresh: pd.DataFrame, carried: Any
) -> tuple[frozenset[tuple[str, str]], frozenset[tuple[str, str]]]:
    """The (entity_type, entity_id) of the EXCEPTION outcomes of the base run (`previous`)
    and of the new run (the `carried` rows of `previous` and the `fresh` ones): what
    core.db.books.exception_keys reads once both runs are stored."""
    flagged = _exceptions(previous)
    kept = _entity_keys(previous, flagged & np.asarray(carried, dtype=bool))
    old = frozenset(_entity_keys(previous, flagged))
    return old, frozenset([*kept, *_entity_keys(fresh, _exceptions(fresh))])


def _snapshot_files(
    folder: Path, merged: Dataset, outcomes: pd.DataFrame, state: Any = None
) -> Any:
    """The run's snapshot files, written before the run has an id (the OSError when the
    folder cannot be written: the next day reads the tables), with the IncrementalState
    for `merged` (the run's own, or built here after a full run: core.engine.incremental.
    build_state) so the next day's plan starts from the families."""
    from core.engine.incremental import build_state
    from core.snapshots import write_files

    began = time.perf_counter()
    try:
        state = state if state is not None else build_state(merged)
        return write_files(folder, _bank_in_read_order(merged), outcomes, state), began
    except OSError as error:
        return error, began


def _delta_files(
    folder: Path, day: Dataset, delta: tuple[Any, Any, Any], state: Any, merged: Dataset
) -> Any:
    """The day's snapshot delta beside its base run's snapshot (core.snapshots
    write_delta_files), written before the run has an id (the OSError when it cannot
    be); with the state for `merged` (built here when the run had none: a snapshot from
    before the state files)."""
    from core.engine.incremental import build_state
    from core.snapshots import write_delta_files

    began = time.perf_counter()
    base, fresh, carried = delta
    try:
        state = state if state is not None else build_state(merged)
        return write_delta_files(folder, base, day, fresh, carried, state), began
    except OSError as error:
        return error, began


def _discard_unnamed(pending: Future[Any]) -> None:
    """Remove snapshot files a failed run never named (named ones are gone already)."""
    from core.snapshots import discard

    written, _ = pending.result()
    if not isinstance(written, OSError):
        discard(written)


def _why_not_written(error: OSError) -> str:
    """An OSError as a snapshot's reason, in one line: a name that holds something else
    says so itself (core.file_kinds.NotRegularFile); others name their file."""
    if error.strerror and error.filename:
        return f"{error.filename}: {error.strerror}"
    return str(error) or type(error).__name__


def _leave_snapshot(
    conn: sqlite3.Connection, pending: Future[Any], run: RunResult, import_id: int | None
) -> tuple[RunResult, str]:
    """Name the snapshot files after the stored run and record them (or record none: a
    snapshot is a cache, its failure costs the next day a read of the tables), and why
    the run left none when its files could not be written or named ('' otherwise): the
    command says so. import_id: the last import the snapshot's tables include (the run's
    through_import_id); the next day uses the snapshot only while that is still the latest
    import."""
    from core.db.runs import record_snapshot, update_timings
    from core.snapshots import discard, name_files

    written, began = pending.result()
    record = None
    why = _why_not_written(written) if isinstance(written, OSError) else ""
    if not isinstance(written, OSError):
        try:
            if import_id:  # 0: the run read no import and one came before its own
                record = name_files(written, run.run_id, import_id)
        except OSError as error:
            why = _why_not_written(error)
        finally:
            discard(written)
    record_snapshot(conn, run.run_id, record)
    timings = {**run.timings, "snapshot_s": round(time.perf_counter() - began, 3)}
    update_timings(conn, run.run_id, timings)
    note = (
        f"run {run.run_id} left no snapshot: {why}; the next day will read the stored tables"
        " instead (slower but correct)"
        if why
        else ""
    )
    return replace(run, timings=timings), note
