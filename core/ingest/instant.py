"""Instant (on-demand) settlements nested in Razorpay API JSON.

An item of `settlements.json` whose `entity` is `settlement.ondemand` (or whose id starts
`setlod_`) is an instant settlement: it is routed to the instant_settlements table, never
refused. An instant settlement's `ondemand_payouts` (a collection or a list) become rows of
instant_payouts with `instant_settlement_id` set to their parent's id, both from
`settlements.json` and from `instant_settlements.json`.
Source: razorpay.com/docs/api/settlements/instant/entity (docs/razorpay-sources.md section 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from core.errors import Problem
from core.ingest.readers import (
    RawTable,
    _json_items,
    decode_text,
    json_item_lines,
    table_from_items,
)
from core.ingest.tables import INSTANT_PAYOUTS, INSTANT_SETTLEMENTS, TableSpec

NESTED_KINDS = frozenset({"settlements", "instant_settlements"})
ONDEMAND_ENTITY = "settlement.ondemand"
ONDEMAND_PREFIX = "setlod_"


def is_instant(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    return item.get("entity") == ONDEMAND_ENTITY or str(item.get("id") or "").startswith(
        ONDEMAND_PREFIX
    )


def payouts_of(parent: dict[str, Any]) -> list[dict[str, Any]]:
    """The payouts nested in an instant settlement (`ondemand_payouts`, a collection or a
    list), each with `instant_settlement_id` set to the parent's id unless it has one."""
    nested = parent.get("ondemand_payouts")
    if isinstance(nested, dict):
        nested = nested.get("items")
    if not isinstance(nested, list):
        return []
    found = []
    for payout in nested:
        if isinstance(payout, dict):
            row = dict(payout)
            row.setdefault("instant_settlement_id", parent.get("id"))
            found.append(row)
    return found


def _table(
    spec: TableSpec,
    file: str,
    items: list[Any],
    lines: np.ndarray[Any, Any],
    wanted: Callable[[TableSpec], list[str]],
) -> RawTable:
    notes = [c.name for c in spec.columns if c.kind == "notes"]
    return table_from_items(file, items, wanted(spec), notes, line_finder=lambda: lines, fmt="json")


def read_with_instant(
    spec: TableSpec, file: str, data: bytes, wanted: Callable[[TableSpec], list[str]]
) -> tuple[RawTable, list[tuple[TableSpec, RawTable]]]:
    """The file's own table, and the tables of the instant settlements and payouts inside it."""
    text = decode_text(file, data)
    items = _json_items(file, text)
    lines = json_item_lines(text)
    if len(lines) != len(items):  # a list wrapped otherwise: number the items instead
        lines = np.arange(1, len(items) + 1, dtype=np.int64)
    if spec.kind == "instant_settlements":
        own_rows = list(range(len(items)))
        instant_rows: list[int] = []
        parents = [i for i in own_rows if isinstance(items[i], dict)]
    else:
        instant_rows = [i for i, item in enumerate(items) if is_instant(item)]
        moved = set(instant_rows)
        own_rows = [i for i in range(len(items)) if i not in moved]
        parents = instant_rows
    own = _table(spec, file, [items[i] for i in own_rows], lines[own_rows], wanted)
    extra: list[tuple[TableSpec, RawTable]] = []
    if instant_rows:
        rows = [items[i] for i in instant_rows]
        extra.append(
            (
                INSTANT_SETTLEMENTS,
                _table(INSTANT_SETTLEMENTS, file, rows, lines[instant_rows], wanted),
            )
        )
    payouts: list[dict[str, Any]] = []
    payout_lines: list[int] = []
    for i in parents:
        found = payouts_of(items[i])
        payouts.extend(found)
        payout_lines.extend([int(lines[i])] * len(found))
    if payouts:
        where = np.asarray(payout_lines, dtype=np.int64)
        extra.append((INSTANT_PAYOUTS, _table(INSTANT_PAYOUTS, file, payouts, where, wanted)))
    return own, extra


def merge_routed(
    frames: dict[str, pd.DataFrame], routed: list[tuple[str, pd.DataFrame]]
) -> list[Problem]:
    """Add routed rows to their tables. The same row twice (nested and in its own file) is
    kept once; the same id with different values is a problem."""
    problems: list[Problem] = []
    for attribute, frame in routed:
        current = frames.get(attribute)
        merged = frame if current is None else pd.concat([current, frame], ignore_index=True)
        merged = merged.drop_duplicates(ignore_index=True).astype(frame.dtypes.to_dict())
        repeated = merged["id"][merged["id"].duplicated()].tolist()
        for value in repeated:
            problems.append(
                Problem(attribute, 0, "id", f"{value!r} is given twice with different values")
            )
        frames[attribute] = merged
    return problems
