"""The in-memory shape of a dataset: the contract between the importer and the engine.

A `Dataset` holds one pandas DataFrame per input table with fixed columns and dtypes.
Money columns are int64 paise (nullable `Int64` only where the source may omit them),
times are Unix seconds, booleans are `bool`. The importer builds it from files or from the
database; the engine reads nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported on first use: `reconcile` starts its parse first
    import pandas as pd

# column -> pandas dtype. "string" columns may hold <NA>.
PAYMENT_COLUMNS: dict[str, str] = {
    "id": "string",
    "amount": "int64",
    "currency": "string",
    "status": "string",
    "captured": "bool",
    "order_id": "string",
    "method": "string",
    "fee": "Int64",
    "tax": "Int64",
    "amount_refunded": "int64",
    "international": "bool",
    "created_at": "int64",
    # INR paise Razorpay credited for a payment in another currency (its conversion); null
    # for INR payments or when the source does not give it.
    "base_amount": "Int64",
    # Who settles the payment: null or 'Razorpay' means a Razorpay settlement is expected.
    "settled_by": "string",
    "email": "string",
    "contact": "string",
    "description": "string",
    "notes": "string",
    # The card's details (the API's `card` object, or a report's card columns), for pricing
    # by network and type (docs/books.md); <NA> when not given. card_international is the
    # text 'true' or 'false'.
    "card_network": "string",
    "card_type": "string",
    "card_international": "string",
    "card_sub_type": "string",
}
REFUND_COLUMNS: dict[str, str] = {
    "id": "string",
    "payment_id": "string",
    "amount": "int64",
    "currency": "string",
    "status": "string",
    "created_at": "int64",
    "base_amount": "Int64",  # INR paise of a refund in another currency, converted at refund time
    "settled_by": "string",
    "notes": "string",
}
SETTLEMENT_COLUMNS: dict[str, str] = {
    "id": "string",
    "amount": "int64",
    "status": "string",
    "fees": "Int64",
    "tax": "Int64",
    "utr": "string",
    "created_at": "int64",
}
RECON_COLUMNS: dict[str, str] = {
    "row_key": "string",
    "entity_id": "string",
    "type": "string",
    "debit": "int64",
    "credit": "int64",
    "amount": "int64",
    "currency": "string",
    "fee": "int64",
    "tax": "int64",
    "on_hold": "bool",
    "settled": "bool",
    "created_at": "Int64",
    "settled_at": "Int64",
    "settlement_id": "string",
    "settlement_utr": "string",
    "payment_id": "string",
    "order_id": "string",
    "method": "string",
    "dispute_id": "string",
    "transfer_id": "string",  # a transfer reversal row: the transfer it reverses
    "settled_by": "string",
    "description": "string",
    "notes": "string",
}
# Instant (on-demand) settlements, `settlement.ondemand` (setlod_...), and their payouts
# (`settlement.ondemand_payout`, setlodp_...), each paid to the bank under its own UTR.
INSTANT_SETTLEMENT_COLUMNS: dict[str, str] = {
    "id": "string",
    "amount_requested": "int64",
    "amount_settled": "Int64",
    "amount_pending": "Int64",
    "amount_reversed": "Int64",
    "fees": "Int64",  # fee including GST
    "tax": "Int64",
    "currency": "string",
    "status": "string",
    "created_at": "int64",
}
INSTANT_PAYOUT_COLUMNS: dict[str, str] = {
    "id": "string",
    "instant_settlement_id": "string",
    "amount": "int64",
    "amount_settled": "Int64",
    "fees": "Int64",
    "tax": "Int64",
    "utr": "string",
    "status": "string",
    "created_at": "int64",
    "processed_at": "Int64",
    "reversed_at": "Int64",
}
DISPUTE_COLUMNS: dict[str, str] = {
    "id": "string",
    "payment_id": "string",
    "amount": "int64",
    "currency": "string",
    "amount_deducted": "Int64",
    "status": "string",
    "phase": "string",
    "reason_code": "string",
    "respond_by": "Int64",
    "created_at": "int64",
}
# Route transfers from the merchant's balance to linked accounts (trf_...).
TRANSFER_COLUMNS: dict[str, str] = {
    "id": "string",
    "source": "string",  # the payment (or order) the transfer was made from
    "recipient": "string",
    "amount": "int64",
    "currency": "string",
    "amount_reversed": "Int64",
    "status": "string",
    "on_hold": "bool",
    "on_hold_until": "Int64",
    "recipient_settlement_id": "string",
    "created_at": "int64",
}
BANK_COLUMNS: dict[str, str] = {
    "id": "string",  # '<file name>:<physical line number>'
    "file": "string",
    "line_no": "int64",
    "txn_date": "string",  # ISO date, IST
    "value_date": "string",
    "narration": "string",
    "reference": "string",
    "utr": "string",  # normalised UTR found in reference or narration, else <NA>
    "debit": "int64",
    "credit": "int64",
    "balance": "Int64",
}

# results.csv columns, in order (spec section 7), and the context columns the engine adds
# for the queue (stored in `outcomes`, never written to results.csv).
RESULT_COLUMNS: tuple[str, ...] = (
    "entity_type",
    "entity_id",
    "status",
    "reason_code",
    "reason_codes",
    "settlement_id",
    "expected_amount",
    "actual_amount",
    "difference",
    "exposure_class",
    "exposure_amount",
    "match_method",
)
CONTEXT_COLUMNS: tuple[str, ...] = ("order_id", "utr", "entity_created_at")
OUTCOME_COLUMNS: tuple[str, ...] = RESULT_COLUMNS + CONTEXT_COLUMNS

# The bank statement layout the generator and the export write (HDFC's, spec section 3).
HDFC_HEADER: tuple[str, ...] = (
    "Date",
    "Narration",
    "Chq./Ref.No.",
    "Value Dt",
    "Withdrawal Amt.",
    "Deposit Amt.",
    "Closing Balance",
)

BANK_FILE = "bank_statement.csv"
# The Razorpay files a dataset folder may hold, by stem (spec section 2, and the wider money
# model of docs/engine.md); each as CSV or JSON, or as the dashboard's XLSX/XLS report.
RAZORPAY_STEMS: tuple[str, ...] = (
    "payments",
    "refunds",
    "settlements",
    "settlement_recon",
    "instant_settlements",
    "instant_settlement_payouts",
    "disputes",
    "transfers",
    "reversals",
)
RAZORPAY_SUFFIXES: tuple[str, ...] = (".csv", ".json", ".xlsx", ".xls")
# A bank statement: CSV, HDFC's "Delimited" text, or a spreadsheet.
BANK_FILES: tuple[str, ...] = tuple(
    f"bank_statement{suffix}" for suffix in (".csv", ".txt", ".xlsx", ".xls")
)
# Every file a dataset folder may hold; only these are ever read.
DATASET_FILES: tuple[str, ...] = (
    *(f"{stem}{suffix}" for stem in RAZORPAY_STEMS for suffix in RAZORPAY_SUFFIXES),
    *BANK_FILES,
)

# The Dataset's tables, by attribute name, in a fixed order (hashes, stores, exports).
DATASET_TABLES: tuple[str, ...] = (
    "payments",
    "refunds",
    "settlements",
    "recon",
    "bank",
    "instant_settlements",
    "instant_payouts",
    "disputes",
    "transfers",
)

PAYMENT_STATUSES = frozenset({"created", "authorized", "captured", "refunded", "failed"})
CAPTURED_STATUSES = ("captured", "refunded")  # a payment in these was captured
REFUND_STATUSES = frozenset({"pending", "processed", "failed"})
SETTLEMENT_STATUSES = frozenset({"created", "processed", "failed"})
RECON_TYPES = frozenset({"payment", "refund", "transfer", "adjustment", "reversal"})
INSTANT_SETTLEMENT_STATUSES = frozenset(
    {"created", "initiated", "partially_processed", "processed", "reversed", "failed"}
)
INSTANT_PAYOUT_STATUSES = frozenset(
    {"created", "initiated", "processing", "processed", "reversed", "failed"}
)
DISPUTE_STATUSES = frozenset({"open", "under_review", "won", "lost", "closed"})
TRANSFER_STATUSES = frozenset(
    {"created", "pending", "processed", "failed", "reversed", "partially_reversed"}
)
# A transfer whose status no source has said: the Dashboard's Transfers report has no
# Status column (docs/ingest.md). Not one of Razorpay's statuses: derived for a report row
# without a reversal (and read back from our own `export`); the first status a file, the
# sync or a webhook gives replaces it (core.ingest.lifecycle does not rank it).
TRANSFER_STATUS_UNKNOWN = "unknown"


def empty_frame(columns: dict[str, str]) -> pd.DataFrame:
    """A zero-row DataFrame with the given columns and dtypes."""
    import pandas as pd

    return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in columns.items()})


@dataclass(frozen=True)
class Dataset:
    """One dataset, validated. `has_bank_statement` is False when no bank file was given:
    then the engine makes no bank checks (spec section 5). Disputes and transfers are
    optional tables: while one is empty, the recon rows that would name its entities are
    checked as the spec says for recon rows alone (docs/engine.md).

    `absent`: per table (a field name above), the columns of that table its source did not
    carry (a Razorpay layout without them, e.g. the Dashboard's Payments report has no
    `base_amount`): the frame holds only the column's default or null there. Storing the
    dataset keeps a stored row's values of those columns (docs/ingest.md, "Switching
    layouts"); a new row gets what the frame holds. Empty (the default): every column
    carried.
    """

    payments: pd.DataFrame = field(default_factory=lambda: empty_frame(PAYMENT_COLUMNS))
    refunds: pd.DataFrame = field(default_factory=lambda: empty_frame(REFUND_COLUMNS))
    settlements: pd.DataFrame = field(default_factory=lambda: empty_frame(SETTLEMENT_COLUMNS))
    recon: pd.DataFrame = field(default_factory=lambda: empty_frame(RECON_COLUMNS))
    bank: pd.DataFrame = field(default_factory=lambda: empty_frame(BANK_COLUMNS))
    has_bank_statement: bool = False
    instant_settlements: pd.DataFrame = field(
        default_factory=lambda: empty_frame(INSTANT_SETTLEMENT_COLUMNS)
    )
    instant_payouts: pd.DataFrame = field(
        default_factory=lambda: empty_frame(INSTANT_PAYOUT_COLUMNS)
    )
    disputes: pd.DataFrame = field(default_factory=lambda: empty_frame(DISPUTE_COLUMNS))
    transfers: pd.DataFrame = field(default_factory=lambda: empty_frame(TRANSFER_COLUMNS))
    absent: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def absent_columns(self, table: str) -> tuple[str, ...]:
        """The columns of `table` (a field name) this dataset does not carry; () for all."""
        return self.absent.get(table, ())


def normalise_utr(value: str | None) -> str | None:
    """Upper case, without spaces, dashes, slashes or a leading 'UTR' label (spec section 3)."""
    if value is None:
        return None
    text = str(value).upper()
    for ch in " -/\t":
        text = text.replace(ch, "")
    if text.startswith("UTR"):
        text = text[3:].lstrip(":.#")
    return text or None
