"""The fix for this run: an entry's steps and code, with the variants that fit the facts of
the run first (and why), the ones that contradict them left out of the report (still in
`traintriage kb show <id>`), unconditional steps kept in their order.

A variant applies when every fact its `when` names is known and matches; it contradicts
the run when a named fact is known and differs; an unknown fact neither selects nor drops it.
Remedies (`already`, `not_already`) are known from the log: shown in use or not. A variant
without `because` only filters: it keeps its place unless the facts contradict it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from traintriage.analyze.facts import RunFacts
from traintriage.kb.schema import FACT_VALUES, Entry, FixCode, FixStep, When


class Fit(str, Enum):
    matches = "matches"
    unknown = "unknown"
    contradicts = "contradicts"


def fit(when: When, facts: RunFacts) -> Fit:
    """Whether the run's facts match a condition, contradict it, or cannot tell. A condition
    that only drops (`not_already` alone) never matches: it is `unknown` unless contradicted."""
    if set(when.values("not_already")) & set(facts.already):
        return Fit.contradicts
    if not when.selects:
        return Fit.unknown
    if not set(when.values("already")) <= set(facts.already):
        return Fit.contradicts
    result = Fit.matches
    for name in FACT_VALUES:
        wanted = when.values(name)
        if not wanted or name in ("already", "not_already"):
            continue
        known = facts.value(name)
        if not known:
            result = Fit.unknown
        elif not set(wanted) & set(known):
            return Fit.contradicts
    if when.all_ranks_same is not None:
        if facts.all_ranks_same is None:
            result = Fit.unknown
        elif facts.all_ranks_same is not when.all_ranks_same:
            return Fit.contradicts
    return result


@dataclass
class ChosenFix:
    steps: list[str]
    code: dict[str, str]
    because: list[str] = field(default_factory=list)
    """Why the leading steps were put first, one clause per chosen variant ("the OOM happened ...")."""
    chosen: int = 0
    """How many leading steps are variants chosen by the facts."""
    left_out: int = 0
    """Variants (steps and code) that do not fit this run, shown by `kb show`."""


def is_narrow(when: When) -> bool:
    """A condition naming one single value of some fact (`phase: eval`, `stack: deepspeed`)."""
    return any(len(when.values(name)) == 1 for name in FACT_VALUES if name != "not_already") or \
        when.all_ranks_same is not None


def choose_fix(entry: Entry, facts: RunFacts) -> ChosenFix:
    """Matching variants first, those with a narrow condition first (an eval-only step before
    one for any step; otherwise in the entry's order), then the steps for every run, the
    filters that fit and those whose facts the log does not tell, in the entry's order."""
    matching: list[FixStep] = []
    rest: list[str] = []
    left_out = 0
    for step in entry.fix.steps:
        if isinstance(step, str):
            rest.append(step)
            continue
        match fit(step.when, facts):
            case Fit.matches if step.because:
                matching.append(step)
            case Fit.matches | Fit.unknown:
                rest.append(step.step)
            case Fit.contradicts:
                left_out += 1
    matching.sort(key=lambda step: not is_narrow(step.when))
    chosen = [step.step for step in matching]
    because = list(dict.fromkeys(step.because for step in matching))
    code: dict[str, str] = {}
    for stack in entry.fix.stacks:
        if is_foreign(stack, facts):
            left_out += 1
            continue
        text, dropped = _code_for(entry.fix.code.get(stack), entry.fix.code_variants.get(stack, []), facts)
        left_out += dropped
        if text is not None:
            code[stack] = text
    return ChosenFix(steps=chosen + rest, code=code, because=because, chosen=len(chosen), left_out=left_out)


_PYTHON_TORCH_CODE = frozenset({"pytorch", "hf-trainer", "deepspeed", "fsdp", "megatron", "lightning", "vllm",
                                "accelerate"})


def is_foreign(code_stack: str, facts: RunFacts) -> bool:
    """A snippet for another ecosystem than the run's: PyTorch code for a llama.cpp, Lua Torch,
    TensorFlow or JAX process, JAX code for a PyTorch run. Shell, Slurm and Kubernetes
    snippets fit every run; an unknown stack drops nothing."""
    run = facts.value("stack")
    if not run:
        return False
    if code_stack in _PYTHON_TORCH_CODE:
        return "pytorch" not in run
    return code_stack == "jax" and "jax" not in run


def _code_for(plain: str | None, variants: list[FixCode], facts: RunFacts) -> tuple[str | None, int]:
    """The snippet of one stack: a variant that matches the run, else the plain snippet, else
    the first variant the run does not contradict."""
    fits = [(fit(variant.when, facts), variant) for variant in variants]
    dropped = sum(1 for f, _ in fits if f is Fit.contradicts)
    matching = [variant.code for found, variant in fits if found is Fit.matches]
    unknown = [variant.code for found, variant in fits if found is Fit.unknown]
    return next(iter(matching), plain if plain is not None else next(iter(unknown), None)), dropped
