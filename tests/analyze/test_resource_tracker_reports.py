"""Tracebacks printed by multiprocessing's (or joblib/loky's) resource tracker are the tracker's own
complaints about what it could not clean up at exit, not the program's failure."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

TRAINED = [f"[2026-05-02 09:14:{n:02d}] epoch 1 step {n * 50} loss {1.9 - 0.04 * n:.3f}" for n in range(12)]
FINISHED = ["[2026-05-02 09:14:13] training finished, model written to out/model.pt"]


def _tracker_traceback(path: str, line: int, segment: str) -> list[str]:
    return ["Traceback (most recent call last):",
            f'  File "{path}", line {line}, in main',
            "    cache[rtype].remove(name)",
            f"KeyError: '/{segment}'"]


STDLIB = "/usr/lib/python3.12/multiprocessing/resource_tracker.py"
LOKY = "/opt/venv/lib/python3.12/site-packages/joblib/externals/loky/backend/resource_tracker.py"


def _diagnose(tmp_path: Path, lines: list[str]):  # type: ignore[no-untyped-def]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)])


def test_tracker_tracebacks_after_a_finished_run_are_no_failure(tmp_path: Path) -> None:
    lines = TRAINED + FINISHED + _tracker_traceback(STDLIB, 239, "psm_3f2a9c1e") + _tracker_traceback(
        LOKY, 386, "loky-9182-ab3kq1zz")
    assert _diagnose(tmp_path, lines).status.value == "no-failure"


def test_a_tracker_traceback_cut_above_its_frame_is_no_failure(tmp_path: Path) -> None:
    lines = TRAINED + FINISHED + _tracker_traceback(LOKY, 386, "loky-9182-ab3kq1zz")[1:]
    assert _diagnose(tmp_path, lines).status.value == "no-failure"


def test_the_same_keyerror_raised_by_the_training_script_is_a_failure(tmp_path: Path) -> None:
    lines = TRAINED + ["Traceback (most recent call last):",
                       '  File "/home/u/train.py", line 88, in main',
                       "    batch = cache[split].pop(name)",
                       "KeyError: 'validation'"]
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.status.value == "failure"
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"


def test_a_real_failure_after_a_tracker_traceback_is_still_found(tmp_path: Path) -> None:
    lines = TRAINED + _tracker_traceback(STDLIB, 239, "psm_3f2a9c1e") + [
        "Traceback (most recent call last):",
        '  File "/home/u/train.py", line 120, in <module>',
        "    loss.backward()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "23.55 GiB of which 1.02 GiB is free. Of the allocated memory 20.10 GiB is allocated by PyTorch, and "
        "1.20 GiB is reserved by PyTorch but unallocated."]
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-oom"
