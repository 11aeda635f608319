"""Ambiguous cases for evaluating the investigator: combined faults, labelled by construction.

The default benchmark plants one fault per entity, so each reason code has one obvious
root cause and the deterministic investigator scores 100%. An honest evaluation also needs
cases where the rule is ambiguous. `plant()` changes a few clean payments' recon rows after
the ordinary faults are planted (`generate(..., ambiguous=True)`; off by default, so the
default benchmark is byte-identical) and records, per payment, the scenario and the root
cause it was built with:

- ambiguous_gst_followed_fee: the fee before GST is raised and the GST follows it (18% of
  the new fee). Both the fee and the GST differ from the payment's, but the cause is the
  fee: FEE_CHARGED_DIFFERENTLY.
- ambiguous_fee_and_gst: the fee before GST is raised and the GST is off by more than the
  18% would give. Two faults; the fee moved most: FEE_CHARGED_DIFFERENTLY.
- ambiguous_tiny_fee: one paisa more fee (below materiality): FEE_CHARGED_DIFFERENTLY.
- ambiguous_duplicate_with_fee: the row is repeated and its fee differs: SETTLED_TWICE.
- ambiguous_late_gst_followed_fee: the fee/GST change of the first case, settled late too
  (a second reason code): FEE_CHARGED_DIFFERENTLY.

The engine's expected outcome for each is derived from the row facts as for every other
payment (core/benchmark/labels.py), so the engine is scored on them like the rest.
"""

from __future__ import annotations

import numpy as np

from core.benchmark.world import CALENDAR, Calendar, IntArray, Payments

STREAM_KEY = 20261215  # the ambiguous cases' own random stream (seeded with the benchmark's)
PER_CASE = 8
CASES: dict[str, str] = {
    "ambiguous_gst_followed_fee": "FEE_CHARGED_DIFFERENTLY",
    "ambiguous_fee_and_gst": "FEE_CHARGED_DIFFERENTLY",
    "ambiguous_tiny_fee": "FEE_CHARGED_DIFFERENTLY",
    "ambiguous_duplicate_with_fee": "SETTLED_TWICE",
    "ambiguous_late_gst_followed_fee": "FEE_CHARGED_DIFFERENTLY",
}


def _gst(base: IntArray) -> IntArray:
    result: IntArray = (base * 18 + 50) // 100
    return result


def _raise_fee(p: Payments, idx: IntArray, rng: np.random.Generator, gst_follows: bool) -> None:
    base = p.fee[idx] - p.tax[idx]
    delta = 1 + (p.amount[idx] * rng.integers(5, 200, size=len(idx))) // 10000
    new_base = base + delta
    # Following the fee: 18% of the new fee. Otherwise off by more than rounding from it.
    off = 0 if gst_follows else rng.integers(2, 50, size=len(idx))
    new_tax = _gst(new_base) + off
    p.row_tax[idx] = new_tax
    p.row_fee[idx] = new_base + new_tax


def plant(p: Payments, calendar: Calendar, rng: np.random.Generator) -> dict[str, int]:
    """Plant the ambiguous cases on clean, taxed, domestic payments settled in ordinary
    settlements. Returns how many of each were planted."""
    grace = CALENDAR.grace_days
    clean = (
        p.captured
        & (p.rows == 1)
        & (p.scenario == "")
        & (p.row_key >= 0)
        & (p.tax > 0)
        & ~p.international
        & (calendar.add(p.due, grace + 3) <= calendar.last_normal_day)
    )
    planted: dict[str, int] = {}
    for name, cause in CASES.items():
        pool = np.flatnonzero(clean)
        if len(pool) == 0:
            break
        idx = np.sort(rng.choice(pool, size=min(PER_CASE, len(pool)), replace=False))
        clean[idx] = False
        if name in ("ambiguous_gst_followed_fee", "ambiguous_late_gst_followed_fee"):
            _raise_fee(p, idx, rng, gst_follows=True)
        elif name == "ambiguous_fee_and_gst":
            _raise_fee(p, idx, rng, gst_follows=False)
        elif name == "ambiguous_tiny_fee":
            p.row_fee[idx] = p.fee[idx] + 1
        elif name == "ambiguous_duplicate_with_fee":
            p.rows[idx] = 2
            p.row_fee[idx] = p.fee[idx] + 1 + p.amount[idx] // 1000
        if name == "ambiguous_late_gst_followed_fee":
            late = calendar.add(p.due[idx], grace + rng.integers(1, 3, size=len(idx)))
            p.row_key[idx] = calendar.key_for(late)
        p.scenario[idx] = name
        p.root_cause[idx] = cause
        planted[name] = len(idx)
    return planted
