"""Header names compared the way bank statements need: ignoring case, spaces, punctuation."""

from __future__ import annotations

import re
from collections.abc import Sequence


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
