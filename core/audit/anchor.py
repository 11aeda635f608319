"""Anchors: the chain's head (seq, hash) written outside the database.

A hash chain proves that no row was changed *unless the whole chain from that row on was
recomputed*, which anyone who can write the database file can do (drop the triggers, edit,
rehash, recreate the triggers). An anchor is a head recorded somewhere else: after every run
and every batch of decisions, `write_anchor` appends one JSON line

    {"hash": ..., "hmac": ..., "seq": ..., "time": ...}

to `<db file name>.anchors.jsonl` in the anchor folder: RAZORRECON_ANCHOR_DIR, or by
default a folder beside the database named `<db>.anchors/` (which anyone who can rewrite
the database can rewrite too: point RAZORRECON_ANCHOR_DIR at storage the database's
writers cannot change). `hmac` is HMAC-SHA256, keyed with RAZORRECON_ANCHOR_KEY, over the
canonical JSON of {"hash", "seq", "time"}; without a key it is null, and `audit verify`
says the anchors are unsigned. `audit verify` then requires the chain to hold exactly the
anchored hash at every anchored seq: a rewritten or cut-off chain fails, naming the seq.

Anchors are written at the end of the transaction that appended the entries (before its
commit), so a decision whose anchor cannot be written is not stored either.

The anchor file is opened only as a regular file, without waiting (O_NONBLOCK: a FIFO in
its place would otherwise block the open, and with it the transaction) and without
following a symbolic link at its own path (O_NOFOLLOW: RAZORRECON_ANCHOR_DIR is the one way
to put the anchors elsewhere); anything else there refuses the write (StorageError) and
fails `audit verify`, naming what is there.

In the public demo (RAZORRECON_DEMO=1) neither setting is used: every visitor's copy is
named `sandbox.sqlite`, so they would all share one anchor file in RAZORRECON_ANCHOR_DIR,
and anonymous visitors would get heads of their choosing signed with the deployment's key.
A demo copy's anchors stay in its own private folder (swept with it), unsigned.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from core import demo_mode
from core.db import audit as audit_sql
from core.errors import StorageError
from core.file_kinds import NotRegularFile, kind_of

ANCHOR_KEY_ENV = "RAZORRECON_ANCHOR_KEY"
ANCHOR_DIR_ENV = "RAZORRECON_ANCHOR_DIR"
_TAIL_BYTES = 4096


@dataclass(frozen=True)
class Anchor:
    """One recorded head: seq and hash of the chain's last row, when (Unix seconds), and
    the HMAC over the three (None without a key)."""

    seq: int
    hash: str
    time: int
    hmac: str | None

    def as_json(self) -> dict[str, Any]:
        return {"hash": self.hash, "hmac": self.hmac, "seq": self.seq, "time": self.time}

    def line(self) -> str:
        return json.dumps(self.as_json(), sort_keys=True, separators=(",", ":")) + "\n"


def anchor_key() -> bytes | None:
    """RAZORRECON_ANCHOR_KEY (Streamlit exports top-level secrets as environment
    variables), or None when unset or in the public demo."""
    if demo_mode.enabled():
        return None
    value = os.environ.get(ANCHOR_KEY_ENV, "").strip()
    return value.encode("utf-8") if value else None


def anchor_hmac(seq: int, digest: str, moment: int, key: bytes) -> str:
    message = json.dumps(
        {"hash": digest, "seq": int(seq), "time": int(moment)},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()


def make_anchor(seq: int, digest: str, moment: int | None = None) -> Anchor:
    stamp = int(time.time()) if moment is None else int(moment)
    key = anchor_key()
    return Anchor(seq, digest, stamp, None if key is None else anchor_hmac(seq, digest, stamp, key))


def database_file(conn: sqlite3.Connection) -> Path | None:
    """The file of `conn`'s main database, or None in memory / temporary."""
    name = audit_sql.main_database_file(conn)
    return Path(name) if name else None


