"""Tensors of different sizes inside an optimizer's own update are its restored state shaped for other
parameters (optimizer-state-mismatch); the same error in the model's forward stays a shape mismatch."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

HEAD = ["optimizer state restored from runs/a/last.pt (step 1200)",
        "Traceback (most recent call last):",
        '  File "/home/u/proj/train.py", line 151, in <module>',
        "    optimizer.step()",
        '  File "/opt/venv/lib/python3.12/site-packages/torch/optim/optimizer.py", line 516, in wrapper',
        "    out = func(*args, **kwargs)"]
IN_THE_OPTIMIZER = ['  File "/opt/venv/lib/python3.12/site-packages/torch/optim/sgd.py", line 290, in _single_tensor_sgd',
                    "    buf.mul_(momentum).add_(grad, alpha=1 - dampening)"]
IN_THE_MODEL = ['  File "/home/u/proj/model.py", line 40, in forward',
                "    return self.proj(x) + self.skip(x)"]
ERROR = ["RuntimeError: The size of tensor a (256) must match the size of tensor b (512) at non-singleton dimension 0"]


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return diagnosis.root_cause.id if diagnosis.root_cause is not None else None


def test_a_size_error_in_the_optimizers_update_is_its_restored_state(tmp_path: Path) -> None:
    assert _root(tmp_path, HEAD + IN_THE_OPTIMIZER + ERROR) == "optimizer-state-mismatch"


def test_the_same_error_in_the_models_forward_is_a_shape_mismatch(tmp_path: Path) -> None:
    assert _root(tmp_path, HEAD[:2] + IN_THE_MODEL + ERROR) == "shape-mismatch"
