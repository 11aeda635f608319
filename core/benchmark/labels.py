"""Ground truth: the outcome spec section 5 gives every entity, from what was built.

The labels are stated from construction: which facts each planted fault changed (a row's
amount, its settlement, the day it settled, the bank lines written for a settlement), run
through the spec's rules and priorities. Nothing here reads the dataset files back or calls
the engine.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from core.benchmark import rules
from core.benchmark.bank import BankStatement
from core.benchmark.money import MoneyModel
from core.benchmark.world import CALENDAR, Calendar, Payments, Refunds, Settlements
from core.calendar import ist_dates

BoolArray = npt.NDArray[np.bool_]
LABEL_COLUMNS = (
    "entity_type",
    "entity_id",
    "status",
    "reason_code",
    "reason_codes",
    "match_method",
    "exposure_class",
    "root_cause",
    "scenario",
)


def _coded(
    entity_type: str,
    ids: npt.NDArray[np.bytes_],
    codes: list[tuple[str, BoolArray]],
    scenario: npt.NDArray[np.object_],
    root_cause: npt.NDArray[np.object_],
    pending: BoolArray,
    pending_reason: npt.NDArray[np.object_],
) -> pd.DataFrame:
    """Labels from a priority-ordered list of (code, applies) columns.

    An entity with any code is an EXCEPTION with the first as `reason_code`; otherwise it is
    PENDING where `pending` says so, else MATCHED.
    """
    n = len(ids)
    mask = np.zeros(n, dtype=np.int64)
    for bit, (_, applies) in enumerate(codes):
        mask |= applies.astype(np.int64) << bit
    reason_codes = np.full(n, "", dtype=object)
    primary = np.full(n, "", dtype=object)
    for value in np.unique(mask[mask > 0]):
        names = [code for bit, (code, _) in enumerate(codes) if value >> bit & 1]
        where = mask == value
        reason_codes[where] = ";".join(names)
        primary[where] = names[0]
    exception = mask > 0
    status = np.where(exception, rules.EXCEPTION, np.where(pending, rules.PENDING, rules.MATCHED))
    reason = np.where(exception, primary, np.where(pending, pending_reason, ""))
    # A pending entity's one code is its pending reason (the spec is silent; the engine agrees).
    reason_codes = np.where(exception, reason_codes, reason)
    exposure = np.array([rules.exposure_class(c) if c else "" for c in primary], dtype=object)
    return pd.DataFrame(
        {
            "entity_type": entity_type,
            "entity_id": ids.astype(str),
            "status": status,
            "reason_code": reason,
            "reason_codes": reason_codes,
            "match_method": "",
            "exposure_class": exposure,
            "root_cause": np.where(exception, root_cause, ""),
            "scenario": [f"{entity_type}/{s}" for s in scenario],
        }
    )


def _settled_late(
    key: npt.NDArray[np.int64],
    settled_at: npt.NDArray[np.int64],
    due: npt.NDArray[np.datetime64],
    calendar: Calendar,
) -> BoolArray:
    """Spec section 4: the row's settled_at date is after due + grace."""
    when = np.where(key >= 0, calendar.cycle_time[np.maximum(key, 0)], settled_at)
    grace_end = calendar.add(due, CALENDAR.grace_days)
    result: BoolArray = (when >= 0) & (ist_dates(np.maximum(when, 0)) > grace_end)
    return result


def payment_labels(p: Payments, calendar: Calendar) -> pd.DataFrame:
    captured = p.captured
    has_row = p.rows > 0
    held = p.row_on_hold  # held rows are written with settled = false
    wrong = (p.row_payment_id != b"") & (p.row_payment_id != p.id)
    wrong |= (p.row_order_id != b"") & (p.order_id != b"") & (p.row_order_id != p.order_id)
    amount = p.row_amount != p.amount
    discrepancy = ~amount & ((p.row_amount - p.row_fee) != (p.amount - p.fee))
    no_settlement = p.row_key < 0
    late = _settled_late(p.row_key, p.row_settled_at, p.due, calendar)
    row_codes = [
        ("DUPLICATE_RECONCILIATION_RECORD", p.rows >= 2),
        ("WRONG_MAPPING", wrong),
        ("AMOUNT_MISMATCH", amount),
        ("SETTLEMENT_AMOUNT_DISCREPANCY", discrepancy),
        ("MISSING_SETTLEMENT", no_settlement & ~held),
        ("TIMING_WINDOW_EXCEEDED", late & ~held),
    ]
    codes = [(code, applies & has_row & captured) for code, applies in row_codes]
    codes.append(("MISSING_RECONCILIATION_RECORD", captured & ~has_row & p.overdue))
    # Payments that are not captured get an outcome only when money was settled for them.
    codes.append(("STATUS_MISMATCH", ~captured & has_row))
    pending = captured & ((~has_row & ~p.overdue) | (has_row & held))
    reason = np.where(has_row, rules.ON_HOLD, rules.AWAITING_SETTLEMENT).astype(object)
    scenario = p.scenario.copy()
    natural = scenario == ""
    scenario[natural & captured & ~has_row] = "awaiting_settlement"
    scenario[natural & captured & has_row] = "clean"
    scenario[natural & captured & has_row & p.international] = "clean_international"
    labelled = captured | has_row
    frame = _coded("payment", p.id, codes, scenario, p.root_cause, pending, reason)
    return frame[labelled].reset_index(drop=True)


