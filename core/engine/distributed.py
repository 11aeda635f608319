"""The partitioned engine over a window store, in this process or on Dask (docs/engine.md,
*Partitions*; docs/scale.md).

A **window store** is a folder of Parquet files laid out by settlement window
(`core.engine.partition`):

    meta.json                                  windows, halo, flags (format 1)
    rows/<table>/window=<k>/part-0.parquet     payments, refunds, recon, disputes, transfers
    ledger/<table>.parquet                     settlements, instant settlements and payouts,
                                               bank lines, each with _owner, _day, _component

Window k's task reads only its own row files and the (small) ledger, picks its halo with
`partition.ledger_selection`, reconciles and keeps what it owns; the caller gathers the
windows' outcomes with `partition.combine`. On Dask (`dask.distributed`), each window is
one task: `scheduler="local"` starts a LocalCluster on this machine (2 workers, one thread
each); any other value is a scheduler address (`tcp://host:8786`), whose workers must
import this repository and read the store's path (shared storage).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from core.books.pricing import PricingPlan
from core.dataset import (
    BANK_COLUMNS,
    DISPUTE_COLUMNS,
    INSTANT_PAYOUT_COLUMNS,
    INSTANT_SETTLEMENT_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    REFUND_COLUMNS,
    SETTLEMENT_COLUMNS,
    TRANSFER_COLUMNS,
    Dataset,
)
from core.engine.params import EngineParams
from core.engine.partition import (
    DEFAULT_DAYS_PER_WINDOW,
    LEDGER_TABLES,
    ROW_TABLES,
    Assignment,
    Owned,
    Progress,
    _take,
    assign,
    build_window,
    combine,
    ledger_selection,
    named_settlements,
    reconcile_window,
)
from core.engine.store_layout import META, is_store
from core.errors import ConfigError

FORMAT = 1
COLUMNS: dict[str, dict[str, str]] = {
    "payments": PAYMENT_COLUMNS,
    "refunds": REFUND_COLUMNS,
    "recon": RECON_COLUMNS,
    "disputes": DISPUTE_COLUMNS,
    "transfers": TRANSFER_COLUMNS,
    "settlements": SETTLEMENT_COLUMNS,
    "instant_settlements": INSTANT_SETTLEMENT_COLUMNS,
    "instant_payouts": INSTANT_PAYOUT_COLUMNS,
    "bank": BANK_COLUMNS,
}
LEDGER_EXTRA = ("_owner", "_day", "_component")
OWN = "_own"  # a row file's column: this window reports the row's outcome
COMPRESSION = "none"  # read once or twice, on this machine or a shared volume


@dataclass(frozen=True)
class StoreMeta:
    """What meta.json says: the windows' first days, the halo, and the dataset's flags."""

    starts: tuple[int, ...]
    halo_days: int
    has_bank_statement: bool
    has_transfers: bool
    rows: tuple[int, ...]  # recon + payments rows per window (for a progress bar)

    @property
    def windows(self) -> int:
        return len(self.starts)


def _arrow(frame: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(frame, preserve_index=False)


def _frame(table: pa.Table, name: str) -> pd.DataFrame:
    """A Parquet table back to the Dataset's exact columns and dtypes."""
    columns = COLUMNS[name]
    mapper = {
        pa.int64(): pd.Int64Dtype(),
        pa.bool_(): pd.BooleanDtype(),
        pa.string(): pd.StringDtype(),
        pa.large_string(): pd.StringDtype(),
    }
    frame: pd.DataFrame = table.select(list(columns)).to_pandas(types_mapper=mapper.get)
    typed: pd.DataFrame = frame.astype(columns)
    return typed


