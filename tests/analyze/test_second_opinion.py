"""The second opinion: KB entries by BM25 similarity when no signature matched."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.analyze.observations import Observation
from traintriage.analyze.second_opinion import ROOT_CONFIDENCE, second_opinion
from traintriage.kb.loader import load_kb
from traintriage.match.compiler import load_scanner
from traintriage.match.scan import LineHit
from traintriage.match.similar import query_words, similarity_index
from traintriage.pipeline import diagnose
from traintriage.report.model import Diagnosis, Status


def _observations(lines: list[str]) -> list[Observation]:
    return [Observation(hit=LineHit(source=0, line=n, text=text, patterns=[]), source_name="pasted.log", rank=None,
                        host=None, time=None, message=text, order=n) for n, text in enumerate(lines, 1)]


def test_a_clear_lead_names_the_root_and_the_lines_it_rests_on() -> None:
    lines = ["INFO loading shards", "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"]
    opinion = second_opinion(_observations(lines), load_kb(), load_scanner())
    assert opinion.root is not None and opinion.root.entry_id == "safetensors-header-error"
    assert opinion.confidence["safetensors-header-error"] == ROOT_CONFIDENCE < 0.95
    assert [o.message for o in opinion.root.roots] == [lines[1]]


@pytest.mark.parametrize("line", [
    'psycopg.OperationalError: connection to server at "db" (10.0.0.5), port 5432 failed: FATAL:  password '
    'authentication failed for user "app"',
    "botocore.exceptions.NoCredentialsError: Unable to locate credentials",
])
def test_a_class_the_kb_lacks_stays_unknown_with_weak_candidates(line: str) -> None:
    """Nothing in a training-failure KB explains these; shared words (`connection`, `credentials`) must not
    be enough to name a root cause."""
    opinion = second_opinion(_observations([line]), load_kb(), load_scanner())
    assert opinion.root is None
    assert opinion.candidates and max(opinion.confidence.values()) <= 0.5


def test_paths_and_numbers_are_not_query_words() -> None:
    words = query_words(["RuntimeError: x at /opt/conda/conda-bld/pytorch_1524577177097/work/aten/src/THC/THCStorage.cu:58 "
                         "(pid 41237, 0x7f3a9c001234)"])
    assert words == ["runtimeerror", "x", "pid"]


def test_unknown_failure_lists_candidates_in_the_report(tmp_path: Path) -> None:
    path = tmp_path / "pasted.log"
    # CUDA's text for cudaErrorNvlinkUncorrectable, in a wrapper no signature knows
    path.write_text("RuntimeError: CUDA driver error: uncorrectable NVLink error detected during the execution\n"
                    "terminate called after throwing an instance of 'c10::Error'\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status in (Status.unknown_failure, Status.failure)
    assert diagnosis.candidates[0].id == "nvlink-error"
    assert diagnosis.candidates[0].confidence < 0.9



def test_a_status_the_nearest_entry_does_not_list_keeps_it_a_candidate() -> None:
    """BM25 sees the same words in CUBLAS_STATUS_INVALID_VALUE and in the entry about
    EXECUTION_FAILED/NOT_SUPPORTED (without the status check this line is named the root at
    0.8); the named status tells them apart."""
    line = ("RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasGemmStridedBatchedEx( handle, "
            "opa, opb, m, n, k, &alpha, a, CUDA_R_32F, lda, stridea, b, CUDA_R_32F, ldb, strideb, &beta, c, CUDA_R_32F, "
            "ldc, stridec, num_batches, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`")
    opinion = second_opinion(_observations([line]), load_kb(), load_scanner())
    assert opinion.root is None
    assert opinion.candidates[0].entry_id == "cublas-execution-failed"
    index = similarity_index(load_kb(), load_scanner())
    assert index.contradicts("cublas-execution-failed", {("CUBLAS_STATUS_", "INVALID_VALUE")})
    assert not index.contradicts("cublas-execution-failed", {("CUBLAS_STATUS_", "EXECUTION_FAILED")})
    assert not index.contradicts("cublas-execution-failed", {("CUDNN_STATUS_", "BAD_PARAM")})  # no word on another family


def _unexplained(tmp_path: Path, log: str) -> Diagnosis:
    """The diagnosis of a pasted log, which must be an unknown failure (no root cause named)."""
    path = tmp_path / "pasted.log"
    path.write_text(log)
    diagnosis = diagnose([str(path)])
    assert diagnosis.status == Status.unknown_failure and diagnosis.root_cause is None
    return diagnosis


def test_a_paste_cut_before_its_error_offers_the_entries_its_supporting_lines_name(tmp_path: Path) -> None:
    """Only a supporting line matched (checkpointing's warning that no input requires grad), and the
    traceback ends before its exception: the entry is offered as a candidate, never the root cause."""
    diagnosis = _unexplained(tmp_path,
        "/opt/venv/lib/python3.10/site-packages/torch/utils/checkpoint.py:61: UserWarning: None of the inputs have "
        "requires_grad=True. Gradients will be None\n"
        "Traceback (most recent call last):\n"
        '  File "/home/alice/lora/train.py", line 311, in <module>\n'
        "    trainer.train()\n"
        '  File "/opt/venv/lib/python3.10/site-packages/transformers/trainer.py", line 2241, in train\n'
        "    return inner_training_loop(\n")
    assert "tensor-no-grad" in [c.id for c in diagnosis.candidates]
    assert all(c.confidence < 0.3 for c in diagnosis.candidates)


def test_a_paste_cut_inside_a_traceback_offers_what_its_last_frame_was_doing(tmp_path: Path) -> None:
    """The paste ends on a frame, before the exception: the last frame's words (a chat template
    applied to a tokenizer) point to an entry, offered with low confidence and never as the root."""
    diagnosis = _unexplained(tmp_path,
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/home/bob/sft/train.py", line 140, in <module>\n'
        "[rank0]:     trainer = SFTTrainer(model=model, train_dataset=ds, formatting_func=fmt)\n"
        '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/trl/trainer/sft_trainer.py", line 301, in fmt\n'
        "[rank0]:     return tokenizer.apply_chat_template(example['messages'], tokenize=False)\n"
        "[rank0]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n")
    assert diagnosis.candidates[0].id == "chat-template-missing"
    assert diagnosis.candidates[0].confidence < 0.5


def test_a_named_failure_lists_near_entries_as_faint_alternatives(tmp_path: Path) -> None:
    """A signature names the root; the entries worded nearest to its lines follow it, far below it, so
    that a near neighbour is in the first three when the signature's class is the wrong one."""
    path = tmp_path / "launch.log"
    path.write_text("[W1206 08:01:12.114000 5120 site-packages/torch/distributed/run.py:811] Setting OMP_NUM_THREADS\n"
                    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
                    "address. port: 29400, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "rendezvous-port-in-use"
    ids = [c.id for c in diagnosis.candidates]
    assert ids[0] == "rendezvous-port-in-use" and len(ids) == 3 and len(set(ids)) == 3
    assert all(c.confidence < 0.1 < diagnosis.root_cause.confidence for c in diagnosis.candidates[1:])


def test_the_pickled_index_scores_as_bm25s_does() -> None:
    """The index keeps bm25s's weights as plain tuples (no numpy at load): its sums are bm25s's scores."""
    import bm25s

    from traintriage.match.similar import SimilarityIndex, _postings

    corpus = [["cuda", "out", "memory"], ["nccl", "timeout", "watchdog", "memory"], ["nan", "loss", "loss"]]
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    index = SimilarityIndex(["a", "b", "c"], _postings(retriever), {})
    for query in (["memory"], ["loss", "nan", "unseen"], ["watchdog", "memory", "cuda"]):
        known = [word for word in query if word in retriever.vocab_dict]
        expected = {e: float(v) for e, v in zip("abc", retriever.get_scores(known), strict=True) if v > 0}
        assert index.scores(query) == pytest.approx(expected)
    assert index.scores(["unseen"]) == {}
