"""Razorpay dashboard report layouts: header aliases per table, as data.

Dashboard reports (Reports > download, CSV/XLS/XLSX) name columns by display name ("Payment ID",
"UTR (Unique Transaction Reference)") or, for the Settlement Recon (combined) report, in
snake_case that differs from the API ("transaction_entity", "fee (exclusive tax)"). Each alias
maps a normalised header (`readers.normalise_header`) to the API field name of `tables.TABLES`.
Sources: razorpay.com/docs/payments/dashboard/reports/data-schema (display names) and the
combined report's published sample columns (docs/razorpay-sources.md section 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.ingest.tables import TableSpec

# Extra (derived) columns a reader keeps besides the table's own columns.
FEE_EXCLUSIVE_TAX = "fee_exclusive_tax"  # the combined report's fee before GST
REFUND_PROCESSED_AT = "processed_at"  # a refunds report's processed / settled date
REFUND_SETTLED_AT = "settled_at"
CARD_OBJECT = "card"  # the Payments API's `card` object (expand[]=card), JSON text

ALIASES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "payments": MappingProxyType(
            {
                "payment_id": "id",
                "payment_method": "method",
                "customer_email": "email",
                "customer_contact": "contact",
                "fees": "fee",  # the Payments report's "Fee": tax-inclusive like the API
                "gst": "tax",
                "card_sub-type": "card_sub_type",
                "international_card": "card_international",
            }
        ),
        "refunds": MappingProxyType({"refund_id": "id", "processed_on": "processed_at"}),
        "settlements": MappingProxyType(
            {
                "settlement_id": "id",
                "utr_(unique_transaction_reference)": "utr",
                "unique_transaction_reference": "utr",
                "settlement_utr": "utr",
                "fee": "fees",
            }
        ),
        "settlement_recon": MappingProxyType(
            {
                "transaction_entity": "type",
                "entity_created_at": "created_at",
                "payment_method": "method",
                "entity_description": "description",
                "fee_(exclusive_tax)": FEE_EXCLUSIVE_TAX,
                "fee_exclusive_tax": FEE_EXCLUSIVE_TAX,
            }
        ),
        "instant_settlements": MappingProxyType({"instant_settlement_id": "id"}),
        "instant_payouts": MappingProxyType(
            {"payout_id": "id", "utr_(unique_transaction_reference)": "utr"}
        ),
        "disputes": MappingProxyType({"dispute_id": "id"}),
        "transfers": MappingProxyType(
            {"transfer_id": "id", "source_id": "source", "to_id": "recipient"}
        ),
    }
)

EXTRA_COLUMNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "settlement_recon": (FEE_EXCLUSIVE_TAX,),
        "refunds": (REFUND_PROCESSED_AT, REFUND_SETTLED_AT),
        "payments": (CARD_OBJECT,),
    }
)

REPORT_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "payments": "Payments report",
        "refunds": "Refunds report",
        "settlements": "Settlements report",
        "settlement_recon": "Settlement Recon (combined)",
        "instant_settlements": "Instant Settlements report",
        "instant_payouts": "Instant Settlement Payouts report",
        "disputes": "Disputes report",
        "transfers": "Transfers report",
    }
)

API_JSON = "Razorpay API JSON"
API_COLUMNS = "API field names"


def layout_name(kind: str, fmt: str, written: Mapping[str, str], aliased: bool) -> str:
    """The layout recognised for one file: API JSON, API field names in a table, or a
    dashboard report (when any header was a dashboard name)."""
    if fmt == "json":
        return API_JSON
    if aliased:
        return f"Razorpay dashboard: {REPORT_NAMES.get(kind, kind)}"
    return f"{API_COLUMNS} ({fmt.upper()})"


def wanted_columns(spec: TableSpec) -> list[str]:
    """The columns read from a file of `spec`'s table: its own and the extra columns its
    layouts carry (EXTRA_COLUMNS)."""
    return [c.name for c in spec.columns] + list(EXTRA_COLUMNS.get(spec.kind, ()))
