"""Bank statements that overlap, stored side by side (docs/ingest.md, "Statements that
overlap").

Within one folder a bank line's id is `<file name>:<physical line number>` (spec section
3), and `import-day` prefixes its day folder's name. A database that keeps statements
from import to import needs more than that: a finance team downloads "the last 7 days"
every morning, so most lines of a statement were stored already from an earlier one, at
another line number; and another statement's line 7 is not this one's line 7. Upserting
by id alone stored the first kind twice (phantom duplicate credits) and let the second
replace a stored line (a received settlement lost).

So, before a statement is stored into tables that hold others (`import` without
`--replace`, `import-day`, the Data page's import):

- a line is *already stored* when its content (transaction and value date, narration,
  reference, debit, credit, closing balance) is a stored line's: the k-th line of that
  content in its file is known when the tables hold at least k lines of that content. It
  is not stored again; the stored line keeps its id, its outcomes and its exceptions;
- a new line keeps its id unless a stored line (of other content: a known one was dropped)
  holds it; then it takes `<folder>@<content hash>/<file>:<line>`, unique to this import's
  files. A stored line is never replaced by another.

Two identical lines of one file (no closing balance to tell them apart) are two lines, and
a statement showing k of them adds the ones beyond those stored. Statements are assumed
to be downloaded by whole days, as banks offer them; a line edited by hand is a new line
(to replace a statement, import with `--replace`).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, replace
from pathlib import PurePath

import pandas as pd

from core.dataset import BANK_COLUMNS, Dataset
from core.errors import RefusedError

# What makes two statement lines the same line: every column but where the line sits and
# the UTR (read from the narration and reference).
CONTENT_COLUMNS: tuple[str, ...] = tuple(
    c for c in BANK_COLUMNS if c not in ("id", "file", "line_no", "utr")
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class PlacedLines:
    """A dataset's bank lines placed among the stored ones.

    dataset: the dataset without the lines already stored, new lines under ids no stored
    line holds; known: lines dropped as already stored; renamed: new lines given a
    qualified id because a stored line held theirs."""

    dataset: Dataset
    known: int = 0
    renamed: int = 0


def qualifier(location: str, content_hash: str) -> str:
    """`<folder>@<first 8 hex of the content hash>`: the folder's name (letters, digits,
    '.', '_', '-'; 'upload' for the app's uploads) and the import's files."""
    name = "upload" if location.startswith("upload:") else PurePath(location).name
    safe = _UNSAFE.sub("-", name).strip("-")[:40] or "import"
    return f"{safe}@{content_hash[:8]}"


def content_key(bank: pd.DataFrame) -> pd.Series:
    """One text per line of its CONTENT_COLUMNS; a missing value is an empty one (a blank
    reference may come back from storage as either)."""
    key = pd.Series("", index=bank.index, dtype="string")
    for column in CONTENT_COLUMNS:
        key = key + "\x1f" + bank[column].astype("string").fillna("")
    return key


def place_bank_lines(dataset: Dataset, stored: pd.DataFrame, where: str) -> PlacedLines:
    """`dataset` with its bank lines placed among `stored` (the stored bank lines, every
    BANK_COLUMNS column): lines already stored dropped, a new line whose id a stored line
    holds renamed under `where` (`qualifier(...)`). Reads the frames alone."""
    bank = dataset.bank
    if len(bank) == 0 or len(stored) == 0:
        return PlacedLines(dataset)
    key = content_key(bank)
    held = content_key(stored).value_counts()
    rank = key.groupby([bank["file"].astype("string"), key], sort=False).cumcount()
    known = (rank < key.map(held).fillna(0).astype("int64")).to_numpy(dtype=bool)
    new = bank[~known]
    taken = new["id"].isin(set(stored["id"].astype(str))).to_numpy(dtype=bool)
    if taken.any():
        new = new.copy()
        name = new["file"].astype("string").str.rsplit("/", n=1).str[-1]
        line = new["line_no"].astype("int64").astype("string")
        file = (where + "/" + name).astype("string")
        new["file"] = new["file"].astype("string").where(~taken, file)
        new["id"] = new["id"].astype("string").where(~taken, file + ":" + line)
    if not known.any() and not taken.any():
        return PlacedLines(dataset)
    placed = replace(dataset, bank=new.reset_index(drop=True))
    return PlacedLines(placed, int(known.sum()), int(taken.sum()))


def clashes(incoming: pd.DataFrame, stored: pd.DataFrame) -> list[str]:
    """Ids of `incoming` lines that a stored line of other content holds (none once the
    lines were placed, unless another import stored lines meanwhile)."""
    if len(incoming) == 0 or len(stored) == 0:
        return []
    theirs = pd.Series(content_key(stored).to_numpy(), index=stored["id"].astype(str))
    ours = pd.Series(content_key(incoming).to_numpy(), index=incoming["id"].astype(str))
    common = ours.index.intersection(theirs.index)
    return sorted(i for i in common if theirs[i] != ours[i])


def place_among_stored(
    conn: sqlite3.Connection, dataset: Dataset, location: str, content_hash: str
) -> PlacedLines:
    """`place_bank_lines` against the bank lines the database holds (read only when the
    dataset has lines)."""
    from core.db.raw import read_bank_lines

    if len(dataset.bank) == 0:
        return PlacedLines(dataset)
    where = qualifier(location, content_hash)
    return place_bank_lines(dataset, read_bank_lines(conn), where)


def refuse_clashes(conn: sqlite3.Connection, dataset: Dataset) -> None:
    """Inside the import's transaction: raise RefusedError (nothing written) when a stored
    line of other content holds one of the dataset's line ids, i.e. another import stored
    lines after these were placed."""
    from core.db.raw import read_bank_lines

    if len(dataset.bank) == 0:
        return
    bad = clashes(dataset.bank, read_bank_lines(conn))
    if bad:
        raise RefusedError(
            f"bank line {bad[0]} ({len(bad)} in all) is held by a stored line of other"
            " content: another import stored bank lines while this one was prepared (import"
            " again), or these files were imported before with another bank mapping (import"
            " with --replace); nothing written"
        )
