"""The Books page's tables and chart (core.books): labels, rupees, the balance over time."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui.charts import INDIAN_SHORT
from ui.format import inr

LABELS = {
    "captured": "Captured payments",
    "refunds": "Refunds",
    "fees": "Fees (incl. GST)",
    "dispute_debits": "Dispute debits",
    "dispute_reversals": "Dispute reversals",
    "written_off": "Written off (lost disputes)",
    "adjustments": "Adjustments",
    "transfers": "Transfers and reversals",
    "settlements": "Settlements",
    "instant_settlements": "Instant settlements",
    "unsettled_payments": "Unsettled captured payments",
    "held": "Held by Razorpay",
    "pending_refunds": "Refunds not yet settled",
    "unsettled_other_rows": "Other unsettled rows",
    "instant_advances": "Instant settlements not yet drawn",
    "flagged_differences": "Differences under review (exceptions)",
}


def lines_table(lines: tuple[tuple[str, int], ...]) -> pd.DataFrame:
    """(line, paise) pairs as a two-column table of labels and exact rupees."""
    return pd.DataFrame(
        {
            "Line": [LABELS.get(name, name) for name, _ in lines],
            "Amount": [inr(amount) for _, amount in lines],
        }
    )


def drilldown_table(rows: tuple[tuple[str, str, str, int], ...]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Day": [r[0] for r in rows],
            "Entity": [f"{r[1]}: {r[2]}" for r in rows],
            "Unexplained": [inr(r[3]) for r in rows],
        }
    )


def balance_chart(days: pd.DataFrame) -> alt.Chart:
    """The closing balance and the open items per day (whole rupees), and the residual."""
    frame = pd.DataFrame(
        {
            "Day": pd.to_datetime(days["day"].astype(str)),
            "Closing balance": days["closing"] // 100,
            "Open items": days["open_items"] // 100,
            "Residual": days["residual"] // 100,
        }
    ).melt("Day", var_name="Series", value_name="Rupees")
    return (
        alt.Chart(frame, title="Razorpay receivable by day")
        .mark_line(point=False)
        .encode(
            x=alt.X("Day:T", title=None),
            y=alt.Y("Rupees:Q", title="₹", axis=alt.Axis(labelExpr=INDIAN_SHORT)),
            color=alt.Color("Series:N", legend=alt.Legend(orient="bottom", title=None)),
            strokeDash=alt.StrokeDash("Series:N", legend=None),
            tooltip=["Day:T", "Series:N", alt.Tooltip("Rupees:Q", format=",")],
        )
    )
