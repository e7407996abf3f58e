"""Does a confidence mean what it says? Fit on the tuning corpora, report on the scored ones.

    python benchmarks/calibration.py --fit DIR...      # write the map (src/traintriage/data/calibration.json)
    python benchmarks/calibration.py --report DIR...   # write benchmarks/CALIBRATION.md

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
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from itertools import groupby, pairwise
from pathlib import Path

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
    return Claim(float(first.get("confidence") or 0.0), first.get("id") in labels)


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
            return _claim(case, json.loads(done.stdout))
        except json.JSONDecodeError:
            return None

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", nargs="+", type=Path, default=[])
    parser.add_argument("--report", nargs="+", type=Path, default=[])
    parser.add_argument("--tool", type=Path, default=TOOL, help="the traintriage to measure (default: the venv's)")
    args = parser.parse_args()
    if args.fit:
        claims = collect(args.fit, raw=True, tool=args.tool)
        bands = fit(claims)
        MAP.write_text(f'{{"fitted_on": {json.dumps([p.name for p in args.fit])}, "claims": {len(claims)},\n'
                       f' "bands": {json.dumps(bands)}}}\n')
        error, rows = table(claims)
        print(f"fitted on {len(claims)} claims (raw ECE {error:.3f}): {bands}")
    if args.report:
        sections = ["# Confidence calibration", "",
                    "Made by `make calibration` (benchmarks/calibration.py). A claim is the class the tool names "
                    "first (root cause, else first candidate) with its confidence; right when that class is among "
                    "the case's labels. The map from raw to calibrated confidence is fitted on the tuning corpora "
                    "(src/traintriage/data/calibration.json); the tables below are measured with it.", ""]
        everything: list[Claim] = []
        for corpus in args.report:
            claims = collect([corpus], raw=False, tool=args.tool)
            everything += claims
            if not claims:
                continue
            error, rows = table(claims)
            sections += [f"## {corpus.name}", "", f"{len(claims)} claims, expected calibration error {error:.3f}.", "",
                         *rows, ""]
        error, rows = table(everything)
        sections += ["## All of the above", "", f"{len(everything)} claims, expected calibration error {error:.3f}.", "",
                     *rows, ""]
        REPORT.write_text("\n".join(sections))
        print("\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
