"""What the PDFs' core font (Helvetica, Latin-1) draws of the app's punctuation."""

from __future__ import annotations

import re
import zlib

from core.pdf import Document, latin1
from core.views.overview import AGE_LABELS


def _page_text(pdf: bytes) -> bytes:
    """The page content streams of a PDF, inflated."""
    streams = re.findall(rb"stream\r?\n(.*?)\r?\nendstream", pdf, flags=re.S)
    out = b""
    for body in streams:
        try:
            out += zlib.decompress(body)
        except zlib.error:
            out += body
    return out


def test_close_report_age_buckets_keep_their_dash_in_the_pdf() -> None:
    doc = Document()
    doc.table(["Age", "Open"], [[label, "1"] for label in AGE_LABELS])
    text = _page_text(doc.output())
    assert b"0-7 d" in text and b"16-30 d" in text
    assert b"0?7" not in text


def test_common_punctuation_is_drawn_not_replaced_by_a_question_mark() -> None:
    for sample in ("0–7 d", "a — b", "wait…", "1 → 2", "‘quoted’ “text”", "Σ credit − Σ debit"):
        assert "?" not in latin1(sample), sample
    assert latin1("0–7 d") == "0-7 d"
    assert latin1("₹5") == "Rs 5"
