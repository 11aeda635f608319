"""Cold start: an empty database gets the seeded 5,000-payment benchmark, reconciled, once.

Every session (and every process) calls `ensure_ready`. The first to find the database
empty takes a file lock (`<db>.bootstrap.lock`, `flock`, so it holds across processes and
is released by the kernel if the process dies) and builds the benchmark in a scratch file
(`<db>.bootstrap-build`): generate -> import -> reconcile -> persist the run -> open
exceptions -> held-out evaluation. Only a finished build is copied into the real database,
in one step (SQLite's backup API: one write transaction). So a start killed midway leaves
its 'running' run and partial import in the scratch file only; the next start, holding the
lock, recognises that leftover from its run record, discards it and rebuilds. Readers of
the real database never see half a start. Sessions that arrive meanwhile wait on the lock,
reading the builder's progress from `<db>.bootstrap.json`, then see the result. The build
(on PostgreSQL too) holds the real database's run lock (core.db.run_lock) from its state
read to its publish, so a command storing a run into the new database is never published
over.

A database holding data that did not come from a cold start (imports from files or the
Razorpay API, audit entries) is never replaced: it is reported as `needs_run` when it has
no completed run yet.

Whether an empty database gets the benchmark at all is `RAZORRECON_FIRST_START`
(`first_start_builds_benchmark`): `benchmark` or `empty`; unset, the benchmark on SQLite
(`make run`) and in the demo, nothing on PostgreSQL (an operator's server database, where
the benchmark's exceptions and audit entries would stay for good beside the merchant's:
a tester's finding 7 of 2026-12-04). An empty start migrates and reports `empty`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from core.db import connect, database_path, migrate, pg_bulk, transaction
from core.db import views as db
from core.db.backend import is_postgres_url
from core.db.connection import page_size_of
from core.db.migrate import migrate_with_owner
from core.db.run_lock import run_lock, shown_as_progress
from core.errors import ConfigError
from core.leftovers import owned_folder, remove_dead_leftovers_once
from core.views.evaluation import LABELS_FILE, LABELS_META, dataset_folder, store_evaluation
from core.views.runs import run_summary

if TYPE_CHECKING:
    from core.engine import EngineParams

ProgressFn = Callable[[float, str], None]
Builder = Callable[[sqlite3.Connection, Path, ProgressFn], None]

FIRST_START_SETTING = "RAZORRECON_FIRST_START"
FIRST_START_CHOICES = ("benchmark", "empty")

BENCHMARK_PAYMENTS = 5000
BENCHMARK_SEED = 42
POLL_SECONDS = 0.2

_ready_paths: set[str] = set()
_ready_guard = threading.Lock()


@dataclass(frozen=True)
class BootstrapResult:
    """How `ensure_ready` left the database.

    status: 'ready' (a completed run was already there), 'built' (this call built the
    benchmark), 'waited' (another session built it while this one waited), 'needs_run'
    (data are present but were never reconciled: the Data page runs them), 'empty'
    (nothing imported yet, and the first start was told not to build the benchmark).
    run_id: the newest completed run, if any. seconds: wall time of this call.
    discarded: leftovers of a half-finished start that were thrown away.
    timings: seconds per build stage (only when built).
    """

    status: str
    run_id: int | None
    seconds: float
    discarded: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)


def _noop(_fraction: float, _message: str) -> None:
    return None


def first_start_builds_benchmark(
    database: str | Path | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """Whether the app's first start on an empty `database` (default: DATABASE_URL's)
    builds the synthetic benchmark into it: RAZORRECON_FIRST_START=benchmark or =empty;
    unset, yes on SQLite and in the demo (which serves only the benchmark), no on
    PostgreSQL. Any other value is refused (ConfigError), naming the two."""
    from core import demo_mode

    values = os.environ if env is None else env
    chosen = values.get(FIRST_START_SETTING, "").strip().lower()
    if chosen and chosen not in FIRST_START_CHOICES:
        raise ConfigError(
            f"{FIRST_START_SETTING}={values.get(FIRST_START_SETTING)!r}: say 'benchmark' (an"
            " empty database gets the 5,000-payment synthetic benchmark on the first start) or"
            " 'empty' (it stays empty until someone imports data)"
        )
    if demo_mode.enabled(values):
        return True
    if chosen:
        return chosen == "benchmark"
    path = database_path(str(database) if database is not None else None)
    return not is_postgres_url(path)


def lock_path(path: str) -> Path:
    return Path(f"{path}.bootstrap.lock")


def progress_path(path: str) -> Path:
    return Path(f"{path}.bootstrap.json")


def scratch_path(path: str) -> Path:
    return Path(f"{path}.bootstrap-build")


def _state(conn: sqlite3.Connection) -> tuple[str, int | None]:
    """('ready', run) | ('empty', None) | ('leftover', None) | ('needs_run', None)."""
    run = db.latest_completed_run(conn)
    if run is not None:
        return "ready", int(run["id"])
    imports = db.count_rows(conn, "imports")
    foreign = imports - len(db.imports_by_source(conn, "benchmark"))
    if foreign or db.count_rows(conn, "audit_log") or db.count_rows(conn, "exceptions"):
        return "needs_run", None
    if imports or db.count_rows(conn, "runs") or db.count_rows(conn, "payments"):
        return "leftover", None
    return "empty", None


def _work_folders(parent: Path, prefix: str) -> list[Path]:
    """The folders in `parent` whose names start with `prefix` (no glob: names are data)."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    return [
        Path(e.path)
        for e in entries
        if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)
    ]


