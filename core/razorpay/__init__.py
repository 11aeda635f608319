"""Razorpay live data: read-only API sync, export as a dataset, and signed webhooks.

- `sync(conn, settings, date_from, date_to)`: `core.razorpay.sync`
- `export_dataset(conn, out_dir)`: `core.razorpay.export`
- `handle_webhook(conn, body, headers, secret=...)`: `core.razorpay.webhooks`
- `sync_status(conn) -> SyncStatus`: `core.razorpay.status` (the Data page)

Importing this package does not import the SDK; `core.razorpay.sync` does.
"""

from core.razorpay.status import SyncStatus, sync_status

__all__ = ["SyncStatus", "sync_status"]
