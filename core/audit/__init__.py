"""The append-only, hash-chained audit trail: append, verify, query, export."""

from core.audit.anchor import Anchor, read_anchors, write_anchor
from core.audit.chain import (
    GENESIS_HASH,
    AuditEntry,
    AuditEvent,
    VerifyResult,
    append,
    append_many,
    append_many_beside,
    canonical_json,
    count,
    export,
    filter_values,
    has_entry,
    parse_time,
    query,
    row_hash,
    verify,
    write_export,
)
from core.db.audit import AuditFilter

__all__ = [
    "GENESIS_HASH",
    "Anchor",
    "AuditEntry",
    "AuditEvent",
    "AuditFilter",
    "VerifyResult",
    "append",
    "append_many",
    "append_many_beside",
    "canonical_json",
    "count",
    "export",
    "filter_values",
    "has_entry",
    "parse_time",
    "query",
    "read_anchors",
    "row_hash",
    "verify",
    "write_anchor",
    "write_export",
]
