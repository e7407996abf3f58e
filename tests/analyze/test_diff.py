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
