"""Failure lines read from a log's tail land on their own line numbers, merged with the scan's hits."""

from __future__ import annotations

from pathlib import Path

from traintriage.ingest.sources import Source
from traintriage.match.compiler import load_scanner
from traintriage.match.internal import Internal
from traintriage.match.scan import SourceScan, scan_source
from traintriage.match.tail_evidence import tail_evidence


def _scan(tmp_path: Path, text: str) -> SourceScan:
    path = tmp_path / "job.log"
    path.write_text(text)
    return scan_source(0, Source(name="job.log", path=path, size=path.stat().st_size), load_scanner())


def test_a_qualified_exception_is_hit_on_its_line_despite_blank_lines(tmp_path: Path) -> None:
    text = "step 1\n\n\nrequests.exceptions.ReadTimeout: Read timed out.\n\n"
    scan = _scan(tmp_path, text)
    exception = load_scanner().by_internal(Internal.exception)[0]
    hits = [hit for hit in scan.hits if exception in hit.patterns]
    assert [(hit.line, hit.text) for hit in hits] == [(4, "requests.exceptions.ReadTimeout: Read timed out.")]
    assert text.split("\n")[hits[0].line - 1] == hits[0].text


def test_the_last_error_line_joins_the_hit_the_scan_made_of_it(tmp_path: Path) -> None:
    scan = _scan(tmp_path, "".join(f"line {n}\n" for n in range(100)) + "ERROR: shard 4 is missing")
    scanner = load_scanner()
    last = [hit for hit in scan.hits if hit.line == 101]
    assert len(last) == 1
    assert set(scanner.by_internal(Internal.error_level)) & set(last[0].patterns)
    assert scanner.by_internal(Internal.fatal_line)[0] in last[0].patterns


def test_an_error_line_before_the_end_is_not_the_last_line() -> None:
    assert tail_evidence(["ERROR: retrying", "step 2 loss 2.2"], 2) == []
    assert tail_evidence(["step 2 loss 2.2", "ERROR: gave up", "", ""], 4) == [(2, "ERROR: gave up", False)]


def test_only_the_last_lines_are_searched() -> None:
    lines = ["pyarrow.lib.ArrowInvalid: schema mismatch"] + ["step"] * 30
    assert tail_evidence(lines, 31) == []
    assert tail_evidence(lines[:5], 5) == [(1, lines[0], True)]


def test_a_bracketed_logger_name_may_precede_the_level_of_the_last_line() -> None:
    last = "[TensorRT] ERROR: INVALID_CONFIG: Deserialize the cuda engine failed."
    assert tail_evidence(["[TensorRT] WARNING: using an older plan", last], 2) == [(2, last, False)]
    assert tail_evidence([last, "[TensorRT] INFO: tactic 4 chosen"], 2) == []


def test_a_last_line_that_reports_a_failure_in_words_is_evidence() -> None:
    for last in ("sbatch: error: Batch job submission failed: Invalid account or account/partition combination",
                 "Unknown OpenCL Error (221)", "launcher: shard 0 failed to start",
                 "Launching task function was not successful:",
                 "ssh: connect to host 10.0.3.7 port 22: Connection refused"):
        assert tail_evidence(["step 10 loss 2.1", last], 2) == [(2, last, False)]


def test_warnings_progress_counts_and_tracker_lines_at_the_end_are_not_failures() -> None:
    for last in ("UserWarning: lbfgs failed to converge (status=1)",
                 "NCCL WARN Failed to open libibverbs.so[.1]",
                 "ERROR 2021-07-15T20:36:13 23/99  65%|#| 1200/1860 [04:57<02:47,  3.94it/s]",
                 "wandb: ERROR Error while calling W&B API: internal database error (<Response [500]>)",
                 "Network error (ConnectionError), entering retry loop.",
                 "STFT loss failed on device; falling back to CPU",
                 "epoch 9: top-1 error rate 0.041", "tests: 12 passed, 0 failed",
                 "INFO:absl:Failed to get flag value for EXPERIMENTAL_FLAG",
                 "srun: error: spank: x11.so: Plugin file not found",
                 "Call backward() before step(). Failure to do so will result in the first update being skipped.",
                 "#       size    count   type  redop  root   time  algbw  busbw  #wrong   time  algbw  busbw  error",
                 "       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error"):
        assert tail_evidence(["step 10 loss 2.1", last], 2) == [], last
    assert tail_evidence(["job failed: out of disk", "step 11 loss 2.0"], 2) == []


def test_a_warning_marked_by_its_level_letter_is_not_a_failure() -> None:
    for last in ("2024-01-09 21:33:49.29 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:747] Failed to create CUDAExecutionProvider.",
                 "W0806 20:07:54.546301 148486 api.py:897] shard upload failed, will resend",
                 "2023-06-06 21:40:11.700414: W tensorflow/core/kernels/data/cache.cc:81] failed to flush cache"):
        assert tail_evidence(["step 10 loss 2.1", last], 2) == [], last


def test_a_log_that_stops_while_ray_waits_for_resources_no_node_has_failed() -> None:
    warning = ("(autoscaler +5m12s) Warning: The following resource request cannot be scheduled right now: "
               "{'GPU': 2.0, 'CPU': 1.0}. This is likely due to all cluster resources being claimed by actors.")
    demands = " {'CPU': 4.0} * 2 (PACK): 1+ pending placement groups"
    assert tail_evidence(["Demands:", demands], 2) == [(2, demands, False)]
    assert tail_evidence([warning, "Usage:", " 8.0/8.0 CPU"], 3) == [(1, warning, False)]
    # while the cluster scales up: the run's own lines go on past the warning
    assert tail_evidence([warning] + ["(RayTrainWorker pid=812) step 3 loss 2.04"] * 20, 21) == []
