"""The escalation packet's two downloads (PDF, ZIP of CSVs) for one exception.

The packet is made when a button is clicked (Streamlit runs the callable on another
thread, without the session: who and which database are taken now), and each download
is recorded in the audit trail by core.review.packet.export_packet.

core.review.packet is imported when a packet is made, not when the page renders: it pulls
in the investigator (pydantic, the Gemini client), seconds of imports on a session's first
Investigation render (docs/benchmark.md "10M in the app").
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from core.access import Actor
from core.db import connect
from ui import auth, keys


def file_name(exception_id: int, fmt: str) -> str:
    """The packet's download name: core.review.packet.file_name's, without its imports."""
    return f"escalation-{int(exception_id)}.{fmt}"


def _maker(database: str, exception_id: int, fmt: str, actor: Actor) -> Callable[[], bytes]:
    def make() -> bytes:
        from core.review.packet import export_packet

        conn = connect(database)
        try:
            return export_packet(conn, exception_id, fmt, actor=actor)
        finally:
            conn.close()

    return make


def downloads(exception_id: int) -> None:
    """The two buttons, for a reviewer; disabled, with the reason, for anyone else."""
    allowed = auth.can("review")
    actor = auth.actor()
    database = auth.database()
    left, right = st.columns(2)
    left.download_button(
        "Escalation packet (PDF)",
        data=_maker(database, exception_id, "pdf", actor),
        file_name=file_name(exception_id, "pdf"),
        mime="application/pdf",
        key=keys.PACKET_PDF,
        on_click="ignore",
        disabled=not allowed,
        icon=":material/picture_as_pdf:",
        help="Ids, UTR, amounts, dates, evidence, the investigator's answer, the history, "
        "the audit head and a ready-to-send message; customer identifiers masked.",
    )
    right.download_button(
        "Escalation packet (ZIP of CSVs)",
        data=_maker(database, exception_id, "zip", actor),
        file_name=file_name(exception_id, "zip"),
        mime="application/zip",
        key=keys.PACKET_ZIP,
        on_click="ignore",
        disabled=not allowed,
        icon=":material/folder_zip:",
    )
    if not allowed:
        st.caption("The escalation packet needs the reviewer role.")