def write_store(dataset: Dataset, assignment: Assignment, root: Path) -> StoreMeta:
    """Write `dataset` as a window store under `root` (replaced if it exists)."""
    if root.exists():
        shutil.rmtree(root)
    (root / "ledger").mkdir(parents=True)
    sizes = np.zeros(assignment.windows, dtype=np.int64)
    for table in ROW_TABLES:
        frame: pd.DataFrame = getattr(dataset, table)
        for k in range(assignment.windows):
            picked, own = assignment.window_rows(table, k)
            if len(picked) == 0:
                continue
            if table in ("payments", "recon"):
                sizes[k] += len(picked)
            folder = root / "rows" / table / f"window={k}"
            folder.mkdir(parents=True)
            arrow = _arrow(frame.iloc[picked]).append_column(OWN, pa.array(own, pa.bool_()))
            pq.write_table(arrow, folder / "part-0.parquet", compression=COMPRESSION)
    return write_ledger_and_meta(dataset, assignment, root, tuple(int(n) for n in sizes))


def write_ledger_and_meta(
    dataset: Dataset, assignment: Assignment, root: Path, sizes: tuple[int, ...]
) -> StoreMeta:
    """The store's ledger files (each row with its owner, day and link component) and
    meta.json; `sizes`: rows per window (for progress and scheduling)."""
    (root / "ledger").mkdir(parents=True, exist_ok=True)
    for table in LEDGER_TABLES:
        frame = getattr(dataset, table).reset_index(drop=True).copy()
        frame["_owner"] = assignment.ledger_owner[table]
        frame["_day"] = assignment.ledger_day[table]
        frame["_component"] = assignment.ledger_component[table]
        pq.write_table(_arrow(frame), root / "ledger" / f"{table}.parquet", compression=COMPRESSION)
    meta = StoreMeta(
        starts=tuple(int(s) for s in assignment.starts),
        halo_days=assignment.halo_days,
        has_bank_statement=dataset.has_bank_statement,
        has_transfers=assignment.has_transfers,
        rows=sizes,
    )
    write_meta(root, meta)
    return meta


