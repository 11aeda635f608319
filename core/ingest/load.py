"""A dataset folder in, a validated Dataset out; and storing it, once, in one transaction."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.audit.rawcheck import holds_intact_import
from core.dataset import BANK_FILES, Dataset
from core.db import raw, transaction
from core.db.staging import LEAN_STAGING_CACHE_KIB, StagedFile, attached, foreign_keys_off
from core.errors import ConfigError, InputError, Problem, folder_problem
from core.ingest import instant
from core.ingest.bank import mapping_layout, parse_bank_statement
from core.ingest.entities import UNITS, build_frame
from core.ingest.layouts import ALIASES, layout_name, wanted_columns
from core.ingest.lifecycle import (
    COMPARED,
    NO_CHANGES,
    OLDER_SHOWN,
    BackwardMove,
    StoredChanges,
    older_problems,
    stored_changes,
)
from core.ingest.mappings import BankMapping
from core.ingest.readers import (
    LARGE_FILE_BYTES,
    MAX_FILE_MB_ENV,
    FileScan,
    RawTable,
    ReadFailure,
    discard_prefetched,
    max_file_bytes,
    read_csv_table,
    read_json_table,
    read_sheet_table,
    scan_csv_file,
    take_prefetched_csv,
)
from core.ingest.recon_rows import cross_check_settlements, split_recon_rows
from core.ingest.report import FileReport, ImportReport
from core.ingest.stage import RawStaging, staging_raw_tables
from core.ingest.statements import PlacedLines, place_among_stored, refuse_clashes
from core.ingest.tables import DATASET_FIELD, SETTLEMENTS, TABLES, TableSpec
from core.memory import return_freed_memory

BANK_STEM = "bank_statement"
LOAD_THREADS = 2
# Files larger than this are parsed one at a time unless the caller asks for overlap: two
# big parses at once hold both files' parse buffers (1M payments: peak 1.21 GB against
# 0.97 GB read one after the other). Small files still overlap with a big one.
ENTITY_SUFFIXES = (".csv", ".json", ".xlsx", ".xls")
REVERSALS_STEM = "reversals"
READ_NAMES = frozenset(
    [
        *(f"{spec.stem}{ext}" for spec in TABLES.values() for ext in ENTITY_SUFFIXES),
        *(f"{REVERSALS_STEM}{ext}" for ext in ENTITY_SUFFIXES),
        *BANK_FILES,
    ]
)


def _files_by_name(folder: Path) -> tuple[dict[str, Path], list[Problem]]:
    """The folder's files by lower-case name. Two files whose names differ only in case
    (`payments.csv` beside `PAYMENTS.CSV`, possible on Linux) are refused naming both, for
    the names the importer reads: silently taking either would import the wrong one."""
    files: dict[str, Path] = {}
    problems: list[Problem] = []
    for path in sorted(folder.iterdir()):
        key = path.name.lower()
        if key in READ_NAMES:
            # A name the importer reads that is no regular file (a named pipe, a device, a
            # folder) is refused, not skipped as missing (an independent attacker, F7: a
            # FIFO refunds.csv imported as "no refunds").
            odd = _not_a_file_here(path)
            if odd is not None:
                problems.append(Problem(path.name, 0, "", odd))
                continue
        if not path.is_file():
            continue
        first = files.setdefault(key, path)
        if first is not path and key in READ_NAMES:
            message = f"{path.name} is in the folder too (names differ only in case): keep one"
            problems.append(Problem(first.name, 0, "", message))
    return files, problems


def folder_problems(folder: Path) -> list[Problem]:
    """What refuses a dataset folder before any file is read: names the importer reads
    that are no regular file, names that differ only in case."""
    return _files_by_name(folder)[1]


def _not_a_file_here(path: Path) -> str | None:
    """Why `path` cannot be read as one of the dataset's files, else None. A link is
    followed, as the system follows it (a folder's files are its owner's to choose)."""
    try:
        mode = path.stat().st_mode
    except (OSError, RuntimeError):
        return "a link to nothing (or a loop of links): put the file itself in the folder"
    if not stat.S_ISREG(mode):
        return "not a regular file (a folder, a named pipe or a device): the importer reads files"
    return None


def size_problem(name: str, size: int, limit: int | None = None) -> Problem | None:
    """A file over the size cap, named with its size and the cap; else None."""
    limit = max_file_bytes() if limit is None else limit
    if size <= limit:
        return None
    return Problem(
        name,
        0,
        "",
        f"file of {size / (1 << 20):,.1f} MB is over the {limit >> 20:,} MB limit"
        f" ({MAX_FILE_MB_ENV})",
    )


def _locate(spec_stem: str, files: dict[str, Path]) -> tuple[list[Path], list[Problem]]:
    found = [files[n] for n in (f"{spec_stem}{ext}" for ext in ENTITY_SUFFIXES) if n in files]
    if len(found) > 1:
        others = ", ".join(p.name for p in found[1:])
        message = (
            f"{others} is in the folder too: keep only one of the two"
            if len(found) == 2
            else f"{others} are in the folder too: keep only one of them"
        )
        return [], [Problem(found[0].name, 0, "", message)]
    return found, []


def _read_entity_file(
    spec: TableSpec, path: Path, data: bytes, scan: FileScan | None = None
) -> RawTable:
    wanted = wanted_columns(spec)
    notes = [c.name for c in spec.columns if c.kind == "notes"]
    aliases = ALIASES.get(spec.kind)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return read_json_table(path.name, data, wanted, notes, reread=path.read_bytes)
    if suffix in (".xlsx", ".xls"):
        return read_sheet_table(path.name, data, wanted, aliases, fmt=suffix[1:])
    # CSV: Arrow streams the file itself (data is b"": the bytes were never read whole).
    return read_csv_table(
        path.name, path, wanted, reread=path.read_bytes, aliases=aliases, scan=scan
    )


def read_entity_file(spec: TableSpec, path: Path) -> RawTable:
    """One entity file's cells as read (its lines found on request): for naming a row of
    it again after the import read it (core.ingest.lifecycle)."""
    data = b"" if path.suffix.lower() == ".csv" else path.read_bytes()
    return _read_entity_file(spec, path, data)


@dataclass(frozen=True)
class _FileResult:
    """What reading one file produced: its frame (None when unreadable), report, problems and
    the sha256 of its bytes."""

    attribute: str
    name: str
    sha256: str
    frame: pd.DataFrame | None
    report: FileReport | None
    problems: list[Problem]
    routed: tuple[tuple[str, pd.DataFrame], ...] = ()  # frames for other tables (attribute)
    settlement_rows: tuple[pd.DataFrame, npt.NDArray[np.int64]] | None = None
    # The columns each routed frame (in `routed`'s order) and the settlement rows lack.
    routed_absent: tuple[tuple[str, ...], ...] = ()
    settlement_rows_absent: tuple[str, ...] = ()
    mapping: str | None = None  # the saved mapping that read a bank statement, if one did
    reversal_links: tuple[tuple[str, str], ...] = ()  # (rvrsl_ id, trf_ id) from a reversals file


def _load_entity_file(
    spec: TableSpec, path: Path, amount_unit: str, hashing: bool = True
) -> _FileResult:
    streamed = path.suffix.lower() == ".csv"  # read by Arrow from the file, in blocks
    data = b"" if streamed else path.read_bytes()
    scan = None
    # Started before pandas was imported (`reconcile` without --db: nothing is hashed).
    early = (
        None
        if hashing or not streamed
        else take_prefetched_csv(path, wanted_columns(spec), ALIASES.get(spec.kind))
    )
    if early is not None:
        sha = ""
    elif streamed:  # one read of the file hashes it, looks for NUL bytes and counts its lines
        scan = scan_csv_file(path, hashing=hashing)  # (Arrow reads it next)
        sha = scan.sha256
    else:
        sha = hashlib.sha256(data).hexdigest()
    attribute = DATASET_FIELD[spec.kind]
    routed: list[tuple[str, pd.DataFrame]] = []
    routed_absent: list[tuple[str, ...]] = []
    problems: list[Problem] = []
    settlement_rows = None
    rows_absent: tuple[str, ...] = ()
    try:
        if path.suffix.lower() == ".json" and spec.kind in instant.NESTED_KINDS:
            table, extra = instant.read_with_instant(spec, path.name, data, wanted_columns)
            for extra_spec, extra_raw in extra:
                extra_frame, extra_report, extra_problems = build_frame(
                    extra_spec, extra_raw, amount_unit
                )
                problems.extend(extra_problems)
                routed.append((DATASET_FIELD[extra_spec.kind], extra_frame))
                routed_absent.append(extra_report.absent_columns)
        elif early is not None:
            table = early.result()
        else:
            table = _read_entity_file(spec, path, data, scan)
    except ReadFailure as failure:
        return _FileResult(attribute, path.name, sha, None, None, failure.problems)
    del data  # parsed: free the bytes before the columns are converted
    rows_table = None
    if spec.kind == "settlement_recon":
        table, rows_table = split_recon_rows(table)
    frame, report, found = build_frame(spec, table, amount_unit, consume=True)
    problems = found + problems
    if rows_table is not None:
        rows_frame, rows_report, row_problems = build_frame(
            SETTLEMENTS, rows_table, report.amount_unit
        )
        problems.extend(row_problems)
        settlement_rows = (rows_frame, rows_table.lines())
        rows_absent = rows_report.absent_columns
    layout = layout_name(spec.kind, table.fmt, table.written_names, table.aliased)
    report = dataclasses.replace(report, layout=layout)
    if routed:
        moved = ", ".join(f"{len(f)} to {name}" for name, f in routed)
        report = dataclasses.replace(report, warnings=(*report.warnings, f"nested items: {moved}"))
    return _FileResult(
        attribute,
        path.name,
        sha,
        frame,
        report,
        problems,
        tuple(routed),
        settlement_rows,
        routed_absent=tuple(routed_absent),
        settlement_rows_absent=rows_absent,
    )


def _load_reversals_file(path: Path) -> _FileResult:
    """Route reversals are read for reference only: the engine sees them as recon rows."""
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    wanted = ["id", "transfer_id", "amount"]
    try:
        suffix = path.suffix.lower()
        if suffix == ".json":
            table = read_json_table(path.name, data, wanted, [])
        elif suffix in (".xlsx", ".xls"):
            aliases = {"reversal_id": "id"}
            table = read_sheet_table(path.name, data, wanted, aliases, fmt=suffix[1:])
        else:
            table = read_csv_table(path.name, data, wanted, aliases={"reversal_id": "id"})
    except ReadFailure as failure:
        return _FileResult("reversals", path.name, sha, None, None, failure.problems)
    ids = table.columns.get("id")
    transfers = table.columns.get("transfer_id")
    links: tuple[tuple[str, str], ...] = ()
    if ids is not None and transfers is not None:
        pairs = zip(ids.to_pylist(), transfers.to_pylist(), strict=True)
        links = tuple((str(r).strip(), str(t).strip()) for r, t in pairs if r and t)
    report = FileReport(
        kind=REVERSALS_STEM,
        file=path.name,
        fmt=table.fmt,
        rows=table.n_rows,
        amount_unit="-",
        unit_reason="not read",
        layout=layout_name(REVERSALS_STEM, table.fmt, table.written_names, table.aliased),
        ignored_columns=table.ignored,
        warnings=(
            "reversals file read only to name the transfer of each reversal recon row "
            f"({len(links)} reversal(s) with a transfer_id)",
        ),
    )
    return _FileResult("reversals", path.name, sha, None, report, [], reversal_links=links)


def _link_reversals(frames: dict[str, pd.DataFrame], links: dict[str, str]) -> bool:
    """Recon rows of a Route reversal (entity_id rvrsl_...) without a transfer_id get the one
    the reversals file names: the recon API and report do not carry it. True when a row
    got one."""
    recon = frames.get("recon")
    if recon is None or not links:
        return False
    named = recon["entity_id"].map(links)
    fill = recon["transfer_id"].isna() & named.notna()
    if fill.any():
        recon = recon.copy()
        recon.loc[fill, "transfer_id"] = named[fill]
        frames["recon"] = recon.astype({"transfer_id": "string"})
        return True
    return False


def _absent(
    frames: dict[str, pd.DataFrame], sources: list[tuple[str, int, tuple[str, ...]]]
) -> MappingProxyType[str, tuple[str, ...]]:
    """Per table, the columns the dataset does not carry (Dataset.absent), from `sources`:
    (table, rows it supplied, the columns it lacks) for each file or part of one. A table
    filled from several (instant settlements nested in settlements.json and in their own
    file; settlements added from the recon report's settlement rows, which have no fees or
    tax) lacks what any source of rows lacks: the columns carried for some rows only are
    kept as stored for all (conservative: a stored value is never blanked by a source
    without it, at the price of a correction in such a column, made by the other source
    in the same import, not being stored; rows are not told apart by source)."""
    lacking: dict[str, set[str]] = {}
    for attribute, rows, columns in sources:
        if rows:
            lacking.setdefault(attribute, set()).update(columns)
    return MappingProxyType(
        {
            attribute: tuple(c for c in frames[attribute].columns if c in columns)
            for attribute, columns in lacking.items()
            if columns and attribute in frames
        }
    )


def _locate_bank(files: dict[str, Path]) -> tuple[Path | None, list[Problem]]:
    found = [files[n] for n in BANK_FILES if n in files]
    if len(found) > 1:
        others = ", ".join(p.name for p in found[1:])
        message = f"{others} {'is' if len(found) == 2 else 'are'} in the folder too: keep only one"
        return None, [Problem(found[0].name, 0, "", message)]
    return (found[0] if found else None), []


def _load_bank_file(path: Path, mappings: tuple[BankMapping, ...]) -> _FileResult:
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    try:
        frame, report, problems = parse_bank_statement(path.name, data, mappings)
    except ReadFailure as failure:
        return _FileResult("bank", path.name, sha, None, None, failure.problems)
    used = next((m for m in mappings if report.bank_layout == mapping_layout(m)), None)
    described = json.dumps([used.signature_text, used.fields]) if used else None
    return _FileResult("bank", path.name, sha, frame, report, problems, mapping=described)


# Arrow's jemalloc keeps freed pages for this long before returning them (its default).
ARROW_JEMALLOC_DECAY_MS = 1000


@contextlib.contextmanager
def _freed_memory_returned_at_once() -> Iterator[None]:
    """While files are read, Arrow's jemalloc (the CLI's pool) returns freed pages at once:
    each file's parse buffers and raw columns are freed while the next is built, and kept for
    a second they add up. Measured on 217 MB of CSV: peak RSS 0.69 GB against 0.91 GB, no
    slower. Without jemalloc (another pool) this does nothing."""
    try:
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, pa.ArrowNotImplementedError):
        yield
        return
    try:
        yield
    finally:
        pa.jemalloc_set_decay_ms(ARROW_JEMALLOC_DECAY_MS)
        return_freed_memory()


_NO_DATASET_FILE = (
    "no dataset file in the folder: a day needs at least one of "
    + ", ".join([*(spec.stem for spec in TABLES.values()), REVERSALS_STEM])
    + f" ({', '.join(ENTITY_SUFFIXES[:-1])} or {ENTITY_SUFFIXES[-1]}) or a bank statement"
)


def load_dataset(
    folder: str | Path,
    amount_unit: str = "auto",
    bank_mappings: Sequence[BankMapping] = (),
    *,
    overlap_large_files: bool = False,
    hashing: bool = True,
    required_files: bool = True,
) -> tuple[Dataset, ImportReport]:
    """Read and validate a dataset folder (spec sections 2-3).

    amount_unit: 'auto' decides paise or rupees per file; 'paise' or 'rupees' forces it for
    the Razorpay files (bank statements are always rupees). bank_mappings: saved column
    mappings (core.ingest.mappings.saved_mappings(conn)) for statements whose layout is not
    recognised by name; no database is needed without them. Raises InputError with every
    problem found (file:line:column) and returns nothing partial.

    Files are read concurrently: Arrow's kernels and hashlib release the GIL. Files over
    LARGE_FILE_BYTES take turns (import memory stays under 4x the input), unless
    `overlap_large_files` trades that memory for speed (the reconcile command does: the big
    payments and recon files then overlap on two cores).

    hashing: False skips the sha256 of the CSV files (for a caller that persists and
    records nothing: `reconcile` without `--db`); their `FileReport.sha256` and the
    report's `content_hash` are then '' (no hash rather than a wrong one).

    required_files: False for a day merged into stored data (`import-day` into a database
    that holds an import): the spec's required files (payments, settlements, recon) may be
    absent, a table without a file adds no rows; a folder with no dataset file at all is
    still refused.
    """
    if amount_unit not in UNITS:
        raise ConfigError(f"amount unit must be one of {', '.join(UNITS)}, not {amount_unit!r}")
    try:
        return _load_dataset_once(
            folder, amount_unit, bank_mappings, overlap_large_files, hashing, required_files
        )
    finally:
        discard_prefetched()  # an early parse of a file this load did not read is dropped


def _load_dataset_once(
    folder: str | Path,
    amount_unit: str,
    bank_mappings: Sequence[BankMapping],
    overlap_large_files: bool,
    hashing: bool,
    required_files: bool = True,
) -> tuple[Dataset, ImportReport]:
    load = functools.partial(
        _load_dataset,
        folder,
        amount_unit,
        bank_mappings,
        overlap_large_files,
        hashing,
        required_files=required_files,
    )
    if overlap_large_files:
        # Speed over memory: jemalloc keeps its freed pages for reuse (its default decay).
        # Returning them at once made the 1M wide load fault 3.6 GB of pages in (4.0-6.7
        # system CPU s) against 2.0-2.3 GB kept (2.4 s), for 20 MB more peak
        # (docs/benchmark.md, "Whole process on wide data").
        return load()
    with _freed_memory_returned_at_once():
        return load()


def _one_large_file_at_a_time(
    jobs: list[tuple[Path, Callable[[], _FileResult]]],
) -> list[Callable[[], _FileResult]]:
    """The jobs, those reading a file over LARGE_FILE_BYTES holding one lock while they run."""
    lock = threading.Lock()

    def taking_turns(job: Callable[[], _FileResult]) -> _FileResult:
        with lock:
            return _freeing(job)

    return [
        functools.partial(taking_turns if path.stat().st_size > LARGE_FILE_BYTES else _freeing, job)
        for path, job in jobs
    ]


def _freeing(job: Callable[[], _FileResult]) -> _FileResult:
    """Run a file's job, then hand what its parse freed back before the next file."""
    try:
        return job()
    finally:
        return_freed_memory()


