"""Header names compared the way bank statements need: ignoring case, spaces, punctuation;
and `BankMapping`, the value a saved mapping is (made and saved by `core.ingest.mappings`,
read by `core.ingest.bank`, which therefore need not import each other in a circle)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

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
