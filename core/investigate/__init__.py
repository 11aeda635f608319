"""The read-only investigator: evidence tools, deterministic rules, a checked Gemini answer.

Public API:
- `investigate(conn_or_path, exception_id, *, use_cache=True, client_config=None)`
  -> `Investigation` (source: the model's name, or "deterministic" with the reason).
- `gather_evidence(conn_or_path, exception_id)` -> `Evidence` (for display).
- `ClientConfig` (`ClientConfig.from_env()`), `ModelSpec`: how a model is asked.
- `root_cause_accuracy(conn, ground_truth_frame)` -> `RootCauseAccuracy`.
- `EvidenceTools`, `ALLOWED_TOOLS`, `ToolRefused`: the allow-listed read-only tools.

Each name is imported from its module when first used (PEP 562 `__getattr__`), so
`from core.investigate import gather_evidence` loads the evidence tools only, and the model
client (pydantic, the Gemini SDK), the redactor and the rules load with `investigate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_getattr

if TYPE_CHECKING:
    from core.investigate.evaluation import RootCauseAccuracy, root_cause_accuracy
    from core.investigate.evidence import Evidence
    from core.investigate.gather import gather_evidence
    from core.investigate.gemini import ClientConfig, ModelSpec
    from core.investigate.result import DETERMINISTIC, Answer, Attempt, Investigation
    from core.investigate.service import deterministic_answer, investigate
    from core.investigate.tools import ALLOWED_TOOLS, EvidenceTools, ToolRefused, ToolResult

_MODULE_OF = {
    "ALLOWED_TOOLS": "tools",
    "DETERMINISTIC": "result",
    "Answer": "result",
    "Attempt": "result",
    "ClientConfig": "gemini",
    "Evidence": "evidence",
    "EvidenceTools": "tools",
    "Investigation": "result",
    "ModelSpec": "gemini",
    "RootCauseAccuracy": "evaluation",
    "ToolRefused": "tools",
    "ToolResult": "tools",
    "deterministic_answer": "service",
    "gather_evidence": "gather",
    "investigate": "service",
    "root_cause_accuracy": "evaluation",
}

__all__ = [
    "ALLOWED_TOOLS",
    "DETERMINISTIC",
    "Answer",
    "Attempt",
    "ClientConfig",
    "Evidence",
    "EvidenceTools",
    "Investigation",
    "ModelSpec",
    "RootCauseAccuracy",
    "ToolRefused",
    "ToolResult",
    "deterministic_answer",
    "gather_evidence",
    "investigate",
    "root_cause_accuracy",
]


__getattr__ = lazy_getattr(
    __name__, globals(), {name: f"{__name__}.{module}" for name, module in _MODULE_OF.items()}
)
