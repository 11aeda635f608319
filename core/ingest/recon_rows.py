"""Row types of the combined settlement recon report that are not recon rows of their own.

- `settlement` rows (the dashboard's Settlement Recon report lists each settlement as a row
  too) are taken out: they cross-check the settlements file, and a settlement missing from it
  is added from the row (`cross_check_settlements`).
- `settlement.ondemand` rows (an instant settlement drawn on the balance, deducted from the
  next regular settlement) stay recon rows of type `adjustment`, with the description saying
  so: their debit counts in that settlement's sum like any adjustment's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.ingest import convert
from core.ingest.readers import RawTable

SETTLEMENT_ROW = "settlement"
ONDEMAND_ROW = "settlement.ondemand"
ONDEMAND_NOTE = "instant settlement (settlement.ondemand)"


def _subset(raw: RawTable, keep: npt.NDArray[np.bool_]) -> RawTable:
    index = np.flatnonzero(keep)
    rows = pa.array(index)

    def lines() -> npt.NDArray[np.int64]:
        return np.asarray(raw.lines(), dtype=np.int64)[index]

    return replace(
        raw,
        columns={k: v.take(rows) for k, v in raw.columns.items()},
        n_rows=len(index),
        line_finder=lines,
        _lines=None,
    )


def split_recon_rows(raw: RawTable) -> tuple[RawTable, RawTable | None]:
    """(the recon rows, with `settlement.ondemand` rewritten as adjustments; the `settlement`
    rows as a settlements table (id, amount, utr, created_at, status), or None if none)."""
    if "type" not in raw.columns or raw.n_rows == 0:
        return raw, None
    kind = pc.utf8_lower(pc.utf8_trim_whitespace(raw.columns["type"]))
    is_settlement = convert.to_bool_numpy(pc.equal(kind, SETTLEMENT_ROW))
    ondemand = convert.to_bool_numpy(pc.equal(kind, ONDEMAND_ROW))
    columns = dict(raw.columns)
    if ondemand.any():
        mask = pa.array(ondemand)
        columns["type"] = pc.if_else(mask, "adjustment", columns["type"])
        described = columns.get("description", pa.nulls(raw.n_rows, pa.string()))
        entity = columns.get("entity_id", pa.nulls(raw.n_rows, pa.string()))
        base = pc.coalesce(convert.clean_strings(described), entity)
        noted = pc.binary_join_element_wise(pa.scalar(ONDEMAND_NOTE), pc.fill_null(base, ""), ": ")
        columns["description"] = pc.if_else(mask, noted, described)
    raw = replace(raw, columns=columns)
    if not is_settlement.any():
        return raw, None
    rows = _subset(raw, is_settlement)
    empty = pa.nulls(rows.n_rows, pa.string())
    settled = rows.columns.get("settled_at", empty)
    created = rows.columns.get("created_at", empty)
    settlement_columns = {
        "id": rows.columns.get("entity_id", empty),
        "amount": rows.columns.get("amount", empty),
        "utr": rows.columns.get("settlement_utr", empty),
        "created_at": pc.coalesce(created, settled),
        "status": pa.array(["processed"] * rows.n_rows, type=pa.string()),
    }
    written = {
        k: raw.column_label(src)
        for k, src in (
            ("id", "entity_id"),
            ("amount", "amount"),
            ("utr", "settlement_utr"),
            ("created_at", "created_at"),
            ("status", "type"),
        )
    }
    settlements = replace(rows, columns=settlement_columns, written_names=written, ignored=())
    return _subset(raw, ~is_settlement), settlements


@dataclass(frozen=True)
class CrossCheck:
    """The settlements after the check, and what the check found."""

    settlements: pd.DataFrame
    added: tuple[str, ...]
    warnings: tuple[str, ...]


def cross_check_settlements(
    settlements: pd.DataFrame | None,
    rows: pd.DataFrame,
    lines: npt.NDArray[np.int64],
    recon_file: str,
) -> CrossCheck:
    """Compare the recon report's settlement rows with the settlements file (which wins).

    A settlement the file lacks is added from its row; a differing amount or UTR is a warning
    naming the recon file's line and both values.
    """
    known = settlements if settlements is not None else rows.iloc[0:0]
    by_id = {sid: i for i, sid in enumerate(known["id"].tolist())}
    warnings: list[str] = []
    missing: list[int] = []
    file_rows: list[dict[Any, Any]] = known.to_dict("records")
    records: list[dict[Any, Any]] = rows.to_dict("records")
    for position, record in enumerate(records):
        sid = record["id"]
        where = f"{recon_file}:{int(lines[position])}"
        index = by_id.get(record["id"])
        if index is None:
            missing.append(position)
            warnings.append(
                f"{where}: settlement {sid} is not in the settlements file:"
                " added from the recon report"
            )
            continue
        file_row = file_rows[index]
        if int(file_row["amount"]) != int(record["amount"]):
            warnings.append(
                f"{where}: settlement {sid} amount {int(record['amount'])} paise in the recon"
                f" report, {int(file_row['amount'])} in the settlements file (the file wins)"
            )
        ours = None if pd.isna(record["utr"]) else str(record["utr"])
        theirs = None if pd.isna(file_row["utr"]) else str(file_row["utr"])
        if ours is not None and ours != theirs:
            warnings.append(
                f"{where}: settlement {sid} UTR {ours} in the recon report,"
                f" {theirs} in the settlements file (the file wins)"
            )
    added = rows.iloc[missing]
    combined = known if not missing else pd.concat([known, added], ignore_index=True)
    combined = combined.astype(rows.dtypes.to_dict())
    return CrossCheck(combined, tuple(added["id"].tolist()), tuple(warnings))