def refund_labels(r: Refunds, p: Payments) -> pd.DataFrame:
    has_row = r.rows > 0
    codes = [
        ("DUPLICATE_RECONCILIATION_RECORD", r.rows >= 2),
        ("WRONG_MAPPING", has_row & (r.row_payment_id != p.id[r.payment])),
        ("REFUND_AMOUNT_MISMATCH", has_row & (r.row_debit != r.amount + r.fee)),
        ("MISSING_RECONCILIATION_RECORD", ~has_row & r.overdue),
    ]
    pending = ~has_row & ~r.overdue
    reason = np.full(len(r.id), rules.AWAITING_SETTLEMENT, dtype=object)
    scenario = r.scenario.copy()
    scenario[(scenario == "") & has_row] = "clean"
    scenario[(scenario == "") & ~has_row] = "awaiting_settlement"
    frame = _coded("refund", r.id, codes, scenario, r.root_cause, pending, reason)
    processed: pd.DataFrame = frame[r.status == "processed"].reset_index(drop=True)
    return processed


def recon_row_labels(planted: dict[str, npt.NDArray[np.bytes_]]) -> pd.DataFrame:
    frames = []
    for scenario, code, cause in (
        ("unknown_payment", "PAYMENT_ID_MISMATCH", "UNKNOWN_ENTITY"),
        ("unknown_refund", "PAYMENT_ID_MISMATCH", "UNKNOWN_ENTITY"),
        ("dispute_debit", "DISPUTE_DEBIT", "CHARGEBACK_DEBIT"),
    ):
        if scenario not in planted:
            continue
        ids = planted[scenario]
        n = len(ids)
        frames.append(
            _coded(
                "recon_row",
                ids,
                [(code, np.ones(n, dtype=bool))],
                np.full(n, scenario, dtype=object),
                np.full(n, cause, dtype=object),
                np.zeros(n, dtype=bool),
                np.full(n, "", dtype=object),
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=LABEL_COLUMNS)


def transfer_labels(planted: dict[str, npt.NDArray[np.bytes_]]) -> pd.DataFrame:
    """Route transfer rows without a transfers file (docs/engine.md, beyond the spec): one
    outcome per transfer, MATCHED (every transfer row rides in a known settlement)."""
    ids = planted.get("transfer", np.zeros(0, dtype="S1"))
    n = len(ids)
    if n == 0:
        return pd.DataFrame(columns=LABEL_COLUMNS)
    empty = np.full(n, "", dtype=object)
    return _coded("transfer", ids, [], empty, empty, np.zeros(n, dtype=bool), empty)


def settlement_labels(
    s: Settlements, statement: BankStatement | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Labels for settlements and, when there is a statement, for its gateway credits."""
    n = len(s.key)
    exact_credits: list[list[int]] = [[] for _ in range(n)]
    fallback = np.full(n, "", dtype=object)
    if statement is not None:
        for line in statement.lines:
            if line.kind == "settlement":
                exact_credits[line.settlement].append(line.deposit)
            elif line.kind == "fuzzy":
                fallback[line.settlement] = rules.FUZZY_UTR
        fallback[s.consolidated_group >= 0] = rules.CONSOLIDATED
    processed = s.status == "processed"
    credits = np.array([len(c) for c in exact_credits])
    first_credit = np.array([c[0] if c else -1 for c in exact_credits])
    bank = statement is not None
    unlinked = bank & (credits == 0) & (fallback == "")
    codes = [
        ("SETTLEMENT_FAILED", s.status == "failed"),
        ("SETTLEMENT_SUM_MISMATCH", processed & (s.amount != s.row_sum)),
        ("DUPLICATE_BANK_CREDIT", processed & bank & (credits >= 2)),
        (
            "BANK_UTR_AMOUNT_MISMATCH",
            processed & bank & (credits == 1) & (first_credit != s.amount),
        ),
        ("MISSING_BANK_ENTRY", processed & unlinked & s.bank_overdue),
    ]
    pending = (s.status == "created") | (processed & unlinked & ~s.bank_overdue)
    reason = np.where(s.status == "created", rules.AWAITING_SETTLEMENT, rules.AWAITING_BANK_CREDIT)
    cause = np.full(n, "", dtype=object)
    for code, applies in reversed(codes):
        cause[applies] = {
            "SETTLEMENT_FAILED": "SETTLEMENT_PAYOUT_FAILED",
            "SETTLEMENT_SUM_MISMATCH": "SETTLEMENT_ARITHMETIC_BREAK",
            "DUPLICATE_BANK_CREDIT": "BANK_CREDITED_TWICE",
            "MISSING_BANK_ENTRY": "BANK_CREDIT_MISSING",
        }.get(code, "")
        if code == "BANK_UTR_AMOUNT_MISMATCH":
            cause[applies] = np.where(
                first_credit[applies] < s.amount[applies], "BANK_SHORT_CREDIT", "BANK_EXCESS_CREDIT"
            )
    frame = _coded("settlement", s.id, codes, s.scenario, cause, pending, reason.astype(object))
    if bank:
        frame.loc[processed & (fallback != ""), "match_method"] = fallback[
            processed & (fallback != "")
        ]
    else:
        frame.loc[processed, "match_method"] = rules.NO_BANK_STATEMENT
    lines = bank_labels(s, statement, fallback) if statement is not None else pd.DataFrame()
    return frame, lines


def bank_labels(
    s: Settlements, statement: BankStatement, fallback: npt.NDArray[np.object_]
) -> pd.DataFrame:
    """Gateway-looking credits: MATCHED when linked to a settlement, else unmatched."""
    records = []
    for offset, line in enumerate(statement.lines):
        if line.kind == "noise":
            continue
        entity = f"bank_statement.csv:{statement.first_line + offset}"
        if line.kind == "unmatched":
            records.append(
                (
                    entity,
                    rules.EXCEPTION,
                    "UNMATCHED_BANK_CREDIT",
                    "UNMATCHED_BANK_CREDIT",
                    "",
                    "amount_at_risk",
                    "UNIDENTIFIED_BANK_CREDIT",
                    "bank_entry/unmatched",
                )
            )
            continue
        method = {"fuzzy": rules.FUZZY_UTR, "consolidated": rules.CONSOLIDATED}.get(line.kind, "")
        scenario = "matched" if not method else f"matched_{method}"
        if line.kind == "settlement" and s.scenario[line.settlement] == "duplicate_bank_credit":
            scenario = "matched_duplicate"
        if line.kind == "instant":
            scenario = "matched_instant"
        records.append((entity, rules.MATCHED, "", "", method, "", "", f"bank_entry/{scenario}"))
    frame = pd.DataFrame(records, columns=[c for c in LABEL_COLUMNS if c != "entity_type"])
    frame.insert(0, "entity_type", "bank_entry")
    return frame


# -- Razorpay's money model beyond the spec (docs/engine.md) ------------------------------

ROOT_CAUSE: dict[str, str] = {
    "DISPUTE_LOST": "DISPUTE_LOST_FUNDS",
    "DISPUTE_REVERSAL_MISSING": "DISPUTE_REVERSAL_NOT_CREDITED",
    "DISPUTE_OPEN": "DISPUTE_AWAITING_RESPONSE",
    "INSTANT_PAYOUT_REVERSED": "INSTANT_PAYOUT_RETURNED",
    "BANK_UTR_AMOUNT_MISMATCH": "BANK_SHORT_CREDIT",
    "MISSING_BANK_ENTRY": "BANK_CREDIT_MISSING",
    "TRANSFER_AMOUNT_MISMATCH": "TRANSFER_DEBIT_DIFFERS",
    "TRANSFER_REVERSAL_MISMATCH": "TRANSFER_REVERSAL_SHORT",  # the rows return less
    "MISSING_RECONCILIATION_RECORD": "TRANSFER_NOT_DEBITED",
    "DUPLICATE_RECONCILIATION_RECORD": "SETTLED_TWICE",
    "REFUND_AMOUNT_MISMATCH": "REFUND_AMOUNT_DIFFERS",
}


def label_record(
    entity_type: str,
    entity_id: str,
    status: str,
    codes: list[str],
    scenario: str,
    *,
    method: str = "",
    root_cause: str = "",
) -> dict[str, str]:
    """One label: EXCEPTION codes primary first; a PENDING outcome's one code is its reason."""
    exception = status == rules.EXCEPTION
    primary = codes[0] if codes else ""
    return {
        "entity_type": entity_type,
        "entity_id": entity_id,
        "status": status,
        "reason_code": primary,
        "reason_codes": ";".join(codes),
        "match_method": method,
        "exposure_class": rules.exposure_class(primary) if exception else "",
        "root_cause": (root_cause or ROOT_CAUSE.get(primary, "")) if exception else "",
        "scenario": f"{entity_type}/{scenario}",
    }


def money_payment_label(fact: dict[str, object]) -> dict[str, str]:
    """A payment of the wider model: INR amounts compared with INR (base_amount), holds
    superseded by a release, nothing expected when settled by someone else."""
    rows = list(fact["rows"])  # type: ignore[call-overload]
    live = [r for r in rows if not r["held"]]
    checked = live if live else rows
    inr = int(fact["inr"])  # type: ignore[call-overload]
    fee = int(fact["fee"])  # type: ignore[call-overload]
    elsewhere = rules.settled_elsewhere(str(fact["settled_by"]))
    codes: list[str] = []
    if len(checked) >= 2:
        codes.append("DUPLICATE_RECONCILIATION_RECORD")
    if any(r["amount"] != inr for r in checked):
        codes.append("AMOUNT_MISMATCH")
    elif any(r["credit"] != inr - fee for r in checked):
        codes.append("SETTLEMENT_AMOUNT_DISCREPANCY")
    if not elsewhere and live and fact["late"]:
        codes.append("TIMING_WINDOW_EXCEEDED")
    if not elsewhere and not rows and fact["overdue"]:
        codes.append("MISSING_RECONCILIATION_RECORD")
    scenario = str(fact["scenario"])
    cause = str(fact["root_cause"])
    if codes:
        return label_record(
            "payment", str(fact["id"]), rules.EXCEPTION, codes, scenario, root_cause=cause
        )
    if rows and not live:
        return label_record("payment", str(fact["id"]), rules.PENDING, [rules.ON_HOLD], scenario)
    if not rows and not elsewhere:
        return label_record(
            "payment", str(fact["id"]), rules.PENDING, [rules.AWAITING_SETTLEMENT], scenario
        )
    method = rules.DIRECT if elsewhere else ""
    return label_record("payment", str(fact["id"]), rules.MATCHED, [], scenario, method=method)


def money_refund_label(fact: dict[str, object]) -> dict[str, str]:
    """A refund in another currency, compared in INR: base_amount + row fee = row debit."""
    codes = []
    if int(fact["rows"]) >= 2:  # type: ignore[call-overload]
        codes.append("DUPLICATE_RECONCILIATION_RECORD")
    if int(fact["rows"]) and fact["debit"] != int(fact["inr"]) + int(fact["fee"]):  # type: ignore[call-overload]
        codes.append("REFUND_AMOUNT_MISMATCH")
    status = rules.EXCEPTION if codes else rules.MATCHED
    return label_record("refund", str(fact["id"]), status, codes, str(fact["scenario"]))


def money_model_labels(mm: MoneyModel) -> pd.DataFrame:
    """Labels of every entity the money model planted, by the rules of docs/engine.md."""
    records: list[dict[str, str]] = []
    for fact in mm.facts.get("payment", []):
        records.append(money_payment_label(fact))
    for fact in mm.facts.get("refund", []):
        records.append(money_refund_label(fact))
    for fact in mm.facts.get("dispute", []):
        status, code = rules.dispute_outcome(fact["status"], fact["debit"], fact["credit"])
        records.append(
            label_record("dispute", fact["id"], status, [code] if code else [], fact["scenario"])
        )
    for fact in mm.facts.get("instant_settlement", []):
        status, codes, method = rules.instant_settlement_codes(
            fact["reversed_amount"],
            fact["expected"],
            fact["credits"],
            fact["has_processed"],
            fact["bank_overdue"],
            fact["bank"],
        )
        records.append(
            label_record(
                "instant_settlement", fact["id"], status, codes, fact["scenario"], method=method
            )
        )
    for fact in mm.facts.get("transfer", []):
        status, codes = rules.transfer_codes(
            fact["rows"],
            fact["debit"],
            fact["amount"],
            fact["fee"],
            fact["reversed_rows"],
            fact["amount_reversed"],
            fact["due"],
        )
        records.append(label_record("transfer", fact["id"], status, codes, fact["scenario"]))
    # docs/engine.md, Disputes without a disputes file entry: a reversal credit row whose
    # dispute has no debit gets no outcome (an adjustment that is not a dispute debit), so
    # `mm.dispute_reversals_alone` has no label.
    return pd.DataFrame(records, columns=list(LABEL_COLUMNS))
