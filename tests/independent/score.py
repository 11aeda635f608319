"""Reconcile the independent datasets through the real CLI and score the results.

    python -m tests.independent.score [--keep DIR]

prints, per dataset and overall, the share of outcomes right, every reason code's recall,
and every disagreement with the spec-derived expectation.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tests.independent.model import (
    ABSENT,
    AMOUNT_AT_RISK,
    AWAITING,
    DISPUTED,
    EXPOSURE_CLASS,
    STRUCTURAL,
    Expect,
)
from tests.independent.writer import DatasetSpec, write_suite

ROOT = Path(__file__).resolve().parents[2]
RESULT_COLUMNS = [
    "entity_type", "entity_id", "status", "reason_code", "reason_codes", "settlement_id",
    "expected_amount", "actual_amount", "difference", "exposure_class", "exposure_amount",
    "match_method",
]  # fmt: skip
FALLBACKS = {"fuzzy_utr", "consolidated"}


@dataclass
class Verdict:
    """One entity: expected and actual outcome, whether the outcome is right, detail problems."""

    dataset: str
    expect: Expect | None  # None: an outcome the spec does not give
    got: dict[str, str] | None
    right: bool
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.expect.label if self.expect else "UNEXPECTED"

    def describe(self) -> str:
        e, g = self.expect, self.got
        key = (
            f"{e.entity_type} {e.entity_id}"
            if e
            else f"{g['entity_type']} {g['entity_id']}"
            if g
            else "?"
        )
        want = (
            f"{e.status} {e.reason_code}" + (f" +{','.join(e.also)}" if e and e.also else "")
            if e
            else "no outcome"
        )
        have = (
            f"{g['status']} {g['reason_code']} [{g['reason_codes']}] {g['match_method']}"
            if g
            else "no outcome"
        )
        scenario = f" ({e.scenario})" if e else ""
        return (
            f"{self.dataset}: {key}{scenario}: want {want}, got {have}; {'; '.join(self.problems)}"
        )


@dataclass
class Run:
    spec: DatasetSpec
    exit_code: int
    stderr: str
    rows: list[dict[str, str]]
    header: list[str]


def reconcile(spec: DatasetSpec, out_dir: Path) -> Run:
    out = out_dir / f"{spec.name}.results.csv"
    cmd = [
        sys.executable,
        "-m",
        "core",
        "reconcile",
        str(spec.folder),
        "--out",
        str(out),
        *spec.options,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    rows: list[dict[str, str]] = []
    header: list[str] = []
    if proc.returncode == 0 and out.exists():
        with out.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            header = list(reader.fieldnames or [])
            rows = list(reader)
    return Run(spec, proc.returncode, proc.stderr.strip(), rows, header)


def _int(text: str) -> int | None:
    return int(text) if text.strip() else None


def _details(e: Expect, g: dict[str, str]) -> list[str]:
    """Checks beyond the outcome itself: listed codes, exposure class and amount, arithmetic."""
    problems = []
    expected, actual, difference = (
        _int(g["expected_amount"]),
        _int(g["actual_amount"]),
        _int(g["difference"]),
    )
    if expected is not None and actual is not None and difference != actual - expected:
        problems.append(f"difference {difference} != actual - expected {actual - expected}")
    if e.settlement_id is not None and g["settlement_id"] != e.settlement_id:
        problems.append(f"settlement_id {g['settlement_id']!r} != {e.settlement_id!r}")
    if e.status != "EXCEPTION":
        return problems
    codes = [c for c in g["reason_codes"].split(";") if c]
    want = {e.reason_code, *e.also}
    if e.reason_code not in codes:
        problems.append(f"primary {e.reason_code} not in reason_codes")
    if e.exact and set(codes) != want:
        problems.append(f"reason_codes {sorted(codes)} != {sorted(want)}")
    elif not want <= set(codes):
        problems.append(f"reason_codes {sorted(codes)} lack {sorted(want - set(codes))}")
    klass = EXPOSURE_CLASS.get(e.reason_code, AMOUNT_AT_RISK)
    if g["exposure_class"] != klass:
        problems.append(f"exposure_class {g['exposure_class']!r} != {klass!r}")
    exposure = _int(g["exposure_amount"])
    if e.exposure_amount is not None and exposure != e.exposure_amount:
        problems.append(f"exposure_amount {exposure} != {e.exposure_amount}")
    rule = {
        AMOUNT_AT_RISK: abs(difference) if difference is not None else None,
        AWAITING: expected,
        STRUCTURAL: 0,
        DISPUTED: exposure if e.exposure_amount is None else e.exposure_amount,
    }[klass]
    if rule is not None and exposure != rule:
        problems.append(f"exposure_amount {exposure} breaks the {klass} rule ({rule})")
    return problems


def score(run: Run) -> list[Verdict]:
    spec = run.spec
    got = {(r["entity_type"], r["entity_id"]): r for r in run.rows}
    verdicts = []
    for e in spec.expects:
        g = got.pop((e.entity_type, e.entity_id), None)
        if e.status == ABSENT:
            verdicts.append(
                Verdict(
                    spec.name,
                    e,
                    g,
                    g is None,
                    [] if g is None else ["the spec gives it no outcome"],
                )
            )
            continue
        if g is None:
            verdicts.append(Verdict(spec.name, e, None, False, ["missing from results.csv"]))
            continue
        problems = []
        right = g["status"] == e.status and g["reason_code"] == e.reason_code
        if e.match_method is not None:
            right = right and g["match_method"] == e.match_method
        elif g["match_method"] in FALLBACKS and e.entity_type != "bank_entry":
            right = False
            problems.append(f"unexpected match_method {g['match_method']}")
        verdicts.append(Verdict(spec.name, e, g, right, problems + _details(e, g)))
    verdicts.extend(
        Verdict(spec.name, None, g, False, ["outcome for an entity the spec gives none"])
        for g in got.values()
    )
    return verdicts


def file_problems(run: Run) -> list[str]:
    """Section 7 and 8: exit code, column order, sort order, one row per entity."""
    problems = []
    if run.exit_code != 0:
        problems.append(f"exit {run.exit_code}: {run.stderr[-500:]}")
        return problems
    if run.header != RESULT_COLUMNS:
        problems.append(f"columns {run.header}")
    keys = [(r["entity_type"], r["entity_id"]) for r in run.rows]
    if keys != sorted(keys):
        problems.append("rows not sorted by entity_type, entity_id")
    if len(keys) != len(set(keys)):
        problems.append("an entity has more than one row")
    return problems


@dataclass
class Summary:
    total: int
    right: int
    recall: dict[str, tuple[int, int]]  # label -> (right, expected)
    wrong: list[Verdict]
    detail: list[Verdict]  # right outcome, wrong detail

    @property
    def accuracy(self) -> float:
        return self.right / self.total if self.total else 0.0

    def worst_recall(self) -> tuple[str, float]:
        label, (hit, n) = min(self.recall.items(), key=lambda kv: kv[1][0] / kv[1][1])
        return label, hit / n


def summarise(verdicts: list[Verdict]) -> Summary:
    recall: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v in verdicts:
        if v.expect is not None:
            recall[v.label][1] += 1
            recall[v.label][0] += v.right
    return Summary(
        total=len(verdicts),
        right=sum(v.right for v in verdicts),
        recall={k: (a, b) for k, (a, b) in sorted(recall.items())},
        wrong=[v for v in verdicts if not v.right],
        detail=[v for v in verdicts if v.right and v.problems],
    )


def run_suite(root: Path) -> tuple[list[Run], list[Verdict]]:
    specs = write_suite(root / "datasets")
    out = root / "results"
    out.mkdir(exist_ok=True)
    runs = [reconcile(spec, out) for spec in specs]
    return runs, [v for run in runs for v in score(run)]


def report(runs: list[Run], verdicts: list[Verdict]) -> str:
    lines = []
    for run in runs:
        mine = summarise([v for v in verdicts if v.dataset == run.spec.name])
        lines.append(
            f"{run.spec.name:24} {mine.right:4}/{mine.total:<4} {mine.accuracy:7.2%}"
            f"  {run.spec.about}"
        )
        lines.extend(f"    FILE: {p}" for p in file_problems(run))
    total = summarise(verdicts)
    lines.append(f"{'overall':24} {total.right:4}/{total.total:<4} {total.accuracy:7.2%}")
    lines.append("recall per expected outcome:")
    lines.extend(
        f"  {label:34} {hit:4}/{n:<4} {hit / n:7.2%}" for label, (hit, n) in total.recall.items()
    )
    if total.wrong:
        lines.append("wrong outcomes:")
        lines.extend("  " + v.describe() for v in total.wrong)
    if total.detail:
        lines.append("right outcome, wrong detail:")
        lines.extend("  " + v.describe() for v in total.detail)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--keep", type=Path, help="write datasets and results here instead of a temp dir"
    )
    args = parser.parse_args()
    if args.keep:
        runs, verdicts = run_suite(args.keep)
        print(report(runs, verdicts))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        runs, verdicts = run_suite(Path(tmp))
        print(report(runs, verdicts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
