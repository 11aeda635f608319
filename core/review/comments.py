"""Comments and attachments on an exception: a thread, with the author and the time.

`add_comment` writes, in one transaction: a history event ('commented', with the request
id: a commented exception counts as touched, so a run that no longer finds it marks it
"needs review: no longer found" instead of AUTO_CLEARING it, core.review.sync), the
comment, its attachments (small files stored in the database) and one audit entry whose
details carry the body's SHA-256 and every attachment's name, type, size and SHA-256 (the
text itself stays in the thread). Like every review action it needs the reviewer role
(core.access; a refusal is audited), a request id (the same id with the same comment
answers once; with another comment it is refused), and it fails closed: a bad request
raises InputError or RefusedError and writes nothing.

Attachments: a name reduced to its last path part and safe characters; a type sniffed
from the bytes and allowlisted (PDF, PNG, JPEG, CSV, text, XLSX, e-mail .eml), which must
agree with the name's extension; at most RAZORRECON_MAX_ATTACHMENT_KB (default 2048 KiB)
each and RAZORRECON_MAX_ATTACHMENTS (default 20) per exception. Nothing is ever rendered:
the app offers them only as downloads.

Both tables are append-only (migration 0085): a comment is answered, never edited.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sqlite3
import time
import unicodedata
import zipfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from core import access
from core.audit import append, canonical_json, write_anchor
from core.db import comments as comments_sql
from core.db import review as review_sql
from core.db import transaction
from core.errors import ConfigError, InputError, NotFoundError, Problem, RefusedError, StorageError
from core.review.model import (
    ActionResult,
    load_exception,
    payload_hash,
    refuse_other_payload,
)

MAX_BODY = 10_000  # characters; the database refuses more (0085)
MAX_REQUEST_ID = 200
MAX_FILENAME = 120
ATTACHMENT_KB_ENV = "RAZORRECON_MAX_ATTACHMENT_KB"
DEFAULT_ATTACHMENT_KB = 2048
CEILING_ATTACHMENT_KB = 32 * 1024  # the database's own ceiling (0085)
ATTACHMENTS_ENV = "RAZORRECON_MAX_ATTACHMENTS"
DEFAULT_ATTACHMENTS = 20

PDF = "application/pdf"
PNG = "image/png"
JPEG = "image/jpeg"
CSV = "text/csv"
TEXT = "text/plain"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EML = "message/rfc822"
# extension -> the media type its bytes must have
EXTENSIONS = {
    "pdf": PDF,
    "png": PNG,
    "jpg": JPEG,
    "jpeg": JPEG,
    "csv": CSV,
    "txt": TEXT,
    "xlsx": XLSX,
    "eml": EML,
}
MEDIA_TYPES = frozenset(EXTENSIONS.values())
KIND_NAMES = {PDF: "PDF", PNG: "PNG", JPEG: "JPEG", CSV: "CSV", TEXT: "text", XLSX: "XLSX"}
KIND_NAMES[EML] = "e-mail (.eml)"

_KEPT = frozenset(".-_() ")
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # control characters but tab/CR/LF/FF
_HEADER = re.compile(r"^[A-Za-z0-9-]+:")
_MARKUP = re.compile(r"^\s*<\s*(!doctype|html|head|body|script|svg|\?xml|iframe)", re.IGNORECASE)


@dataclass(frozen=True)
class NewAttachment:
    """A file a person attaches: the name they gave it and its bytes."""

    filename: str
    content: bytes


@dataclass(frozen=True)
class Attachment:
    """A stored attachment (its bytes: `attachment(conn, id)`).

    filename: sanitised (no path); media_type: sniffed, allowlisted; size: bytes;
    sha256: hex of the bytes; author/created_at: who attached it and when (Unix seconds).
    """

    id: int
    exception_id: int
    comment_id: int
    author: str
    created_at: int
    filename: str
    media_type: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Comment:
    """One comment of an exception's thread, oldest first in `list_comments`.

    author: the signed-in identity; created_at: Unix seconds (shown in IST); body: the
    text as written (data: show it as text, never as Markdown or HTML); body_sha256: what
    the audit entry carries; event_id: its row in the exception's history.
    """

    id: int
    exception_id: int
    event_id: int
    author: str
    created_at: int
    body: str
    body_sha256: str
    attachments: tuple[Attachment, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CommentResult(ActionResult):
    """The answer to add_comment: an ActionResult (action 'comment'; from_status equals
    to_status, the version stays) with the rows it wrote: comment_id, the attachments'
    ids, and its author and time. replayed: True when this is the stored answer to an
    earlier identical request (nothing was written again)."""

    comment_id: int = 0
    author: str = ""
    created_at: int = 0
    attachment_ids: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, replayed: bool) -> CommentResult:
        fields = {**data, "attachment_ids": tuple(data.get("attachment_ids") or ())}
        return cls(**{**fields, "replayed": replayed})


@dataclass(frozen=True)
class _Prepared:
    filename: str
    media_type: str
    sha256: str
    content: bytes


# -- settings ------------------------------------------------------------------------------


def _whole(env: str, raw: str | None, default: int, *, low: int, high: int) -> int:
    text = (os.environ.get(env, "") if raw is None else raw).strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{env}: {text!r} is not a whole number") from None
    if not low <= value <= high:
        raise ConfigError(f"{env}: {value} is outside {low}..{high}")
    return value


def max_attachment_bytes(value: str | None = None) -> int:
    """The largest attachment accepted: RAZORRECON_MAX_ATTACHMENT_KB KiB (default 2048)."""
    kib = _whole(ATTACHMENT_KB_ENV, value, DEFAULT_ATTACHMENT_KB, low=1, high=CEILING_ATTACHMENT_KB)
    return kib * 1024


def max_attachments(value: str | None = None) -> int:
    """How many attachments one exception may carry: RAZORRECON_MAX_ATTACHMENTS (20)."""
    return _whole(ATTACHMENTS_ENV, value, DEFAULT_ATTACHMENTS, low=0, high=10_000)


# -- checks ----------------------------------------------------------------------------------


def _problem(field: str, message: str) -> InputError:
    return InputError([Problem("comment", 0, field, message)])


def _size_text(size: int) -> str:
    return f"{size / 1024:,.0f} KiB" if size >= 1024 else f"{size} bytes"


def _safe(ch: str) -> bool:
    """Letters, digits and combining marks of any script (राशि keeps its vowel signs)."""
    return ch in _KEPT or unicodedata.category(ch)[0] in "LNM"


def safe_filename(name: str) -> str:
    """The last path part of `name`, without control or formatting characters (no bidi
    tricks), anything but letters, digits, '.', '-', '_', '(', ')' and spaces replaced by
    '_', no leading dot; InputError when nothing usable is left."""
    base = re.split(r"[\\/]", str(name))[-1]
    base = unicodedata.normalize("NFC", base)
    base = "".join(ch for ch in base if not unicodedata.category(ch).startswith("C"))
    base = "".join(ch if _safe(ch) else "_" for ch in base)
    base = re.sub("_+", "_", base)
    base = re.sub(r"\s+", " ", base).strip(" .")
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem.strip(" ._") or not ext:
        raise _problem("attachment", f"{name!r} has no usable file name with an extension")
    if len(base) > MAX_FILENAME:
        base = stem[: MAX_FILENAME - len(ext) - 1].rstrip(" .") + "." + ext
    return base


def _text_kind(content: bytes) -> str | None:
    """The decoded text of a plain UTF-8 file (no NUL or other control bytes), else None."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    return None if _CONTROL.search(text) else text


