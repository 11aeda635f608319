"""The base run's snapshot files hashed while `import-day` starts up (core.__main__).

The process spends its first ~0.5 s importing pandas, NumPy and Arrow on one core; the
sha256 of the snapshot files (~0.7 CPU s for 800 MB at 1M payments) needs none of them, so
a thread started before those imports hashes the files the database names for its latest
completed run. `core.snapshots` then takes a file's memory map and digest from here instead
of hashing it again, when the file is still the one that was hashed (same device, inode,
size and modification time); anything else is hashed as before. A wrong guess (another base
run, a snapshot not used) costs only the hashing. Imports nothing heavy: the standard
library only.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import stat as stat_mode
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from core.file_kinds import NotRegularFile

# A file's identity as hashed: (device, inode, size, modification time in ns).
Identity = tuple[int, int, int, int]
_AHEAD: dict[str, Future[tuple[mmap.mmap, str, Identity]]] = {}


def _identity(stat: os.stat_result) -> Identity:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def map_regular(path: Path) -> tuple[mmap.mmap, Identity]:
    """A read-only memory map of `path` and its identity, when it is a regular file. Opened
    without following a symbolic link and without blocking, so a FIFO or device put in a
    snapshot file's place is refused (NotRegularFile), never waited on; an empty file
    (nothing to map) is refused too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            raise NotRegularFile(
                path, "a symbolic link", f"{path.name} is a symbolic link, not a regular file"
            ) from exc
        raise
    try:
        stat = os.fstat(fd)
        if not stat_mode.S_ISREG(stat.st_mode):
            raise NotRegularFile(path, "not a regular file", f"{path.name} is not a regular file")
        if stat.st_size == 0:
            raise NotRegularFile(path, "an empty file", f"{path.name} is empty")
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ), _identity(stat)
    finally:
        os.close(fd)


def _hash(path: Path) -> tuple[mmap.mmap, str, Identity]:
    mapped, identity = map_regular(path)
    return mapped, hashlib.sha256(mapped).hexdigest(), identity


def hash_ahead(paths: list[Path]) -> None:
    """Start hashing `paths` on a thread (hashlib releases the GIL). One thread: the imports
    keep the other core of two (with two, they slowed as much as the hashing saved)."""
    pool = ThreadPoolExecutor(1, "snapshot-ahead")
    for path in paths:
        _AHEAD[str(path.resolve())] = pool.submit(_hash, path)
    pool.shutdown(wait=False)


def take(path: Path) -> tuple[mmap.mmap, str] | None:
    """The memory map and sha256 of `path` hashed ahead, when it was and the file is still
    the one hashed; None otherwise (hash it now)."""
    pending = _AHEAD.pop(str(path.resolve()), None) if _AHEAD else None
    if pending is None:
        return None
    try:
        mapped, digest, identity = pending.result()
        if _identity(path.stat()) != identity:
            return None
    except (OSError, ValueError):
        return None
    return mapped, digest


def snapshot_paths(database: str, folder: str | None) -> list[Path]:
    """The files of the snapshot the latest completed run of the SQLite file `database`
    recorded, in `folder` (default `<database>.snapshots`); [] when there is none or the
    database cannot be read (read-only, nothing written)."""
    from core.db.early import latest_snapshot_record

    if not os.path.isfile(database):
        return []
    where = Path(folder) if folder else Path(database + ".snapshots")
    if not folder and where.is_symlink():
        return []  # refused by the run (core.pipeline.snapshot_folder): nothing read through it
    record = latest_snapshot_record(database)
    entries = [*dict(record.get("files") or {}).values()]
    for delta in record.get("deltas") or []:
        entries += [*dict(delta.get("files") or {}).values()]
    names = [str(entry.get("file", "")) for entry in entries if isinstance(entry, dict)]
    return [where / name for name in names if name and Path(name).name == name]
