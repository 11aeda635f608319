"""Settlements and bank credits (spec section 5): recon sums, UTR links, the `fuzzy_utr`
and `consolidated` fallbacks, and the outcome of each gateway-looking bank credit.

UTRs are found by tokenising each credit's UTR field, reference and narration (whole,
split at dashes and slashes, and as alphanumeric runs), normalised the way spec section 3
says. A credit is linked to a settlement when one of its tokens *equals* the settlement's
normalised UTR, so a UTR inside a narration (`IMPS/KKBKH.../RAZORPAY/SETTLEMENT`) counts
even when the reference column holds another number; a credit no token links is then
searched for a UTR anywhere inside its normalised text (glued to other words, zero-padded).
The fallbacks run only over the few settlements and credits left unlinked; they and that
search are the only loops in the engine.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz.distance import Levenshtein

from core.calendar import IST_OFFSET_SECONDS, ist_dates
from core.engine import codes as C
from core.engine.columns import (
    IntArray,
    count_by,
    gather,
    ints,
    normalise_utrs,
    sum_by,
    take_text,
    text,
)
from core.engine.context import Context, DayArray
from core.engine.params import EngineParams
from core.engine.part import (
    M_CONSOLIDATED,
    M_FUZZY,
    M_NO_BANK,
    M_NONE,
    M_UTR,
    NO_PENDING,
    P_AWAITING_BANK_CREDIT,
    P_AWAITING_SETTLEMENT,
    Part,
    TextRef,
    nulls_ref,
    primary_index,
)

S_FAILED, S_SUM, S_DUP_BANK, S_BANK_AMOUNT, S_MISSING_BANK = (
    C.SETTLEMENT_CODES.index(code)
    for code in (
        C.SETTLEMENT_FAILED,
        C.SETTLEMENT_SUM_MISMATCH,
        C.DUPLICATE_BANK_CREDIT,
        C.BANK_UTR_AMOUNT_MISMATCH,
        C.MISSING_BANK_ENTRY,
    )
)
SECONDS_PER_DAY = 86_400


@dataclass
class BankLinks:
    """How the bank credits of a run are linked to settlements.

    line: for each bank line (position in `dataset.bank`), the settlement position it is
    linked to (-1 none; for a consolidated credit, the first of its settlements).
    line_method: M_* per line. line_settlements: for consolidated credits, all settlement
    positions (sorted by id). settlement_method: M_* per settlement; utr_credits: number
    of credits carrying the settlement's UTR; utr_credit_sum: their total.
    line_payout: for each bank line, the instant payout (position in
    `dataset.instant_payouts`) whose UTR it carries, -1 none (then `line` is -1 too);
    payout_credits / payout_credit_sum: per payout, as utr_credits / utr_credit_sum.
    Only exact UTR links reach payouts: the fallbacks stay settlement-only.
    """

    line: IntArray
    line_method: npt.NDArray[np.int8]
    line_settlements: dict[int, list[int]]
    settlement_method: npt.NDArray[np.int8]
    utr_credits: IntArray
    utr_credit_sum: IntArray
    line_payout: IntArray | None = None
    payout_credits: IntArray | None = None
    payout_credit_sum: IntArray | None = None


def _bank_days(bank: pd.DataFrame) -> DayArray:
    dates = pc.cast(text(bank["txn_date"]).cast(pa.string()), pa.date32())
    result: DayArray = dates.to_numpy(zero_copy_only=False).astype("datetime64[D]")
    return result


def _tokens(ctx: Context, lines: IntArray, min_length: int) -> pd.DataFrame:
    """(line, token) pairs: every string on a credit line that could be a UTR."""
    bank = ctx.dataset.bank
    index = pa.array(lines, type=pa.int64())
    utr = ctx.text(bank, "utr").take(index)
    reference = ctx.text(bank, "reference").take(index)
    narration = ctx.text(bank, "narration").take(index)
    local = np.arange(len(lines), dtype=np.int64)
    pieces: list[tuple[IntArray, pa.Array]] = [
        (local, normalise_utrs(utr)),
        (local, normalise_utrs(reference)),
    ]
    for source, pattern in (
        (narration, r"[-/]"),
        (narration, r"[^A-Za-z0-9:]+"),
        (reference, r"[^A-Za-z0-9:]+"),
    ):
        split = pc.split_pattern_regex(source.fill_null(""), pattern=pattern)
        parents = pc.list_parent_indices(split).to_numpy(zero_copy_only=False).astype(np.int64)
        pieces.append((local[parents], normalise_utrs(pc.list_flatten(split))))
    line = np.concatenate([p[0] for p in pieces])
    token = pa.concat_arrays([p[1].cast(pa.large_string()) for p in pieces])
    frame = pd.DataFrame({"line": lines[line], "token": pd.arrays.ArrowStringArray(token)})
    long_enough = frame["token"].str.len().fillna(0).to_numpy(dtype=np.int64) >= min_length
    return frame[long_enough].drop_duplicates(ignore_index=True)


def payout_net(payouts: pd.DataFrame) -> IntArray:
    """What each instant payout pays into the bank: `amount_settled`, else amount - fees."""
    settled = payouts["amount_settled"]
    result: IntArray = np.where(
        settled.isna().to_numpy(dtype=bool),
        ints(payouts["amount"]) - ints(payouts["fees"]),
        ints(settled),
    ).astype(np.int64)
    return result


def _payout_targets(ctx: Context) -> tuple[IntArray, IntArray, pa.Array, pa.Array]:
    """Instant payouts a credit may pay (status processed): positions in
    `dataset.instant_payouts`, their expected credit (`amount_settled`, else amount -
    fees), ids and normalised UTRs."""
    payouts = ctx.dataset.instant_payouts
    rows = np.flatnonzero(status_is(payouts, "processed")).astype(np.int64)
    net = payout_net(payouts)
    index = pa.array(rows, type=pa.int64())
    ids = ctx.text(payouts, "id").take(index)
    utrs = normalise_utrs(ctx.text(payouts, "utr").take(index))
    return rows, net[rows].astype(np.int64), ids, utrs


def link_bank(ctx: Context) -> BankLinks:
    """Link bank credits to settlements: exact UTR, then `fuzzy_utr`, then `consolidated`.
    Instant payouts' UTRs are link targets too (exact UTR only): targets are numbered
    settlements first (0..m-1), then processed payouts (m..)."""
    ds, params = ctx.dataset, ctx.params
    st, bank = ds.settlements, ds.bank
    m, b = len(st), len(bank)
    s_amount = ints(st["amount"])
    s_ids = ctx.text(st, "id")
    s_utr = normalise_utrs(st["utr"])
    processed = status_is(st, "processed")
    credit = ints(bank["credit"])
    credit_lines = np.flatnonzero(credit > 0).astype(np.int64)
    tokens = _tokens(ctx, credit_lines, params.utr_min_length)

    line_link = np.full(b, -1, dtype=np.int64)
    line_method = np.full(b, M_NONE, dtype=np.int8)
    settlement_method = np.full(m, M_NONE, dtype=np.int8)

    # Exact UTR: a token equal to a settlement's normalised UTR (any settlement status) or
    # a processed instant payout's. Targets: settlements 0..m-1, then payouts m..
    p_rows, p_amount, p_ids, p_utr = _payout_targets(ctx)
    t_amount = np.concatenate([s_amount, p_amount])
    t_ids = pa.concat_arrays([s_ids, p_ids.cast(s_ids.type)])
    t_utr = pa.concat_arrays([s_utr.cast(pa.large_string()), p_utr.cast(pa.large_string())])
    has_utr = np.flatnonzero(~np.asarray(pc.is_null(t_utr).to_numpy(zero_copy_only=False)))
    known = pd.DataFrame(
        {
            "token": pd.arrays.ArrowStringArray(t_utr.take(pa.array(has_utr))),
            "settlement": has_utr,
        }
    )
    exact = tokens.merge(known, on="token", how="inner")[["line", "settlement"]]
    untouched = np.setdiff1d(credit_lines, exact["line"].to_numpy(dtype=np.int64))
    inside = _utrs_inside_text(ctx, untouched, known, params.utr_min_length)
    exact = pd.concat([exact, inside], ignore_index=True)
    line_target = np.full(b, -1, dtype=np.int64)
    if len(exact):
        # A line that names two settlements counts for the one whose amount it pays, else
        # for the first by id: one credit pays one settlement (or payout).
        exact = exact.drop_duplicates()
        exact["pays"] = credit[exact["line"].to_numpy()] == t_amount[exact["settlement"]]
        exact["sid"] = t_ids.take(pa.array(exact["settlement"].to_numpy())).to_pandas()
        exact = exact.sort_values(["line", "pays", "sid"], ascending=[True, False, True])
        exact = exact.drop_duplicates("line", keep="first")
        line_target[exact["line"].to_numpy()] = exact["settlement"].to_numpy()
        line_method[exact["line"].to_numpy()] = M_UTR
    line_link = np.where(line_target < m, line_target, -1).astype(np.int64)
    line_payout = np.full(b, -1, dtype=np.int64)
    to_payout = line_target >= m
    line_payout[to_payout] = p_rows[line_target[to_payout] - m]
    n_payouts = len(ctx.dataset.instant_payouts)
    payout_lines = np.flatnonzero(to_payout)
    payout_credits = count_by(line_payout[payout_lines], n_payouts)
    payout_credit_sum = sum_by(line_payout[payout_lines], credit[payout_lines], n_payouts)
    linked_lines = np.flatnonzero(line_link >= 0)
    utr_credits = count_by(line_link[linked_lines], m)
    utr_credit_sum = sum_by(line_link[linked_lines], credit[linked_lines], m)
    settlement_method[utr_credits > 0] = M_UTR

    s_day = ist_dates(ints(st["created_at"]))
    window_end = ctx.calendar.add_working_days_array(s_day, params.window_days)
    line_day = _bank_days(bank)
    unmatched_lines = credit_lines[line_target[credit_lines] < 0]
    waiting = processed & (utr_credits == 0)

    # fuzzy_utr: exactly one unlinked credit with the same amount, inside the window, whose
    # UTR is within the edit distance; and that credit fits no other settlement.
    candidates = np.flatnonzero(waiting & ~np.asarray(pc.is_null(s_utr).to_numpy(False)))
    pairs = pd.DataFrame({"settlement": candidates, "amount": s_amount[candidates]}).merge(
        pd.DataFrame({"line": unmatched_lines, "amount": credit[unmatched_lines]}), on="amount"
    )
    if len(pairs):
        sp = pairs["settlement"].to_numpy()
        lp = pairs["line"].to_numpy()
        inside = (line_day[lp] >= s_day[sp]) & (line_day[lp] <= window_end[sp])
        pairs = pairs[inside]
    if len(pairs):
        chosen = tokens[tokens["line"].isin(pairs["line"])]
        tokens_of: dict[int, list[str]] = {}
        for line, token in zip(chosen["line"].tolist(), chosen["token"].tolist(), strict=True):
            tokens_of.setdefault(int(line), []).append(str(token))
        utr_of = s_utr.to_pylist()
        limit = params.fuzzy_utr_max_distance
        close = [
            any(
                Levenshtein.distance(str(utr_of[s]), t, score_cutoff=limit) <= limit
                for t in tokens_of.get(int(line), [])
            )
            for s, line in zip(pairs["settlement"], pairs["line"], strict=True)
        ]
        fits = pairs[np.asarray(close, dtype=bool)]
        once = fits[
            ~fits["settlement"].duplicated(keep=False) & ~fits["line"].duplicated(keep=False)
        ]
        line_link[once["line"].to_numpy()] = once["settlement"].to_numpy()
        line_method[once["line"].to_numpy()] = M_FUZZY
        settlement_method[once["settlement"].to_numpy()] = M_FUZZY

    # consolidated: exactly one unlinked credit (so without a known UTR) equal to the sum
    # of two or more unlinked settlements created on the same IST day.
    line_settlements = _consolidate(
        ctx,
        waiting & (settlement_method == M_NONE),
        credit_lines[(line_link[credit_lines] < 0) & (line_payout[credit_lines] < 0)],
        s_amount,
        s_ids,
        s_day,
        window_end,
        credit,
        line_day,
    )
    for line, members in line_settlements.items():
        line_link[line] = members[0]
        line_method[line] = M_CONSOLIDATED
        settlement_method[members] = M_CONSOLIDATED
    return BankLinks(
        line=line_link,
        line_method=line_method,
        line_settlements=line_settlements,
        settlement_method=settlement_method,
        utr_credits=utr_credits,
        utr_credit_sum=utr_credit_sum,
        line_payout=line_payout,
        payout_credits=payout_credits,
        payout_credit_sum=payout_credit_sum,
    )


def _utrs_inside_text(
    ctx: Context, lines: IntArray, known: pd.DataFrame, min_length: int
) -> pd.DataFrame:
    """(line, settlement) pairs where a settlement's UTR sits inside a credit's normalised
    narration or reference without being a word of its own (`RTGS CR-AXISCN123RAZORPAY`,
    a zero-padded `0000612345678901`). Only credits no token linked are searched: few."""
    by_length: dict[int, dict[str, list[int]]] = {}
    for utr, settlement in zip(known["token"].tolist(), known["settlement"].tolist(), strict=True):
        if len(utr) >= min_length:
            by_length.setdefault(len(utr), {}).setdefault(utr, []).append(int(settlement))
    pairs: list[tuple[int, int]] = []
    if by_length and len(lines):
        index = pa.array(lines, type=pa.int64())
        for column in ("narration", "reference"):
            values = normalise_utrs(ctx.text(ctx.dataset.bank, column).take(index)).to_pylist()
            for line, value in zip(lines.tolist(), values, strict=True):
                for length, utrs in by_length.items():
                    for start in range(len(value or "") - length + 1):
                        for settlement in utrs.get(value[start : start + length], ()):
                            pairs.append((line, settlement))
    return pd.DataFrame(pairs, columns=["line", "settlement"], dtype=np.int64)


def _consolidate(
    ctx: Context,
    open_settlements: npt.NDArray[np.bool_],
    open_lines: IntArray,
    s_amount: IntArray,
    s_ids: pa.Array,
    s_day: DayArray,
    window_end: DayArray,
    credit: IntArray,
    line_day: DayArray,
) -> dict[int, list[int]]:
    """Credits that pay several same-day settlements at once: {line: [settlements]}."""
    params = ctx.params
    settlements = np.flatnonzero(open_settlements)
    if len(settlements) < params.consolidated_min_settlements or len(open_lines) == 0:
        return {}
    ids = s_ids.to_pylist()
    by_day: dict[np.datetime64, list[int]] = {}
    for s in sorted(settlements.tolist(), key=lambda s: ids[s]):
        by_day.setdefault(s_day[s], []).append(s)
    matches: list[tuple[int, tuple[int, ...]]] = []
    for day, members in by_day.items():
        if len(members) < params.consolidated_min_settlements:
            continue
        in_window = open_lines[
            (line_day[open_lines] >= day) & (line_day[open_lines] <= window_end[members[0]])
        ]
        if len(in_window) == 0:
            continue
        amounts: dict[int, list[int]] = {}
        for line in in_window.tolist():
            amounts.setdefault(int(credit[line]), []).append(line)
        for subset in _subsets(members, params):
            total = int(s_amount[list(subset)].sum())
            lines = amounts.get(total, [])
            if len(lines) == 1:
                matches.append((lines[0], subset))
            elif len(lines) > 1:
                # More than one credit equals this sum: not "exactly one", so no match,
                # and none of these credits may be claimed by another subset either.
                matches.extend((line, ()) for line in lines)
    by_line: dict[int, list[tuple[int, ...]]] = {}
    for line, subset in matches:
        by_line.setdefault(line, []).append(subset)
    accepted = {
        line: subsets[0] for line, subsets in by_line.items() if len(subsets) == 1 and subsets[0]
    }
    claims: dict[int, int] = {}
    for subset in accepted.values():
        for s in subset:
            claims[s] = claims.get(s, 0) + 1
    return {
        line: list(subset)
        for line, subset in accepted.items()
        if all(claims[s] == 1 for s in subset)
    }


def _subsets(members: list[int], params: EngineParams) -> list[tuple[int, ...]]:
    """Subsets of one day's unlinked settlements a consolidated credit may pay."""
    smallest = params.consolidated_min_settlements
    if len(members) <= params.consolidated_max_subset_group:
        return [
            subset
            for size in range(smallest, len(members) + 1)
            for subset in itertools.combinations(members, size)
        ]
    pairs = list(itertools.combinations(members, 2)) if smallest <= 2 else []
    return [*pairs, tuple(members)]