def _load_dataset(
    folder: str | Path,
    amount_unit: str,
    bank_mappings: Sequence[BankMapping],
    overlap_large_files: bool,
    hashing: bool = True,
    *,
    required_files: bool = True,
) -> tuple[Dataset, ImportReport]:
    root = Path(folder)
    if not root.is_dir():
        raise InputError([folder_problem(folder)])
    files, problems = _files_by_name(root)
    limit = max_file_bytes()
    for name in sorted(READ_NAMES & files.keys()):
        too_big = size_problem(files[name].name, files[name].stat().st_size, limit)
        if too_big is not None:
            problems.append(too_big)
    if problems:  # nothing is read: a file over the cap is never loaded into memory
        raise InputError(problems)
    jobs: list[tuple[Path, Callable[[], _FileResult]]] = []
    for spec in TABLES.values():
        found, located = _locate(spec.stem, files)
        problems.extend(located)
        if found:
            jobs.append(
                (
                    found[0],
                    functools.partial(_load_entity_file, spec, found[0], amount_unit, hashing),
                )
            )
        elif spec.required_file and required_files and not located:
            named = [f"{spec.stem}{suffix}" for suffix in ENTITY_SUFFIXES]
            message = f"required file missing: {', '.join(named[:-1])} or {named[-1]}"
            problems.append(Problem(f"{spec.stem}.csv", 0, "", message))
    reversals, located = _locate(REVERSALS_STEM, files)
    problems.extend(located)
    if reversals:
        jobs.append((reversals[0], functools.partial(_load_reversals_file, reversals[0])))
    bank_path, bank_located = _locate_bank(files)
    problems.extend(bank_located)
    if bank_path is not None:
        jobs.append(
            (bank_path, functools.partial(_load_bank_file, bank_path, tuple(bank_mappings)))
        )
    if not jobs and not problems:  # only without required files: else they are named
        problems.append(Problem(str(folder), 0, "", _NO_DATASET_FILE))
    runs: list[Callable[[], _FileResult]] = (
        [functools.partial(_freeing, job) for _, job in jobs]
        if overlap_large_files
        else _one_large_file_at_a_time(jobs)
    )
    with ThreadPoolExecutor(max_workers=LOAD_THREADS) as pool:
        results = list(pool.map(lambda job: job(), runs))

    frames: dict[str, pd.DataFrame] = {}
    reports: list[FileReport] = []
    digest = hashlib.sha256(f"amount_unit={amount_unit}\n".encode())
    routed: list[tuple[str, pd.DataFrame]] = []
    sources: list[tuple[str, int, tuple[str, ...]]] = []
    for result in results:  # in the fixed order of `jobs`
        digest.update(f"{result.name}\0{result.sha256}\n".encode())
        if result.mapping is not None:  # the same bytes read through another mapping differ
            digest.update(f"mapping\0{result.mapping}\n".encode())
        problems.extend(result.problems)
        if result.report is not None:
            reports.append(dataclasses.replace(result.report, sha256=result.sha256))
        if result.frame is not None and result.report is not None:
            frames[result.attribute] = result.frame
            sources.append((result.attribute, len(result.frame), result.report.absent_columns))
        routed.extend(result.routed)
        for (attribute, frame), lacking in zip(result.routed, result.routed_absent, strict=True):
            sources.append((attribute, len(frame), lacking))
    if problems:
        raise InputError(problems)
    problems.extend(instant.merge_routed(frames, routed))
    if _link_reversals(frames, dict(link for r in results for link in r.reversal_links)):
        # The reversals file supplies the transfer_id the recon layouts lack (derived data).
        sources = [
            (a, n, tuple(c for c in lacking if c != "transfer_id") if a == "recon" else lacking)
            for a, n, lacking in sources
        ]
    for result in results:
        if result.settlement_rows is not None:
            rows, lines = result.settlement_rows
            check = cross_check_settlements(frames.get("settlements"), rows, lines, result.name)
            frames["settlements"] = check.settlements
            sources.append(("settlements", len(check.added), result.settlement_rows_absent))
            at = next(i for i, r in enumerate(reports) if r.file == result.name)
            reports[at] = dataclasses.replace(
                reports[at], warnings=(*reports[at].warnings, *check.warnings)
            )
    if problems:
        raise InputError(problems)
    has_bank = bank_path is not None
    dataset = Dataset(**frames, has_bank_statement=has_bank, absent=_absent(frames, sources))
    report = ImportReport(
        source="files",
        location=str(root),
        content_hash=digest.hexdigest() if hashing else "",
        files=tuple(reports),
        has_bank_statement=has_bank,
    )
    return dataset, report


