"""The exception lifecycle: sync from engine runs, idempotent human decisions, reads.

See core.review.actions for the legal moves and core.review.due for the due-date rule.
"""

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
from core.review.approvals import Approval, approve, list_approvals, pending_for, reject
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
    "working_days_for",
]
