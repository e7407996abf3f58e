"""Suspect ranks from what the text says: monitored_barrier's list of ranks that never arrived."""

from __future__ import annotations

import pytest

from traintriage.analyze.observations import Observation
from traintriage.analyze.ranks import named_faulty_rank
from traintriage.match.scan import LineHit


def _observation(text: str) -> Observation:
    return Observation(hit=LineHit(source=0, line=1, text=text, patterns=[]), source_name="run.log", rank=0,
                       host=None, time=None, message=text, order=0)


@pytest.mark.parametrize(
    ("text", "rank"),
    [
        ("RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms", 1),
        ("RuntimeError: [Rank 0]: Rank 2 failed to pass monitoredBarrier in 1800000 ms", 2),
        ("RuntimeError: [Rank 0]: Ranks 4,5,6 failed to pass monitoredBarrier in 30000 ms", 4),
    ],
)
def test_first_rank_that_failed_the_barrier(text: str, rank: int) -> None:
    suspect = named_faulty_rank([_observation(text)])
    assert suspect is not None and suspect.rank == rank


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: Ranks " + ", ".join(str(r) for r in range(1, 701)),  # cut before its closing words
        "RuntimeError: Ranks " + "1" * 200 + " x",
    ],
)
def test_a_cut_rank_list_names_no_barrier_rank(text: str) -> None:
    suspect = named_faulty_rank([_observation(text[:4000])])
    assert suspect is None or "monitored_barrier" not in suspect.reason


def test_the_one_rank_horovod_reports_missing_is_the_suspect() -> None:
    old_form = [_observation(f"[1,0]<stderr>:[2026-12-03 07:12:40.185: W horovod/common/operations.cc:588] "
                             f"HorovodBroadcast_{name}_0 [missing ranks: 3]") for name in ("dense_bias", "global_step")]
    suspect = named_faulty_rank(old_form)
    assert suspect is not None and suspect.rank == 3
    new_form = [_observation("[1,0]<stderr>:2!: [HorovodAllreduce_grad_0, HorovodAllreduce_grad_1]")]
    suspect = named_faulty_rank(new_form)
    assert suspect is not None and suspect.rank == 2
    scoped = [_observation("1: [DistributedGradientTape_Allreduce/cond_12/HorovodAllreduce_grads_0]")]
    suspect = named_faulty_rank(scoped)
    assert suspect is not None and suspect.rank == 1


def test_several_missing_horovod_ranks_name_no_suspect() -> None:
    """Three of four ranks missing: the odd one out is the rank that did submit."""
    lines = [_observation(f"[1,0]<stderr>:{rank}: [HorovodAllreduce_val_loss_0]") for rank in (1, 2, 3)]
    assert named_faulty_rank(lines) is None


def test_the_one_rank_absent_from_horovods_ready_ranks_is_the_suspect() -> None:
    """Horovod 0.13.5 and older list the ranks that did submit a stalled tensor."""
    lines = [_observation(f"HorovodBroadcast_{name}_0 [ready ranks: 4, 0, 3, 1], ") for name in ("conv1_w", "fc_b")]
    suspect = named_faulty_rank(lines)
    assert suspect is not None and suspect.rank == 2
    two_missing = [_observation("HorovodAllreduce_g_0 [ready ranks: 0, 3]")]
    assert named_faulty_rank(two_missing) is None


def test_pytorch_tensor_names_in_horovods_missing_ranks() -> None:
    lines = [_observation("[1,0]<stderr>:1: [broadcast.noname.1]"),
             _observation("[1,0]<stderr>:1: [allreduce.module.fc.weight, allreduce.module.fc.bias]")]
    suspect = named_faulty_rank(lines)
    assert suspect is not None and suspect.rank == 1


def test_the_one_rank_a_distributed_checkpoint_reports_failed_is_the_suspect() -> None:
    lines = [_observation(f"[rank{r}]: torch.distributed.checkpoint.api.CheckpointException: "
                          "CheckpointException ranks:dict_keys([2])") for r in range(4)]
    suspect = named_faulty_rank(lines)
    assert suspect is not None and suspect.rank == 2 and suspect.named_by_peers
    several = [_observation("CheckpointException ranks:dict_keys([0, 3])")]
    assert named_faulty_rank(several) is None


def test_every_rank_raising_a_checkpoint_error_still_names_the_rank_that_failed_to_write() -> None:
    """DCP raises the gathered exception on every rank, so all fail alike; its rank list says whose write failed."""
    from traintriage.pipeline import diagnose_bytes

    blocks = []
    for rank in range(4):
        blocks.append(
            f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "/job/train.py", line 88, in main\n'
            f"[rank{rank}]:     dcp.save(state, checkpoint_id=out)\n"
            f"[rank{rank}]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([2])\n"
            f"[rank{rank}]: Traceback (most recent call last): (RANK 2)\n"
            f'[rank{rank}]:   File "/venv/torch/distributed/checkpoint/filesystem.py", line 301, in _write_files\n'
            f"[rank{rank}]: PermissionError: [Errno 13] Permission denied: '/ckpt/step_100/__2_0.distcp'\n")
    diagnosis = diagnose_bytes([("console.log", "".join(blocks).encode())])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "permission-denied"
    assert diagnosis.initiating_rank == 2


@pytest.mark.parametrize(
    ("texts", "rank"),
    [
        (["(TrainController pid=811) [Rank 1 Error Snippet]:"], 1),
        (["[Rank 0 Error Snippet]:", "(TrainController pid=811) [Rank 0 Error Snippet]:"], 0),
        (["[Rank 0 Error Snippet]:", "[Rank 1 Error Snippet]:"], None),
    ],
)
def test_the_one_worker_ray_train_reports_failed_is_the_suspect(texts: list[str], rank: int | None) -> None:
    suspect = named_faulty_rank([_observation(text) for text in texts])
    assert (suspect.rank if suspect is not None else None) == rank
