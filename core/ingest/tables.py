"""What each Razorpay input table holds: columns, kinds, which are required, defaults.

The output columns and dtypes are `core.dataset`'s; this module adds how to read them.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.dataset import (
    DISPUTE_COLUMNS,
    DISPUTE_STATUSES,
    INSTANT_PAYOUT_COLUMNS,
    INSTANT_PAYOUT_STATUSES,
    INSTANT_SETTLEMENT_COLUMNS,
    INSTANT_SETTLEMENT_STATUSES,
    PAYMENT_COLUMNS,
    PAYMENT_STATUSES,
    RECON_COLUMNS,
    RECON_TYPES,
    REFUND_COLUMNS,
    REFUND_STATUSES,
    SETTLEMENT_COLUMNS,
    SETTLEMENT_STATUSES,
    TRANSFER_COLUMNS,
    TRANSFER_STATUS_UNKNOWN,
    TRANSFER_STATUSES,
)


@dataclass(frozen=True)
class ColumnSpec:
    """How to read one column.

    name: the API field name (and the Dataset column).
    kind: 'text', 'money', 'time', 'bool', 'choice' or 'notes'.
    required: an empty cell (or a missing column) is a problem.
    default: value for an empty cell of a non-nullable money/bool/text column.
    choices: allowed lower-case values of a 'choice' column.
    synonyms: (value read, value stored) of a 'choice' column: another name Razorpay
      documents for one of `choices`.
    """

    name: str
    kind: str
    required: bool = False
    default: int | bool | str | None = None
    choices: frozenset[str] | None = None
    synonyms: tuple[tuple[str, str], ...] = ()


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
        ColumnSpec("base_amount", "money"),
        ColumnSpec("settled_by", "text"),
        ColumnSpec("email", "text"),
        ColumnSpec("contact", "text"),
        ColumnSpec("description", "text"),
        ColumnSpec("notes", "notes"),
        ColumnSpec("card_network", "text"),
        ColumnSpec("card_type", "text"),
        ColumnSpec("card_international", "text"),
        ColumnSpec("card_sub_type", "text"),
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
        # "created: the refund is initiated ... displayed only on the Refunds API"
        # (https://razorpay.com/docs/payments/refunds): not final, taken from the balance
        # when made, as pending is.
        ColumnSpec(
            "status",
            "choice",
            required=True,
            choices=REFUND_STATUSES,
            synonyms=(("created", "pending"),),
        ),
        ColumnSpec("created_at", "time", required=True),
        ColumnSpec("base_amount", "money"),
        ColumnSpec("settled_by", "text"),
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
        # The Reports Data Schema gives Status as processed, pending or failed
        # (https://razorpay.com/docs/payments/dashboard/reports/data-schema), the API's
        # entity created, processed or failed: pending is not paid out yet, as created is.
        ColumnSpec(
            "status",
            "choice",
            required=True,
            choices=SETTLEMENT_STATUSES,
            synonyms=(("pending", "created"),),
        ),
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
        ColumnSpec("transfer_id", "text"),
        ColumnSpec("settled_by", "text"),
        ColumnSpec("description", "text"),
        ColumnSpec("notes", "notes"),
    ),
    dtypes=RECON_COLUMNS,
    unique=None,  # a duplicated recon row is a finding, not bad input
)

INSTANT_SETTLEMENTS = TableSpec(
    kind="instant_settlements",
    stem="instant_settlements",
    required_file=False,
    columns=(
        ColumnSpec("id", "text", required=True),
        ColumnSpec("amount_requested", "money", required=True),
        ColumnSpec("amount_settled", "money"),
        ColumnSpec("amount_pending", "money"),
        ColumnSpec("amount_reversed", "money"),
        ColumnSpec("fees", "money"),
        ColumnSpec("tax", "money"),
        ColumnSpec("currency", "text", default="INR"),
        ColumnSpec("status", "choice", required=True, choices=INSTANT_SETTLEMENT_STATUSES),
        ColumnSpec("created_at", "time", required=True),
    ),
    dtypes=INSTANT_SETTLEMENT_COLUMNS,
    unique="id",
)

INSTANT_PAYOUTS = TableSpec(
    kind="instant_payouts",
    stem="instant_settlement_payouts",
    required_file=False,
    columns=(
        ColumnSpec("id", "text", required=True),
        ColumnSpec("instant_settlement_id", "text", required=True),
        ColumnSpec("amount", "money", required=True),
        ColumnSpec("amount_settled", "money"),
        ColumnSpec("fees", "money"),
        ColumnSpec("tax", "money"),
        ColumnSpec("utr", "text"),
        ColumnSpec("status", "choice", required=True, choices=INSTANT_PAYOUT_STATUSES),
        ColumnSpec("created_at", "time", required=True),
        ColumnSpec("processed_at", "time"),
        ColumnSpec("reversed_at", "time"),
    ),
    dtypes=INSTANT_PAYOUT_COLUMNS,
    unique="id",
)

DISPUTES = TableSpec(
    kind="disputes",
    stem="disputes",
    required_file=False,
    columns=(
        ColumnSpec("id", "text", required=True),
        ColumnSpec("payment_id", "text", required=True),
        ColumnSpec("amount", "money", required=True),
        ColumnSpec("currency", "text", default="INR"),
        ColumnSpec("amount_deducted", "money"),
        ColumnSpec("status", "choice", required=True, choices=DISPUTE_STATUSES),
        ColumnSpec("phase", "text"),
        ColumnSpec("reason_code", "text"),
        ColumnSpec("respond_by", "time"),
        ColumnSpec("created_at", "time", required=True),
    ),
    dtypes=DISPUTE_COLUMNS,
    unique="id",
)

TRANSFERS = TableSpec(
    kind="transfers",
    stem="transfers",
    required_file=False,
    columns=(
        ColumnSpec("id", "text", required=True),
        ColumnSpec("source", "text"),
        ColumnSpec("recipient", "text"),
        ColumnSpec("amount", "money", required=True),
        ColumnSpec("currency", "text", default="INR"),
        ColumnSpec("amount_reversed", "money"),
        ColumnSpec(
            "status",
            "choice",
            required=True,
            choices=TRANSFER_STATUSES | {TRANSFER_STATUS_UNKNOWN},
        ),
        ColumnSpec("on_hold", "bool", default=False),
        ColumnSpec("on_hold_until", "time"),
        ColumnSpec("recipient_settlement_id", "text"),
        ColumnSpec("created_at", "time", required=True),
    ),
    dtypes=TRANSFER_COLUMNS,
    unique="id",
)

TABLES: dict[str, TableSpec] = {
    t.kind: t
    for t in (
        PAYMENTS,
        REFUNDS,
        SETTLEMENTS,
        RECON,
        INSTANT_SETTLEMENTS,
        INSTANT_PAYOUTS,
        DISPUTES,
        TRANSFERS,
    )
}
# Dataset attribute for each kind.
DATASET_FIELD = {
    "payments": "payments",
    "refunds": "refunds",
    "settlements": "settlements",
    "settlement_recon": "recon",
    "instant_settlements": "instant_settlements",
    "instant_payouts": "instant_payouts",
    "disputes": "disputes",
    "transfers": "transfers",
}
