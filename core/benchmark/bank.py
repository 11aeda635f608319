"""The merchant's HDFC bank statement: Razorpay settlement credits among everyday noise.

Layout as HDFC exports it (spec section 3): banner lines, the header
`Date,Narration,Chq./Ref.No.,Value Dt,Withdrawal Amt.,Deposit Amt.,Closing Balance`, a row
of asterisks, then one line per transaction with `dd/mm/yy` dates and rupee amounts in
Indian digit grouping. Settlement credits carry the UTR in the narration and/or the
reference column, in the shapes real statements show.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.benchmark.ids import IdFactory
from core.benchmark.world import Calendar, Settlements
from core.dataset import BANK_FILE, HDFC_HEADER
from core.money import format_rupees

HEADER = list(HDFC_HEADER)
OPENING_BALANCE = 25_00_000_00
UNMATCHED_CREDITS = 3
NOISE_PER_DAY = 2.2

# How a settlement credit reads: (narration template, reference template, share).
CREDIT_FORMATS: tuple[tuple[str, str, float], ...] = (
    ("NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{utr}", "{utr}", 0.35),
    ("NEFT CR-YESB0000001-RAZORPAY SOFTWARE PRIVATE LIMITED-{utr}", "NEFT", 0.20),
    ("neft cr-razorpay software pvt ltd-utr: {utr_lower}", "", 0.15),
    ("RTGS CR-{utr}-RAZORPAY SOFTWARE PVT LTD", "{utr}", 0.10),
    ("IMPS/{utr}/RAZORPAY/SETTLEMENT", "0000{digits8}", 0.10),
    ("NEFT CR-UTIB0000123-PG SETTLEMENT", "{utr}", 0.10),
)
CONSOLIDATED_NARRATION = "NEFT CR-YESB0000001-RAZORPAY SOFTWARE PRIVATE LIMITED"
# Everyday lines that are not Razorpay's: (narration, side). Their reference numbers start
# 0-3, settlement UTRs never do; the one fixed number below is reserved against UTRs.
NOISE_NUMBER = "623412341234"
NOISE: tuple[tuple[str, str], ...] = (
    ("ACH D- TP ACH INDIAN CLEARING-", "debit"),
    ("POS 4xxxx1234 AMAZON PAY", "debit"),
    ("NEFT DR-SALARY {month}-", "debit"),
    ("UPI/CLOUD HOSTING/PAYMENT", "debit"),
    ("CHQ PAID-MICR CTS-OFFICE RENT", "debit"),
    ("NEFT CR-HDFC0000240-ACME DISTRIBUTORS-INV {invoice}", "credit"),
    ("INT.PD:{period}", "credit"),
    ("IMPS/P2A/" + NOISE_NUMBER + "/VENDOR REFUND", "credit"),
    ("CHQ DEP-CTS CLG-SHARMA TRADERS", "credit"),
)


@dataclass(frozen=True)
class BankLine:
    """One statement line before numbering.

    kind: 'settlement' (a credit for settlement `settlement`), 'fuzzy' (its UTR mistyped),
    'consolidated' (one credit for the settlements of `group`), 'unmatched' (a gateway-looking
    credit nothing explains) or 'noise'.
    """

    day: np.datetime64
    narration: str
    reference: str
    withdrawal: int
    deposit: int
    kind: str
    settlement: int = -1
    group: int = -1


@dataclass(frozen=True)
class BankStatement:
    """The numbered lines: `lines[i]` is physical line `first_line + i` of the file."""

    lines: tuple[BankLine, ...]
    first_line: int
    text: str


def _mistype(utr: str, rng: np.random.Generator) -> str:
    """A UTR within edit distance 1-2 of `utr`: truncated, or one digit changed."""
    how = int(rng.integers(0, 3))
    if how == 0:
        return utr[:-1]
    if how == 1:
        return utr[:-2]
    position = len(utr) - 1 - int(rng.integers(0, 6))
    digit = str((int(utr[position]) + int(rng.integers(1, 10))) % 10)
    return utr[:position] + digit + utr[position + 1 :]


def _credit_text(utr: str, ids: IdFactory, rng: np.random.Generator) -> tuple[str, str]:
    shares = np.array([f[2] for f in CREDIT_FORMATS])
    narration, reference, _ = CREDIT_FORMATS[int(rng.choice(len(shares), p=shares / shares.sum()))]
    values = {"utr": utr, "utr_lower": utr.lower(), "digits8": ids.digits(8)}
    return narration.format(**values), reference.format(**values)


def build_lines(
    s: Settlements, calendar: Calendar, ids: IdFactory, rng: np.random.Generator, faults: bool
) -> list[BankLine]:
    """Every bank line, in no particular order. May replace fuzzy settlements' UTRs with
    lettered ones (a truncated all-digit UTR would no longer look like a UTR).
    """
    lines: list[BankLine] = []
    next_day = calendar.add(s.day, 1)
    for i in range(len(s.key)):
        scenario = str(s.scenario[i])
        if s.status[i] != "processed" or scenario in ("awaiting_bank_credit", "missing_bank_entry"):
            continue
        if scenario == "consolidated":
            continue
        utr = s.utr[i].decode()
        day = s.day[i] if rng.random() < 0.75 else next_day[i]
        if scenario == "fuzzy_utr":
            utr = s.utr[i].decode()
            if utr[0].isdigit():
                s.utr[i] = ids.utrs(1, lettered=True)[0]
                utr = s.utr[i].decode()
            typo = _mistype(utr, rng)
            while not ids.take(typo):
                typo = _mistype(utr, rng)
            narration = f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{typo}"
            lines.append(BankLine(s.day[i], narration, typo, 0, int(s.amount[i]), "fuzzy", i))
            continue
        narration, reference = _credit_text(utr, ids, rng)
        lines.append(BankLine(day, narration, reference, 0, int(s.bank_amount[i]), "settlement", i))
        if scenario == "duplicate_bank_credit":
            narration, reference = _credit_text(utr, ids, rng)
            day = s.day[i] if rng.random() < 0.5 else next_day[i]
            lines.append(BankLine(day, narration, reference, 0, int(s.amount[i]), "settlement", i))

    for group in np.unique(s.consolidated_group[s.consolidated_group >= 0]):
        members = np.flatnonzero(s.consolidated_group == group)
        total = int(s.amount[members].sum())
        lines.append(
            BankLine(
                s.day[members[0]],
                CONSOLIDATED_NARRATION,
                "NEFT",
                0,
                total,
                "consolidated",
                group=int(group),
            )
        )

    normal_days = calendar.days[calendar.working & ~calendar.bank_pending_day]
    normal_days = normal_days[7:]
    if faults:
        for utr in ids.utrs(UNMATCHED_CREDITS, lettered=True):
            text = utr.decode()
            amount = int(rng.integers(10_000, 50_00_000)) * 100 + int(rng.integers(0, 100))
            day = normal_days[int(rng.integers(0, len(normal_days)))]
            narration = f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{text}"
            lines.append(BankLine(day, narration, text, 0, amount, "unmatched"))

    counts = rng.poisson(NOISE_PER_DAY, size=len(calendar.days))
    for day, n in zip(calendar.days, counts, strict=True):
        for _ in range(int(n)):
            narration, side = NOISE[int(rng.integers(0, len(NOISE)))]
            date = day.astype(dt.date)
            narration = narration.format(
                month=date.strftime("%B").upper(),
                invoice=int(rng.integers(1000, 9999)),
                period=f"01-{date:%m-%Y} TO {date:%d-%m-%Y}",
            )
            reference = str(int(rng.integers(0, 4))) + ids.digits(11)
            amount = int(np.clip(rng.lognormal(np.log(50_000.0), 1.0), 100, 5_00_000)) * 100
            debit, credit = (amount, 0) if side == "debit" else (0, amount)
            lines.append(BankLine(day, narration, reference, debit, credit, "noise"))
    return lines


def render(lines: list[BankLine], calendar: Calendar, rng: np.random.Generator) -> BankStatement:
    """Order lines by date (ties in random order), number them and write the CSV text."""
    order = sorted(range(len(lines)), key=lambda i: lines[i].day)
    ties = rng.permutation(len(lines))
    order = sorted(order, key=lambda i: (lines[i].day, ties[i]))
    ordered = tuple(lines[i] for i in order)
    first_date = calendar.days[0].astype(dt.date)
    last_date = calendar.last_day.astype(dt.date)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    width = len(HEADER)
    banner = [
        ["HDFC BANK Ltd."],
        ["Statement of account"],
        ["Account No :", "50200012345678"],
        ["Statement From :", f"{first_date:%d/%m/%Y}", "To :", f"{last_date:%d/%m/%Y}"],
        [],
    ]
    for row in banner:
        writer.writerow(row + [""] * (width - len(row)))
    writer.writerow(HEADER)
    writer.writerow(["********"] * width)
    first_line = len(banner) + 3
    balance = OPENING_BALANCE
    for line in ordered:
        balance += line.deposit - line.withdrawal
        date = f"{line.day.astype(dt.date):%d/%m/%y}"
        writer.writerow(
            [
                date,
                line.narration,
                line.reference,
                date,
                format_rupees(line.withdrawal) if line.withdrawal else "",
                format_rupees(line.deposit) if line.deposit else "",
                format_rupees(balance),
            ]
        )
    return BankStatement(ordered, first_line, buffer.getvalue())


def write(statement: BankStatement, out_dir: Path) -> Path:
    path = out_dir / BANK_FILE
    path.write_text(statement.text, encoding="utf-8", newline="")
    return path
