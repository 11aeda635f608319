"""Snapshots of the reconciled state beside the database, for `import-day`
(docs/engine.md, "Snapshots of the reconciled state").

A day's run needs the raw tables (to merge the day into) and the base run's outcomes (to
carry forward). Read back from the tables they cost a minute at 1M rows; a snapshot is the
same frames as Arrow IPC files, written by the run that computed them and read back in
about a second. Each file is named by its run id, table and content hash
(`run-12.payments.3f2a....arrow`) and written atomically (a temporary file renamed over a
regular file only); the run's `snapshot_json` (migration 0096) records the import the raw
tables stood at and each file's sha256. A snapshot is used only when its run is the base
run, no import was recorded since, and every file's bytes hash to what the run recorded;
otherwise (stale, torn, altered, missing) it is ignored with a reason and the tables are
read. Writes nothing but the folder's own files; never raises for a missing or bad file.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import stat
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc

from core.dataset import DATASET_TABLES, Dataset
from core.file_kinds import NotRegularFile, kind_of
from core.leftovers import pid_alive
from core.snapshot_ahead import map_regular
from core.snapshot_ahead import take as take_hashed

if TYPE_CHECKING:
    from core.engine.incremental import IncrementalState

# The frames a snapshot holds: the dataset's tables, then the run's outcomes.
SNAPSHOT_TABLES: tuple[str, ...] = (*DATASET_TABLES, "outcomes")
# The IncrementalState for the next day's run (core.engine.incremental.state_arrays):
# each family row's label, and the key index. Written beside the tables when the run
# left one; a snapshot without them is still used (the next run then goes without).
STATE_FILES: tuple[str, ...] = ("state_family", "state_keys")
# A day written as a delta beside a whole snapshot (instead of the whole again): the day's
# rows, the outcomes it decided again, and which of the previous outcomes it carried.
# Read back, each delta is replayed on the whole snapshot in order (the caller's `replay`:
# the same merge and carry forward its run made). A whole snapshot is written again after
# COMPACT_AFTER deltas, or once the deltas' rows would pass COMPACT_SHARE of its rows.
DELTA_FILES: tuple[str, ...] = (*(f"day_{t}" for t in DATASET_TABLES), "fresh", "carry")
COMPACT_AFTER = 6
COMPACT_SHARE = 0.25
# Only files named like this are ever removed from the folder.
_NAME = re.compile(r"^run-(\d+)\.([a-z_]+)\.([0-9a-f]{16})\.arrow$")
# Files being written: `.pending.<pid>.<table>.<random>.arrow` until named.
_PENDING = ".pending."
_PENDING_NAME = re.compile(r"^\.pending\.(\d+)\.")
VERSION = 1


@dataclass(frozen=True)
class Snapshot:
    """The raw tables as a Dataset, a run's outcomes (the engine's frame), and the
    IncrementalState for the dataset when the run left one (None otherwise)."""

    dataset: Dataset
    outcomes: pd.DataFrame
    state: IncrementalState | None = None


@dataclass(frozen=True)
class Delta:
    """One day's delta: its rows (as merged into the tables), the outcomes it decided
    again (sorted as outcomes are), and which rows of the previous outcomes it carried."""

    day: Dataset
    fresh: pd.DataFrame
    carried: npt.NDArray[np.bool_]


# (tables, outcomes, delta) -> the tables and outcomes after the delta's day.
Replay = Callable[[Dataset, pd.DataFrame, Delta], tuple[Dataset, pd.DataFrame]]


def _rows(dataset: Dataset) -> int:
    return sum(len(getattr(dataset, t)) for t in DATASET_TABLES)


def wants_delta(record: dict[str, Any] | None, day: Dataset) -> bool:
    """Whether a day read from the snapshot `record` should be written as a delta beside
    it (else a whole snapshot): fewer than COMPACT_AFTER deltas so far, and the deltas'
    rows with this day's within COMPACT_SHARE of the whole snapshot's rows."""
    if not record or record.get("version") != VERSION or "rows" not in record:
        return False
    deltas = record.get("deltas") or []
    rows = sum(int(d.get("rows", 0)) for d in deltas) + _rows(day)
    return len(deltas) < COMPACT_AFTER and rows <= COMPACT_SHARE * int(record["rows"])


@dataclass(frozen=True)
class Loaded:
    """What `load_snapshot` found: the snapshot, or None with why it was not used."""

    snapshot: Snapshot | None
    reason: str


def _write_pending(folder: Path, table: str, frame: pd.DataFrame | pa.Table) -> tuple[Path, str]:
    """One frame as an Arrow IPC file streamed to a new temporary file in `folder` (no copy
    of it in memory), and the sha256 of the bytes written. The file is created with a
    name no other file has (O_EXCL, O_NOFOLLOW: a link, FIFO or file someone put in the
    folder is never opened) and written and hashed through its own descriptor."""
    arrow = (
        frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    )
    fd, name = tempfile.mkstemp(
        prefix=f"{_PENDING}{os.getpid()}.{table}.", suffix=".arrow", dir=folder
    )
    try:
        with os.fdopen(fd, "w+b") as handle:
            with ipc.new_file(pa.PythonFile(handle, mode="w"), arrow.schema) as writer:
                writer.write_table(arrow)
            handle.flush()
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                return Path(name), hashlib.sha256(mapped).hexdigest()
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def remove_dead_pending(folder: Path) -> list[Path]:
    """Temporary snapshot files of processes that died before naming them (killed while
    they wrote), removed; a live process's are left alone. The paths removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        named = _PENDING_NAME.match(entry.name)
        if named is None or entry.is_dir(follow_symlinks=False):
            continue
        pid = int(named.group(1))
        if pid == os.getpid() or pid_alive(pid):
            continue
        try:
            os.unlink(entry.path)  # a link is removed, never what it points to
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


