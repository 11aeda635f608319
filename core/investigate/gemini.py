"""The Gemini side: configuration from the environment, one call with a bounded tool loop,
and the classification of what went wrong.

Requests go through `google-genai` (pinned 3.3.0) with the SDK's own retries off: the
ladder in `core.investigate.service` decides what happens after a failure. The base URL
follows the SDK's override: `ClientConfig.base_url` (passed as
`HttpOptions(base_url=...)`), else the `GOOGLE_GEMINI_BASE_URL` variable the SDK reads
itself. A `ModelFailure` is `transient` (timeout, connection, 429, 5xx: try the next
model) or `permanent` (other 4xx, an answer that breaks the schema, a truncated or
blocked answer: stop and fall back).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from core import demo_mode
from core.errors import ConfigError
from core.investigate.prompt import ModelAnswer, answer_json_schema, tool_output
from core.investigate.tools import TOOL_SPECS, ToolRefused, ToolResult

DEFAULT_MODELS: tuple[tuple[str, float], ...] = (
    ("gemini-3.5-flash-lite", 20.0),
    ("gemini-3.5-flash", 40.0),
)
TRANSIENT = "transient"
PERMANENT = "permanent"
_TRANSIENT_HTTP = frozenset({408, 429})
_TRANSIENT_EXCEPTIONS = frozenset(
    {"TimeoutException", "NetworkError", "RemoteProtocolError", "TimeoutError", "ConnectionError"}
)


@dataclass(frozen=True)
class ModelSpec:
    """One rung of the ladder: a model name and how long one request to it may take."""

    name: str
    timeout_seconds: float


@dataclass(frozen=True)
class ClientConfig:
    """How (and whether) to ask a model.

    api_key: from GEMINI_API_KEY or LLM_API_KEY; None means no model is asked.
    models: the ladder, tried in order (GEMINI_MODELS="name[:timeout_s],...").
    base_url / api_version: override the SDK's endpoint (tests point it at 127.0.0.1);
    None leaves it to the SDK, which honours GOOGLE_GEMINI_BASE_URL and
    GOOGLE_GENAI_API_VERSION itself.
    max_output_tokens: the answer ceiling, large enough to leave room for a thinking
    model's thoughts, which count against it. thinking_budget: optional thought limit.
    tokens_per_investigation / tokens_per_day: budgets (checked before each request with a
    pessimistic estimate, charged with the reported usage).
    breaker_threshold / breaker_cooldown_seconds: after this many consecutive failures a
    model is skipped for the cool-down. max_tool_rounds: tool-call rounds a model may use.
    off_reason: why no model is asked although a key may be set (the public demo).
    clock: the time source (tests move it).
    """

    api_key: str | None = None
    models: tuple[ModelSpec, ...] = tuple(ModelSpec(n, t) for n, t in DEFAULT_MODELS)
    base_url: str | None = None
    api_version: str | None = None
    max_output_tokens: int = 8192
    thinking_budget: int | None = None
    tokens_per_investigation: int = 60_000
    tokens_per_day: int = 2_000_000
    breaker_threshold: int = 3
    breaker_cooldown_seconds: int = 600
    max_tool_rounds: int = 2
    off_reason: str | None = None
    clock: Callable[[], float] = field(default=time.time, compare=False, repr=False)

    @property
    def enabled(self) -> bool:
        return bool(self.api_key) and bool(self.models)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClientConfig:
        env = os.environ if environ is None else environ
        if demo_mode.enabled(env):  # anonymous visitors never spend the deployment's key
            return cls(api_key=None, off_reason=demo_mode.NO_MODEL)
        key = (env.get("GEMINI_API_KEY") or env.get("LLM_API_KEY") or "").strip() or None
        default_timeout = _number(env, "GEMINI_TIMEOUT_SECONDS", 0.0)
        models = parse_models(env.get("GEMINI_MODELS", ""), default_timeout)
        base = cls()
        thinking = env.get("GEMINI_THINKING_BUDGET", "").strip()
        return cls(
            api_key=key,
            models=models,
            max_output_tokens=int(_number(env, "GEMINI_MAX_OUTPUT_TOKENS", base.max_output_tokens)),
            thinking_budget=int(thinking) if thinking.lstrip("-").isdigit() else None,
            tokens_per_investigation=int(
                _number(env, "GEMINI_TOKENS_PER_INVESTIGATION", base.tokens_per_investigation)
            ),
            tokens_per_day=int(_number(env, "GEMINI_TOKENS_PER_DAY", base.tokens_per_day)),
            breaker_threshold=int(_number(env, "GEMINI_BREAKER_FAILURES", base.breaker_threshold)),
            breaker_cooldown_seconds=int(
                _number(env, "GEMINI_BREAKER_COOLDOWN_SECONDS", base.breaker_cooldown_seconds)
            ),
            max_tool_rounds=int(_number(env, "GEMINI_MAX_TOOL_ROUNDS", base.max_tool_rounds)),
        )


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, not {raw!r}") from exc
    if value < 0:
        raise ConfigError(f"{name} must not be negative")
    return value


def parse_models(text: str, default_timeout: float = 0.0) -> tuple[ModelSpec, ...]:
    """'a:20,b' -> (ModelSpec(a, 20), ModelSpec(b, default)); empty -> the default ladder."""
    defaults = dict(DEFAULT_MODELS)
    specs: list[ModelSpec] = []
    for chunk in text.split(","):
        entry = chunk.strip()
        if not entry:
            continue
        name, _, timeout_text = entry.partition(":")
        name = name.strip()
        if timeout_text.strip():
            try:
                timeout = float(timeout_text)
            except ValueError as exc:
                raise ConfigError(f"GEMINI_MODELS: bad timeout in {entry!r}") from exc
        elif default_timeout > 0:
            timeout = default_timeout
        else:
            timeout = defaults.get(name, 30.0)
        if not name or timeout <= 0:
            raise ConfigError(f"GEMINI_MODELS: bad entry {entry!r}")
        specs.append(ModelSpec(name, timeout))
    if specs:
        return tuple(specs)
    return tuple(
        ModelSpec(n, default_timeout if default_timeout > 0 else t) for n, t in DEFAULT_MODELS
    )


@dataclass(frozen=True)
class Usage:
    """Tokens one request (or a whole tool loop) used, as the API reported them."""

    prompt: int = 0
    output: int = 0
    total: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt + other.prompt, self.output + other.output, self.total + other.total
        )


class ModelFailure(Exception):
    """A request that produced no usable answer; `kind` is TRANSIENT or PERMANENT."""

    def __init__(self, kind: str, detail: str, usage: Usage | None = None) -> None:
        self.kind = kind
        self.detail = detail
        self.usage = usage or Usage()
        super().__init__(f"{kind}: {detail}")


class BudgetExceeded(Exception):
    """The next request would exceed a token budget."""


@dataclass(frozen=True)
class ModelReply:
    """A schema-valid answer, the tokens it took, and the extra tool results it used."""

    answer: ModelAnswer
    usage: Usage
    tool_results: tuple[ToolResult, ...]


def classify(exc: BaseException) -> tuple[str, str]:
    """(TRANSIENT or PERMANENT, description) for an exception raised by a request."""
    from google.genai import errors as genai_errors

    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code or 0)
        kind = TRANSIENT if code in _TRANSIENT_HTTP or code >= 500 else PERMANENT
        return kind, f"HTTP {code} {exc.status or ''}".strip()
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _TRANSIENT_EXCEPTIONS:
        label = "timeout" if any("Timeout" in n for n in names) else "connection error"
        return TRANSIENT, f"{label} ({type(exc).__name__})"
    return PERMANENT, f"{type(exc).__name__}: {exc}"[:300]


def make_client(config: ClientConfig) -> Any:
    """A google-genai client with the SDK's retries off (the ladder handles failures)."""
    from google import genai
    from google.genai import types

    options = types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=1))
    if config.base_url:
        options.base_url = config.base_url
    if config.api_version:
        options.api_version = config.api_version
    return genai.Client(api_key=config.api_key, http_options=options)


