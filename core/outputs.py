"""Where a command writes its output, and cells that are safe to open in a spreadsheet.

Output targets (`--out FILE`, `audit export --out FILE`):

- `-` is standard output;
- a regular file, or a path that does not exist yet, is written to a temporary sibling and
  renamed over the target, so a failure never leaves half a file (a symlink to a regular
  file replaces the file it points to, never the link);
- a character device or a FIFO (a symlink to one included) is written to directly: it is
  never replaced, so `--out /dev/null` run as root keeps /dev/null a device;
- a folder, a block device, a socket or anything else is refused (InputError, exit 2).

The content is written first to a private temporary file (beside a regular target, else in
the temporary folder, named with the writer's pid so that a crashed process's leftovers are
removed at the next start, see `core.db.staging.remove_dead_leftovers`), and put in place
by `place_output` only once everything else has succeeded.

Spreadsheet formulas: a CSV cell whose text begins with `=`, `+`, `-`, `@`, a tab or a
carriage return is read as a formula by Excel, LibreOffice and Google Sheets. Every CSV
export passes its text cells through `safe_cell`, which prefixes them with `'`; numbers
(integer paise) are written as numbers and never prefixed.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import InputError, Problem
from core.leftovers import OUTPUT_PREFIX, pid_alive

STDOUT = "-"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class OutputTarget:
    """A resolved output: kind is 'stdout', 'stream' (a character device or FIFO, written
    directly) or 'file' (a regular file or a new path, replaced atomically); path is the
    file to write (None for stdout); label is what the user named."""

    kind: str
    path: Path | None
    label: str

    @property
    def suffix(self) -> str:
        return Path(self.label).suffix.lower()


def output_target(out: str | Path) -> OutputTarget:
    """Resolve `out` (see the module text); raises InputError for a folder and any other
    kind of file that cannot be a CSV's destination."""
    label = str(out)
    if label == STDOUT:
        return OutputTarget("stdout", None, "standard output")
    path = Path(label)
    try:
        info = os.stat(path)  # follows symlinks: what the link points to counts
    except FileNotFoundError:
        if path.is_symlink():  # a dangling link: write where it points, never over it
            return OutputTarget("file", Path(os.path.realpath(path)), label)
        return OutputTarget("file", path, label)
    except OSError as error:
        raise _refuse(label, f"cannot be examined: {error.strerror or error}") from error
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return OutputTarget("file", Path(os.path.realpath(path)), label)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return OutputTarget("stream", path, label)
    if stat.S_ISDIR(mode):
        raise _refuse(label, "is a folder; name a file to write (or - for standard output)")
    kind = "a block device" if stat.S_ISBLK(mode) else "not a regular file"
    raise _refuse(label, f"is {kind}; name a regular file, a FIFO or - for standard output")


def _refuse(label: str, message: str) -> InputError:
    return InputError([Problem(label, 0, "", message)])


def temporary_for(target: OutputTarget) -> Path:
    """Where to write the content first: a hidden sibling of a regular file (same file
    system, so the rename is atomic), else a private file in the temporary folder. Both
    names carry this process's pid."""
    if target.kind == "file" and target.path is not None:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        _remove_dead_siblings(target.path)
        return target.path.with_name(f".{target.path.name}.{os.getpid()}.tmp")
    handle, name = tempfile.mkstemp(prefix=f"{OUTPUT_PREFIX}{os.getpid()}-", suffix=".tmp")
    os.close(handle)
    return Path(name)


def _remove_dead_siblings(path: Path) -> None:
    """Temporaries `.<name>.<pid>.tmp` that a killed writer left beside this target."""
    for sibling in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = sibling.name[len(path.name) + 2 : -len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            sibling.unlink(missing_ok=True)


def place_output(temporary: Path, target: OutputTarget) -> None:
    """Put the written content in place: rename over a regular file, copy into a stream or
    standard output (never replacing it); the temporary file is gone afterwards."""
    try:
        if target.kind == "file" and target.path is not None:
            # On disk before it replaces the old file: a crash (or the CLI's exit without
            # teardown, core.__main__.exit_now) never leaves a renamed but empty file.
            fd = os.open(temporary, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, target.path)
            return
        with temporary.open("rb") as source:
            if target.kind == "stdout":
                sys.stdout.flush()
                shutil.copyfileobj(source, sys.stdout.buffer)
                sys.stdout.buffer.flush()
            else:
                assert target.path is not None
                # O_WRONLY without O_CREAT/O_TRUNC: a device or FIFO that exists is opened
                # as it is; nothing is ever created or replaced here.
                fd = os.open(target.path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
                with os.fdopen(fd, "wb") as sink:
                    shutil.copyfileobj(source, sink)
    finally:
        temporary.unlink(missing_ok=True)


def safe_cell(value: Any) -> Any:
    """A CSV cell that a spreadsheet will not run: text starting with = + - @ tab or CR
    gets a leading `'`. Numbers and None pass unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_row(values: Any) -> list[Any]:
    return [safe_cell(v) for v in values]
