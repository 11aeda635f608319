"""The exception lifecycle: sync from engine runs, idempotent human decisions, reads.

See core.review.actions for the legal moves and core.review.due for the due-date rule.

Each name loads its module on first use (PEP 562 `__getattr__`): `python -m core
import-day` syncs the queue through core.review.sync and never loads the actions,
approvals and comments (nor core.access behind them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_getattr

if TYPE_CHECKING:
    from core.review.actions import (
        RESOLUTIONS,
        TRANSITIONS,
        act,
        assign,
        bulk_assign,
        bulk_escalate,
        comment,
        escalate,
        mark_investigated,
        reopen,
        resolve,
    )
    from core.review.approvals import (
        Approval,
        approve,
        list_approvals,
        pending_for,
        reject,
        withdraw,
    )
    from core.review.comments import (
        Attachment,
        Comment,
        CommentResult,
        NewAttachment,
        add_comment,
        attachment,
        list_comments,
    )
    from core.review.due import due_date, working_days_for
    from core.review.model import (
        STATUSES,
        ActionResult,
        BulkResult,
        ExceptionEvent,
        ExceptionRecord,
    )
    from core.review.queries import (
        audit_trail,
        count_exceptions,
        get_exception,
        history,
        list_exceptions,
    )
    from core.review.sync import SyncSummary, sync_exceptions

# module -> the names this package exports from it
_MODULES = {
    "core.review.actions": (
        "RESOLUTIONS",
        "TRANSITIONS",
        "act",
        "assign",
        "bulk_assign",
        "bulk_escalate",
        "comment",
        "escalate",
        "mark_investigated",
        "reopen",
        "resolve",
    ),
    "core.review.approvals": (
        "Approval",
        "approve",
        "list_approvals",
        "pending_for",
        "reject",
        "withdraw",
    ),
    "core.review.comments": (
        "Attachment",
        "Comment",
        "CommentResult",
        "NewAttachment",
        "add_comment",
        "attachment",
        "list_comments",
    ),
    "core.review.due": (
        "due_date",
        "working_days_for",
    ),
    "core.review.model": (
        "STATUSES",
        "ActionResult",
        "BulkResult",
        "ExceptionEvent",
        "ExceptionRecord",
    ),
    "core.review.queries": (
        "audit_trail",
        "count_exceptions",
        "get_exception",
        "history",
        "list_exceptions",
    ),
    "core.review.sync": (
        "SyncSummary",
        "sync_exceptions",
    ),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}


__getattr__ = lazy_getattr(__name__, globals(), _WHERE)


__all__ = [
    "RESOLUTIONS",
    "STATUSES",
    "TRANSITIONS",
    "ActionResult",
    "Approval",
    "Attachment",
    "BulkResult",
    "Comment",
    "CommentResult",
    "ExceptionEvent",
    "ExceptionRecord",
    "NewAttachment",
    "SyncSummary",
    "act",
    "add_comment",
    "approve",
    "assign",
    "attachment",
    "audit_trail",
    "bulk_assign",
    "bulk_escalate",
    "comment",
    "count_exceptions",
    "due_date",
    "escalate",
    "get_exception",
    "history",
    "list_approvals",
    "list_comments",
    "list_exceptions",
    "mark_investigated",
    "pending_for",
    "reject",
    "reopen",
    "resolve",
    "sync_exceptions",
    "withdraw",
    "working_days_for",
]