ToolRunner = Callable[[str, dict[str, Any]], ToolResult]
BudgetGuard = Callable[[int], None]  # raises BudgetExceeded for an estimated request size
UsageSink = Callable[[Usage], None]  # told the usage of every request as it returns


def ask(
    client: Any,
    spec: ModelSpec,
    config: ClientConfig,
    *,
    system_instruction: str,
    user_text: str,
    run_tool: ToolRunner,
    guard: BudgetGuard,
    on_usage: UsageSink,
    allowed: tuple[str, ...] | None = None,
) -> ModelReply:
    """Ask one model for a structured answer, serving its tool calls through `run_tool`.

    Tools are offered for at most `config.max_tool_rounds` rounds; the last request offers
    none, so the model must answer. A model that refuses the tools with HTTP 400 (some
    refuse function calling together with JSON output) is asked once more without them.
    `allowed` restricts the schema's root_cause enum to this exception's causes.
    """
    from google.genai import types

    contents: list[Any] = [types.Content(role="user", parts=[types.Part.from_text(text=user_text)])]
    usage = Usage()
    fetched: list[ToolResult] = []
    rounds_left = config.max_tool_rounds
    tools_refused = False
    while True:
        offer_tools = rounds_left > 0 and not tools_refused
        generation = _generation(config, spec, system_instruction, offer_tools, allowed)
        size = len(system_instruction) + sum(len(_content_text(c)) for c in contents)
        guard(size // 3 + config.max_output_tokens)
        try:
            response = client.models.generate_content(
                model=spec.name, contents=contents, config=generation
            )
        except Exception as exc:
            kind, detail = classify(exc)
            if offer_tools and not fetched and _http_status(exc) == 400:
                tools_refused = True
                continue
            raise ModelFailure(kind, detail, usage) from exc
        step = _usage(response)
        on_usage(step)
        usage = usage + step
        candidate = _candidate(response, usage)
        calls = list(response.function_calls or [])
        if calls:
            if not offer_tools:
                raise ModelFailure(PERMANENT, "called a tool when none was offered", usage)
            rounds_left -= 1
            contents.append(candidate.content)
            parts = []
            for call in calls:
                output, result = _serve(call, run_tool)
                if result is not None:
                    fetched.append(result)
                parts.append(
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=call.id, name=call.name, response=output
                        )
                    )
                )
            contents.append(types.Content(role="user", parts=parts))
            continue
        text = _answer_text(candidate)
        try:
            answer = ModelAnswer.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {"msg": str(exc)}
            raise ModelFailure(
                PERMANENT, f"answer does not fit the schema: {first.get('msg')}", usage
            ) from exc
        return ModelReply(answer=answer, usage=usage, tool_results=tuple(fetched))


