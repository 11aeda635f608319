"""The shapes an investigation returns: an answer, the attempts behind it, the result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.investigate.evidence import Evidence

DETERMINISTIC = "deterministic"
UNCLASSIFIED = "UNCLASSIFIED"  # a reason code the vocabulary does not know


@dataclass(frozen=True)
class Answer:
    """One explanation of an exception, from the rules or from a model (after checks).

    root_cause: a key of `core.root_causes.ROOT_CAUSES` (or UNCLASSIFIED); confidence:
    0.0-1.0; summary: what happened, citing record ids and ₹ amounts; recommendation: what
    a reviewer should do next; requires_human_review: a person must decide (the answer
    cannot be acted on as routine); citations: the record ids the summary relies on;
    cited_amounts: the integer-paise amounts it relies on. draft_message: a message to
    Razorpay support or the bank, ready to send, where one is due (else ""); journal_entry:
    the entry the books need, where they must move (else ""). Both are optional (a model's
    answer leaves them empty); the deterministic recommendation repeats them in its text.
    """

    root_cause: str
    confidence: float
    summary: str
    recommendation: str
    requires_human_review: bool
    citations: tuple[str, ...] = ()
    cited_amounts: tuple[int, ...] = ()
    draft_message: str = ""
    journal_entry: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "root_cause": self.root_cause,
            "confidence": self.confidence,
            "summary": self.summary,
            "recommendation": self.recommendation,
            "requires_human_review": self.requires_human_review,
            "citations": list(self.citations),
            "cited_amounts": list(self.cited_amounts),
            "draft_message": self.draft_message,
            "journal_entry": self.journal_entry,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Answer:
        return cls(
            root_cause=str(data["root_cause"]),
            confidence=float(data["confidence"]),
            summary=str(data["summary"]),
            recommendation=str(data["recommendation"]),
            requires_human_review=bool(data["requires_human_review"]),
            citations=tuple(str(c) for c in data.get("citations", ())),
            cited_amounts=tuple(int(a) for a in data.get("cited_amounts", ())),
            draft_message=str(data.get("draft_message") or ""),
            journal_entry=str(data.get("journal_entry") or ""),
        )


@dataclass(frozen=True)
class Attempt:
    """One step down the model ladder.

    model: the model's name; outcome: ok, transient (moved on), permanent (stopped),
    skipped (circuit open or budget), discarded (answered but failed the checks), cached;
    detail: the error or reason in plain words; tokens: tokens the step spent.
    """

    model: str
    outcome: str
    detail: str = ""
    tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "outcome": self.outcome,
            "detail": self.detail,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class Investigation:
    """The explanation a reviewer sees, with where it came from.

    exception_id: the exception explained. source: the model's name when a model's
    verified answer is shown, else "deterministic". model: the model's name or None.
    root_cause, confidence, summary, recommendation, requires_human_review, citations,
    cited_amounts: the answer shown (see `Answer`). evidence: the evidence, unredacted,
    for display. fallback_reason: why the deterministic answer is shown (None when a model
    answered). reason_code: the exception's primary code. deterministic_root_cause: what
    the rules conclude, shown alongside a model's answer. rules_summary,
    rules_recommendation: the rules' (deterministic) answer, the same as summary and
    recommendation when it is the one shown; beside a model's answer they let a reviewer
    see the engine's facts whatever the model wrote. evidence_hash: the cache key.
    cached: the model answer came from the cache (no call made). tokens_used: tokens
    spent by this investigation. attempts: each step down the model ladder.
    """

    exception_id: int
    source: str
    model: str | None
    root_cause: str
    confidence: float
    summary: str
    evidence: Evidence
    recommendation: str
    requires_human_review: bool
    fallback_reason: str | None
    citations: tuple[str, ...]
    cited_amounts: tuple[int, ...] = ()
    reason_code: str = ""
    deterministic_root_cause: str = ""
    rules_summary: str = ""
    rules_recommendation: str = ""
    evidence_hash: str = ""
    cached: bool = False
    tokens_used: int = 0
    attempts: tuple[Attempt, ...] = ()

    @property
    def source_label(self) -> str:
        """One line for the UI and CLI: the model, or the fallback and why."""
        if self.source != DETERMINISTIC:
            return f"{self.source}{' (cached)' if self.cached else ''}"
        return f"deterministic ({self.fallback_reason})" if self.fallback_reason else DETERMINISTIC

    def to_dict(self) -> dict[str, Any]:
        return {
            "exception_id": self.exception_id,
            "source": self.source,
            "model": self.model,
            "root_cause": self.root_cause,
            "confidence": self.confidence,
            "summary": self.summary,
            "evidence": self.evidence.to_dict(),
            "recommendation": self.recommendation,
            "requires_human_review": self.requires_human_review,
            "fallback_reason": self.fallback_reason,
            "citations": list(self.citations),
            "cited_amounts": list(self.cited_amounts),
            "reason_code": self.reason_code,
            "deterministic_root_cause": self.deterministic_root_cause,
            "rules_summary": self.rules_summary,
            "rules_recommendation": self.rules_recommendation,
            "evidence_hash": self.evidence_hash,
            "cached": self.cached,
            "tokens_used": self.tokens_used,
            "attempts": [a.to_dict() for a in self.attempts],
        }