def write_meta(root: Path, meta: StoreMeta) -> None:
    document = {
        "format": FORMAT,
        "starts": list(meta.starts),
        "halo_days": meta.halo_days,
        "has_bank_statement": meta.has_bank_statement,
        "has_transfers": meta.has_transfers,
        "rows": list(meta.rows),
    }
    (root / META).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def read_meta(root: Path) -> StoreMeta:
    try:
        document = json.loads((root / META).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{root / META}: not a window store ({exc})") from exc
    if document.get("format") != FORMAT:
        raise ConfigError(f"{root / META}: window store format {document.get('format')!r}")
    return StoreMeta(
        starts=tuple(document["starts"]),
        halo_days=int(document["halo_days"]),
        has_bank_statement=bool(document["has_bank_statement"]),
        has_transfers=bool(document["has_transfers"]),
        rows=tuple(document["rows"]),
    )


def read_window(root: Path, window: int, meta: StoreMeta | None = None) -> tuple[Dataset, Owned]:
    """Window `window`'s Dataset (its rows, its ledger and the halo) from a store."""
    meta = meta or read_meta(root)
    rows: dict[str, pd.DataFrame] = {}
    own: dict[str, np.ndarray] = {}
    for table in ROW_TABLES:
        path = root / "rows" / table / f"window={window}" / "part-0.parquet"
        if path.exists():
            stored = pq.read_table(path)
            own[table] = np.asarray(stored[OWN].to_numpy(), dtype=bool)
            rows[table] = _frame(stored, table)
        else:
            rows[table] = _empty(table)
            own[table] = np.zeros(0, dtype=bool)
    tables = {t: pq.read_table(root / "ledger" / f"{t}.parquet") for t in LEDGER_TABLES}

    def column(table: str, name: str) -> np.ndarray:
        return np.asarray(tables[table][name].to_numpy(), dtype=np.int64)

    owner = {t: column(t, "_owner") for t in LEDGER_TABLES}
    whole = {t: _frame(tables[t], t) for t in LEDGER_TABLES}
    picked = ledger_selection(
        owner,
        {t: column(t, "_day") for t in LEDGER_TABLES},
        {t: column(t, "_component") for t in LEDGER_TABLES},
        meta.halo_days,
        window,
        named_settlements(rows["recon"], whole),
    )
    ledger = {t: _take(whole[t], picked[t]) for t in LEDGER_TABLES}
    owned = {t: owner[t][picked[t]] == window for t in LEDGER_TABLES}
    return build_window(
        rows,
        own,
        ledger,
        owned,
        has_bank_statement=meta.has_bank_statement,
        has_transfers=meta.has_transfers,
    )


def read_owned_rows(root: Path, window: int) -> dict[str, pd.DataFrame]:
    """The rows window `window` owns, per row table (each row of the dataset is owned by
    exactly one window: together they are the whole table, once), as Dataset frames."""
    rows: dict[str, pd.DataFrame] = {}
    for table in ROW_TABLES:
        path = root / "rows" / table / f"window={window}" / "part-0.parquet"
        if path.exists():
            stored = pq.read_table(path)
            rows[table] = _frame(stored.filter(stored[OWN]), table)
        else:
            rows[table] = _empty(table)
    return rows


def read_ledger(root: Path) -> dict[str, pd.DataFrame]:
    """The store's ledger tables whole (small: a few rows a day), as Dataset frames."""
    return {t: _frame(pq.read_table(root / "ledger" / f"{t}.parquet"), t) for t in LEDGER_TABLES}


def _empty(table: str) -> pd.DataFrame:
    from core.dataset import empty_frame

    return empty_frame(COLUMNS[table])


def reconcile_stored_window(
    root: str,
    window: int,
    params: dict[str, Any],
    as_of: int,
    pricing: tuple[PricingPlan, ...] = (),
) -> pd.DataFrame:
    """One window's task: read it from the store, reconcile, keep what it owns. Takes
    plain arguments (a path, the params as `EngineParams.to_dict()`), so that any worker
    that can import this module and read `root` can run it."""
    dataset, owned = read_window(Path(root), window)
    # one engine thread: the cluster already runs one task per core
    return reconcile_window(
        dataset, owned, EngineParams.from_dict(params), as_of, pricing, threads=1
    )


def reconcile_store(
    root: Path,
    params: EngineParams,
    as_of: int,
    pricing: tuple[PricingPlan, ...] = (),
    *,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Every window of a store: in this process (`scheduler` None), or one Dask task per
    window (`"local"` or a scheduler address). Outcomes identical to `reconcile` on the
    whole dataset."""
    meta = read_meta(root)
    settings = params.to_dict()
    if scheduler is None:
        frames = []
        for window in range(meta.windows):
            frames.append(reconcile_stored_window(str(root), window, settings, as_of, pricing))
            if progress is not None:
                progress(window + 1, meta.windows)
        return combine(frames)
    with dask_client(scheduler) as client:
        from distributed import as_completed

        # Largest windows first, so the last task to finish is a small one.
        order = sorted(range(meta.windows), key=lambda k: -meta.rows[k])
        futures = {
            client.submit(
                reconcile_stored_window,
                str(root.resolve()),
                k,
                settings,
                as_of,
                pricing,
                key=f"razorrecon-window-{k}-{time.time_ns()}",
                pure=False,
            ): k
            for k in order
        }
        results: dict[int, pd.DataFrame] = {}
        finished = as_completed(futures)  # type: ignore[no-untyped-call]
        for done, future in enumerate(finished, start=1):
            results[futures[future]] = future.result()
            if progress is not None:
                progress(done, meta.windows)
        return combine([results[k] for k in range(meta.windows)])


@contextmanager
def dask_client(scheduler: str) -> Iterator[Any]:
    """A dask.distributed Client: `local` starts a LocalCluster here (2 worker processes,
    one thread each), anything else is a scheduler address to connect to."""
    from distributed import Client, LocalCluster

    if scheduler == "local":
        with (
            LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                host="127.0.0.1",
            ) as cluster,
            Client(cluster) as client,  # type: ignore[no-untyped-call]
        ):
            yield client
        return
    if "://" not in scheduler and ":" not in scheduler:
        raise ConfigError(
            f"--scheduler: 'local' or an address like tcp://host:8786, not {scheduler!r}"
        )
    with Client(scheduler, timeout="30s") as client:  # type: ignore[no-untyped-call]
        yield client


def reconcile_partitioned_store(
    dataset: Dataset,
    params: EngineParams,
    as_of: int,
    root: Path,
    pricing: tuple[PricingPlan, ...] = (),
    *,
    days_per_window: int = DEFAULT_DAYS_PER_WINDOW,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Write `dataset` as a window store at `root`, then reconcile it window by window."""
    write_store(dataset, assign(dataset, params, as_of, days_per_window), root)
    return reconcile_store(root, params, as_of, pricing, scheduler=scheduler, progress=progress)


def tqdm_progress(description: str) -> tuple[Progress, Callable[[], None]]:
    """A progress callback drawing a tqdm bar on stderr, and the function that closes it."""
    from tqdm import tqdm  # type: ignore[import-untyped]

    bar = tqdm(total=0, desc=description, unit="window", leave=True)

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
            bar.refresh()
        bar.update(done - bar.n)

    return update, bar.close


__all__ = [
    "StoreMeta",
    "dask_client",
    "is_store",
    "read_ledger",
    "read_meta",
    "read_owned_rows",
    "read_window",
    "reconcile_loaded_by_windows",
    "reconcile_partitioned_store",
    "reconcile_store",
    "reconcile_stored_window",
    "run_store",
    "tqdm_progress",
    "write_ledger_and_meta",
    "write_store",
]


def _progress_for(description: str) -> tuple[Progress, Callable[[], None]]:
    return tqdm_progress(description)


def reconcile_loaded_by_windows(
    args: Any, loaded: Any, params: EngineParams, as_of: int, pricing: tuple[PricingPlan, ...]
) -> Any:
    """`python -m core reconcile --partitions/--scheduler/--store`: a loaded folder
    reconciled window by window (a core.pipeline.FolderRun, as the single run gives)."""
    from core.engine.partition import reconcile_partitioned

    if args.scheduler not in (None, "local") and args.store is None:
        raise ConfigError("--scheduler ADDRESS needs --store DIR on storage its workers can read")
    began = time.perf_counter()
    update, close = _progress_for("reconcile")
    timings: dict[str, float] = {}
    try:
        if args.scheduler is None and args.store is None:
            outcomes = reconcile_partitioned(
                loaded.dataset,
                params,
                as_of,
                pricing,
                days_per_window=args.days_per_window,
                progress=update,
            )
        else:
            with _store_folder(args.store) as root:
                written = time.perf_counter()
                assignment = assign(loaded.dataset, params, as_of, args.days_per_window)
                write_store(loaded.dataset, assignment, root)
                timings["write_store_s"] = round(time.perf_counter() - written, 3)
                outcomes = reconcile_store(
                    root, params, as_of, pricing, scheduler=args.scheduler, progress=update
                )
    finally:
        close()
    timings["reconcile_s"] = round(time.perf_counter() - began, 3)
    return loaded.reconciled(outcomes, params, as_of, timings)


@contextmanager
def _store_folder(store: Path | None) -> Iterator[Path]:
    if store is not None:
        yield store
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="razorrecon-windows-") as folder:
        yield Path(folder) / "store"


def run_store(args: Any, params: EngineParams, as_of: int, root: Path | None = None) -> int:
    """`python -m core reconcile STORE --out results.csv`: a window store (written by
    `--store` or `python -m core import-stream`) reconciled window by window."""
    from core.engine.results import print_run_report, write_results_csv_to
    from core.outputs import output_target, place_output, temporary_for

    if args.db is not None:
        raise ConfigError("--db takes a dataset folder, not a window store")
    root = root or args.dataset_dir
    target = output_target(args.out)
    temporary = temporary_for(target)
    began = time.perf_counter()
    update, close = _progress_for("reconcile")
    try:
        try:
            outcomes = reconcile_store(
                root, params, as_of, scheduler=args.scheduler, progress=update
            )
        finally:
            close()
        reconciled = time.perf_counter()
        write_results_csv_to(outcomes, temporary)
        place_output(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    print_run_report(
        to_stdout=target.kind == "stdout",
        source=f"window store {root}",
        as_of=as_of,
        out=str(args.out),
        stored=None,
        outcomes=outcomes,
        timings={
            "reconcile_s": reconciled - began,
            "write_csv_s": time.perf_counter() - reconciled,
        },
    )
    return 0
