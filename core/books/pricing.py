"""Contracted pricing (docs/books.md): the merchant's plan, versioned, and every payment's
fee and GST checked against the plan in force when it was captured.

A rule prices one class of payment: a percentage in basis points (1/100 of a percent) of
the INR amount, plus a fixed fee in paise; GST is `gst_bp` (18% = 1800) of that fee. Both
are rounded half up to the paisa, and a charge more than `TOLERANCE_PAISE` above the plan
is an overcharge (a paisa either way is rounding, never an exception).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from core import columns
from core.calendar import ist_month_labels
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
    method when a plan can price it, else `other`. (Each text column's distinct values are
    read once, and the class is put together from codes.)"""
    klass = _class_codes(method, international.to_numpy(dtype=bool), cards)
    names = np.array(METHOD_CLASSES, dtype=object)[klass]
    return pd.Series(names, index=method.index, name=method.name, dtype="str")


_CLASS = {name: code for code, name in enumerate(METHOD_CLASSES)}


def _class_codes(
    method: pd.Series, international: npt.NDArray[np.bool_], cards: pd.DataFrame | None
) -> npt.NDArray[np.int64]:
    """payment_class as codes into METHOD_CLASSES."""

    def known(values: pd.Series) -> pd.Series:
        text = values.str.lower().fillna("other")
        return text.where(text.isin(METHOD_CLASSES), "other").map(_CLASS).astype(np.int64)

    klass = columns.per_value(method, known, np.int64)
    if cards is not None and len(cards):

        def network_is(name: str) -> Callable[[pd.Series], pd.Series]:
            return lambda v: (v.str.lower().str.replace(" ", "") == name).fillna(False)

        def stripped_is(name: str) -> Callable[[pd.Series], pd.Series]:
            return lambda v: (v.str.lower().str.strip() == name).fillna(False)

        credit = columns.per_value(cards["card_type"], stripped_is("credit"), np.bool_)
        debit = columns.per_value(cards["card_type"], stripped_is("debit"), np.bool_)
        rupay = columns.per_value(cards["card_network"], network_is("rupay"), np.bool_)
        business = columns.per_value(cards["card_sub_type"], stripped_is("business"), np.bool_)
        card = np.full(len(klass), _CLASS["card"], dtype=np.int64)
        card[credit] = _CLASS["credit"]
        card[debit] = _CLASS["debit"]
        card[debit & rupay] = _CLASS["rupay_debit"]
        card[business] = _CLASS["corporate"]
        klass = np.where(klass == _CLASS["card"], card, klass)
    out: npt.NDArray[np.int64] = np.where(international, _CLASS["international"], klass)
    return out


def _card_international(pay: pd.DataFrame) -> np.ndarray:
    if "card_international" not in pay.columns:
        return np.zeros(len(pay), dtype=bool)
    return columns.per_value(
        pay["card_international"],
        lambda v: v.str.strip().str.lower().isin(["true", "1", "yes"]).fillna(False),
        np.bool_,
    )


def priced_by(klass: pd.Series, plan: PricingPlan) -> pd.Series:
    """The plan line each class is priced by: its own, else (a card class the plan does not
    price apart) the plan's `card` line, else <NA> (not priced)."""
    lines = {r.method for r in plan.rules}
    own = klass.where(klass.isin(lines))
    if "card" in lines:
        fallback = klass.isin(CARD_CLASSES) & own.isna()
        own = own.where(~fallback.to_numpy(), "card")
    return own


@dataclass(frozen=True)
class _Captured:
    """The captured payments (positions in `dataset.payments`), their ids, classes and the
    index of the plan in force when each was captured (-1: none yet)."""

    rows: npt.NDArray[np.intp]
    ids: pa.Array
    klass: npt.NDArray[np.int64]
    created_at: npt.NDArray[np.int64]
    foreign: npt.NDArray[np.bool_]
    plan_index: npt.NDArray[np.int64]
    ordered: list[PricingPlan]

    def id_objects(self, chosen: npt.NDArray[np.intp]) -> npt.NDArray[np.object_]:
        """The chosen payments' ids as `p["id"].astype(str).to_numpy()` has them."""
        values = self.ids.take(pa.array(chosen)).to_numpy(zero_copy_only=False)
        out: npt.NDArray[np.object_] = np.where(pd.isna(values), np.nan, values).astype(object)
        return out

    def any_id(self) -> bool:
        """Whether a frame built from every captured payment's id infers 'str' (else, no
        id at all, object)."""
        return bool(len(self.ids) > self.ids.null_count)


