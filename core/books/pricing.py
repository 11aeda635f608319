"""Contracted pricing (docs/books.md): the merchant's plan, versioned, and every payment's
fee and GST checked against the plan in force when it was captured.

A rule prices one class of payment: a percentage in basis points (1/100 of a percent) of
the INR amount, plus a fixed fee in paise; GST is `gst_bp` (18% = 1800) of that fee. Both
are rounded half up to the paisa, and a charge more than `TOLERANCE_PAISE` above the plan
is an overcharge (a paisa either way is rounding, never an exception).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.dataset import Dataset

# Payment classes a plan prices. A domestic card payment is priced by its network and type
# when the payment carries them (the Payments API's `card` object, or a report's card
# columns: core.ingest.cards): RuPay debit, other debit, credit, corporate (business) cards;
# `card` is the plan's line for a card whose details are unknown or not priced apart
# (prepaid, or a class the plan has no line for). International cards (and payments in
# another currency) are `international`.
CARD_CLASSES: tuple[str, ...] = ("card", "rupay_debit", "debit", "credit", "corporate")
METHOD_CLASSES: tuple[str, ...] = (
    "upi",
    *CARD_CLASSES,
    "international",
    "netbanking",
    "wallet",
    "emi",
    "paylater",
    "cardless_emi",
    "bank_transfer",
    "other",
)
GST_BP = 1800
TOLERANCE_PAISE = 1


@dataclass(frozen=True)
class PricingRule:
    method: str  # one of METHOD_CLASSES
    percent_bp: int = 0  # basis points of the amount: 200 = 2.00%
    fixed_paise: int = 0

    def __post_init__(self) -> None:
        if self.method not in METHOD_CLASSES:
            raise ValueError(f"unknown payment class {self.method!r}")
        if self.percent_bp < 0 or self.fixed_paise < 0 or self.percent_bp > 10_000:
            raise ValueError(f"{self.method}: a fee is 0% to 100% plus a fixed amount >= 0")


@dataclass(frozen=True)
class PricingPlan:
    """One version of the plan, in force for payments captured at or after `effective_from`
    (Unix seconds) until a later version takes over."""

    version: int
    effective_from: int
    rules: tuple[PricingRule, ...]
    gst_bp: int = GST_BP

    def rules_json(self) -> str:
        return json.dumps(
            [
                {"method": r.method, "percent_bp": r.percent_bp, "fixed_paise": r.fixed_paise}
                for r in sorted(self.rules, key=lambda r: r.method)
            ],
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, version: int, effective_from: int, gst_bp: int, text: str) -> PricingPlan:
        rules = tuple(
            PricingRule(str(r["method"]), int(r["percent_bp"]), int(r["fixed_paise"]))
            for r in json.loads(text)
        )
        return cls(int(version), int(effective_from), rules, int(gst_bp))


def payment_class(
    method: pd.Series, international: pd.Series, cards: pd.DataFrame | None = None
) -> pd.Series:
    """Each payment's class: `international` for a payment flagged international (or in
    another currency, or on a card issued abroad), a card class for a domestic card payment
    (`cards`: the payments' card_network, card_type and card_sub_type, when known), else its
    method when a plan can price it, else `other`."""
    text = method.astype("string").str.lower().fillna("other")
    known = text.where(text.isin(METHOD_CLASSES), "other")
    if cards is not None and len(cards):
        network = cards["card_network"].astype("string").str.lower().str.replace(" ", "")
        kind = cards["card_type"].astype("string").str.lower().str.strip()
        sub = cards["card_sub_type"].astype("string").str.lower().str.strip()
        card = pd.Series("card", index=known.index, dtype=object)
        card = card.where(~(kind == "credit").fillna(False).to_numpy(), "credit")
        debit = (kind == "debit").fillna(False).to_numpy()
        card = card.where(~debit, "debit")
        card = card.where(~(debit & (network == "rupay").fillna(False).to_numpy()), "rupay_debit")
        card = card.where(~(sub == "business").fillna(False).to_numpy(), "corporate")
        known = known.where(~(known == "card").to_numpy(), card)
    return known.where(~international.to_numpy(dtype=bool), "international").astype(str)


def _card_international(pay: pd.DataFrame) -> np.ndarray:
    if "card_international" not in pay.columns:
        return np.zeros(len(pay), dtype=bool)
    flag = pay["card_international"].astype("string").str.strip().str.lower()
    return flag.isin(["true", "1", "yes"]).fillna(False).to_numpy(dtype=bool)


def priced_by(klass: pd.Series, plan: PricingPlan) -> pd.Series:
    """The plan line each class is priced by: its own, else (a card class the plan does not
    price apart) the plan's `card` line, else <NA> (not priced)."""
    lines = {r.method for r in plan.rules}
    own = klass.where(klass.isin(lines))
    if "card" in lines:
        fallback = klass.isin(CARD_CLASSES) & own.isna()
        own = own.where(~fallback.to_numpy(), "card")
    return own


def unclassified_cards(dataset: Dataset, plans: tuple[PricingPlan, ...]) -> pd.DataFrame:
    """Captured card payments the plan in force cannot price: the plan prices cards by
    network or type and has no `card` line, and the payment's card details are unknown (or
    its class has no line). Listed as "cannot classify", never as an overcharge."""
    columns = ["payment_id", "created_at", "method_class", "plan_version"]
    pay = dataset.payments
    if not plans or pay.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    captured = pay["captured"].astype(bool) | pay["status"].astype(str).isin(
        ["captured", "refunded"]
    )
    p = pay[captured.to_numpy()]
    foreign = (p["currency"].astype("string").str.upper().fillna("INR") != "INR").to_numpy()
    flag = p["international"].to_numpy(dtype=bool) | foreign | _card_international(p)
    klass = payment_class(p["method"], pd.Series(flag, index=p.index), _card_frame(p))
    ordered = sorted(plans, key=lambda x: (x.effective_from, x.version))
    starts = np.array([x.effective_from for x in ordered], dtype=np.int64)
    which = np.searchsorted(starts, p["created_at"].to_numpy(np.int64), side="right") - 1
    pieces = []
    for index, plan in enumerate(ordered):
        mine = (which == index) & klass.isin(CARD_CLASSES).to_numpy()
        lines = priced_by(klass[mine], plan)
        gone = lines.isna().to_numpy()
        pieces.append(
            pd.DataFrame(
                {
                    "payment_id": p["id"].astype(str).to_numpy()[mine][gone],
                    "created_at": p["created_at"].to_numpy(np.int64)[mine][gone],
                    "method_class": klass[mine].to_numpy()[gone],
                    "plan_version": plan.version,
                }
            )
        )
    out = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame(columns=columns)
    return out.reindex(columns=columns).sort_values("payment_id", ignore_index=True)


def _card_frame(p: pd.DataFrame) -> pd.DataFrame | None:
    wanted = ("card_network", "card_type", "card_sub_type")
    if not all(c in p.columns for c in wanted):
        return None
    return p[list(wanted)]


def _round_div(values: np.ndarray, divisor: int) -> np.ndarray:
    return (values + divisor // 2) // divisor


def fee_check(dataset: Dataset, plans: tuple[PricingPlan, ...]) -> pd.DataFrame:
    """Every captured INR-or-converted payment with a plan in force and a rule for its class:
    id, created_at, class, plan version, INR amount, the fee and GST charged (the recon
    row's, what Razorpay deducted, else the payment's), the plan's, and `overcharge` (fee
    charged − plan fee; > TOLERANCE_PAISE is FEE_OVERCHARGED)."""
    columns = [
        "payment_id",
        "created_at",
        "method_class",
        "plan_version",
        "amount",
        "fee_charged",
        "tax_charged",
        "fee_plan",
        "tax_plan",
        "overcharge",
    ]
    pay = dataset.payments
    if not plans or pay.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    captured = pay["captured"].astype(bool) | pay["status"].astype(str).isin(
        ["captured", "refunded"]
    )
    p = pay[captured.to_numpy()]
    rows = dataset.recon[dataset.recon["type"].astype(str) == "payment"]
    first = rows.drop_duplicates("entity_id").set_index(
        rows.drop_duplicates("entity_id")["entity_id"].astype(str)
    )
    pid = p["id"].astype(str)
    foreign = (p["currency"].astype("string").str.upper().fillna("INR") != "INR").to_numpy()
    row_amount = pid.map(first["amount"]).astype("Int64")
    inr = np.where(
        foreign,
        p["base_amount"].astype("Int64").fillna(row_amount).fillna(0).to_numpy(np.int64),
        p["amount"].to_numpy(np.int64),
    )
    row_fee = pid.map(first["fee"]).astype("Int64")
    row_tax = pid.map(first["tax"]).astype("Int64")
    fee = row_fee.fillna(p["fee"].astype("Int64"))
    tax = row_tax.fillna(p["tax"].astype("Int64"))
    flag = p["international"].to_numpy(dtype=bool) | foreign | _card_international(p)
    klass = payment_class(p["method"], pd.Series(flag, index=p.index), _card_frame(p))
    ordered = sorted(plans, key=lambda x: (x.effective_from, x.version))
    starts = np.array([x.effective_from for x in ordered], dtype=np.int64)
    which = np.searchsorted(starts, p["created_at"].to_numpy(np.int64), side="right") - 1
    frame = pd.DataFrame(
        {
            "payment_id": pid.to_numpy(),
            "created_at": p["created_at"].to_numpy(np.int64),
            "method_class": klass.to_numpy(),
            "plan_index": which,
            "amount": inr,
            "fee_charged": fee.to_numpy(dtype=object),
            "tax_charged": tax.to_numpy(dtype=object),
        }
    )
    frame = frame[(frame["plan_index"] >= 0) & frame["fee_charged"].notna()]
    pieces = []
    for index, plan in enumerate(ordered):
        mine = frame[frame["plan_index"] == index]
        rules = {r.method: r for r in plan.rules}
        line = priced_by(mine["method_class"], plan)
        bp = line.map({k: r.percent_bp for k, r in rules.items()})
        fixed = line.map({k: r.fixed_paise for k, r in rules.items()})
        priced = mine[bp.notna()].copy()
        base = _round_div(
            priced["amount"].to_numpy(np.int64) * bp[bp.notna()].to_numpy(np.int64), 10_000
        ) + fixed[bp.notna()].to_numpy(np.int64)
        gst = _round_div(base * plan.gst_bp, 10_000)
        priced["plan_version"] = plan.version
        priced["fee_plan"] = base + gst
        priced["tax_plan"] = gst
        pieces.append(priced)
    out = pd.concat(pieces, ignore_index=True) if pieces else frame.iloc[0:0]
    out = out.astype({"fee_charged": np.int64})
    out["tax_charged"] = out["tax_charged"].fillna(0).astype(np.int64)
    out["overcharge"] = out["fee_charged"] - out["fee_plan"].astype(np.int64)
    return out.reindex(columns=columns).sort_values("payment_id", ignore_index=True)


def overcharged(check: pd.DataFrame) -> pd.DataFrame:
    """The payments charged more than the plan allows (beyond rounding)."""
    return check[check["overcharge"] > TOLERANCE_PAISE]


def overcharge_summary(check: pd.DataFrame) -> pd.DataFrame:
    """Overcharges per IST month and payment class: count and total paise."""
    over = overcharged(check)
    if over.empty:
        return pd.DataFrame({"month": [], "method_class": [], "payments": [], "overcharge": []})
    month = (
        pd.to_datetime(over["created_at"], unit="s", utc=True)
        .dt.tz_convert("Asia/Kolkata")
        .dt.strftime("%Y-%m")
    )
    grouped = over.groupby([month.rename("month"), over["method_class"]])["overcharge"]
    return (
        grouped.agg(payments="count", overcharge="sum")
        .reset_index()
        .sort_values(["month", "method_class"], ignore_index=True)
    )
