"""`traintriage kb lint`: the KB checks itself (schema, ids, patterns, examples, coverage)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from traintriage.errors import KnowledgeBaseError
from traintriage.kb.loader import ENTRIES_DIR, EXAMPLES_DIR, check_links, entry_files, parse_entry
from traintriage.kb.reporttext import report_text_problems
from traintriage.kb.review import review_warnings
from traintriage.kb.schema import FACT_VALUES, Entry, FixCode, FixStep, Role, unknown_values

MIN_POSITIVES = 2
MIN_NEGATIVES = 1


@dataclass
class LintReport:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # never fail the lint: entries to review
    entries: int = 0
    catalog_ids: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.missing


def find_catalog() -> Path | None:
    """The shared catalog: $TRAINTRIAGE_CATALOG, or ../shared/catalog beside a checkout."""
    override = os.environ.get("TRAINTRIAGE_CATALOG")
    if override:
        return Path(override)
    for base in (Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[3]):
        candidate = base.parent / "shared" / "catalog" / "failures.yaml"
        if candidate.exists():
            return candidate
    return None


def example_files(entry_id: str, kind: str) -> list[Path]:
    return sorted((EXAMPLES_DIR / entry_id).glob(f"{kind}-*.log"))


HEALTHY_LINES = Path(__file__).with_name("healthy-lines.txt")


def healthy_lines() -> list[str]:
    """Routine progress lines of healthy runs (the file's own comment lines excluded)."""
    return [line for line in HEALTHY_LINES.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def lint_entry(entry: Entry, healthy: list[str] | None = None) -> list[str]:
    import re2

    from traintriage.match.compiler import check_pattern

    problems = []
    for signature in entry.signatures:
        why = check_pattern(signature.pattern)
        if why:
            problems.append(f"{entry.id}: signature {signature.id}: {why}")
            continue
        noisy = next((line for line in healthy or [] if re2.search(signature.pattern, line)), None)
        if noisy is not None and signature.role is not Role.collateral:
            problems.append(f"{entry.id}: signature {signature.id} matches a healthy progress line: {noisy[:80]!r}")
    for number, pattern in enumerate(entry.excludes):
        why = check_pattern(pattern)
        if why:
            problems.append(f"{entry.id}: excludes[{number}]: {why}")
    if not any(s.role is Role.root for s in entry.signatures):
        problems.append(f"{entry.id}: no root signature, nothing can diagnose it")
    if len(example_files(entry.id, "positive")) < MIN_POSITIVES:
        problems.append(f"{entry.id}: needs at least {MIN_POSITIVES} positive examples in examples/{entry.id}/")
    if len(example_files(entry.id, "negative")) < MIN_NEGATIVES:
        problems.append(f"{entry.id}: needs at least {MIN_NEGATIVES} negative example in examples/{entry.id}/")
    if entry.id in entry.explains:
        problems.append(f"{entry.id}: explains itself")
    problems.extend(report_text_problems(entry))
    problems.extend(variant_problems(entry))
    return problems


_BLOCK_START = re.compile(r"^(\s{0,80})(?:- )?(?:[\w.-]{1,80}:[ \t]{1,20})?[|>][-+]?\s{0,20}$")
_PLAIN_WITH_HASH = re.compile(
    r"^\s{0,80}(?:- )?(?:([\w.-]{1,80}):[ \t]+|(?![\w.-]{1,80}:[ \t])(?=[^\"'>|{\[\s#-]))([^\"'>|{\[\s#][^\n]{0,4000}?) #")


def comment_cut_problems(path: Path) -> list[str]:
    """A plain YAML scalar (a key's value or a list item, outside `|`/`>` blocks, where code examples
    keep their own comments) loses everything after ` #` to a comment (`fixed by PR #134338` read as
    `fixed by PR`); the parsed entry cannot show it, so the lint reads the file's lines."""
    problems = []
    block_indent: int | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        indent = len(line) - len(line.lstrip(" "))
        if block_indent is not None and (not line.strip() or indent > block_indent):
            continue
        block_indent = None
        start = _BLOCK_START.match(line)
        if start:
            block_indent = len(start.group(1))
            continue
        found = _PLAIN_WITH_HASH.match(line)
        if found:
            what = f"`{found.group(1)}`" if found.group(1) else "a list item"
            problems.append(f"{path.name}:{number}: {what} is cut at ' #' (a YAML comment): quote the text")
    return problems


def variant_problems(entry: Entry) -> list[str]:
    """Fix variants whose condition cannot work as written: no condition, a fact value the
    facts never take, a `because` the report can never show (a condition that only drops),
    a remedy required and excluded at once."""
    problems = []
    variants: list[tuple[str, FixStep | FixCode]] = [
        (f"fix.steps[{number}]", step) for number, step in enumerate(entry.fix.steps, 1) if isinstance(step, FixStep)]
    variants += [(f"fix.code_variants.{stack}[{number}]", code)
                 for stack, codes in entry.fix.code_variants.items() for number, code in enumerate(codes, 1)]
    for name, variant in variants:
        when = variant.when
        if not when.selects and not when.values("not_already"):
            problems.append(f"{entry.id}: {name} has an empty `when`; write the step without it")
        for fact in FACT_VALUES:
            problem = unknown_values(fact, when.values(fact))
            if problem:
                problems.append(f"{entry.id}: {name}: {problem}")
        if variant.because and not when.selects:
            problems.append(f"{entry.id}: {name}: `because` is never shown - `not_already` alone only drops the step")
        both = set(when.values("already")) & set(when.values("not_already"))
        if both:
            problems.append(f"{entry.id}: {name}: {sorted(both)} both required and excluded")
    return problems


def lint(catalog: Path | None = None) -> LintReport:
    report = LintReport()
    healthy = healthy_lines()
    entries: dict[str, Entry] = {}
    for path in entry_files(ENTRIES_DIR):
        try:
            entry = parse_entry(path)
        except KnowledgeBaseError as exc:
            report.errors.append(str(exc))
            continue
        if entry.id in entries:
            report.errors.append(f"duplicate id {entry.id}")
        entries[entry.id] = entry
        report.errors.extend(lint_entry(entry, healthy))
        report.errors.extend(comment_cut_problems(path))
    report.entries = len(entries)
    report.warnings = review_warnings(entries.values())
    try:
        check_links(entries)
    except KnowledgeBaseError as exc:
        report.errors.append(str(exc))
    orphans = sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.is_dir() and p.name not in entries) \
        if EXAMPLES_DIR.exists() else []
    report.errors.extend(f"examples/{name}/ has no entry" for name in orphans)
    catalog = catalog or find_catalog()
    if catalog is not None and catalog.exists():
        ids = [item["id"] for item in yaml.safe_load(catalog.read_text(encoding="utf-8"))]
        report.catalog_ids = ids
        report.missing = [i for i in ids if i not in entries]
        report.extra = sorted(set(entries) - set(ids))
    return report