@dataclass(frozen=True)
class Written:
    """Snapshot files written before their run had an id (`write_files`): table ->
    (temporary file, sha256)."""

    folder: Path
    files: dict[str, tuple[Path, str]]
    has_bank_statement: bool
    families: int | None = None
    rows: int = 0
    # A delta's: the record of the snapshot it is written beside.
    base: dict[str, Any] | None = None
    # A delta's: the columns the day did not carry (Dataset.absent), replayed as they were.
    absent: dict[str, list[str]] | None = None


def _state_frames(state: IncrementalState | None) -> dict[str, pa.Table]:
    from core.engine.incremental import state_arrays

    if state is None:
        return {}
    arrays = state_arrays(state)
    return {
        "state_family": pa.table({"family": arrays["family"]}),
        "state_keys": pa.table(
            {"key_print": arrays["key_print"], "key_family": arrays["key_family"]}
        ),
    }


def _write_all(folder: Path, frames: dict[str, pd.DataFrame | pa.Table]) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    remove_dead_pending(folder)

    def write(table: str) -> tuple[str, tuple[Path, str]]:
        return table, _write_pending(folder, table, frames[table])

    with ThreadPoolExecutor(2) as pool:  # hashing and writing release the GIL
        return dict(pool.map(write, list(frames)))


def write_delta_files(
    folder: Path,
    base: dict[str, Any],
    day: Dataset,
    fresh: pd.DataFrame,
    carried: npt.NDArray[np.bool_],
    state: IncrementalState | None,
) -> Written:
    """A day's delta (DELTA_FILES) and its state, written as temporary files beside the
    snapshot `base` (its run's record) the day was read from; `name_files` names them
    and records the delta after base's own."""
    frames: dict[str, pd.DataFrame | pa.Table] = {
        f"day_{t}": getattr(day, t) for t in DATASET_TABLES
    }
    frames["fresh"] = fresh
    frames["carry"] = pa.table({"carry": pa.array(np.asarray(carried, dtype=bool))})
    frames.update(_state_frames(state))
    files = _write_all(folder, frames)
    families = None if state is None else int(state.families)
    absent = {table: list(columns) for table, columns in day.absent.items() if columns}
    return Written(
        folder, files, bool(day.has_bank_statement), families, _rows(day), base, absent or None
    )


