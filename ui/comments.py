"""The Investigation page's comment thread (core.review.comments).

Each comment shows its author and IST time and its text as text (never Markdown or
HTML); attachments are offered only as downloads (st.download_button, bytes read when
clicked), never shown inline. Reviewers get a form: a text box and a file picker; viewers
read the thread.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

import streamlit as st

from core.db import connect
from core.review import comments as review_comments
from ui import auth, keys, shell
from ui.format import ist, md

ACCEPTED = sorted(review_comments.EXTENSIONS)


def history_records(exception_id: int) -> list[dict[str, Any]]:
    """The exception's history with the files each comment carried (the History table)."""
    return shell.read(review_comments.history, exception_id)


def _size(size: int) -> str:
    return f"{size / 1024:,.0f} KiB" if size >= 1024 else f"{size} bytes"


def _reader(database: str, attachment_id: int) -> Any:
    """A download's bytes, read on Streamlit's download thread with its own connection."""

    def read() -> bytes:
        conn: sqlite3.Connection = connect(database)
        try:
            return review_comments.attachment(conn, attachment_id)
        finally:
            conn.close()

    return read


def thread(exception_id: int) -> None:
    """The comments of the exception, oldest first, then (reviewers) the form."""
    st.markdown("#### Comments")
    comments = shell.read(review_comments.list_comments, exception_id)
    if not comments:
        st.caption("No comments yet.")
    database = auth.database()
    for comment in comments:
        with st.container(border=True):
            st.caption(f"**{md(comment.author)}** · {md(ist(comment.created_at))}")
            st.text(comment.body)
            for item in comment.attachments:
                kind = review_comments.KIND_NAMES.get(item.media_type, item.media_type)
                st.download_button(
                    f"{md(item.filename)} ({md(kind)}, {md(_size(item.size))})",
                    data=_reader(database, item.id),
                    file_name=item.filename,
                    mime=item.media_type,
                    key=f"{keys.COMMENT_DOWNLOAD}-{item.id}",
                    icon=":material/download:",
                    on_click="ignore",
                )
    if not auth.can("review"):
        st.caption("Commenting needs the reviewer role.")
        return
    cap = review_comments.max_attachment_bytes()
    st.text_area("Comment", key=keys.COMMENT_TEXT, height=90)
    nonce = int(st.session_state.get(keys.COMMENT_FILES_NONCE, 0))
    st.file_uploader(
        f"Attachments ({', '.join(ACCEPTED)}; up to {cap // 1024:,} KiB each)",
        type=ACCEPTED,
        accept_multiple_files=True,
        key=f"{keys.COMMENT_FILES}-{nonce}",
        max_upload_size=max(1, math.ceil(cap / (1024 * 1024))),
    )
    st.button(
        "Add comment",
        key=keys.COMMENT_POST,
        icon=":material/add_comment:",
        on_click=post,
        args=(exception_id,),
    )
    shell.show_flash(keys.COMMENT_FLASH)


def post(exception_id: int) -> None:
    """on_click of Add comment: one request id per pending comment (a double click is one
    comment); the box and the file picker empty after it is saved."""
    text = str(st.session_state.get(keys.COMMENT_TEXT) or "").strip()
    if not text:
        shell.flash_at(keys.COMMENT_FLASH, "error", "Write the comment first.")
        return
    nonce = int(st.session_state.get(keys.COMMENT_FILES_NONCE, 0))
    uploads = st.session_state.get(f"{keys.COMMENT_FILES}-{nonce}") or []
    files = [review_comments.NewAttachment(f.name, f.getvalue()) for f in uploads]
    key = f"comment-{exception_id}"
    result = shell.answered(
        key,
        keys.COMMENT_FLASH,
        lambda conn: review_comments.add_comment(
            conn,
            exception_id,
            actor=auth.actor(),
            body=text,
            request_id=shell.request_id(key),
            attachments=files,
        ),
    )
    if result is None:
        return
    st.session_state[keys.COMMENT_TEXT] = ""
    st.session_state[keys.COMMENT_FILES_NONCE] = nonce + 1
    attached = f" with {len(result.attachment_ids)} attachment(s)" if result.attachment_ids else ""
    shell.flash_at(keys.COMMENT_FLASH, "success", f"Comment added{attached}.")
