"""Fingerprints: one recurring incident is one fingerprint; a different failure is another."""

from __future__ import annotations

from traintriage.service.fingerprint import fingerprint, normalise


def test_ranks_sizes_addresses_ids_and_directories_do_not_change_the_fingerprint() -> None:
    one = fingerprint("cuda-oom", [
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3",
        "  File \"/home/alice/runs/exp-17/train.py\", line 88, in step",
        "job 8f14e45f-ceea-467a-9a3c-2f0e7c1b9b1a at 0x7f3a2c001a40 on node-12",
    ])
    other = fingerprint("cuda-oom", [
        "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 GiB. GPU 5",
        "  File \"/scratch/bob/exp-3/train.py\", line 91, in step",
        "job 0c9a6e2b-1111-4a7b-8c3d-aa00bb11cc22 at 0x55d1e0 on node-3",
        "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 GiB. GPU 5",
    ])
    assert one == other


def test_another_root_cause_or_message_is_another_fingerprint() -> None:
    line = "CUDA out of memory. Tried to allocate 2.00 GiB"
    assert fingerprint("cuda-oom", [line]) != fingerprint("cuda-oom-fragmentation", [line])
    assert fingerprint("cuda-oom", [line]) != fingerprint("cuda-oom", ["CUDA error: an illegal memory access"])
    assert fingerprint("cuda-oom", [line, "train.py"]) != fingerprint("cuda-oom", [line, "eval.py"])


def test_normalise_keeps_the_words_and_the_file_name() -> None:
    assert normalise('File "/home/u/x/train.py", line 12') == 'File "<path>/train.py", line <n>'
    assert normalise("ptr deadbeef01 and 0xFF") == "ptr <hex> and <hex>"
    assert normalise("x" * 100_000) == "x" * 2000


def test_the_normalising_patterns_have_no_ambiguous_nested_repeat() -> None:
    """They run on evidence lines (masked log text), clipped to LINE_CAP characters first."""
    from tests.robust.test_regex_linear import ambiguous_nesting
    from traintriage.service.fingerprint import _NORMALISERS

    assert [(p.pattern, ambiguous_nesting(p.pattern)) for p, _ in _NORMALISERS if ambiguous_nesting(p.pattern)] == []