def _text_cells(
    values: npt.NDArray[np.object_], as_text: bool
) -> pd.api.extensions.ExtensionArray | npt.NDArray[np.object_]:
    """A text column as a frame infers it from the whole column: 'str', or object."""
    return pd.array(values, dtype="str") if as_text else values


def _captured(pay: pd.DataFrame, plans: tuple[PricingPlan, ...]) -> _Captured:
    rows = np.flatnonzero(columns.captured(pay))
    # Column by column at the captured rows (never the payments frame's every column).
    foreign = columns.foreign(pay["currency"])
    flag = pay["international"].to_numpy(dtype=bool) | foreign | _card_international(pay)
    klass = _class_codes(pay["method"], flag, _card_frame(pay))
    ordered = sorted(plans, key=lambda x: (x.effective_from, x.version))
    starts = np.array([x.effective_from for x in ordered], dtype=np.int64)
    created = pay["created_at"].to_numpy(np.int64)[rows]
    which = np.searchsorted(starts, created, side="right") - 1
    ids = columns.text(pay["id"])
    if len(rows) < len(pay):
        ids = ids.take(pa.array(rows))
    return _Captured(
        rows, ids, klass[rows], created, foreign[rows], which.astype(np.int64), ordered
    )


def _priced_codes(plan: PricingPlan) -> npt.NDArray[np.int64]:
    """priced_by as a table: class code -> the code of the plan line pricing it, or -1."""
    lines = {r.method for r in plan.rules}
    table = np.full(len(METHOD_CLASSES), -1, dtype=np.int64)
    for name, code in _CLASS.items():
        if name in lines:
            table[code] = code
        elif "card" in lines and name in CARD_CLASSES:
            table[code] = _CLASS["card"]
    return table