def _is_xlsx(content: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, ValueError, OSError):
        return False
    workbook = "[Content_Types].xml" in names and "xl/workbook.xml" in names
    return workbook and "xl/vbaProject.bin" not in names  # no macros


def sniff(filename: str, content: bytes) -> str:
    """The media type of an attachment, from its bytes, checked against its name's
    extension and the allowlist; InputError naming the file otherwise."""
    ext = filename.rpartition(".")[2].lower()
    wanted = EXTENSIONS.get(ext)
    if wanted is None:
        allowed = ", ".join(f".{e}" for e in EXTENSIONS)
        raise _problem("attachment", f"{filename}: .{ext} files are not accepted (only {allowed})")
    found: str | None = None
    if content.startswith(b"%PDF-"):
        found = PDF
    elif content.startswith(b"\x89PNG\r\n\x1a\n"):
        found = PNG
    elif content.startswith(b"\xff\xd8\xff"):
        found = JPEG
    elif content.startswith(b"PK\x03\x04"):
        found = XLSX if _is_xlsx(content) else None
    else:
        text = _text_kind(content)
        if text is not None and not _MARKUP.match(text):
            if wanted == EML:
                first = next((line for line in text.splitlines() if line.strip()), "")
                found = EML if _HEADER.match(first) else TEXT
            else:
                found = wanted if wanted in (CSV, TEXT) else TEXT
    if found != wanted:
        what = KIND_NAMES.get(found or "", "") or "not a file type accepted here"
        raise _problem(
            "attachment",
            f"{filename}: the content is {what}, not {KIND_NAMES[wanted]} as its name says",
        )
    return wanted


