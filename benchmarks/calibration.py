"""Does a confidence mean what it says? Fit a monotone map, report it on claims it did not see.

    python benchmarks/calibration.py --crossfit DIR...  # fit and report, two folds (`make calibration`)
    python benchmarks/calibration.py --fit DIR...       # write the map (src/traintriage/data/calibration.json)
    python benchmarks/calibration.py --report DIR...    # write benchmarks/CALIBRATION.md

Why the scored corpora: on the tuning corpora nearly every claim is right (the signatures
were fitted to them), so a map fitted there says "0.85 whatever the evidence". The map is
three to five numbers, not the classifier; fitting it on the scored corpora with two-fold
cross-fitting (fit on one half, measure on the other, by a hash of the case id) keeps the
reported figures honest, and the shipped map is fitted on both halves.

A claim is the class the tool names first with its confidence: the root cause when it
names one, else its first candidate (an unknown failure still ranks candidates). A claim
is right when that class is among the case's labels. Fitting runs the tool with the map
switched off (TRAINTRIAGE_CALIBRATION=off) and pools the claims into confidence bands
whose rate of right claims is non-decreasing (pool-adjacent-violators). The report prints
aggregates only: the scored corpora stay unseen, case by case.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from itertools import groupby, pairwise
from pathlib import Path

from traintriage.analyze.confidence_map import apply

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "src/traintriage/data/calibration.json"
REPORT = ROOT / "benchmarks/CALIBRATION.md"
TOOL = ROOT / ".venv/bin/traintriage"
BUCKETS = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 1.01)
MIN_BAND = 12
"""Fewest claims in a fitted band: fewer would fit noise."""


@dataclass(frozen=True)
class Claim:
    confidence: float
    right: bool
    case: str = ""
    corpus: str = ""


def _case_path(corpus: Path, case: dict[str, object]) -> Path:
    path = corpus / str(case["file"])
    return path if path.exists() else corpus / f"{case['id']}.d"


def _claim(case: dict[str, object], out: dict[str, object]) -> Claim | None:
    root = out.get("root_cause") or {}
    candidates = out.get("candidates") or []
    assert isinstance(root, dict) and isinstance(candidates, list)
    first = root if root.get("id") else (candidates[0] if candidates else None)
    if not first:
        return None
    labels = case["labels"]
    assert isinstance(labels, list)
    return Claim(float(first.get("confidence") or 0.0), first.get("id") in labels, str(case["id"]))


def collect(corpora: list[Path], raw: bool, tool: Path = TOOL) -> list[Claim]:
    env = dict(os.environ, TRAINTRIAGE_CALIBRATION="off") if raw else dict(os.environ)
    jobs = []
    for corpus in corpora:
        for line in (corpus / "cases.jsonl").read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                jobs.append((case, _case_path(corpus, case)))

    def run(job: tuple[dict[str, object], Path]) -> Claim | None:
        case, path = job
        done = subprocess.run([str(tool), "diagnose", "--format", "json", str(path)], capture_output=True, text=True,
                              env=env, timeout=300)
        try:
            claim = _claim(case, json.loads(done.stdout))
        except json.JSONDecodeError:
            return None
        return claim and replace(claim, corpus=path.parent.name)

    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return [c for c in pool.map(run, jobs) if c is not None]


def fit(claims: list[Claim]) -> list[list[float]]:
    """Bands [mean raw confidence, rate right], both non-decreasing: claims sorted by raw
    confidence, cut into bands of MIN_BAND or more (equal confidences stay together), then
    neighbours pooled while the rate would go down (pool-adjacent-violators)."""
    blocks: list[list[float]] = []  # [sum of confidence, right, count]
    for confidence, same in groupby(sorted(claims, key=lambda c: c.confidence), key=lambda c: c.confidence):
        group = list(same)
        block = [confidence * len(group), float(sum(c.right for c in group)), float(len(group))]
        if blocks and blocks[-1][2] < MIN_BAND:
            blocks[-1] = [a + b for a, b in zip(blocks[-1], block, strict=True)]
        else:
            blocks.append(block)
    if len(blocks) > 1 and blocks[-1][2] < MIN_BAND:
        last = blocks.pop()
        blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    merged: list[list[float]] = []
    for block in blocks:
        merged.append(block)
        while len(merged) > 1 and merged[-2][1] / merged[-2][2] >= merged[-1][1] / merged[-1][2]:
            top = merged.pop()
            merged[-1] = [a + b for a, b in zip(merged[-1], top, strict=True)]
    return [[round(total / count, 3), round(right / count, 3)] for total, right, count in merged]


def fold_of(claim: Claim) -> int:
    return hashlib.sha256(claim.case.encode()).digest()[0] % 2


def crossfitted(claims: list[Claim]) -> list[Claim]:
    """Each claim's confidence mapped by the bands fitted on the other fold only."""
    out = []
    for fold in (0, 1):
        bands = tuple((raw, rate) for raw, rate in fit([c for c in claims if fold_of(c) != fold]))
        out += [replace(c, confidence=apply(bands, c.confidence)) for c in claims if fold_of(c) == fold]
    return out


