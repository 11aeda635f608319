"""SQL of comments and attachments on an exception (migration 0085; core.review.comments)."""

from __future__ import annotations

import sqlite3

COMMENT_COLUMNS = ("id", "exception_id", "event_id", "author", "created_at", "body", "body_sha256")
ATTACHMENT_COLUMNS = (
    "id",
    "exception_id",
    "comment_id",
    "author",
    "created_at",
    "filename",
    "media_type",
    "size",
    "sha256",
)


def insert_comment(
    conn: sqlite3.Connection,
    *,
    exception_id: int,
    event_id: int,
    request_id: str,
    author: str,
    created_at: int,
    body: str,
    body_sha256: str,
) -> int:
    cursor = conn.execute(
        "INSERT INTO review_comments (exception_id, event_id, request_id, author, created_at,"
        " body, body_sha256) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (exception_id, event_id, request_id, author, created_at, body, body_sha256),
    )
    return int(cursor.fetchall()[0][0])


def insert_attachment(
    conn: sqlite3.Connection,
    *,
    exception_id: int,
    comment_id: int,
    author: str,
    created_at: int,
    filename: str,
    media_type: str,
    sha256: str,
    content: bytes,
) -> int:
    cursor = conn.execute(
        "INSERT INTO review_attachments (exception_id, comment_id, author, created_at,"
        " filename, media_type, size, sha256, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " RETURNING id",
        (
            exception_id,
            comment_id,
            author,
            created_at,
            filename,
            media_type,
            len(content),
            sha256,
            sqlite3.Binary(content),
        ),
    )
    return int(cursor.fetchall()[0][0])


def count_attachments(conn: sqlite3.Connection, exception_id: int) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM review_attachments WHERE exception_id = ?", (exception_id,)
    ).fetchone()
    return int(row[0])


def comments_of(conn: sqlite3.Connection, exception_id: int) -> list[sqlite3.Row]:
    """An exception's comments, oldest first."""
    cols = ", ".join(COMMENT_COLUMNS)
    return conn.execute(
        f"SELECT {cols} FROM review_comments WHERE exception_id = ? ORDER BY id",
        (exception_id,),
    ).fetchall()


def attachments_of(conn: sqlite3.Connection, exception_id: int) -> list[sqlite3.Row]:
    """An exception's attachments (without their bytes), oldest first."""
    cols = ", ".join(ATTACHMENT_COLUMNS)
    return conn.execute(
        f"SELECT {cols} FROM review_attachments WHERE exception_id = ? ORDER BY id",
        (exception_id,),
    ).fetchall()


def attachment_content(conn: sqlite3.Connection, attachment_id: int) -> sqlite3.Row | None:
    """(id, exception_id, filename, media_type, size, sha256, content) of one attachment."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT id, exception_id, filename, media_type, size, sha256, content"
        " FROM review_attachments WHERE id = ?",
        (attachment_id,),
    ).fetchone()
    return row