def _prepare(files: Iterable[NewAttachment | tuple[str, bytes]], cap: int) -> list[_Prepared]:
    prepared: list[_Prepared] = []
    for item in files:
        name, content = (item.filename, item.content) if isinstance(item, NewAttachment) else item
        if not isinstance(content, (bytes, bytearray, memoryview)):
            raise _problem("attachment", f"{name!r}: the content must be bytes")
        data = bytes(content)
        filename = safe_filename(name)
        if not data:
            raise _problem("attachment", f"{filename} is empty")
        if len(data) > cap:
            raise _problem(
                "attachment",
                f"{filename} is {_size_text(len(data))}, over the {cap // 1024:,} KiB limit "
                f"for an attachment ({ATTACHMENT_KB_ENV}); nothing was saved",
            )
        media = sniff(filename, data)
        prepared.append(_Prepared(filename, media, hashlib.sha256(data).hexdigest(), data))
    return prepared


def _body(value: str | None) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise _problem("body", "a comment needs text; it must not be blank")
    if len(text) > MAX_BODY:
        raise _problem("body", f"is {len(text):,} characters, longer than the {MAX_BODY:,} allowed")
    return text


def _request_id(value: str | None) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise _problem("request_id", "is required and must not be blank")
    if len(text) > MAX_REQUEST_ID:
        raise _problem("request_id", f"is longer than {MAX_REQUEST_ID} characters")
    return text


# -- the action ------------------------------------------------------------------------------


def add_comment(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    actor: access.Actor,
    body: str,
    request_id: str,
    attachments: Iterable[NewAttachment | tuple[str, bytes]] = (),
    expected_version: int | None = None,
    now: int | None = None,
) -> CommentResult:
    """Add a comment (and its attachments) to the exception's thread and history.

    Its status, assignee and version stay; `expected_version`, when given, must be the
    exception's version (else refused, like every review action). Raises InputError
    (bad text or file: nothing written), RefusedError (not a reviewer, audited; the
    attachment count over the limit; a stale version; a request id used for something
    else), NotFoundError (no such exception).
    """
    if isinstance(actor, str) and not actor.strip():
        raise _problem("actor", "is required and must not be blank")
    rid = _request_id(request_id)
    text = _body(body)
    files = _prepare(attachments, max_attachment_bytes())
    limit = max_attachments()
    if len(files) > limit:
        raise RefusedError(
            f"{len(files)} attachments in one comment; an exception takes at most {limit} "
            f"({ATTACHMENTS_ENV}); nothing was saved"
        )
    acting = access.require(
        conn,
        actor,
        "review",
        action="comment",
        entity_type="exception",
        entity_id=str(exception_id),
    )
    author = acting.actor
    body_sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    described = [
        {
            "filename": f.filename,
            "media_type": f.media_type,
            "size": len(f.content),
            "sha256": f.sha256,
        }
        for f in files
    ]
    digest = payload_hash(
        {
            "kind": "comment",
            "exception_id": int(exception_id),
            "actor": author,
            "body_sha256": body_sha,
            "attachments": described,
            "expected_version": expected_version,
        }
    )
    stamp = int(time.time()) if now is None else int(now)
    outermost = not conn.in_transaction
    with transaction(conn):
        prior = review_sql.find_request(conn, rid)
        if prior is not None:
            if prior[0] != digest:
                raise refuse_other_payload(rid)
            return CommentResult.from_dict(json.loads(prior[1]), replayed=True)
        exc = load_exception(conn, int(exception_id))
        if expected_version is not None and exc.version != expected_version:
            raise RefusedError(
                f"exception {exc.id} changed since you loaded it: it is at version "
                f"{exc.version}, you had version {expected_version}; it is now {exc.status}. "
                "Reload and comment again."
            )
        if files:
            held = comments_sql.count_attachments(conn, exc.id)
            if held + len(files) > limit:
                raise RefusedError(
                    f"exception {exc.id} has {held} attachment(s); {len(files)} more would pass "
                    f"the limit of {limit} per exception ({ATTACHMENTS_ENV}); nothing was saved"
                )
        event_id = review_sql.insert_event(
            conn, (exc.id, "commented", author, text, exc.status, exc.status, rid, stamp)
        )
        comment_id = comments_sql.insert_comment(
            conn,
            exception_id=exc.id,
            event_id=event_id,
            request_id=rid,
            author=author,
            created_at=stamp,
            body=text,
            body_sha256=body_sha,
        )
        ids = tuple(
            comments_sql.insert_attachment(
                conn,
                exception_id=exc.id,
                comment_id=comment_id,
                author=author,
                created_at=stamp,
                filename=f.filename,
                media_type=f.media_type,
                sha256=f.sha256,
                content=f.content,
            )
            for f in files
        )
        seq = append(
            conn,
            actor=author,
            action="exception.commented",
            entity_type="exception",
            entity_id=str(exc.id),
            payload={
                "request_id": rid,
                "comment_id": comment_id,
                "from_status": exc.status,
                "to_status": exc.status,
                "assignee": exc.assignee,
                "version": exc.version,
                "exposure_class": exc.exposure_class,
                "exposure_amount": exc.exposure_amount,
                "reason_code": exc.reason_code,
                "body_sha256": body_sha,
                "body_chars": len(text),
                "attachments": [{"id": i, **d} for i, d in zip(ids, described, strict=True)],
            },
            now=stamp,
        )
        result = CommentResult(
            request_id=rid,
            action="comment",
            exception_id=exc.id,
            from_status=exc.status,
            to_status=exc.status,
            version=exc.version,
            assignee=exc.assignee,
            event_id=event_id,
            audit_seq=seq,
            comment_id=comment_id,
            author=author,
            created_at=stamp,
            attachment_ids=ids,
        )
        review_sql.record_request(conn, rid, digest, canonical_json(result.to_dict()), stamp)
        if outermost:
            write_anchor(conn, now=stamp)
    return result