def store_dataset(
    conn: sqlite3.Connection,
    dataset: Dataset,
    *,
    source: str,
    location: str,
    content_hash: str,
    replace: bool = False,
    files: tuple[FileReport, ...] = (),
    staging: RawStaging | None = None,
    placed: PlacedLines | None = None,
    accept_older: bool = False,
    compared: tuple[int, StoredChanges] | None = None,
    folder: str | Path | None = None,
    older_hint: str = "import --accept-older takes it as a correction",
    actor: str = "",
) -> ImportReport:
    """Write a dataset's raw tables in one transaction and record the import.

    Into tables that keep other imports, the dataset's rows are first compared with the
    stored rows of their keys, inside the transaction (core.ingest.lifecycle): the report
    counts the stored rows it changes; a row whose status it would move backwards, or whose
    growing amount (a payment's amount_refunded, ...) it would lower, refuses the import
    (OlderRowsError, nothing written, each named by file, line and column: the files are
    read again from `folder`, default `location`, and `older_hint` says how to take them
    anyway) unless `accept_older`, then the moves are recorded in the
    import's report and in an audit entry `import_older_accepted` (by `actor`, default
    the source). `compared`: (the latest import id when the caller read the stored
    rows, their comparison) — used when no import came since, else the stored rows of the
    dataset's keys are read in the transaction (one query per table).

    Into tables that keep other imports (not `replace`), the bank statement's lines are
    first placed among the stored ones (core.ingest.statements: lines stored already are
    not stored again, a stored line is never replaced by another); `placed`: the caller
    placed them already (required with a `staging` started for such an import).

    The same content as the latest import is a no-op (unless `replace` asks to rebuild tables
    that also hold other imports). Rows are upserted by primary key, so nothing is ever
    duplicated. `replace=True` empties the five raw tables first (never exceptions, runs or
    the audit trail).

    A large dataset is staged first (core.ingest.stage): into empty tables (a replace, or a
    first import) copied in whole, into tables that hold rows upserted from the staged file
    (the same rows, row ids and triggers' effects as binding each row from Python);
    `staging` passes one already started for this dataset. Outside a caller's transaction
    only: SQLite attaches files outside one.
    """
    if not replace and placed is None:
        if staging is not None:
            raise ValueError("a staging for an upsert needs the bank lines placed first")
        placed = place_among_stored(conn, dataset, location, content_hash)
    if placed is not None:
        dataset = placed.dataset
    report = ImportReport(
        source=source,
        location=location,
        content_hash=content_hash,
        files=files,
        has_bank_statement=dataset.has_bank_statement,
        bank_lines_known=0 if placed is None else placed.known,
        bank_lines_renamed=0 if placed is None else placed.renamed,
        added_to_stored=not replace and raw.latest_import_id(conn) != 0,
    )
    older = _Older(accept_older, compared, folder, older_hint, actor or source)
    if staging is not None:
        return _store_staged(conn, dataset, report, replace, staging, older)
    lean = LEAN_STAGING_CACHE_KIB  # an import is bound by memory (issue 12), not speed
    with staging_raw_tables(
        conn, dataset, content_hash, replace=replace, cache_kib=lean
    ) as started:
        if started is None:
            return _store(conn, dataset, report, replace, None, older)
        return _store_staged(conn, dataset, report, replace, started, older)


