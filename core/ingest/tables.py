"""What each Razorpay input table holds: columns, kinds, which are required, defaults.

The output columns and dtypes are `core.dataset`'s; this module adds how to read them.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.dataset import (
    PAYMENT_COLUMNS,
    PAYMENT_STATUSES,
    RECON_COLUMNS,
    RECON_TYPES,
    REFUND_COLUMNS,
    REFUND_STATUSES,
    SETTLEMENT_COLUMNS,
    SETTLEMENT_STATUSES,
)


@dataclass(frozen=True)
class ColumnSpec:
    """How to read one column.

    name: the API field name (and the Dataset column).
    kind: 'text', 'money', 'time', 'bool', 'choice' or 'notes'.
    required: an empty cell (or a missing column) is a problem.
    default: value for an empty cell of a non-nullable money/bool/text column.
    choices: allowed lower-case values of a 'choice' column.
    """

    name: str
    kind: str
    required: bool = False
    default: int | bool | str | None = None
    choices: frozenset[str] | None = None


@dataclass(frozen=True)
class TableSpec:
    """One input table: its dataset name, file stem, whether the file is required, its columns,
    the output dtypes (from core.dataset) and the column that must be unique (if any)."""

    kind: str
    stem: str
    required_file: bool
    columns: tuple[ColumnSpec, ...]
    dtypes: dict[str, str]
    unique: str | None

    @property
    def money_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.kind == "money")

    @property
    def time_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.kind == "time")


PAYMENTS = TableSpec(
    kind="payments",
    stem="payments",
    required_file=True,
    columns=(
        ColumnSpec("id", "text", required=True),
        ColumnSpec("amount", "money", required=True),
        ColumnSpec("currency", "text", default="INR"),
        ColumnSpec("status", "choice", required=True, choices=PAYMENT_STATUSES),
        ColumnSpec("captured", "bool"),  # empty: derived from status (captured/refunded)
        ColumnSpec("order_id", "text"),
        ColumnSpec("method", "text"),
        ColumnSpec("fee", "money"),
        ColumnSpec("tax", "money"),
        ColumnSpec("amount_refunded", "money", default=0),
        ColumnSpec("international", "bool", default=False),
        ColumnSpec("created_at", "time", required=True),
        ColumnSpec("email", "text"),
        ColumnSpec("contact", "text"),
        ColumnSpec("description", "text"),
        ColumnSpec("notes", "notes"),
    ),
    dtypes=PAYMENT_COLUMNS,
    unique="id",
)

REFUNDS = TableSpec(
    kind="refunds",
    stem="refunds",
    required_file=False,
    columns=(
        ColumnSpec("id", "text", required=True),
        ColumnSpec("payment_id", "text", required=True),
        ColumnSpec("amount", "money", required=True),
        ColumnSpec("currency", "text", default="INR"),
        ColumnSpec("status", "choice", required=True, choices=REFUND_STATUSES),
        ColumnSpec("created_at", "time", required=True),
        ColumnSpec("notes", "notes"),
    ),
    dtypes=REFUND_COLUMNS,
    unique="id",
)

SETTLEMENTS = TableSpec(
    kind="settlements",
    stem="settlements",
    required_file=True,
    columns=(
        ColumnSpec("id", "text", required=True),
        ColumnSpec("amount", "money", required=True),
        ColumnSpec("status", "choice", required=True, choices=SETTLEMENT_STATUSES),
        ColumnSpec("fees", "money"),
        ColumnSpec("tax", "money"),
        ColumnSpec("utr", "text"),
        ColumnSpec("created_at", "time", required=True),
    ),
    dtypes=SETTLEMENT_COLUMNS,
    unique="id",
)

RECON = TableSpec(
    kind="settlement_recon",
    stem="settlement_recon",
    required_file=True,
    columns=(
        ColumnSpec("entity_id", "text", required=True),
        ColumnSpec("type", "choice", required=True, choices=RECON_TYPES),
        ColumnSpec("debit", "money", default=0),
        ColumnSpec("credit", "money", default=0),
        ColumnSpec("amount", "money", required=True),
        ColumnSpec("currency", "text", default="INR"),
        ColumnSpec("fee", "money", default=0),
        ColumnSpec("tax", "money", default=0),
        ColumnSpec("on_hold", "bool", default=False),
        ColumnSpec("settled", "bool", default=False),
        ColumnSpec("created_at", "time"),
        ColumnSpec("settled_at", "time"),
        ColumnSpec("settlement_id", "text"),
        ColumnSpec("settlement_utr", "text"),
        ColumnSpec("payment_id", "text"),
        ColumnSpec("order_id", "text"),
        ColumnSpec("method", "text"),
        ColumnSpec("dispute_id", "text"),
        ColumnSpec("description", "text"),
        ColumnSpec("notes", "notes"),
    ),
    dtypes=RECON_COLUMNS,
    unique=None,  # a duplicated recon row is a finding, not bad input
)

TABLES: dict[str, TableSpec] = {t.kind: t for t in (PAYMENTS, REFUNDS, SETTLEMENTS, RECON)}
# Dataset attribute for each kind.
DATASET_FIELD = {
    "payments": "payments",
    "refunds": "refunds",
    "settlements": "settlements",
    "settlement_recon": "recon",
}