# -- reads -----------------------------------------------------------------------------------


def _attachment(row: sqlite3.Row) -> Attachment:
    return Attachment(**{k: row[k] for k in comments_sql.ATTACHMENT_COLUMNS})


def list_comments(conn: sqlite3.Connection, exception_id: int) -> tuple[Comment, ...]:
    """The exception's thread, oldest first, each comment with its attachments (metadata;
    the bytes through `attachment`). Empty for an exception without comments."""
    files: dict[int, list[Attachment]] = {}
    for row in comments_sql.attachments_of(conn, int(exception_id)):
        files.setdefault(int(row["comment_id"]), []).append(_attachment(row))
    return tuple(
        Comment(
            **{k: row[k] for k in comments_sql.COMMENT_COLUMNS},
            attachments=tuple(files.get(int(row["id"]), ())),
        )
        for row in comments_sql.comments_of(conn, int(exception_id))
    )


def attachment(conn: sqlite3.Connection, attachment_id: int) -> bytes:
    """The bytes of one attachment, checked against its stored SHA-256 (StorageError when
    they differ); NotFoundError for an unknown id."""
    row = comments_sql.attachment_content(conn, int(attachment_id))
    if row is None:
        raise NotFoundError(f"attachment {attachment_id} does not exist")
    data = bytes(row["content"])
    if hashlib.sha256(data).hexdigest() != row["sha256"] or len(data) != row["size"]:
        raise StorageError(
            f"attachment {attachment_id} ({row['filename']}) does not match its recorded "
            "SHA-256; it is not served"
        )
    return data


def history(conn: sqlite3.Connection, exception_id: int) -> list[dict[str, Any]]:
    """The exception's history (every event, oldest first, as core.views.exception.exception_history
    gives it) with an `attachments` column, when any comment carried files: the files of
    each comment event, by name, type and size. For the Investigation page's History table."""
    events = [
        dict(zip(r.keys(), tuple(r), strict=True))
        for r in review_sql.events_of(conn, int(exception_id))
    ]
    by_comment = {c.event_id: c for c in list_comments(conn, exception_id)}
    if not any(c.attachments for c in by_comment.values()):
        return events
    for event in events:
        comment = by_comment.get(int(event["id"]))
        event["attachments"] = (
            "; ".join(
                f"{a.filename} ({KIND_NAMES.get(a.media_type, a.media_type)}, {_size_text(a.size)})"
                for a in comment.attachments
            )
            if comment is not None
            else ""
        )
    return events