@dataclass(frozen=True)
class _Older:
    """store_dataset's handling of rows a file would move backwards (its docstring)."""

    accept: bool = False
    compared: tuple[int, StoredChanges] | None = None
    folder: str | Path | None = None
    hint: str = ""
    actor: str = ""


def _changes(
    conn: sqlite3.Connection, dataset: Dataset, report: ImportReport, older: _Older
) -> StoredChanges:
    """Inside the import's transaction: what the dataset changes in the stored rows; raises
    OlderRowsError for a row it would move backwards unless asked to take them."""
    if older.compared is not None and raw.latest_import_id(conn) == older.compared[0]:
        changes = older.compared[1]
    else:
        stored = {
            attribute: raw.read_rows_by_key(
                conn, attribute, getattr(dataset, attribute)[key].astype(str).tolist()
            )
            for attribute, key in COMPARED.items()
            if len(getattr(dataset, attribute))
        }
        changes = stored_changes(dataset, stored)
    if changes.backward and not older.accept:
        where = locate_rows(
            changes.backward[:OLDER_SHOWN], report.files, report.location, older.folder
        )
        raise older_problems(
            changes.backward, where=where, location=report.location, hint=older.hint
        )
    return changes


def locate_rows(
    moves: Sequence[BackwardMove],
    files: Sequence[FileReport],
    location: str,
    folder: str | Path | None,
) -> dict[tuple[str, str, str], tuple[str, int, str]]:
    """(attribute, key, column) -> (file as shown, physical line, column as written) for
    the moves whose rows a file of the folder holds (`files`: the import's FileReports; the
    folder: `folder`, else `location`), each file read again: for a refusal only."""

    root = Path(folder) if folder is not None else Path(location)
    if not root.is_dir():
        return {}
    prefix = "" if folder is not None and str(folder) != location else root.name + "/"
    wanted: dict[str, dict[str, list[str]]] = {}
    for move in moves:
        wanted.setdefault(move.attribute, {}).setdefault(move.key, []).append(move.column)
    found: dict[tuple[str, str, str], tuple[str, int, str]] = {}
    for report in files:
        attribute = DATASET_FIELD.get(report.kind)
        spec = TABLES.get(report.kind)
        path = root / report.file
        if attribute not in wanted or spec is None or not path.is_file():
            continue
        try:
            table = read_entity_file(spec, path)
        except Exception:  # the file changed since it was read: named without a line
            continue
        ids = table.columns.get("id")
        if ids is None:
            continue
        values = pc.utf8_trim_whitespace(ids.cast(pa.string())).to_pylist()
        lines = table.lines()
        for row, value in enumerate(values):
            for column in wanted[attribute].get(value, ()):
                place = (prefix + report.file, int(lines[row]), table.column_label(column))
                found.setdefault((attribute, value, column), place)
    return found