def status_is(frame: pd.DataFrame, value: str) -> npt.NDArray[np.bool_]:
    status = pc.utf8_lower(text(frame["status"]))
    result: npt.NDArray[np.bool_] = np.asarray(
        pc.equal(status, value).fill_null(False).to_numpy(zero_copy_only=False), dtype=bool
    )
    return result


def check_settlements(ctx: Context, links: BankLinks | None) -> Part:
    """Outcomes of settlements. `links` is None when the dataset has no bank statement."""
    ds = ctx.dataset
    st, rec = ds.settlements, ds.recon
    m = len(st)
    amount = ints(st["amount"])
    created = ints(st["created_at"])
    failed = status_is(st, "failed")
    created_status = status_is(st, "created")
    processed = ~failed & ~created_status

    spos = ctx.recon_regular_settlement  # instant-settled rows are in no regular sum
    in_settlement = spos >= 0
    row_net = ints(rec["credit"]) - ints(rec["debit"])
    row_sum = sum_by(spos[in_settlement], row_net[in_settlement], m)

    mask = np.zeros(m, dtype=np.int64)
    mask |= failed.astype(np.int64) << S_FAILED
    mask |= (processed & (amount != row_sum)).astype(np.int64) << S_SUM
    pending = np.where(created_status, P_AWAITING_SETTLEMENT, NO_PENDING).astype(np.int8)
    actual = np.where(processed, row_sum, 0)
    method = np.where(processed, M_NO_BANK, M_NONE).astype(np.int8)
    if links is not None:
        n_credits = links.utr_credits
        linked = links.settlement_method != M_NONE
        deadline = ctx.deadline(created, ctx.params.calendar.bank_days)
        overdue = ctx.as_of_day > deadline
        mask |= (processed & (n_credits >= 2)).astype(np.int64) << S_DUP_BANK
        mask |= (processed & (n_credits == 1) & (links.utr_credit_sum != amount)).astype(
            np.int64
        ) << S_BANK_AMOUNT
        mask |= (processed & ~linked & overdue).astype(np.int64) << S_MISSING_BANK
        waiting = processed & ~linked & ~overdue & (mask == 0)
        pending = np.where(waiting, P_AWAITING_BANK_CREDIT, pending).astype(np.int8)
        # What the bank shows for it: the UTR credits, or (fallbacks) the settlement's share.
        actual = np.where(n_credits > 0, links.utr_credit_sum, np.where(linked, amount, 0))
        actual = np.where(processed, actual, 0)
        method = np.where(processed | linked, links.settlement_method, M_NONE).astype(np.int8)

    primary = primary_index(mask, len(C.SETTLEMENT_CODES))
    expected = np.where(primary == S_SUM, row_sum, amount)
    actual = np.where(primary == S_SUM, amount, actual)
    actual = np.where((primary == S_FAILED) | (primary == S_MISSING_BANK), 0, actual)
    actual = np.where(pending > 0, 0, actual)
    ids = ctx.text(st, "id")
    return Part(
        entity_type="settlement",
        codes=C.SETTLEMENT_CODES,
        entity_id=TextRef(ids),
        mask=mask,
        pending=pending,
        settlement_id=TextRef(ids),
        expected=expected.astype(np.int64),
        actual=actual.astype(np.int64),
        method=method,
        order_id=nulls_ref(m),
        utr=TextRef(ctx.text(st, "utr")),
        created_at=created,
        created_at_null=np.zeros(m, dtype=bool),
    )