def anchor_file(conn: sqlite3.Connection) -> Path | None:
    """Where `conn`'s anchors go (module text); None for a database without a file.

    On PostgreSQL there is no database file to sit beside: anchors go to
    RAZORRECON_ANCHOR_DIR/<host>_<port>_<database>.anchors.jsonl when that is set (a folder
    every app process shares), else nowhere (docs/postgres.md). A file under the name
    written before the host lost its netmask (<host>_32_<port>_<database>) stays in use
    while no file has the current name, so its anchors are neither orphaned nor split."""
    configured = _configured_folder()
    label, legacy = audit_sql.database_labels(conn)
    if label:
        if not configured:
            return None
        current = Path(configured) / f"{label}.anchors.jsonl"
        old = Path(configured) / f"{legacy}.anchors.jsonl"
        if legacy != label and not os.path.lexists(current) and os.path.lexists(old):
            return old
        return current
    database = database_file(conn)
    if database is None:
        return None
    folder = Path(configured) if configured else database.with_name(database.name + ".anchors")
    return folder / f"{database.name}.anchors.jsonl"


def linked_default_folder(path: Path) -> Path | None:
    """The folder of anchor file `path` when it is the default one beside the database
    (RAZORRECON_ANCHOR_DIR unset) and a symbolic link: anchors are not written or read
    through a link (it would put them wherever the link points, e.g. into another
    database's anchors); the setting is the one way to put them elsewhere. Else None."""
    if _configured_folder():
        return None
    return path.parent if path.parent.is_symlink() else None


def _configured_folder() -> str:
    """RAZORRECON_ANCHOR_DIR, or "" when unset or in the public demo (module text)."""
    if demo_mode.enabled():
        return ""
    return os.environ.get(ANCHOR_DIR_ENV, "").strip()