def write_files(
    folder: Path,
    dataset: Dataset,
    outcomes: pd.DataFrame,
    state: IncrementalState | None = None,
) -> Written:
    """Write the frames (and `state`, the IncrementalState for `dataset`, when given) to
    temporary files in `folder` (created if missing), hashing them; `name_files` gives
    them their run's names. Touches no database: any thread may call it (the run is
    stored meanwhile)."""
    frames: dict[str, pd.DataFrame | pa.Table] = {t: getattr(dataset, t) for t in DATASET_TABLES}
    frames["outcomes"] = outcomes
    frames.update(_state_frames(state))
    files = _write_all(folder, frames)
    families = None if state is None else int(state.families)
    return Written(folder, files, bool(dataset.has_bank_statement), families, _rows(dataset))


def _only_a_regular_file_at(path: Path) -> None:
    """Raise NotRegularFile naming what is at `path` when it is there and not a regular
    file (a FIFO, a device, a folder, a link, dangling or not): a snapshot file's final
    name is predictable (run id, table, content hash), so something may wait there."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, kind_of(mode))


def name_files(written: Written, run_id: int, import_id: int) -> dict[str, Any]:
    """Rename written files to run `run_id`'s names (over regular files only), remove
    other runs' snapshot files; returns the record for the run's snapshot_json. When a
    name holds anything else (NotRegularFile) or a rename fails, the files named so far
    are removed again (none of the run's is left) and the error raised: the caller then
    records no snapshot (the temporaries are its to discard)."""
    named: dict[str, dict[str, str]] = {}
    placed: list[Path] = []
    try:
        for table, (temporary, digest) in written.files.items():
            name = f"run-{run_id}.{table}.{digest[:16]}.arrow"
            path = written.folder / name
            _only_a_regular_file_at(path)
            os.replace(temporary, path)
            placed.append(path)
            named[table] = {"file": name, "sha256": digest}
    except BaseException:
        for path in placed:
            path.unlink(missing_ok=True)
        raise
    state = {t: named.pop(t) for t in STATE_FILES if t in named}
    record: dict[str, Any]
    if written.base is None:
        record = {
            "version": VERSION,
            "import_id": int(import_id),
            "has_bank_statement": written.has_bank_statement,
            "files": {**named, **state},
            "rows": written.rows,
        }
    else:  # a delta: the whole snapshot's files stay, the state is the day's
        base = written.base
        files = {t: e for t, e in base["files"].items() if t not in STATE_FILES}
        delta = {"files": named, "rows": written.rows}
        delta["has_bank_statement"] = written.has_bank_statement
        if written.absent:  # recorded only when the day lacked columns: older records hold none
            delta["absent"] = written.absent
        record = {
            **{k: v for k, v in base.items() if k != "families"},
            "import_id": int(import_id),
            "files": {**files, **state},
            "deltas": [*(base.get("deltas") or []), delta],
        }
    if written.families is not None:
        record["families"] = written.families
    kept = {e["file"] for e in record["files"].values()}
    kept |= {e["file"] for d in record.get("deltas", []) for e in d["files"].values()}
    for path in written.folder.iterdir():
        if _NAME.match(path.name) and path.name not in kept and path.is_file():
            path.unlink(missing_ok=True)
    return record


def discard(written: Written) -> None:
    """Remove written files that will not be named (the run failed)."""
    for temporary, _ in written.files.values():
        temporary.unlink(missing_ok=True)


def write_snapshot(
    folder: Path,
    run_id: int,
    import_id: int,
    dataset: Dataset,
    outcomes: pd.DataFrame,
    state: IncrementalState | None = None,
) -> dict[str, Any]:
    """Write the frames of run `run_id` to `folder` (created if missing); returns the
    record to store in the run's snapshot_json. Other runs' snapshot files are removed
    afterwards (only the latest run's is ever used)."""
    written = write_files(folder, dataset, outcomes, state)
    try:
        return name_files(written, run_id, import_id)
    finally:
        discard(written)


def _read(folder: Path, entry: dict[str, str]) -> pd.DataFrame | pa.Table | str:
    """The frame of one snapshot file (state files as Arrow tables), or why not (missing,
    or its bytes do not hash to the recorded sha256)."""
    name = str(entry.get("file", ""))
    named = _NAME.match(name)
    if not named:
        return f"bad file name {name!r}"
    path = folder / name
    ahead = take_hashed(path)  # hashed while the process started (core.snapshot_ahead)
    if ahead is None:
        try:  # hashed and read without a copy in memory; never through a link or a FIFO
            mapped, _ = map_regular(path)
        except FileNotFoundError:
            return f"{name} is missing"
        except OSError as exc:
            return str(exc) if isinstance(exc, NotRegularFile) else f"{name}: {exc.strerror}"
        ahead = (mapped, hashlib.sha256(mapped).hexdigest())
    data, digest = pa.py_buffer(ahead[0]), ahead[1]
    if digest != entry.get("sha256"):
        return f"{name} does not match the sha256 its run recorded"
    table = ipc.open_file(data).read_all()
    if named.group(2) in STATE_FILES:
        return table
    frame: pd.DataFrame = table.to_pandas()
    return frame


def load_snapshot(
    folder: Path | None,
    record: dict[str, Any] | None,
    import_id: int | None,
    replay: Replay | None = None,
) -> Loaded:
    """The snapshot a run recorded (`record`, its snapshot_json) when it is usable: the
    folder is known, the raw tables still stand at the recorded import (`import_id`: the
    latest import now), and every file is present and hashes to its recorded sha256.
    Days written as deltas are replayed on the whole snapshot in order (`replay`; without
    one such a snapshot is not used)."""
    if folder is None:
        return Loaded(None, "no snapshot folder")
    if not record:
        return Loaded(None, "the base run left no snapshot")
    if record.get("version") != VERSION:
        return Loaded(None, "the snapshot has another format version")
    if import_id is None or record.get("import_id") != import_id:
        return Loaded(None, "data was imported after the snapshot")
    files = record.get("files") or {}
    with_state = set(files) == {*SNAPSHOT_TABLES, *STATE_FILES}
    if set(files) != set(SNAPSHOT_TABLES) and not with_state:
        return Loaded(None, "the snapshot record lists other tables")
    deltas = record.get("deltas") or []
    if any(set(d.get("files") or {}) != set(DELTA_FILES) for d in deltas):
        return Loaded(None, "a delta of the snapshot lists other tables")
    if deltas and replay is None:
        return Loaded(None, "the snapshot has deltas and nothing to replay them")
    entries = [(("", t), e) for t, e in files.items()]
    entries += [((str(i), t), e) for i, d in enumerate(deltas) for t, e in d["files"].items()]
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda entry: _read(folder, entry[1]), entries))
    for frame in got:
        if isinstance(frame, str):
            return Loaded(None, frame)
    read: dict[tuple[str, str], Any] = {
        key: frame for (key, _), frame in zip(entries, got, strict=True)
    }
    frames: dict[str, Any] = {t: read[("", t)] for t in files}
    outcomes = frames.pop("outcomes")
    parts = [frames.pop(name) for name in STATE_FILES if name in frames]
    dataset = Dataset(**frames, has_bank_statement=bool(record.get("has_bank_statement")))
    for i, entry in enumerate(deltas):
        absent = entry.get("absent") or {}
        day = Dataset(
            **{t: read[(str(i), f"day_{t}")] for t in DATASET_TABLES},
            has_bank_statement=bool(entry.get("has_bank_statement")),
            absent=MappingProxyType({t: tuple(c) for t, c in absent.items()}),
        )
        carry = read[(str(i), "carry")]["carry"].to_numpy(dtype=bool)
        assert replay is not None
        dataset, outcomes = replay(dataset, outcomes, Delta(day, read[(str(i), "fresh")], carry))
    state = None
    if with_state:
        from core.engine.incremental import state_from_arrays

        arrays = {name: part.column(name) for part in parts for name in part.column_names}
        state = state_from_arrays(dataset, int(record.get("families", -1)), arrays)
    return Loaded(Snapshot(dataset, outcomes, state), "verified")
