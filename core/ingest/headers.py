"""Header names compared the way bank statements need: ignoring case, spaces, punctuation;
`BankMapping`, the value a saved mapping is (made and saved by `core.ingest.mappings`,
read by `core.ingest.bank`, which therefore need not import each other in a circle); and
the one message every importer gives for a header that names a column twice."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import Problem

SIGNATURE_SEPARATOR = "|"


@dataclass(frozen=True)
class BankMapping:
    """A saved mapping: name, the header's signature, (field, header name) pairs, the header
    cells as written, and its version (0 before it is saved)."""

    name: str
    signature: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]
    header: tuple[str, ...]
    version: int = 0

    @property
    def signature_text(self) -> str:
        return SIGNATURE_SEPARATOR.join(self.signature)

    def describe(self) -> str:
        pairs = ", ".join(f"{name}={field}" for field, name in self.fields)
        return f"{self.name!r} v{self.version}: {pairs}"


def header_key(name: str) -> str:
    """'Deposit Amount (INR )' -> 'depositamountinr'; 'Chq./Ref.No.' -> 'chq/refno'."""
    return re.sub(r"[^a-z0-9/]", "", name.replace("\ufeff", "").lower())


def header_signature(cells: Sequence[str]) -> tuple[str, ...]:
    """A header row as `header_key` makes its cells, without trailing empty cells (padding).
    Two header rows with the same signature name the same columns in the same order."""
    keys = [header_key(c) for c in cells]
    while keys and not keys[-1]:
        keys.pop()
    return tuple(keys)


def repeated_column(
    file: str, line: int, position: int, name: str, first: int, first_name: str, field: str
) -> Problem:
    """A header cell (0-based `position`) that names the same column (`field`) as the cell at
    `first`: `payments.csv:1:7: column 'amount' appears twice (first at column 4): ...`, or
    `column 'Payment ID' is the same column as 'id' at column 1 (both read as 'id'): ...`.
    The column is a number here: the name alone could be either cell."""
    name, first_name = name.strip(), first_name.strip()
    said = (
        f"column {name!r} appears twice (first at column {first + 1})"
        if name == first_name
        else f"column {name!r} is the same column as {first_name!r} at column {first + 1}"
        f" (both read as {field!r})"
    )
    return Problem(
        file, line, str(position + 1), f"{said}: refused rather than read one of the two"
    )
