"""The parameters of one reconciliation run. Every number the engine uses is here."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from core.calendar import CalendarParams


@dataclass(frozen=True)
class EngineParams:
    """Parameters of one run; stored with the run (`to_dict`) so it can be repeated.

    calendar: the settlement calendar of spec section 4 (T+N, international T+N, grace,
        bank days, holidays).
    fuzzy_utr_max_distance: the largest Levenshtein distance between a settlement's UTR and
        a bank credit's for the `fuzzy_utr` fallback (spec: 2).
    utr_min_length: a token of a bank line shorter than this is never taken for a UTR
        (real UTRs have 12 to 22 characters); keeps words like `NEFT` out of fuzzy matching.
    fallback_window_days: working days after a settlement's IST date within which a bank
        credit may be linked by a fallback; None means `calendar.bank_days`.
    consolidated_min_settlements: the fewest settlements one consolidated credit may pay.
    consolidated_max_subset_group: for a day with at most this many unmatched settlements,
        every subset is tried against the unmatched credits; above it only the whole day
        and every pair are tried (the number of subsets grows as 2^n).
    gateway_marker: text (case-insensitive) in a bank line's narration or reference that
        makes a credit look like a gateway settlement.
    """

    calendar: CalendarParams = field(default_factory=CalendarParams)
    fuzzy_utr_max_distance: int = 2
    utr_min_length: int = 8
    fallback_window_days: int | None = None
    consolidated_min_settlements: int = 2
    consolidated_max_subset_group: int = 12
    gateway_marker: str = "RAZORPAY"

    @property
    def window_days(self) -> int:
        """Working days of the bank-credit window used by the fallbacks."""
        if self.fallback_window_days is None:
            return self.calendar.bank_days
        return self.fallback_window_days

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (holidays as sorted ISO dates)."""
        cal = self.calendar
        return {
            "settlement_days": cal.settlement_days,
            "international_days": cal.international_days,
            "grace_days": cal.grace_days,
            "bank_days": cal.bank_days,
            "holidays": sorted(day.isoformat() for day in cal.holidays),
            "fuzzy_utr_max_distance": self.fuzzy_utr_max_distance,
            "utr_min_length": self.utr_min_length,
            "fallback_window_days": self.window_days,
            "consolidated_min_settlements": self.consolidated_min_settlements,
            "consolidated_max_subset_group": self.consolidated_max_subset_group,
            "gateway_marker": self.gateway_marker,
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> EngineParams:
        """The inverse of `to_dict` (missing keys take their defaults)."""
        default = cls()
        dcal = default.calendar
        calendar = CalendarParams(
            settlement_days=int(values.get("settlement_days", dcal.settlement_days)),
            international_days=int(values.get("international_days", dcal.international_days)),
            grace_days=int(values.get("grace_days", dcal.grace_days)),
            bank_days=int(values.get("bank_days", dcal.bank_days)),
            holidays=frozenset(dt.date.fromisoformat(d) for d in values.get("holidays", ())),
        )
        window = values.get("fallback_window_days")
        return cls(
            calendar=calendar,
            fuzzy_utr_max_distance=int(
                values.get("fuzzy_utr_max_distance", default.fuzzy_utr_max_distance)
            ),
            utr_min_length=int(values.get("utr_min_length", default.utr_min_length)),
            fallback_window_days=None if window is None else int(window),
            consolidated_min_settlements=int(
                values.get("consolidated_min_settlements", default.consolidated_min_settlements)
            ),
            consolidated_max_subset_group=int(
                values.get("consolidated_max_subset_group", default.consolidated_max_subset_group)
            ),
            gateway_marker=str(values.get("gateway_marker", default.gateway_marker)),
        )