def _store_staged(
    conn: sqlite3.Connection,
    dataset: Dataset,
    report: ImportReport,
    replace: bool,
    staging: RawStaging,
    older: _Older,
) -> ImportReport:
    """`_store` with the staged tables attached. Foreign keys are off while the rows are
    copied (SQLite copies whole records only then); every staged row carries the import id
    this transaction records (an upsert binds it), so the keys hold by construction."""
    if staging.content_hash != report.content_hash:
        raise ValueError("the staging was started for other content")
    files = staging.files()
    aliases = {f"staged{i}": staged for i, staged in enumerate(files)}
    paths = {alias: staged.path for alias, staged in aliases.items()}
    with attached(conn, paths), foreign_keys_off(conn):
        return _store(
            conn,
            dataset,
            report,
            replace,
            _Staged(staging.import_id, aliases, staging.into_stored),
            older,
        )


@dataclass(frozen=True)
class _Staged:
    """Staging files attached under `aliases`: rows carrying `import_id`; `into_stored`:
    staged without indexes, for upserts only (core.ingest.stage.RawStaging)."""

    import_id: int
    aliases: dict[str, StagedFile]
    into_stored: bool


def _store(
    conn: sqlite3.Connection,
    dataset: Dataset,
    report: ImportReport,
    replace: bool,
    staged: _Staged | None,
    older: _Older,
) -> ImportReport:
    with transaction(conn):
        latest = raw.latest_import(conn)
        if latest is not None and holds_intact_import(conn, report.content_hash, replace=replace):
            return dataclasses.replace(report, import_id=latest.id, already_imported=True)
        if replace:
            raw.clear_raw_tables(conn)
        else:
            refuse_clashes(conn, dataset)
        exclusive = replace or raw.raw_tables_empty(conn)
        changes = NO_CHANGES if exclusive else _changes(conn, dataset, report, older)
        whole = staged is not None and exclusive and not staged.into_stored
        import_id = _insert_import(conn, report, staged.import_id if staged and whole else None)
        copied = staged is not None and whole and import_id == staged.import_id
        written: dict[str, int] = {}
        # Copying staged files moves whole pages: the smallest bulk cache does (a cache
        # sized from the rows filled with those pages and set the import's peak memory).
        writes = (
            raw.bulk_writes(conn, 0 if copied else _row_bytes(dataset))
            if exclusive
            else raw.upsert_writes(conn)  # into stored rows: key indexes touched at random
        )
        with writes:
            for attribute, (table, _, _) in raw.RAW_TABLES.items():
                alias = _staged_alias(staged, table) if staged is not None else None
                # Columns the files lack keep their stored values (an upsert's SET leaves
                # them out); () for every column carried, the statements of always.
                absent = dataset.absent_columns(attribute)
                if alias is not None and copied:
                    written[table] = raw.copy_staged_table(conn, alias, attribute)
                elif alias is not None and not exclusive:
                    written[table] = raw.upsert_staged_table(
                        conn, alias, attribute, import_id, absent=absent
                    )
                else:
                    frame = getattr(dataset, attribute)
                    written[table] = raw.write_frame(
                        conn, attribute, frame, import_id, absent=absent
                    )
        moves = changes.backward
        report = dataclasses.replace(
            report,
            import_id=import_id,
            replaced=replace,
            written=MappingProxyType(written),
            changed=changes.changed,
            changes=tuple(change.text() for change in changes.examples),
            accepted_older=tuple(move.text() for move in moves[:OLDER_SHOWN]),
            older_count=len(moves),
            kept=_kept(report.files, dataset, changes),
        )
        if moves:  # taken as corrections, as asked: audited with the import
            from core.audit import append

            append(
                conn,
                actor=older.actor,
                action="import_older_accepted",
                entity_type="import",
                entity_id=str(import_id),
                payload={
                    "location": report.location,
                    "content_hash": report.content_hash,
                    "rows": len(moves),
                    "moves": list(report.accepted_older),
                },
            )
        record = report.to_dict()
        record["exclusive"] = exclusive
        raw.update_import_report(conn, import_id, json.dumps(record, sort_keys=True))
    return report