def check_bank_lines(ctx: Context, links: BankLinks) -> Part:
    """Outcomes of bank credits that look like gateway settlements (spec section 5)."""
    ds, params = ctx.dataset, ctx.params
    bank, st = ds.bank, ds.settlements
    credit = ints(bank["credit"])
    marker = params.gateway_marker.upper()
    mentions = np.zeros(len(bank), dtype=bool)
    for column in ("narration", "reference"):
        found = pc.match_substring(pc.utf8_upper(text(bank[column])), marker)
        mentions |= np.asarray(found.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    line_payout = links.line_payout if links.line_payout is not None else np.full(len(bank), -1)
    linked = (links.line >= 0) | (line_payout >= 0)
    lines = np.flatnonzero((credit > 0) & (linked | mentions)).astype(np.int64)

    s_amount = ints(st["amount"])
    s_ids = ctx.text(st, "id")
    link = links.line[lines]
    expected = gather(s_amount, link)
    settlement_id = take_text(s_ids, link)
    if links.line_settlements:
        # A consolidated credit pays several settlements: name them all, sorted by id.
        ids = s_ids.to_pylist()
        where = {int(line): i for i, line in enumerate(lines.tolist())}
        names = settlement_id.to_pylist()
        for line, members in links.line_settlements.items():
            expected[where[line]] = int(s_amount[members].sum())
            names[where[line]] = ";".join(sorted(ids[s] for s in members))
        settlement_id = pa.array(names, type=pa.large_string())

    index = pa.array(lines, type=pa.int64())
    own_utr = normalise_utrs(ctx.text(bank, "utr").take(index))
    linked_utr = normalise_utrs(take_text(ctx.text(st, "utr"), link))
    exact = links.line_method[lines] == M_UTR
    utr = pc.if_else(pa.array(exact), linked_utr, pc.coalesce(own_utr, linked_utr))
    payout = line_payout[lines].astype(np.int64)
    if (payout >= 0).any():
        # A credit paying an instant payout: MATCHED, named by its instant settlement.
        payouts = ds.instant_payouts
        net = payout_net(payouts)
        to_payout = pa.array(payout >= 0)
        expected = np.where(payout >= 0, gather(net, payout), expected)
        settlement_id = pc.if_else(
            to_payout,
            take_text(ctx.text(payouts, "instant_settlement_id"), payout),
            settlement_id.cast(pa.large_string()),
        )
        utr = pc.if_else(
            to_payout,
            normalise_utrs(take_text(ctx.text(payouts, "utr"), payout)).cast(pa.large_string()),
            utr.cast(pa.large_string()),
        )
    day = _bank_days(bank)[lines].astype(np.int64) * SECONDS_PER_DAY - IST_OFFSET_SECONDS
    mask = ((link < 0) & (payout < 0)).astype(np.int64)  # bit 0: UNMATCHED_BANK_CREDIT
    return Part(
        entity_type="bank_entry",
        codes=C.BANK_ENTRY_CODES,
        entity_id=TextRef(ctx.text(bank, "id").take(index)),
        mask=mask,
        pending=np.zeros(len(lines), dtype=np.int8),
        settlement_id=TextRef(settlement_id),
        expected=expected.astype(np.int64),
        actual=credit[lines],
        method=links.line_method[lines],
        order_id=nulls_ref(len(lines)),
        utr=TextRef(utr),
        created_at=day,
        created_at_null=np.zeros(len(lines), dtype=bool),
    )


__all__ = [
    "BankLinks",
    "check_bank_lines",
    "check_settlements",
    "link_bank",
    "payout_net",
    "status_is",
]