@contextlib.contextmanager
def _file_lock(path: str, on_wait: Callable[[], None]) -> Iterator[bool]:
    """Hold the bootstrap lock; yields True when this caller had to wait for it."""
    target = lock_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle = open(target, "a+")  # noqa: SIM115 - held for the whole block
    waited = False
    try:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = True
                on_wait()
                time.sleep(POLL_SECONDS)
        yield waited
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


def read_progress(path: str) -> tuple[float, str] | None:
    """The builder's last reported progress, for sessions waiting on the lock."""
    try:
        data = json.loads(progress_path(path).read_text(encoding="utf-8"))
        return float(data["fraction"]), str(data["message"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_progress(path: str, fraction: float, message: str) -> None:
    target = progress_path(path)
    payload = json.dumps({"fraction": fraction, "message": message, "pid": os.getpid()})
    tmp = target.with_suffix(".tmp")
    tmp.write_text(payload, encoding="utf-8")
    os.replace(tmp, target)


def _remove_database_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal", ".run.lock"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()


def _describe_scratch(path: Path) -> str:
    """What a dead start left behind, from its run record (for the result and the log)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            runs = db.recent_runs(conn, limit=100)
            imports = db.count_rows(conn, "imports")
        finally:
            conn.close()
    except sqlite3.Error:
        return f"unreadable half-built file {path.name}"
    states = ", ".join(f"run {r['id']} {r['status']}" for r in reversed(runs)) or "no run"
    return f"half-finished start in {path.name}: {imports} import(s), {states}"


def reconcile_stored(
    conn: sqlite3.Connection,
    *,
    as_of: int,
    params: EngineParams | None = None,
    progress: ProgressFn = _noop,
    actor: str = "",
    how: str = "reconcile (app)",
) -> int:
    """Reconcile the imported data as of `as_of` through `core.pipeline` (persist the run,
    sync the exception queue, store the run's summary computed from its frames), then make
    sure the run's summary is stored: read back, or computed in SQL when the run could not
    store it (an import came in meanwhile). Returns the run id. `actor`: who asked (the
    signed-in person on the Data page), named by the run's audit entry (core.activity)."""
    # Imported here, not above: a page of an app whose data are ready never loads them.
    from core import pipeline
    from core.engine import EngineParams

    latest = db.latest_import(conn)
    if latest is None:
        raise ConfigError("nothing to reconcile: import a dataset first")
    progress(0.1, "Reconciling, saving the run and updating the exception queue")
    result = pipeline.reconcile_database(
        conn,
        params if params is not None else EngineParams(),
        as_of,
        str(latest["source"]),
        actor=actor,
        how=how,
    )
    progress(0.85, "Summarising the run")
    run_summary(conn, int(result.run_id))  # the stored one, unless the run could not store it
    return int(result.run_id)


def default_builder(conn: sqlite3.Connection, work: Path, progress: ProgressFn) -> None:
    """Generate the seeded benchmark into `work`; import, reconcile, open exceptions.

    The run's as-of is the benchmark's own, so the result is the same on every machine.
    """
    from core import benchmark, ingest  # only a cold start of an empty database needs them
    from core.activity import BOOTSTRAP_ACTOR, record_import

    progress(0.02, f"Generating the {BENCHMARK_PAYMENTS:,}-payment synthetic benchmark")
    folder = work / "dataset"
    generated = benchmark.generate(folder, payments=BENCHMARK_PAYMENTS, seed=BENCHMARK_SEED)
    # The labels leave the dataset folder before the importer opens it.
    labels = work / LABELS_FILE
    shutil.move(str(generated.ground_truth), labels)
    truth = folder / "invoice_truth.json"  # the planted invoice difference: a label too
    if truth.exists():
        shutil.move(str(truth), work / truth.name)
    meta = {"as_of": int(generated.as_of), "seed": BENCHMARK_SEED, "payments": BENCHMARK_PAYMENTS}
    (work / LABELS_META).write_text(json.dumps(meta), encoding="utf-8")
    progress(0.2, "Importing the dataset")
    dataset, loaded = ingest.load_dataset(folder)
    imported = ingest.store_dataset(
        conn,
        dataset,
        source="benchmark",
        location=f"seed {BENCHMARK_SEED}, {BENCHMARK_PAYMENTS:,} payments",
        content_hash=loaded.content_hash,
        files=loaded.files,
    )
    record_import(conn, imported, actor=BOOTSTRAP_ACTOR, how="first start (benchmark)")

    _store_benchmark_plan(conn, folder)

    def later(fraction: float, message: str) -> None:
        progress(0.25 + 0.6 * fraction, message)

    run_id = reconcile_stored(
        conn,
        as_of=int(generated.as_of),
        progress=later,
        actor=BOOTSTRAP_ACTOR,
        how="first start (benchmark)",
    )
    progress(0.88, "Scoring the run against the held-out labels")
    store_evaluation(conn, run_id, labels)


def _store_benchmark_plan(conn: sqlite3.Connection, folder: Path) -> None:
    """The benchmark's pricing plan (core.benchmark.fees), stored as the merchant's, so the
    run flags the planted fee overcharges and the Books page shows them."""
    from core.books.pricing import PricingRule
    from core.books.store import BENCHMARK_PLAN_ACTOR, save_pricing_plan

    path = folder / "pricing_plan.json"
    if not path.exists():
        return
    plan = json.loads(path.read_text(encoding="utf-8"))
    rules = tuple(
        PricingRule(str(r["method"]), int(r["percent_bp"]), int(r["fixed_paise"]))
        for r in plan["rules"]
    )
    save_pricing_plan(
        conn,
        effective_from=int(plan["effective_from"]),
        rules=rules,
        gst_bp=int(plan["gst_bp"]),
        actor=BENCHMARK_PLAN_ACTOR,
        request_id=f"benchmark-plan-seed-{BENCHMARK_SEED}",
    )


def ensure_ready(
    database: str | Path | None = None,
    *,
    progress: ProgressFn | None = None,
    builder: Builder | None = None,
    seed: bool = True,
) -> BootstrapResult:
    """Make sure the database has a completed run to show; build the benchmark if empty
    and `seed` (the app passes `first_start_builds_benchmark()`), else migrate it and
    report 'empty'."""
    started = time.monotonic()
    path = database_path(str(database) if database is not None else None)
    remove_dead_leftovers_once()  # what a killed earlier process left in the temp folder
    report = progress or _noop
    if is_postgres_url(path):
        return _ensure_ready_postgres(path, started, report, builder or default_builder, seed=seed)
    key = os.path.abspath(path)
    if key in _ready_paths and Path(path).exists():
        return BootstrapResult("ready", None, 0.0)
    conn = connect(path)
    try:
        migrate(conn)
        state, run_id = _state(conn)
    finally:
        conn.close()
    if state in ("ready", "needs_run"):
        if state == "ready":
            with _ready_guard:
                _ready_paths.add(key)
        return BootstrapResult(state, run_id, time.monotonic() - started)
    if not seed and state == "empty":
        return BootstrapResult("empty", None, time.monotonic() - started)

    def on_wait() -> None:
        seen = read_progress(path)
        fraction, message = seen if seen else (0.0, "Starting")
        report(fraction, f"Another session is preparing the data: {message}")

    with _file_lock(path, on_wait) as waited:
        return _build_locked(path, key, started, waited, report, builder or default_builder)


def _build_locked(
    path: str,
    key: str,
    started: float,
    waited: bool,
    report: ProgressFn,
    builder: Builder,
) -> BootstrapResult:
    """The build, holding the bootstrap lock. The real database's run lock too (core.db.
    run_lock), from the state read to the publish: a run a command stores meanwhile would be
    overwritten by the benchmark."""
    on_wait = shown_as_progress(report)
    with (
        contextlib.closing(connect(path)) as conn,
        run_lock(conn, "the cold start", on_wait=on_wait),
    ):
        state, run_id = _state(conn)
        if state in ("ready", "needs_run"):
            if state == "ready":
                with _ready_guard:
                    _ready_paths.add(key)
            status = "waited" if waited and state == "ready" else state
            return BootstrapResult(status, run_id, time.monotonic() - started)
        discarded: list[str] = []
        scratch = scratch_path(path)
        if scratch.exists():
            discarded.append(_describe_scratch(scratch))
        _remove_database_files(scratch)
        if state == "leftover":
            discarded.append(f"{db.count_rows(conn, 'runs')} run(s) without a result in {path}")

        def step(fraction: float, message: str) -> None:
            _write_progress(path, fraction, message)
            report(fraction, message)

        timings: dict[str, float] = {}
        step(0.0, "Preparing the benchmark dataset")
        folder = dataset_folder(path)
        work_prefix = f"{Path(key).name}.bootstrap-work-"
        for stale in _work_folders(Path(key).parent, work_prefix):  # killed starts' (we hold
            shutil.rmtree(stale, ignore_errors=True)  # the lock, so none is being built)
            discarded.append(f"a killed start's work folder {stale}")
        work = Path(tempfile.mkdtemp(prefix=work_prefix, dir=Path(key).parent))
        try:
            # The real file's page size: the backup below copies into it (WAL) whole.
            build_conn = connect(scratch, page_size=page_size_of(conn))
            try:
                migrate(build_conn)
                t0 = time.monotonic()
                builder(build_conn, work, step)
                timings["build"] = time.monotonic() - t0
                if db.latest_completed_run(build_conn) is None:
                    raise ConfigError("the benchmark build finished without a completed run")
                db.checkpoint(build_conn)
                step(0.95, "Publishing the result")
                t0 = time.monotonic()
                build_conn.backup(conn)  # one write transaction on the real database
                timings["publish"] = time.monotonic() - t0
            finally:
                build_conn.close()
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(work, folder)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            _remove_database_files(scratch)
            with contextlib.suppress(OSError):
                progress_path(path).unlink()  # waiters now hold the lock and see the state
        report(1.0, "Ready")
        _, run_id = _state(conn)
        with _ready_guard:
            _ready_paths.add(key)
        return BootstrapResult(
            "built", run_id, time.monotonic() - started, tuple(discarded), timings
        )


def _postgres_progress_path(url: str) -> Path:
    """Where a PostgreSQL bootstrap reports its progress for waiting sessions of the
    processes on this machine (the database has no folder of its own)."""
    label = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"razorrecon-{label}"


def _ensure_ready_postgres(
    url: str, started: float, report: ProgressFn, builder: Builder, *, seed: bool = True
) -> BootstrapResult:
    """`ensure_ready` on PostgreSQL (docs/postgres.md): the same states; the lock is a
    session-level advisory lock every app process shares (released by the server when the
    holder's connection ends, e.g. its process dies); the build goes to a SQLite scratch
    file as on SQLite and is published by COPY in one transaction, so readers never see
    half a start."""
    with _ready_guard:
        if url in _ready_paths:
            return BootstrapResult("ready", None, 0.0)
    conn = connect(url)
    lock = None
    held = contextlib.ExitStack()
    try:
        migrate_with_owner(conn)
        state, run_id = _state(conn)
        waited = False
        if state == "empty" and not seed:
            return BootstrapResult("empty", None, time.monotonic() - started)
        if state == "empty":
            lock = connect(url)
            progress = str(_postgres_progress_path(url))
            while not pg_bulk.try_bootstrap_lock(lock):
                waited = True
                seen = read_progress(progress)
                fraction, message = seen if seen else (0.0, "Starting")
                report(fraction, f"Another session is preparing the data: {message}")
                time.sleep(POLL_SECONDS)
            # The run lock too, as on SQLite (`_build_locked`): a run a command stores
            # meanwhile would make the publish fail on its keys.
            held.enter_context(run_lock(conn, "the cold start", on_wait=shown_as_progress(report)))
            state, run_id = _state(conn)
        if state in ("ready", "needs_run"):
            if state == "ready":
                with _ready_guard:
                    _ready_paths.add(url)
            status = "waited" if waited and state == "ready" else state
            return BootstrapResult(status, run_id, time.monotonic() - started)
        if state == "leftover":
            raise ConfigError(
                "the PostgreSQL database holds a partial benchmark (raw rows or runs without"
                " a result) that no cold start published; empty it or run a reconciliation"
            )
        timings: dict[str, float] = {}

        def step(fraction: float, message: str) -> None:
            _write_progress(progress, fraction, message)
            report(fraction, message)

        step(0.0, "Preparing the benchmark dataset")
        # Named with our pid and locked while we live: a killed start's folder is removed by
        # the next process's remove_dead_leftovers.
        try:
            with owned_folder() as work:
                build_conn = connect(work / "build.sqlite")
                try:
                    migrate(build_conn)
                    t0 = time.monotonic()
                    builder(build_conn, work, step)
                    timings["build"] = time.monotonic() - t0
                    if db.latest_completed_run(build_conn) is None:
                        raise ConfigError("the benchmark build finished without a completed run")
                    step(0.95, "Publishing the result")
                    t0 = time.monotonic()
                    with transaction(conn):  # one write transaction on the real database
                        pg_bulk.publish_sqlite(build_conn, conn)
                    timings["publish"] = time.monotonic() - t0
                finally:
                    build_conn.close()
        finally:
            with contextlib.suppress(OSError):
                progress_path(progress).unlink()
        report(1.0, "Ready")  # not written: the note is gone once the lock is released
        _, run_id = _state(conn)
        with _ready_guard:
            _ready_paths.add(url)
        return BootstrapResult("built", run_id, time.monotonic() - started, (), timings)
    finally:
        held.close()
        if lock is not None:
            lock.close()
        conn.close()
