"""The read-only investigator: evidence tools, deterministic rules, a checked Gemini answer.

Public API:
- `investigate(conn_or_path, exception_id, *, use_cache=True, client_config=None)`
  -> `Investigation` (source: the model's name, or "deterministic" with the reason).
- `gather_evidence(conn_or_path, exception_id)` -> `Evidence` (for display).
- `ClientConfig` (`ClientConfig.from_env()`), `ModelSpec`: how a model is asked.
- `root_cause_accuracy(conn, ground_truth_frame)` -> `RootCauseAccuracy`.
- `EvidenceTools`, `ALLOWED_TOOLS`, `ToolRefused`: the allow-listed read-only tools.
"""

from core.investigate.evaluation import RootCauseAccuracy, root_cause_accuracy
from core.investigate.evidence import Evidence
from core.investigate.gemini import ClientConfig, ModelSpec
from core.investigate.result import DETERMINISTIC, Answer, Attempt, Investigation
from core.investigate.service import deterministic_answer, gather_evidence, investigate
from core.investigate.tools import ALLOWED_TOOLS, EvidenceTools, ToolRefused, ToolResult

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