def _kept(files: Sequence[FileReport], dataset: Dataset, changes: StoredChanges) -> tuple[str, ...]:
    """'file: column, ...' for each file lacking columns of a table whose stored rows the
    import met, the columns the dataset does not carry (ImportReport.kept): a recon file's
    transfer_id is carried when a reversals file supplied it. A table's columns kept though
    its file has them (rows another source added lack them, `_absent`) are named by table."""
    kept: list[str] = []
    for attribute, columns in dataset.absent.items():
        if not columns or not changes.met.get(attribute, 0):
            continue
        left = set(columns)
        for report in files:
            if DATASET_FIELD.get(report.kind) != attribute:
                continue
            lacking = [c for c in report.absent_columns if c in left]
            left -= set(lacking)
            if lacking:
                kept.append(f"{report.file}: {', '.join(lacking)}")
        if left:
            kept.append(f"{attribute} (rows of another source): {', '.join(sorted(left))}")
    return tuple(kept)


def _row_bytes(dataset: Dataset) -> int:
    """The raw tables' size in memory (shallow: Arrow strings count their buffers)."""
    return sum(
        int(getattr(dataset, attribute).memory_usage(index=False).sum())
        for attribute in raw.RAW_TABLES
    )


def _insert_import(conn: sqlite3.Connection, report: ImportReport, wanted: int | None) -> int:
    """Record the import, under the id its staged rows carry when that id is still free."""

    def insert(import_id: int | None) -> int:
        return raw.insert_import(
            conn,
            source=report.source,
            location=report.location,
            content_hash=report.content_hash,
            imported_at=int(time.time()),
            report_json="{}",
            import_id=import_id,
        )

    if wanted is not None:
        try:
            with transaction(conn):
                return insert(wanted)
        except sqlite3.IntegrityError:
            pass  # another import took the id meanwhile: the rows are written directly
    return insert(None)


def _staged_alias(staged: _Staged, table: str) -> str | None:
    """The alias of the staging file holding `table` complete, if one does."""
    for alias, file in staged.aliases.items():
        if table in file.tables:
            return alias
    return None


def import_dataset(
    conn: sqlite3.Connection, folder: str | Path, amount_unit: str = "auto", replace: bool = False
) -> ImportReport:
    """load_dataset (with the mappings saved in `conn`) + store_dataset: nothing is written
    unless every file is valid."""
    from core.ingest.mappings import saved_mappings

    dataset, loaded = load_dataset(folder, amount_unit, saved_mappings(conn))
    return store_dataset(
        conn,
        dataset,
        source=loaded.source,
        location=loaded.location,
        content_hash=loaded.content_hash,
        replace=replace,
        files=loaded.files,
    )
