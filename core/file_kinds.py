"""What is at a path, in words, for a message that refuses it ("... is a FIFO, not a
regular file"), and the one error that says so: the audit anchor file (core.audit.anchor),
a snapshot file read (core.snapshot_ahead) or named (core.snapshots). The standard library
only (core.snapshot_ahead runs before the heavy imports)."""

from __future__ import annotations

import stat
from pathlib import Path


class NotRegularFile(OSError):
    """Something other than a regular file is at a path opened or named only as one.
    path: that path; kind: what is there ('a FIFO', 'a device', 'a folder', 'a symbolic
    link', 'a socket', or what else the caller found wrong); the message says so, as the
    caller words it when given."""

    def __init__(self, path: Path, kind: str, message: str | None = None) -> None:
        super().__init__(message or f"{path} is {kind}, not a regular file")
        self.path = path
        self.kind = kind


def kind_of(mode: int) -> str:
    """'a FIFO', 'a device', 'a folder', 'a symbolic link', 'a socket' or 'a regular
    file' for an `st_mode` (of lstat, to name a link as such)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"
