"""`investigate(...)`: evidence, the deterministic answer, and (if configured) a model's
answer that survives every check. Never writes financial data or an exception's status.

Order of work: read the exception and gather evidence on a read-only connection; compute
the deterministic answer; if a key is configured, redact the evidence, look up the cache
by its hash, else walk the model ladder (circuit breakers, token budgets, transient errors
move down, permanent ones stop); check the answer (root cause allowed for the codes and
consistent with the sign of the difference, every id and amount in the evidence or a sum or
difference of two evidence amounts, the entity and the difference named); show it, or the
deterministic answer with the reason.
Writes go to the investigator's own tables and the audit trail only.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.calendar import IST, ist_date
from core.db import investigate as db
from core.db import transaction
from core.investigate import gemini
from core.investigate.auditing import record as audit
from core.investigate.deterministic import explain
from core.investigate.evidence import Evidence, gather
from core.investigate.gather import ConnOrPath
from core.investigate.gather import gather_evidence as gather_evidence  # re-exported
from core.investigate.gather import load as _load
from core.investigate.gather import writable as _writable
from core.investigate.prompt import PROMPT_VERSION, SYSTEM_INSTRUCTION, user_message
from core.investigate.redact import Redactor, redact_contact_handles
from core.investigate.result import DETERMINISTIC, Answer, Attempt, Investigation
from core.investigate.tools import ID_FIELDS, EvidenceTools, ToolRefused, ToolResult, run_context
from core.investigate.verify import (
    check_citations,
    clean_model_text,
    direction_contradiction,
    specificity_gap,
    state_contradiction,
    status_claims,
    text_problem,
)
from core.root_causes import causes_for_codes, sign_contradiction

NO_KEY = "no API key configured (set GEMINI_API_KEY or LLM_API_KEY)"
# Tool arguments that name records (kept through redaction like id fields).
_ARG_ID_KEYS = frozenset({"refund_id", "line_id", "exception_id", "entity_type", "date"})


def allowed_causes(exception: Mapping[str, Any]) -> tuple[str, ...]:
    """Root causes a model may name: the primary code's, then the other codes'."""
    return causes_for_codes(str(exception.get("reason_code", "")), exception.get("reason_codes"))


def redact_evidence(
    evidence: Evidence, redactor: Redactor | None = None
) -> tuple[Evidence, Redactor]:
    """The copy of `evidence` that may leave the machine, and the redactor that made it
    (which knows the evidence's ids, UTRs and personal names, for later tool results).
    Ids, UTRs and amounts are kept; personal data in every other string is replaced."""
    records = [evidence.exception, *(r for item in evidence.items for r in item.records)]
    active = (
        redactor.extended(records, ID_FIELDS)
        if redactor is not None
        else Redactor.for_records(records, ID_FIELDS)
    )
    redacted = Evidence(
        exception=active.value(dict(evidence.exception), keep=ID_FIELDS),
        items=tuple(
            ToolResult(
                tool=item.tool,
                args=active.value(dict(item.args), keep=ID_FIELDS | _ARG_ID_KEYS),
                records=tuple(active.value(dict(r), keep=ID_FIELDS) for r in item.records),
                note=item.note,
            )
            for item in evidence.items
        ),
        redacted=True,
    )
    return redacted, active


def model_answer_problem(answer: Answer, redacted: Evidence, allowed: tuple[str, ...]) -> str:
    """Why a model's answer may not be shown (empty: it may): text that hides characters
    from the reader, a root cause outside the codes' causes or against the sign of the
    difference, prose that says the money moved the other way, a claim of a status or an
    approval, a claim about the money's state that the exception's facts contradict
    (received in full, nothing missing, nothing to chase, while it is open with money at
    stake), a citation the evidence does not hold, or an answer vaguer than the rules'
    (entity or difference not named). The same function judges a fresh answer, a cached
    one and the packet's, so none of them is shown on weaker checks."""
    exception = redacted.exception
    free_text = f"{answer.summary}\n{answer.recommendation}"
    hidden = text_problem(free_text)
    if hidden:
        return f"unreadable text: {hidden}"
    if answer.root_cause not in allowed:
        return (
            f"root cause {answer.root_cause!r} is not allowed for "
            f"{exception.get('reason_code')} (allowed: {', '.join(allowed)})"
        )
    difference = exception.get("difference")
    contradiction = sign_contradiction(
        answer.root_cause, difference if isinstance(difference, int) else None
    )
    if contradiction:
        return f"contradicts the amounts: {contradiction}"
    said = direction_contradiction(free_text, difference if isinstance(difference, int) else None)
    if said:
        return f"contradicts the amounts: {said}"
    state = state_contradiction(free_text, exception)
    if state:
        return f"contradicts the exception's state: {state}"
    claims = status_claims(free_text)
    if claims:
        return "claims a status or an approval only a person can give: " + ", ".join(
            repr(c) for c in dict.fromkeys(claims)
        )
    check = check_citations(answer, redacted)
    if not check.ok:
        return check.reason
    return specificity_gap(answer, exception)


def investigate(
    conn_or_path: ConnOrPath,
    exception_id: int,
    *,
    use_cache: bool = True,
    client_config: gemini.ClientConfig | None = None,
    actor: str = "investigator",
) -> Investigation:
    """Explain one exception. The source is the model's name when its answer passed every
    check, else "deterministic" with `fallback_reason` saying why."""
    config = client_config if client_config is not None else gemini.ClientConfig.from_env()
    with _writable(conn_or_path) as conn, db.read_only(conn) as ro:
        exception = _load(ro, exception_id)
        session = _Session(conn, int(exception_id), actor, config)
        tools = EvidenceTools(
            ro,
            context=run_context(ro, exception.get("last_run_id")),
            on_refused=session.refused,
        )
        evidence = gather(tools, exception)
        baseline = explain(evidence)
        redacted, session.redactor = redact_evidence(evidence)
        evidence_hash = redacted.digest(PROMPT_VERSION)
        outcome: _Outcome | None = None
        if not config.enabled:
            outcome = _Outcome(fallback_reason=config.off_reason or NO_KEY)
        elif use_cache:
            outcome = session.from_cache(tools, evidence_hash, redacted)
        if outcome is None:
            outcome = session.ladder(tools, redacted, evidence_hash)
        result = _result(exception, evidence, baseline, outcome, evidence_hash)
        with transaction(conn):
            audit(
                conn,
                actor=actor,
                action="investigate",
                exception_id=result.exception_id,
                payload={
                    "source": result.source,
                    "model": result.model,
                    "root_cause": result.root_cause,
                    "deterministic_root_cause": result.deterministic_root_cause,
                    "fallback_reason": result.fallback_reason,
                    "evidence_hash": evidence_hash,
                    "cached": result.cached,
                    "tokens": result.tokens_used,
                    "attempts": [a.to_dict() for a in result.attempts],
                },
            )
        return result


def deterministic_answer(conn: sqlite3.Connection, record: Mapping[str, Any]) -> Answer:
    """The rules' answer for an exception or outcome record. Reads only; records nothing."""
    with db.read_only(conn) as ro:
        run_id = record.get("last_run_id", record.get("run_id"))
        tools = EvidenceTools(ro, context=run_context(ro, run_id))
        return explain(gather(tools, record))


@dataclass
class _Outcome:
    """What the model side produced: a verified answer, or why there is none."""

    answer: Answer | None = None
    model: str | None = None
    fallback_reason: str | None = None
    cached: bool = False
    tokens: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    extra_evidence: tuple[ToolResult, ...] = ()
    extra_calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def _result(
    exception: Mapping[str, Any],
    evidence: Evidence,
    baseline: Answer,
    outcome: _Outcome,
    evidence_hash: str,
) -> Investigation:
    shown = outcome.answer or baseline
    from_model = outcome.answer is not None and outcome.model is not None
    review = shown.requires_human_review
    if from_model:
        # A model can add a reason for review, never remove one.
        review = review or baseline.requires_human_review or shown.root_cause != baseline.root_cause
    # A model answer caught contradicting or inventing evidence is itself worth a look.
    review = review or any(a.outcome == "discarded" for a in outcome.attempts)
    return Investigation(
        exception_id=int(exception["id"]),
        source=str(outcome.model) if from_model else DETERMINISTIC,
        model=outcome.model if from_model else None,
        root_cause=shown.root_cause,
        confidence=shown.confidence,
        summary=shown.summary,
        evidence=evidence.with_items(outcome.extra_evidence),
        recommendation=shown.recommendation,
        requires_human_review=review,
        fallback_reason=None if from_model else outcome.fallback_reason,
        citations=shown.citations,
        cited_amounts=shown.cited_amounts,
        reason_code=str(exception["reason_code"]),
        deterministic_root_cause=baseline.root_cause,
        rules_summary=baseline.summary,
        rules_recommendation=baseline.recommendation,
        evidence_hash=evidence_hash,
        cached=outcome.cached,
        tokens_used=outcome.tokens,
        attempts=tuple(outcome.attempts),
    )


class _Session:
    """One investigation's dealings with models: budgets, breakers, cache, audit."""

    def __init__(
        self, conn: sqlite3.Connection, exception_id: int, actor: str, config: gemini.ClientConfig
    ) -> None:
        self.conn = conn
        self.exception_id = exception_id
        self.actor = actor
        self.config = config
        self.spent = 0
        self.current_model = "evidence plan"
        self.redactor = Redactor()

    # --- audit hooks --------------------------------------------------------------------

    def refused(self, name: str, args: Mapping[str, Any], reason: str) -> None:
        with transaction(self.conn):
            audit(
                self.conn,
                actor=self.actor,
                action="investigate.tool_refused",
                exception_id=self.exception_id,
                payload={
                    "tool": name[:200],
                    "args": json.loads(json.dumps(dict(args), default=str))
                    if len(json.dumps(dict(args), default=str)) < 2000
                    else "(too long)",
                    "reason": reason,
                    "requested_by": self.current_model,
                },
            )

    # --- the clock, budgets and breakers ------------------------------------------------

    def now(self) -> int:
        return int(self.config.clock())

    def today(self) -> str:
        return ist_date(self.now()).isoformat()

    def guard(self, estimate: int) -> None:
        limit = self.config.tokens_per_investigation
        if self.spent + estimate > limit:
            raise gemini.BudgetExceeded(
                f"token budget per investigation ({limit}) would be exceeded "
                f"({self.spent} spent, next request up to {estimate})"
            )
        used = db.tokens_used_on(self.conn, self.today())
        if used + estimate > self.config.tokens_per_day:
            raise gemini.BudgetExceeded(
                f"daily token budget ({self.config.tokens_per_day}) exhausted "
                f"({used} used today, next request up to {estimate})"
            )

    def charge(self, usage: gemini.Usage) -> None:
        self.spent += usage.total
        with transaction(self.conn):
            db.add_token_usage(
                self.conn,
                day=self.today(),
                model=self.current_model,
                prompt_tokens=usage.prompt,
                output_tokens=usage.output,
                total_tokens=usage.total,
            )

    def breaker_open_until(self, model: str) -> int | None:
        state = db.breaker_state(self.conn, model)
        if state and int(state["open_until"]) > self.now():
            return int(state["open_until"])
        return None

    def failed(self, model: str, detail: str) -> None:
        with transaction(self.conn):
            db.breaker_record_failure(
                self.conn,
                model=model,
                error=detail[:500],
                now=self.now(),
                threshold=max(1, self.config.breaker_threshold),
                cooldown_seconds=self.config.breaker_cooldown_seconds,
            )

    def succeeded(self, model: str) -> None:
        with transaction(self.conn):
            db.breaker_record_success(self.conn, model=model, now=self.now())

    # --- cache --------------------------------------------------------------------------

    def from_cache(
        self, tools: EvidenceTools, evidence_hash: str, redacted: Evidence
    ) -> _Outcome | None:
        hit = db.cache_get(self.conn, evidence_hash)
        if hit is None:
            return None
        try:
            stored = json.loads(hit["answer_json"])
            answer = Answer.from_dict(stored["answer"])
            calls = [(str(c["tool"]), dict(c["args"])) for c in stored.get("tool_calls", [])]
        except (KeyError, TypeError, ValueError):
            return None
        self.current_model = f"{hit['model']} (cached)"
        try:
            extra = tuple(tools.call(name, args) for name, args in calls)
        except ToolRefused:
            return None
        seen = redacted.with_items(redact_evidence(Evidence({}, extra), self.redactor)[0].items)
        if model_answer_problem(answer, seen, allowed_causes(redacted.exception)):
            return None  # the records it cited changed, or the checks did: ask again
        return _Outcome(
            answer=answer,
            model=str(hit["model"]),
            cached=True,
            attempts=[Attempt(str(hit["model"]), "cached", "same evidence as a verified answer")],
            extra_evidence=extra,
        )

    # --- the ladder ---------------------------------------------------------------------

    def ladder(self, tools: EvidenceTools, redacted: Evidence, evidence_hash: str) -> _Outcome:
        outcome = _Outcome()
        allowed = allowed_causes(redacted.exception)
        if not allowed:
            outcome.fallback_reason = (
                f"no root cause is defined for {redacted.exception.get('reason_code')}"
            )
            return outcome
        text = redact_contact_handles(user_message(redacted, allowed))
        try:
            client = gemini.make_client(self.config)
        except Exception as exc:  # a bad setting, reported, never fatal
            outcome.fallback_reason = f"model client could not start: {exc}"[:300]
            return outcome
        reasons: list[str] = []
        try:
            for spec in self.config.models:
                until = self.breaker_open_until(spec.name)
                if until is not None:
                    when = dt.datetime.fromtimestamp(until, tz=IST).strftime("%Y-%m-%d %H:%M IST")
                    detail = f"circuit open until {when}"
                    outcome.attempts.append(Attempt(spec.name, "skipped", detail))
                    reasons.append(f"{spec.name}: {detail}")
                    continue
                try:
                    stop = self._try(client, spec, tools, redacted, text, allowed, outcome, reasons)
                except Exception as exc:  # never let a model-side surprise hide the answer
                    detail = f"unexpected {type(exc).__name__}: {exc}"[:300]
                    self.failed(spec.name, detail)
                    outcome.attempts.append(Attempt(spec.name, gemini.PERMANENT, detail))
                    reasons.append(f"{spec.name}: {detail}")
                    stop = True
                if outcome.answer is not None:
                    self._store(evidence_hash, outcome)
                    return outcome
                if stop:
                    break
        finally:
            client.close()
        outcome.fallback_reason = "; ".join(reasons) or "no model in the ladder"
        return outcome

    def _try(
        self,
        client: Any,
        spec: gemini.ModelSpec,
        tools: EvidenceTools,
        redacted: Evidence,
        text: str,
        allowed: tuple[str, ...],
        outcome: _Outcome,
        reasons: list[str],
    ) -> bool:
        """Ask one model; fill `outcome` on success. True when the ladder must stop."""
        self.current_model = spec.name
        fetched: list[ToolResult] = []
        calls: list[tuple[str, dict[str, Any]]] = []

        def run_tool(name: str, args: dict[str, Any]) -> ToolResult:
            result = tools.call(name, args)
            fetched.append(result)
            calls.append((name, dict(args)))
            shown, self.redactor = redact_evidence(Evidence({}, (result,)), self.redactor)
            return shown.items[0]

        spent_before = self.spent
        try:
            reply = gemini.ask(
                client,
                spec,
                self.config,
                system_instruction=SYSTEM_INSTRUCTION,
                user_text=text,
                run_tool=run_tool,
                guard=self.guard,
                on_usage=self.charge,
                allowed=allowed,
            )
        except gemini.BudgetExceeded as exc:
            outcome.attempts.append(Attempt(spec.name, "skipped", str(exc)))
            reasons.append(str(exc))
            outcome.tokens = self.spent
            return True
        except gemini.ModelFailure as failure:
            self.failed(spec.name, failure.detail)
            outcome.attempts.append(
                Attempt(spec.name, failure.kind, failure.detail, self.spent - spent_before)
            )
            reasons.append(f"{spec.name}: {failure.detail}")
            outcome.tokens = self.spent
            return failure.kind == gemini.PERMANENT
        outcome.tokens = self.spent
        used = self.spent - spent_before
        answer = Answer(
            root_cause=reply.answer.root_cause,
            confidence=float(reply.answer.confidence),
            summary=clean_model_text(reply.answer.summary).strip(),
            recommendation=clean_model_text(reply.answer.recommendation).strip(),
            requires_human_review=reply.answer.requires_human_review,
            citations=tuple(reply.answer.cited_record_ids),
            cited_amounts=tuple(reply.answer.cited_amounts_paise),
        )
        problem = model_answer_problem(answer, redacted.with_items(reply.tool_results), allowed)
        if problem:
            self.failed(spec.name, f"answer discarded: {problem}")
            outcome.attempts.append(Attempt(spec.name, "discarded", problem, used))
            reasons.append(f"{spec.name} answer discarded: {problem}")
            with transaction(self.conn):
                audit(
                    self.conn,
                    actor=self.actor,
                    action="investigate.answer_discarded",
                    exception_id=self.exception_id,
                    payload={
                        "model": spec.name,
                        "reason": problem,
                        "root_cause": answer.root_cause[:100],
                    },
                )
            return True
        self.succeeded(spec.name)
        outcome.answer = answer
        outcome.model = spec.name
        outcome.extra_evidence = tuple(fetched)
        outcome.extra_calls = tuple(calls)
        outcome.attempts.append(Attempt(spec.name, "ok", "", used))
        return True

    def _store(self, evidence_hash: str, outcome: _Outcome) -> None:
        assert outcome.answer is not None and outcome.model is not None
        payload = {
            "answer": outcome.answer.to_dict(),
            "tool_calls": [{"tool": name, "args": args} for name, args in outcome.extra_calls],
        }
        with transaction(self.conn):
            db.cache_put(
                self.conn,
                evidence_hash=evidence_hash,
                exception_id=self.exception_id,
                model=outcome.model,
                answer_json=json.dumps(payload, sort_keys=True),
                tokens=outcome.tokens,
                now=self.now(),
            )
