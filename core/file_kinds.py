"""What is at a path, in words, for a message that refuses it ("... is a FIFO, not a
regular file"): the anchor file (core.audit.anchor) and a snapshot file's final name
(core.snapshots). The standard library only."""

from __future__ import annotations

import stat


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
