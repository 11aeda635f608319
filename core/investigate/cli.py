"""`python -m core investigate EXCEPTION_ID --db PATH [--json] [--no-cache]`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from core.cli_types import record_id
from core.db import database_path
from core.errors import EXIT_OK
from core.investigate.result import Investigation
from core.money import format_inr


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "investigate",
        help="explain one exception (read-only; Gemini if a key is set, else deterministic)",
        description=(
            "Explain one exception from the evidence. With GEMINI_API_KEY (or LLM_API_KEY) "
            "set, a model is asked and its answer is shown only if every id and amount it "
            "cites is in the evidence; otherwise the deterministic investigator answers and "
            "the reason is shown. Never changes an exception or any financial data."
        ),
    )
    parser.add_argument("exception_id", type=record_id, metavar="EXCEPTION_ID")
    parser.add_argument("--db", default=None, help="SQLite file (default: DATABASE_URL)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--no-cache", action="store_true", help="ask the model even if the evidence is unchanged"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.investigate.service import investigate

    result = investigate(
        database_path(args.db), args.exception_id, use_cache=not args.no_cache, actor="cli"
    )
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(result))
    return EXIT_OK


def render(result: Investigation) -> str:
    """The human-readable report."""
    exc = result.evidence.exception
    lines = [
        f"Exception {result.exception_id}: {result.reason_code} on {exc.get('entity_type')} "
        f"{exc.get('entity_id')}",
        f"Source:      {result.source_label}",
        f"Root cause:  {result.root_cause} (confidence {result.confidence:.2f})",
    ]
    if result.source != "deterministic" and result.deterministic_root_cause != result.root_cause:
        lines.append(f"Rules say:   {result.deterministic_root_cause}")
    lines += [
        f"Summary:     {result.summary}",
        f"Recommended: {result.recommendation}",
        f"Human review required: {'yes' if result.requires_human_review else 'no'}",
    ]
    if result.source != "deterministic" and result.rules_summary:
        # The rules' answer beside a model's: the engine's facts whatever the model wrote.
        lines += [
            f"Rules' summary:        {result.rules_summary}",
            f"Rules' recommendation: {result.rules_recommendation}",
        ]
    if result.citations:
        lines.append(f"Cites:       {', '.join(result.citations)}")
    if result.cited_amounts:
        lines.append(f"Amounts:     {', '.join(format_inr(a) for a in result.cited_amounts)}")
    for attempt in result.attempts:
        detail = f": {attempt.detail}" if attempt.detail else ""
        lines.append(f"  model {attempt.model} -> {attempt.outcome}{detail}")
    lines.append("Evidence:")
    for item in result.evidence.items:
        args = ", ".join(f"{k}={v}" for k, v in item.args.items())
        note = f" ({item.note})" if item.note else ""
        lines.append(f"  {item.tool}({args}): {len(item.records)} record(s){note}")
    return "\n".join(lines) + "\n"
