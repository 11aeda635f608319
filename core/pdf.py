"""Small PDF documents with fpdf2's core fonts: the close report and the escalation packet.

The core fonts (Helvetica) hold Latin-1 only: `latin1` writes ₹ as "Rs ", the minus sign
and the dashes as "-" (an age bucket "0–7 d" reads "0-7 d"), curly quotes straight, "…"
as "...", "→" as "->", "Σ" as "Sum ", and anything else outside Latin-1 as "?".
`Document.output()` is the same bytes for the same content when a creation date is given
(no clock in the file).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

# Characters the app writes that Latin-1 lacks, and what the core fonts draw instead.
_PLAIN = str.maketrans(
    {
        "₹": "Rs ",
        "−": "-",  # minus sign
        "–": "-",  # en dash
        "—": "-",  # em dash
        "‘": "'",
        "’": "'",
        "“": '"',
        "”": '"',
        "…": "...",
        "→": "->",
        "Σ": "Sum ",
        "\u2060": "",  # word joiner (ui.format.md)
    }
)


def latin1(text: str) -> str:
    """`text` as the core fonts can draw it."""
    return text.translate(_PLAIN).encode("latin-1", "replace").decode("latin-1")


class Document:
    """An A4 document: a title, titled sections of label/value rows, paragraphs, tables."""

    def __init__(self, *, created: dt.datetime | None = None) -> None:
        from fpdf import FPDF

        self.doc: Any = FPDF()
        if created is not None:
            self.doc.set_creation_date(created)
        self.doc.set_auto_page_break(True, margin=15)
        self.doc.add_page()

    def title(self, text: str) -> None:
        self.doc.set_font("Helvetica", "B", 14)
        self.doc.cell(0, 8, latin1(text), new_x="LMARGIN", new_y="NEXT")

    def heading(self, text: str) -> None:
        self.doc.set_font("Helvetica", "B", 11)
        self.doc.cell(0, 7, latin1(text), new_x="LMARGIN", new_y="NEXT")

    def section(
        self, title: str, rows: Sequence[tuple[str, str]], *, label_width: int = 110
    ) -> None:
        """A heading and label/value lines, values right-aligned."""
        self.heading(title)
        self.doc.set_font("Helvetica", "", 9)
        for label, value in rows:
            self.doc.cell(label_width, 5, latin1(label))
            self.doc.cell(0, 5, latin1(value), align="R", new_x="LMARGIN", new_y="NEXT")

    def facts(self, title: str, rows: Sequence[tuple[str, str]]) -> None:
        """A heading and label/value lines, values left-aligned and wrapped."""
        self.heading(title)
        self.doc.set_font("Helvetica", "", 9)
        room = self.doc.epw - 50
        for label, value in rows:
            self.doc.cell(50, 5, latin1(label))
            text = latin1(value)
            if self.doc.get_string_width(text) < room:  # fits: no line breaking to do
                self.doc.cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
            else:
                self.doc.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")

    def paragraph(self, text: str, *, size: int = 9) -> None:
        self.doc.set_font("Helvetica", "", size)
        self.doc.multi_cell(0, 4.5, latin1(text), new_x="LMARGIN", new_y="NEXT")

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        """A small table, one line per cell wrapped in its column (no column is lost)."""
        if not columns:
            return
        self.doc.set_font("Helvetica", "", 7)
        with self.doc.table(
            text_align="LEFT", line_height=3.5, first_row_as_headings=True
        ) as table:
            header = table.row()
            for name in columns:
                header.cell(latin1(str(name)))
            for values in rows:
                line = table.row()
                for value in values:
                    line.cell(latin1("" if value is None else str(value)))
        self.doc.ln(2)

    def output(self) -> bytes:
        return bytes(self.doc.output())