def open_regular(path: Path, flags: int, *, follow: bool = False) -> int:
    """A descriptor of the regular file at `path` opened with `flags` (0o644 when created),
    never blocking on a FIFO, never following a symbolic link at `path` itself unless
    `follow`. Raises NotRegularFile naming what is there instead, else the OSError."""
    extra = os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags | extra, 0o644)
    except OSError as error:
        try:  # ELOOP (a link), EISDIR, ENXIO (a FIFO without a reader): say what is there
            mode = os.stat(path, follow_symlinks=follow).st_mode
        except OSError:
            raise error from None
        if stat.S_ISREG(mode):
            raise
        raise NotRegularFile(path, kind_of(mode)) from error
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, kind_of(mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _last_line(path: Path) -> str | None:
    """The anchor file's last line; None when there is none yet or it cannot be read (the
    write then says why). NotRegularFile when something else is at `path`."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except NotRegularFile:
        raise
    except OSError:  # absent (first anchor) or unreadable
        return None
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - _TAIL_BYTES)
        data = os.pread(fd, size - start, start)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else None


def write_anchor(conn: sqlite3.Connection, *, now: int | None = None) -> Anchor | None:
    """Append the chain's current head to the anchor file (once per head); the anchor, or
    None when there is nothing to anchor (empty trail, database without a file).

    Call it at the end of the transaction that appended entries. Raises StorageError when
    the anchor cannot be written, so that transaction rolls back (fail closed): also when
    a FIFO, a device, a folder or a symbolic link is at the anchor file's path (module
    text)."""
    path = anchor_file(conn)
    top = audit_sql.head(conn)
    if path is None or top is None:
        return None
    seq, digest = top
    anchor = make_anchor(seq, digest, now)
    linked = linked_default_folder(path)
    if linked is not None:
        raise StorageError(
            f"could not write the audit anchor: the anchor folder {linked} is a symbolic link "
            f"(anchors are not written through a link: set {ANCHOR_DIR_ENV} to the folder "
            "they should go to); nothing was stored"
        )
    try:
        last = _last_line(path)
        if last:
            try:
                previous = json.loads(last)
                if previous.get("seq") == seq and previous.get("hash") == digest:
                    return None  # this head is anchored already
            except ValueError:
                pass  # a damaged last line: verify reports it; write the new head anyway
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, anchor.line().encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
    except NotRegularFile as error:
        if error.kind == "a symbolic link":
            advice = (
                f"anchors are not written through a link: set {ANCHOR_DIR_ENV} to the folder "
                "they should go to"
            )
        else:
            advice = f"remove it, or set {ANCHOR_DIR_ENV} to a folder for the anchors"
        raise StorageError(
            f"could not write the audit anchor: {error} ({advice}); nothing was stored"
        ) from error
    except OSError as error:
        raise StorageError(
            f"could not write the audit anchor to {path}: {error.strerror or error} "
            f"(set {ANCHOR_DIR_ENV} to a writable folder); nothing was stored"
        ) from error
    return anchor


def open_anchor_text(path: Path, *, follow: bool = False) -> TextIO:
    """The anchor file at `path` opened to read its lines, as write_anchor opens it: only
    a regular file, without blocking, not through a symbolic link at `path` unless
    `follow` (a file named by hand). Raises NotRegularFile, FileNotFoundError (none yet)
    or the OSError. The caller closes it."""
    fd = open_regular(path, os.O_RDONLY, follow=follow)
    return os.fdopen(fd, "r", encoding="utf-8", errors="replace")


@dataclass(frozen=True)
class AnchorCheck:
    """The anchors as read for `verify`: seq -> hash to require, how many lines, problems
    with the file itself (line number and what), and whether all were signed."""

    required: dict[int, str]
    lines: int
    problems: tuple[str, ...]
    unsigned: int
    path: Path | None


def read_anchors(conn: sqlite3.Connection, path: Path | None = None) -> AnchorCheck:
    """Read and authenticate the anchor file of `conn` (or `path`). With a key set every
    line must carry its valid HMAC; a line that does not is a problem (edited anchors)."""
    target = path if path is not None else anchor_file(conn)
    key = anchor_key()
    required: dict[int, str] = {}
    problems: list[str] = []
    unsigned = 0
    count = 0
    if target is None:
        return AnchorCheck(required, 0, (), 0, target)
    linked = linked_default_folder(target) if path is None else None
    if linked is not None:
        problem = (
            f"the anchor folder {linked} is a symbolic link; anchors are not read through a "
            f"link (set {ANCHOR_DIR_ENV} to the folder they are in)"
        )
        return AnchorCheck(required, 0, (problem,), 0, target)
    try:
        # A file named by hand (--anchors) may be a link; the configured path may not.
        handle = open_anchor_text(target, follow=path is not None)
    except (FileNotFoundError, NotADirectoryError):  # no anchors yet: verify warns
        return AnchorCheck(required, 0, (), 0, target)
    except OSError as error:  # a FIFO, a device, a folder, a link, no permission
        where = "" if path is not None else f" (set {ANCHOR_DIR_ENV} to move the anchors)"
        problem = f"the anchor file cannot be read: {error}{where}"
        return AnchorCheck(required, 0, (problem,), 0, target)
    with handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            count += 1
            try:
                item = json.loads(text)
                seq, digest, moment = int(item["seq"]), str(item["hash"]), int(item["time"])
                mac = item.get("hmac")
            except (ValueError, KeyError, TypeError):
                problems.append(f"anchor line {number} is not an anchor")
                continue
            if mac is None:
                unsigned += 1
                if key is not None:
                    problems.append(
                        f"anchor line {number} (seq {seq}) is not signed although "
                        f"{ANCHOR_KEY_ENV} is set"
                    )
                    continue
            elif key is not None and not hmac.compare_digest(
                str(mac), anchor_hmac(seq, digest, moment, key)
            ):
                problems.append(
                    f"anchor line {number} (seq {seq}): HMAC does not match "
                    "(the anchor file was edited, or the key changed)"
                )
                continue
            if required.get(seq, digest) != digest:
                problems.append(f"anchor line {number}: seq {seq} anchored with two hashes")
                continue
            required[seq] = digest
    return AnchorCheck(required, count, tuple(problems), unsigned, target)
