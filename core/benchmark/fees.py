"""The benchmark's contracted pricing: the plan file, planted fee overcharges, their labels,
and Razorpay's monthly tax invoice with one planted difference (docs/benchmark.md, issue 14).

The generator prices every payment by its own table (world.FEE_BP per method, 2.50% for
international cards, 18% GST on top); `pricing_plan.json` states that table as the
merchant's plan, so a payment is overcharged exactly when Razorpay deducted more than it.
With faults, a few clean domestic payments are charged a higher rate (fee and GST both
recomputed, so the GST stays 18% of the fee: FEE_ABOVE_CONTRACT), on the payment and on
its recon row alike (no other code fires). The labels then add FEE_OVERCHARGED to every
captured payment whose deducted fee (the recon row's, else the payment's) is above the plan
by more than a paisa, with the engine's priority (after DUPLICATE_RECONCILIATION_RECORD,
WRONG_MAPPING, AMOUNT_MISMATCH, SETTLEMENT_AMOUNT_DISCREPANCY; docs/books.md).

`tax_invoice.csv` is the invoice for the month before the as-of month: taxable value and
GST of the fees Razorpay charged by payment (payments captured in the month, refund rows and
processed instant payouts of the month), plus INVOICE_EXTRA_PAISE planted on the taxable
value (and its 18% GST). `invoice_truth.json`, beside the labels, records the planted
difference; the evaluation moves it out of the dataset folder with the labels.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from core.benchmark import rules, world
from core.calendar import IST

PRICING_FILE = "pricing_plan.json"
INVOICE_FILE = "tax_invoice.csv"
INVOICE_TRUTH_FILE = "invoice_truth.json"
FEE_OVERCHARGED = "FEE_OVERCHARGED"
ROOT_CAUSE = "FEE_ABOVE_CONTRACT"
SCENARIO = "fee_overcharged"
FEES_STREAM_KEY = 20261214
OVERCHARGES = (0.001, 3)  # share of payments, minimum
OVERCHARGE_BP = 50  # the rate charged is the plan's + 0.50%
MIN_AMOUNT = 100_000  # ₹1,000: the overcharge is then well above rounding
INVOICE_EXTRA_PAISE = 125_000  # ₹1,250.00 on the taxable value, plus its 18% GST
GST_BP = 1800
OUTRANK = (
    "DUPLICATE_RECONCILIATION_RECORD",
    "WRONG_MAPPING",
    "AMOUNT_MISMATCH",
    "SETTLEMENT_AMOUNT_DISCREPANCY",
    "MISSING_SETTLEMENT",
    "MISSING_RECONCILIATION_RECORD",
)

IntArray = npt.NDArray[np.int64]


def _fee(amount: IntArray, bp: IntArray) -> tuple[IntArray, IntArray]:
    """(fee incl. GST, GST) for `bp` basis points before 18% GST, as world.build_payments."""
    base = (amount * bp + 5000) // 10000
    tax = (base * 18 + 50) // 100
    return base + tax, tax


def plan_rules() -> list[dict[str, int | str]]:
    """The generator's own prices as the merchant's plan (core.books.pricing rules)."""
    by_method = {m: int(bp) for m, bp in zip(world.METHODS, world.FEE_BP, strict=True)}
    by_method["international"] = world.INTERNATIONAL_FEE_BP
    return [
        {"method": method, "percent_bp": bp, "fixed_paise": 0}
        for method, bp in sorted(by_method.items())
    ]


def write_plan(out_dir: Path, effective_from: int) -> None:
    """pricing_plan.json: {"effective_from": Unix seconds, "gst_bp": 1800, "rules": [...]}."""
    document = {"effective_from": effective_from, "gst_bp": GST_BP, "rules": plan_rules()}
    (out_dir / PRICING_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def plan_fee(p: world.Payments) -> IntArray:
    """Each payment's fee (incl. GST) under the plan."""
    bp = np.where(p.international, world.INTERNATIONAL_FEE_BP, world.FEE_BP[p.method])
    fee, _ = _fee(p.amount, bp.astype(np.int64))
    return fee


def plant_overcharges(p: world.Payments, rng: np.random.Generator) -> IntArray:
    """Charge a few clean, captured, domestic, priced payments with one settled recon row
    a higher rate, on the payment and its row alike. Their indices."""
    bp = world.FEE_BP[p.method]
    pool = np.flatnonzero(
        p.captured
        & (p.scenario == "")
        & (p.rows == 1)
        & (p.row_key >= 0)
        & ~p.row_on_hold
        & ~p.international
        & (bp > 0)
        & (p.amount >= MIN_AMOUNT)
    )
    share, least = OVERCHARGES
    count = min(len(pool), max(least, round(len(p.id) * share)))
    chosen = np.sort(rng.choice(pool, size=count, replace=False)) if count else pool[:0]
    fee, tax = _fee(p.amount[chosen], bp[chosen] + OVERCHARGE_BP)
    p.fee[chosen], p.tax[chosen] = fee, tax
    p.row_fee[chosen], p.row_tax[chosen] = fee, tax
    p.scenario[chosen] = SCENARIO
    p.root_cause[chosen] = ROOT_CAUSE
    return chosen


def overcharged_ids(p: world.Payments) -> set[str]:
    """Captured payments whose deducted fee is above the plan by more than a paisa."""
    charged = np.where(p.rows > 0, p.row_fee, p.fee)
    over = p.captured & (charged - plan_fee(p) > 1)
    return {i.decode() if isinstance(i, bytes) else str(i) for i in p.id[over]}


