"""Fix steps that only filter: advice the log shows was already followed (`not_already`), steps
and snippets for another stack than the run's. They never lead the fix; they are left out when
the facts contradict them, and every one in the KB is proven by an example that drops it."""

from __future__ import annotations

from functools import cache

import pytest

from traintriage.analyze.facts import RunFacts
from traintriage.kb.loader import EXAMPLES_DIR, load_kb
from traintriage.kb.schema import Entry, Fix, FixStep, When
from traintriage.pipeline import diagnose
from traintriage.report.fixes import Fit, choose_fix, fit, is_foreign
from traintriage.report.model import Diagnosis


def test_remedies_are_known_from_the_log_shown_or_not() -> None:
    on = RunFacts(already=["anomaly-mode"])
    off = RunFacts()
    assert fit(When(not_already="anomaly-mode"), on) is Fit.contradicts
    assert fit(When(not_already="anomaly-mode"), off) is Fit.unknown  # never a reason to lead
    assert fit(When(already="anomaly-mode"), on) is Fit.matches
    assert fit(When(already="anomaly-mode"), off) is Fit.contradicts  # its text presumes the remedy
    assert fit(When(backend="nccl", not_already="nccl-debug-info"), RunFacts(backend="nccl")) is Fit.matches
    assert fit(When(backend="nccl", not_already="nccl-debug-info"),
               RunFacts(backend="nccl", already=["nccl-debug-info"])) is Fit.contradicts


def test_a_pytorch_based_stack_is_a_pytorch_run_and_lua_torch_is_not() -> None:
    assert fit(When(stack="pytorch"), RunFacts(stack=["hf-trainer"])) is Fit.matches
    assert fit(When(stack="pytorch"), RunFacts(stack=["lua-torch"])) is Fit.contradicts
    assert fit(When(stack="pytorch"), RunFacts()) is Fit.unknown


def _entry(steps: list[str | FixStep], code: dict[str, str] | None = None) -> Entry:
    entry = load_kb().entries["cuda-device-busy"]
    from dataclasses import replace

    return replace(entry, fix=Fix(summary=entry.fix.summary, steps=steps, code=code or {}))


def test_a_filter_keeps_its_place_and_a_contradicted_one_is_left_out() -> None:
    steps: list[str | FixStep] = [
        "Kill the process that holds the GPU.",
        FixStep(step="Set the device from LOCAL_RANK.", when=When(stack="pytorch")),
        "Ask an admin for Default compute mode.",
        FixStep(step="Turn on NCCL_DEBUG=INFO.", when=When(not_already="nccl-debug-info")),
    ]
    entry = _entry(steps)
    pytorch = choose_fix(entry, RunFacts(stack=["pytorch"]))
    assert pytorch.steps == ["Kill the process that holds the GPU.", "Set the device from LOCAL_RANK.",
                             "Ask an admin for Default compute mode.", "Turn on NCCL_DEBUG=INFO."]
    assert pytorch.chosen == 0 and pytorch.because == [] and pytorch.left_out == 0
    llama = choose_fix(entry, RunFacts(stack=["llama-cpp"], already=["nccl-debug-info"]))
    assert llama.steps == ["Kill the process that holds the GPU.", "Ask an admin for Default compute mode."]
    assert llama.left_out == 2


def test_snippets_of_another_ecosystem_are_left_out() -> None:
    assert is_foreign("pytorch", RunFacts(stack=["llama-cpp"]))
    assert is_foreign("hf-trainer", RunFacts(stack=["lua-torch"]))
    assert not is_foreign("hf-trainer", RunFacts(stack=["deepspeed"]))
    assert not is_foreign("shell", RunFacts(stack=["llama-cpp"]))
    assert is_foreign("jax", RunFacts(stack=["pytorch"]))
    assert not is_foreign("pytorch", RunFacts())
    entry = _entry(["Kill the process that holds the GPU."], {"pytorch": "import torch\n", "shell": "nvidia-smi\n"})
    chosen = choose_fix(entry, RunFacts(stack=["llama-cpp"]))
    assert list(chosen.code) == ["shell"] and chosen.left_out == 1


@cache
def _diagnosis(path: str) -> Diagnosis:
    return diagnose([path])


def _filters() -> list[tuple[Entry, FixStep]]:
    """Steps that can be left out by a filter: a condition without `because`, or `not_already`."""
    return [(entry, step) for entry in load_kb().entries.values() for step in entry.fix.steps
            if isinstance(step, FixStep) and (not step.because or step.when.values("not_already"))]


@pytest.mark.parametrize(("entry", "step"), _filters(), ids=lambda v: v.id if isinstance(v, Entry) else v.step[:40])
def test_every_filter_is_left_out_by_one_of_its_entrys_examples(entry: Entry, step: FixStep) -> None:
    for path in sorted((EXAMPLES_DIR / entry.id).glob("positive-*.log")):
        diagnosis = _diagnosis(str(path))
        if diagnosis.root_cause and diagnosis.root_cause.id == entry.id and diagnosis.fix and \
                step.step not in diagnosis.fix.steps:
            assert diagnosis.fix.more == f"traintriage kb show {entry.id}"
            return
    pytest.fail(f"no positive example of {entry.id} leaves out the step {step.step[:60]!r}")


def test_the_llama_cpp_process_gets_no_pytorch_boilerplate() -> None:
    diagnosis = _diagnosis(str(EXAMPLES_DIR / "cuda-device-busy" / "positive-3.log"))
    assert diagnosis.fix is not None and diagnosis.facts is not None
    assert diagnosis.facts.stack == ["llama-cpp"]
    assert not any("DataLoader" in step or "LOCAL_RANK" in step for step in diagnosis.fix.steps)
    assert "pytorch" not in diagnosis.fix.code and diagnosis.fix.steps


def test_the_lua_torch_run_gets_no_tokenizer_advice() -> None:
    diagnosis = _diagnosis(str(EXAMPLES_DIR / "embedding-index-out-of-range" / "positive-5.log"))
    assert diagnosis.fix is not None and diagnosis.facts is not None
    assert "lua-torch" in diagnosis.facts.stack and "pytorch" not in diagnosis.facts.stack
    assert not any("tokenizer" in step for step in diagnosis.fix.steps)
    assert any("LookupTable" in step for step in diagnosis.fix.steps)
    assert diagnosis.fix.code == {}