def uses_default_temperature(model: str) -> bool:
    """Gemini 3 models are tuned for their default temperature (1.0); Google advises against
    lowering it (looping, degraded reasoning), so none is sent. Older models get 0."""
    return model.lower().removeprefix("models/").startswith("gemini-3")


def _generation(
    config: ClientConfig,
    spec: ModelSpec,
    system_instruction: str,
    offer_tools: bool,
    allowed: tuple[str, ...] | None = None,
) -> Any:
    from google.genai import types

    tools: list[Any] | None = None
    if offer_tools:
        declarations = [
            types.FunctionDeclaration(
                name=s.name, description=s.description, parameters_json_schema=dict(s.parameters)
            )
            for s in TOOL_SPECS.values()
        ]
        tools = [types.Tool(function_declarations=declarations)]
    return types.GenerateContentConfig(
        system_instruction=system_instruction,
        response_mime_type="application/json",
        response_json_schema=answer_json_schema(allowed),
        max_output_tokens=config.max_output_tokens,
        temperature=None if uses_default_temperature(spec.name) else 0.0,
        tools=tools,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        thinking_config=(
            types.ThinkingConfig(thinking_budget=config.thinking_budget)
            if config.thinking_budget is not None
            else None
        ),
        http_options=types.HttpOptions(timeout=int(spec.timeout_seconds * 1000)),
    )


def _http_status(exc: BaseException) -> int | None:
    from google.genai import errors as genai_errors

    return int(exc.code or 0) if isinstance(exc, genai_errors.APIError) else None


def _serve(call: Any, run_tool: ToolRunner) -> tuple[dict[str, Any], ToolResult | None]:
    name = str(call.name or "")
    try:
        result = run_tool(name, dict(call.args or {}))
    except ToolRefused as refused:
        return {"error": f"refused: {refused.reason}"}, None
    return {"output": tool_output(result.to_dict())}, result


def _usage(response: Any) -> Usage:
    meta = getattr(response, "usage_metadata", None)
    if meta is None:
        return Usage()
    prompt = int(meta.prompt_token_count or 0)
    output = int(meta.candidates_token_count or 0) + int(meta.thoughts_token_count or 0)
    total = int(meta.total_token_count or 0) or prompt + output
    return Usage(prompt, output, total)


def _candidate(response: Any, usage: Usage) -> Any:
    candidates = list(response.candidates or [])
    if not candidates:
        feedback = getattr(response, "prompt_feedback", None)
        reason = getattr(feedback, "block_reason", None) if feedback else None
        raise ModelFailure(PERMANENT, f"no answer (prompt blocked: {reason})", usage)
    candidate = candidates[0]
    finish = getattr(candidate.finish_reason, "value", candidate.finish_reason)
    if finish == "MAX_TOKENS":
        raise ModelFailure(PERMANENT, "answer truncated (finish reason MAX_TOKENS)", usage)
    if finish not in (None, "STOP", "FINISH_REASON_UNSPECIFIED"):
        raise ModelFailure(PERMANENT, f"answer stopped early (finish reason {finish})", usage)
    if candidate.content is None:
        raise ModelFailure(PERMANENT, "empty answer", usage)
    return candidate


def _answer_text(candidate: Any) -> str:
    parts = [
        p.text
        for p in (candidate.content.parts or [])
        if p.text and not getattr(p, "thought", False)
    ]
    if not parts:
        raise ModelFailure(PERMANENT, "empty answer")
    text = "".join(parts).strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    return text


def _content_text(content: Any) -> str:
    try:
        return json.dumps(content.model_dump(mode="json", exclude_none=True))
    except (AttributeError, TypeError, ValueError):
        return str(content)