def add_labels(truth: pd.DataFrame, ids: set[str]) -> pd.DataFrame:
    """The labels with FEE_OVERCHARGED added to the payments in `ids` (the engine's rule:
    a payment whose primary code outranks it lists it after those codes; otherwise it is
    the primary code, before any others)."""
    out = truth.copy()
    hit = (out["entity_type"] == "payment") & out["entity_id"].isin(ids)
    for index in out.index[hit.to_numpy()]:
        exception = out.at[index, "status"] == rules.EXCEPTION
        listed = [c for c in str(out.at[index, "reason_codes"]).split(";") if c and exception]
        at = max((i + 1 for i, c in enumerate(listed) if c in OUTRANK), default=0)
        listed.insert(at, FEE_OVERCHARGED)
        out.at[index, "reason_codes"] = ";".join(listed)
        if not (exception and out.at[index, "reason_code"] in OUTRANK):
            out.at[index, "status"] = rules.EXCEPTION
            out.at[index, "reason_code"] = FEE_OVERCHARGED
            out.at[index, "exposure_class"] = rules.exposure_class(FEE_OVERCHARGED)
            if out.at[index, "scenario"] in ("", "payment/clean"):
                out.at[index, "scenario"] = f"payment/{SCENARIO}"
            if out.at[index, "root_cause"] == "":
                out.at[index, "root_cause"] = ROOT_CAUSE
    return out


def invoice_month(as_of: int) -> str:
    """The month before the as-of instant's IST month ('YYYY-MM')."""
    day = dt.datetime.fromtimestamp(as_of, tz=IST).date().replace(day=1)
    previous = day - dt.timedelta(days=1)
    return f"{previous.year:04d}-{previous.month:02d}"


def _month_of(seconds: pd.Series) -> pd.Series:
    return (
        pd.to_datetime(seconds.astype("int64"), unit="s", utc=True)
        .dt.tz_convert(IST)
        .dt.strftime("%Y-%m")
    )


def _rupees(paise: int) -> str:
    sign = "-" if paise < 0 else ""
    whole, part = divmod(abs(paise), 100)
    return f"{sign}{whole}.{part:02d}"


def plan_start(as_of: int) -> int:
    """When the benchmark's plan is in force from: the first of the month, IST, a year
    before the as-of instant (before any generated payment)."""
    day = dt.datetime.fromtimestamp(as_of, tz=IST).date().replace(day=1)
    start = dt.datetime(day.year - 1, day.month, 1, tzinfo=IST)
    return int(start.timestamp())


def write_invoice(out_dir: Path, truth_dir: Path, as_of: int, *, planted: bool = True) -> None:
    """tax_invoice.csv for invoice_month(as_of), from the dataset files just written (API
    layout, paise), with the planted difference (none when not `planted`);
    invoice_truth.json beside the labels."""
    month = invoice_month(as_of)
    pay = pd.read_csv(out_dir / "payments.csv", dtype=str, keep_default_na=False)
    captured = pay["status"].isin(["captured", "refunded"])
    mine = pay[captured & (_month_of(pay["created_at"]) == month)]
    fee = pd.to_numeric(mine["fee"]).fillna(0).astype(np.int64)
    tax = pd.to_numeric(mine["tax"]).fillna(0).astype(np.int64)
    taxable, gst = int((fee - tax).sum()), int(tax.sum())
    recon = pd.read_csv(out_dir / "settlement_recon.csv", dtype=str, keep_default_na=False)
    refunds = recon[(recon["type"] == "refund") & (recon["created_at"] != "")]
    refunds = refunds[_month_of(refunds["created_at"]) == month]
    r_fee = pd.to_numeric(refunds["fee"]).fillna(0).astype(np.int64)
    r_tax = pd.to_numeric(refunds["tax"]).fillna(0).astype(np.int64)
    taxable += int((r_fee - r_tax).sum())
    gst += int(r_tax.sum())
    payouts_path = out_dir / "instant_settlement_payouts.csv"
    if payouts_path.exists():
        po = pd.read_csv(payouts_path, dtype=str, keep_default_na=False)
        when = po["processed_at"].where(po["processed_at"] != "", po["created_at"])
        done = po[(po["status"] == "processed") & (_month_of(when) == month)]
        p_fee = pd.to_numeric(done["fees"]).fillna(0).astype(np.int64)
        p_tax = pd.to_numeric(done["tax"]).fillna(0).astype(np.int64)
        taxable += int((p_fee - p_tax).sum())
        gst += int(p_tax.sum())
    extra = INVOICE_EXTRA_PAISE if planted else 0
    extra_gst = (extra * GST_BP + 5000) // 10000
    billed, billed_gst = taxable + extra, gst + extra_gst
    cgst = billed_gst // 2
    lines = [
        "component,amount",
        f"month,{month}",
        f"taxable_value,{_rupees(billed)}",
        f"cgst,{_rupees(cgst)}",
        f"sgst,{_rupees(billed_gst - cgst)}",
        "igst,0.00",
    ]
    (out_dir / INVOICE_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    truth = {
        "month": month,
        "fee_difference": extra,
        "gst_difference": extra_gst,
        "taxable_value_charged": taxable,
        "gst_charged": gst,
    }
    (truth_dir / INVOICE_TRUTH_FILE).write_text(json.dumps(truth, indent=2) + "\n", "utf-8")