def table(claims: list[Claim]) -> tuple[float, list[str]]:
    """Expected calibration error and one row per confidence bucket."""
    rows = ["| confidence | claims | right | mean confidence | rate right |", "|---|---|---|---|---|"]
    error = 0.0
    for low, high in pairwise(BUCKETS):
        inside = [c for c in claims if low <= c.confidence < high]
        if not inside:
            continue
        mean = sum(c.confidence for c in inside) / len(inside)
        rate = sum(c.right for c in inside) / len(inside)
        error += len(inside) / len(claims) * abs(mean - rate)
        rows.append(f"| {low:.1f}-{min(high, 1.0):.1f} | {len(inside)} | {sum(c.right for c in inside)} | "
                    f"{mean:.2f} | {rate:.2f} |")
    return error, rows


def _write_map(claims: list[Claim], fitted_on: list[Path]) -> list[list[float]]:
    bands = fit(claims)
    MAP.write_text(f'{{"fitted_on": {json.dumps([p.name for p in fitted_on])}, "claims": {len(claims)},\n'
                   f' "bands": {json.dumps(bands)}}}\n')
    return bands


def _sections(title: str, claims: list[Claim], corpora: list[str]) -> list[str]:
    out = [f"## {title}", ""]
    for corpus in corpora:
        inside = [c for c in claims if c.corpus == corpus]
        if inside:
            error, rows = table(inside)
            out += [f"### {corpus}", "", f"{len(inside)} claims, expected calibration error {error:.3f}.", "", *rows, ""]
    error, rows = table(claims)
    return out + ["### All of the above", "", f"{len(claims)} claims, expected calibration error {error:.3f}.", "",
                  *rows, ""]


_INTRO = ("Made by `make calibration` (benchmarks/calibration.py). A claim is the class the tool names first "
          "(root cause, else first candidate) with its confidence; right when that class is among the case's "
          "labels. Figures are aggregates only: the scored corpora stay unseen case by case.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crossfit", nargs="+", type=Path, default=[])
    parser.add_argument("--fit", nargs="+", type=Path, default=[])
    parser.add_argument("--report", nargs="+", type=Path, default=[])
    parser.add_argument("--tool", type=Path, default=TOOL, help="the traintriage to measure (default: the venv's)")
    args = parser.parse_args()
    if args.crossfit:
        raw = collect(args.crossfit, raw=True, tool=args.tool)
        names = [p.name for p in args.crossfit]
        bands = _write_map(raw, args.crossfit)
        sections = ["# Confidence calibration", "", _INTRO, "",
                    "The map (src/traintriage/data/calibration.json) is fitted on the scored corpora with two-fold "
                    "cross-fitting: each claim below is mapped by bands fitted on the other half only, so these "
                    "tables measure the map on claims it did not see; the shipped map is then fitted on both "
                    f"halves ({len(raw)} claims): {bands} (mean raw confidence, rate right).", "",
                    *_sections("Cross-fitted (what a user sees, measured on unseen claims)", crossfitted(raw), names),
                    *_sections("Raw engine confidence, for comparison", raw, names)]
        REPORT.write_text("\n".join(sections))
        print("\n".join(sections))
    if args.fit:
        claims = collect(args.fit, raw=True, tool=args.tool)
        bands = _write_map(claims, args.fit)
        error, rows = table(claims)
        print(f"fitted on {len(claims)} claims (raw ECE {error:.3f}): {bands}")
    if args.report:
        claims = [c for corpus in args.report for c in collect([corpus], raw=False, tool=args.tool)]
        sections = ["# Confidence calibration", "", _INTRO, "",
                    *_sections("With the shipped map", claims, [p.name for p in args.report])]
        REPORT.write_text("\n".join(sections))
        print("\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
