"""Whether this process is the public demo (RAZORRECON_DEMO=1), and what the demo refuses.

A demo visitor is anonymous and works on a private copy of the synthetic benchmark
(core.demo). Whatever would reach beyond that copy with the deployment's own means is
refused here, in core, whichever screen or command asks:

- a Razorpay sync (the deployment's RAZORPAY_KEY_*: core.razorpay.config.settings_from_env);
- reading a folder on the server (the Data page's streamed import);
- a webhook delivery (it would write into the shared database every copy is made from);
- the deployment's model key: the investigator answers deterministically
  (core.investigate.gemini.ClientConfig.from_env).

Kept apart from core.demo (which copies databases) so the modules that read deployment
secrets can ask it without importing the sandbox machinery.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from core.errors import RefusedError

DEMO_ENV = "RAZORRECON_DEMO"

RAZORPAY_SYNC = (
    "A Razorpay sync",
    "it would read the deployment's Razorpay account with the deployment's keys",
)
SERVER_FOLDER = (
    "Importing a folder on the server",
    "it would read files on the server, which are not the visitor's",
)
WEBHOOK = (
    "A Razorpay webhook delivery",
    "it would write into the shared database every visitor's copy is made from",
)
NO_MODEL = (
    f"the public demo ({DEMO_ENV}=1) never uses the deployment's model key: "
    "the deterministic investigator answers"
)


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Demo mode is only ever on when set explicitly."""
    source = os.environ if env is None else env
    return source.get(DEMO_ENV, "").strip() == "1"


def refusal(what: tuple[str, str]) -> str:
    action, why = what
    return (
        f"{action} is not available in the public demo ({DEMO_ENV}=1): a demo visitor is "
        f"anonymous, and {why}."
    )


def refuse(what: tuple[str, str], env: Mapping[str, str] | None = None) -> None:
    """Raise RefusedError, naming the action and why, when this process is the demo."""
    if enabled(env):
        raise RefusedError(refusal(what))
