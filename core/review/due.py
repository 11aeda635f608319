"""The due date of an exception, derived from its exposure.

Rule (first match wins; working days are Monday to Friday less the run's holidays, counted
from the IST date the exception opened or reopened):

| exposure class | exposure amount | due in |
|---|---|---|
| disputed | any | 2 working days (dispute response windows are short) |
| amount_at_risk (and any unknown class) | >= ₹1,00,000 | 1 working day |
| amount_at_risk | >= ₹10,000 | 3 working days |
| amount_at_risk | below ₹10,000 | 5 working days |
| awaiting_settlement | >= ₹1,00,000 | 2 working days |
| awaiting_settlement | below ₹1,00,000 | 5 working days |
| structural | any | 10 working days |

Except: an open dispute (entity type `dispute`, DISPUTE_OPEN) is due on its `respond_by`
IST date, read from the disputes raw table when the queue is synced (`core.db.review`);
without a `respond_by` the rules above apply.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from core.calendar import WorkingCalendar, ist_date
from core.money import PAISE_PER_LAKH, PAISE_PER_RUPEE


@dataclass(frozen=True)
class DueRule:
    """exposure_class: the class it applies to (None: any class not named by a rule);
    min_exposure: the smallest exposure amount in paise it covers; working_days: how long
    the reviewer has."""

    exposure_class: str | None
    min_exposure: int
    working_days: int


DUE_RULES: tuple[DueRule, ...] = (
    DueRule("disputed", 0, 2),
    DueRule("structural", 0, 10),
    DueRule("awaiting_settlement", PAISE_PER_LAKH, 2),
    DueRule("awaiting_settlement", 0, 5),
    DueRule("amount_at_risk", PAISE_PER_LAKH, 1),
    DueRule("amount_at_risk", 10_000 * PAISE_PER_RUPEE, 3),
    DueRule("amount_at_risk", 0, 5),
    # A class the rules do not know is treated as money at risk (spec section 6).
    DueRule(None, PAISE_PER_LAKH, 1),
    DueRule(None, 10_000 * PAISE_PER_RUPEE, 3),
    DueRule(None, 0, 5),
)
KNOWN_CLASSES = frozenset(r.exposure_class for r in DUE_RULES if r.exposure_class is not None)


def working_days_for(exposure_class: str, exposure_amount: int) -> int:
    """How many working days a reviewer has for this exposure."""
    cls: str | None = exposure_class if exposure_class in KNOWN_CLASSES else None
    for rule in DUE_RULES:
        if rule.exposure_class == cls and abs(exposure_amount) >= rule.min_exposure:
            return rule.working_days
    return DUE_RULES[-1].working_days


def due_date(
    exposure_class: str,
    exposure_amount: int,
    opened_at: int,
    calendar: WorkingCalendar | None = None,
) -> str:
    """ISO date the exception is due, counted from the IST date of `opened_at`."""
    cal = calendar or WorkingCalendar()
    start = ist_date(opened_at)
    return cal.add_working_days(
        start, working_days_for(exposure_class, exposure_amount)
    ).isoformat()


def due_dates_by_rule(
    opened_at: int, calendar: WorkingCalendar | None = None
) -> list[tuple[str | None, int, str]]:
    """(class, min_exposure, ISO due date) per rule, for one opening time: lets SQL assign
    due dates to many exceptions at once."""
    cal = calendar or WorkingCalendar()
    start: dt.date = ist_date(opened_at)
    return [
        (r.exposure_class, r.min_exposure, cal.add_working_days(start, r.working_days).isoformat())
        for r in DUE_RULES
    ]
