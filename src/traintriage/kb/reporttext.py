"""Checks on the KB text a report shows (report_summary, fix, verify): whole sentences,
no unfilled placeholders, fix variants whose conditions can be met.

Shared by `kb lint` (every entry) and the tests over every example's report.
"""

from __future__ import annotations

import re

from traintriage.kb.schema import FACT_VALUES, Entry, FixCode, FixStep, When

# A placeholder left in prose: a lone capital X/N/M/Y/Z standing for a number or name, N with a
# unit (`Nms`, `N GiB` is a number left out), or an angle-bracket slot (`<repo>`). Inside
# backticks a slot is a command to complete, so code spans are removed first.
_CODE_SPAN = re.compile(r"`[^`]*`")
_PLACEHOLDER = re.compile(r"(?<![\w./\-=])(?:[XNMYZ]|NNNN|N(?:ms|s|[KMGT]i?B)|<[A-Za-z_][\w -]{0,30}>)(?![\w/])")
# A size or a duration in a title or a report summary is one run's number: the entry speaks of
# every run, and the run's own figures are in the evidence.
_RUN_MEASURE = re.compile(r"\b\d+(?:\.\d+)? ?(?:[KMGT]i?B|ms)\b")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl)\.", re.I)


def placeholders(text: str) -> list[str]:
    """Unfilled slots in prose (outside `code spans`)."""
    return [m.group(0) for m in _PLACEHOLDER.finditer(_CODE_SPAN.sub("", text))]


def is_one_sentence(text: str) -> bool:
    """Ends with a full stop and has no sentence break inside (abbreviations and code allowed)."""
    prose = _ABBREVIATION.sub("", _CODE_SPAN.sub("", text)).strip()
    return prose.endswith(".") and not re.search(r"[.!?]\s+[A-Z]", prose[:-1])


def shown_texts(entry: Entry) -> list[tuple[str, str]]:
    """(field, text) of everything a report can show from the entry."""
    texts = [("title", entry.title), ("report_summary", entry.report_summary or ""),
             ("fix.summary", entry.fix.summary), ("verify", entry.verify)]
    for number, step in enumerate(entry.fix.steps, 1):
        if isinstance(step, FixStep):
            texts += [(f"fix.steps[{number}]", step.step), (f"fix.steps[{number}].because", step.because)]
        else:
            texts.append((f"fix.steps[{number}]", step))
    return texts


def report_text_problems(entry: Entry) -> list[str]:
    problems = []
    if not entry.report_summary:
        problems.append(f"{entry.id}: no report_summary (one sentence written for the report)")
    elif not is_one_sentence(entry.report_summary):
        problems.append(f"{entry.id}: report_summary must be one whole sentence ending with a full stop")
    for name, text in shown_texts(entry):
        slots = placeholders(text)
        if slots:
            problems.append(f"{entry.id}: {name} has unfilled placeholder(s) {slots} outside code")
    for name, text in (("title", entry.title), ("report_summary", entry.report_summary or "")):
        measures = _RUN_MEASURE.findall(_CODE_SPAN.sub("", text))
        if measures:
            problems.append(f"{entry.id}: {name} quotes one run's figures {measures}; leave them to the evidence")
    if not any(isinstance(step, str) for step in entry.fix.steps):
        problems.append(f"{entry.id}: fix.steps needs at least one step without `when` (it applies to every run)")
    for variant in _variants(entry):
        if variant.because.lower().startswith("because"):
            problems.append(f"{entry.id}: `because` is written without the word 'because' (the report adds it)")
    return problems


def _variants(entry: Entry) -> list[FixStep | FixCode]:
    found: list[FixStep | FixCode] = [s for s in entry.fix.steps if isinstance(s, FixStep)]
    for variants in entry.fix.code_variants.values():
        found.extend(variants)
    return found


def describe_when(when: When) -> str:
    """`phase model-load, stack deepspeed` for `kb show`."""
    parts = [f"{name} {' or '.join(when.values(name))}" for name in FACT_VALUES if when.values(name)]
    if when.all_ranks_same is not None:
        parts.append("all ranks failed the same way" if when.all_ranks_same else "not all ranks failed the same way")
    return ", ".join(parts)


def step_text(step: str | FixStep) -> str:
    """A step as `kb show` prints it: a variant with its condition."""
    if isinstance(step, str):
        return step
    return f"[when {describe_when(step.when)}] {step.step}"


def code_snippets(entry: Entry) -> list[tuple[str, str, str]]:
    """(stack, label, snippet) of every fix snippet: a variant's label names its condition."""
    return [(stack, f", when {describe_when(when)}" if when else "", text)
            for stack in entry.fix.stacks for text, when in entry.fix.snippets(stack)]
