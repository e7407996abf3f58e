"""`diff GOOD BAD`: only what is new in the bad run, errors and changed versions first."""

from __future__ import annotations

from pathlib import Path

from traintriage.analyze.diff import Kind, diff_runs, template_of

GOOD = """torch version: 2.3.1+cu121
NCCL version 2.20.5+cuda12.4
gradient_accumulation_steps: 4
step 1 loss 2.31
step 2 loss 2.29
UserWarning: TypedStorage is deprecated.
"""
BAD = """torch version: 2.4.0+cu124
NCCL version 2.20.5+cuda12.4
gradient_accumulation_steps: 4
step 1 loss 2.35
step 2 loss 2.30
UserWarning: TypedStorage is deprecated.
FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated.
RuntimeError: CUDA error: an illegal memory access was encountered
"""


def test_numbers_do_not_make_lines_new() -> None:
    assert template_of("step 17 loss 2.31 at 0x7f3a") == template_of("step 18 loss 9.10 at 0x7f3b")


def test_only_new_templates_and_errors_first(tmp_path: Path) -> None:
    (tmp_path / "good.log").write_text(GOOD)
    (tmp_path / "bad.log").write_text(BAD)
    found = diff_runs([str(tmp_path / "good.log")], [str(tmp_path / "bad.log")], mask=False)
    kinds = [t.kind for t in found]
    texts = [t.example for t in found]
    assert kinds[0] is Kind.error and "illegal memory access" in texts[0]
    assert Kind.warning in kinds
    assert not any("step" in t for t in texts)
    assert not any("NCCL version" in t for t in texts)
    assert any(t.kind is Kind.environment and "2.4.0" in t.example for t in found)
    assert not any("gradient_accumulation_steps" in t for t in texts)


def test_counts_and_first_lines_are_exact_across_chunks(tmp_path: Path) -> None:
    """Several read chunks per run: a line's count is over the whole run, its line number is its own."""
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    steps = [f"{{'loss': {1 + i % 97 / 100:.4f}, 'grad_norm': 0.{i % 89:02d}, 'epoch': {i / 1e5:.4f}}}\n"
             for i in range(120_000)]
    good.write_text("".join(steps))
    lines = steps[:100_000] + ["torch version: 2.4.0+cu124\n"] + steps[100_000:]
    lines += ["RuntimeError: NCCL communicator was aborted on rank 3\n"] * 3
    lines.insert(50, "torch version: 2.3.1+cu121\n")
    bad.write_text("".join(lines))
    assert bad.stat().st_size > 4 << 20  # more than one read chunk
    found = {t.example: t for t in diff_runs([str(good)], [str(bad)], mask=False)}
    error = found["RuntimeError: NCCL communicator was aborted on rank 3"]
    assert (error.kind, error.count, error.line) == (Kind.error, 3, len(lines) - 2)
    versions = {t.example: t.line for t in found.values() if t.kind is Kind.environment}
    assert versions == {"torch version: 2.3.1+cu121": 51, "torch version: 2.4.0+cu124": 100_002}
    assert not any("loss" in text for text in found)


def test_lines_differing_only_in_numbers_are_one_template_even_when_new(tmp_path: Path) -> None:
    (tmp_path / "good.log").write_text("starting\n")
    (tmp_path / "bad.log").write_text("".join(f"RuntimeError: worker {i} lost after {i * 7} s\n" for i in range(1000)))
    found = diff_runs([str(tmp_path / "good.log")], [str(tmp_path / "bad.log")], mask=False)
    assert [(t.count, t.line) for t in found] == [(1000, 1)]
