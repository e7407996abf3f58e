"""A failed glog/abseil CHECK prints its message and then aborts; the crash handler's SIGABRT report that
follows is the check's own abort, not a signal from outside, so it is no `worker-killed-by-signal`."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_HANDLER = [
    "*** Aborted at 1700000000 (unix time) try \"date -d @1700000000\" if you are using GNU date ***",
    "PC: @                0x0 (unknown)",
    "*** SIGABRT (@0x3e800001f2a) received by PID 7978 (TID 0x7f11aa1fe740) from PID 7978; stack trace: ***",
    "    @     0x7f11a8e42d4f google::(anonymous namespace)::FailureSignalHandler()",
    "    @     0x7f11aa24b420 (unknown)",
    "    @     0x7f11aa08900b raise",
]


def _diagnose(tmp_path: Path, lines: list[str]):  # type: ignore[no-untyped-def]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)])


def test_an_abort_after_a_failed_check_is_the_checks_failure(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, [
        "Epoch 1/5",
        "2023-06-01 10:00:02.118212: F external/xla/xla/pjrt/pjrt_stream_executor_client.cc:1921] "
        "Check failed: device_state != nullptr (0 vs. nullptr)",
        *_HANDLER,
    ])
    assert diagnosis.status == "unknown-failure"
    assert diagnosis.root_cause is None


def test_an_abort_with_no_fatal_line_before_it_stays_a_signal(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, ["Epoch 1/5", "step 10 loss 0.51", *_HANDLER])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "worker-killed-by-signal"