def unclassified_cards(dataset: Dataset, plans: tuple[PricingPlan, ...]) -> pd.DataFrame:
    """Captured card payments the plan in force cannot price: the plan prices cards by
    network or type and has no `card` line, and the payment's card details are unknown (or
    its class has no line). Listed as "cannot classify", never as an overcharge."""
    columns_out = ["payment_id", "created_at", "method_class", "plan_version"]
    pay = dataset.payments
    if not plans or pay.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns_out})
    c = _captured(pay, plans)
    is_card = np.isin(c.klass, [_CLASS[name] for name in CARD_CLASSES])
    names = np.array(METHOD_CLASSES, dtype=object)
    pieces = []
    for index, plan in enumerate(c.ordered):
        gone = np.flatnonzero(
            (c.plan_index == index) & is_card & (_priced_codes(plan)[c.klass] < 0)
        )
        pieces.append(
            pd.DataFrame(
                {
                    "payment_id": c.id_objects(gone),
                    "created_at": c.created_at[gone],
                    "method_class": names[c.klass[gone]],
                    "plan_version": plan.version,
                }
            )
        )
    out = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame(columns=columns_out)
    return out.reindex(columns=columns_out).sort_values("payment_id", ignore_index=True)


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
    charged − plan fee; > TOLERANCE_PAISE is FEE_OVERCHARGED). (Whole columns: a payment's
    first recon row found by integer codes of one dictionary, classes and plan lines as
    codes; the frame is built once, in the order the per-plan pieces had.)"""
    columns_out = [
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
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns_out})
    c = _captured(pay, plans)
    recon = dataset.recon
    is_payment = columns.equals(columns.text(recon["type"]), "payment")
    payment_rows = np.flatnonzero(is_payment)
    entity = columns.text(recon["entity_id"]).take(pa.array(payment_rows))
    (pid, entity_codes), size = columns.shared_codes(c.ids, entity)
    # Each payment's first payment row (drop_duplicates("entity_id")), or -1.
    first = columns.first_of_each(entity_codes)
    row_of = np.full(size, -1, dtype=np.int64)
    row_of[entity_codes[first]] = payment_rows[first]
    row = row_of[pid]
    has_row = row >= 0
    at = np.where(has_row, row, 0)

    def from_row(name: str) -> npt.NDArray[np.int64]:
        values: npt.NDArray[np.int64] = recon[name].to_numpy(np.int64)[at] if len(recon) else row
        return values

    def missing(name: str) -> npt.NDArray[np.bool_]:
        gaps: npt.NDArray[np.bool_] = pay[name].isna().to_numpy(dtype=bool)[c.rows]
        return gaps

    def paise(name: str) -> npt.NDArray[np.int64]:
        return columns.paise(pay[name])[c.rows]

    converted = np.where(
        missing("base_amount"), np.where(has_row, from_row("amount"), 0), paise("base_amount")
    )
    inr = np.where(c.foreign, converted, pay["amount"].to_numpy(np.int64)[c.rows])
    fee_missing, tax_missing = missing("fee"), missing("tax")
    fee = np.where(has_row, from_row("fee"), paise("fee"))
    tax = np.where(has_row, from_row("tax"), paise("tax"))
    charged = (c.plan_index >= 0) & (has_row | ~fee_missing)
    tax = np.where(has_row | ~tax_missing, tax, 0)
    # The priced payments, plan by plan (each in payment order), as the pieces were joined.
    chosen_parts, version_parts, bp_parts, fixed_parts, gst_parts = [], [], [], [], []
    for index, plan in enumerate(c.ordered):
        line = _priced_codes(plan)[c.klass]
        mine = np.flatnonzero(charged & (c.plan_index == index) & (line >= 0))
        percent = np.zeros(len(METHOD_CLASSES), dtype=np.int64)
        fixed = np.zeros(len(METHOD_CLASSES), dtype=np.int64)
        for r in plan.rules:
            percent[_CLASS[r.method]] = r.percent_bp
            fixed[_CLASS[r.method]] = r.fixed_paise
        chosen_parts.append(mine)
        version_parts.append(np.full(len(mine), plan.version, dtype=np.int64))
        bp_parts.append(percent[line[mine]])
        fixed_parts.append(fixed[line[mine]])
        gst_parts.append(np.full(len(mine), plan.gst_bp, dtype=np.int64))
    chosen = np.concatenate(chosen_parts)
    base = _round_div(inr[chosen] * np.concatenate(bp_parts), 10_000) + np.concatenate(fixed_parts)
    gst = _round_div(base * np.concatenate(gst_parts), 10_000)
    names = np.array(METHOD_CLASSES, dtype=object)
    out = pd.DataFrame(
        {
            "payment_id": _text_cells(c.id_objects(chosen), c.any_id()),
            "created_at": c.created_at[chosen],
            "method_class": _text_cells(names[c.klass[chosen]], len(c.rows) > 0),
            "plan_version": np.concatenate(version_parts),
            "amount": inr[chosen],
            "fee_charged": fee[chosen],
            "tax_charged": tax[chosen],
            "fee_plan": base + gst,
            "tax_plan": gst,
            "overcharge": fee[chosen] - (base + gst),
        }
    )
    return out.reindex(columns=columns_out).sort_values("payment_id", ignore_index=True)


def overcharged(check: pd.DataFrame) -> pd.DataFrame:
    """The payments charged more than the plan allows (beyond rounding)."""
    return check[check["overcharge"] > TOLERANCE_PAISE]


def overcharge_summary(check: pd.DataFrame) -> pd.DataFrame:
    """Overcharges per IST month and payment class: count and total paise."""
    over = overcharged(check)
    if over.empty:
        return pd.DataFrame({"month": [], "method_class": [], "payments": [], "overcharge": []})
    labels = ist_month_labels(over["created_at"].to_numpy(np.int64))
    month = pd.Series(labels, index=over.index, name="month", dtype="str")
    grouped = over.groupby([month, over["method_class"]])["overcharge"]
    return (
        grouped.agg(payments="count", overcharge="sum")
        .reset_index()
        .sort_values(["month", "method_class"], ignore_index=True)
    )
