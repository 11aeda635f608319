"""The exception lifecycle: sync from engine runs, and idempotent human decisions."""

from core.review.sync import SyncSummary, sync_exceptions

__all__ = ["SyncSummary", "sync_exceptions"]
