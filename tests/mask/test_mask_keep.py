"""What diagnosis needs survives masking byte for byte (issue item 5)."""

from __future__ import annotations

from tests.mask.fakes import HEX, fake, mask

SHA = fake(HEX, 64, 91)
COMMIT = fake(HEX, 40, 92)

DIAGNOSTIC_LOG = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.25 GiB. GPU 2 has a total capacity of 79.15 GiB",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
    "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
    "[453183.754964] NVRM: Xid (PCI:0000:3b:00): 79, pid=1587609, name=python, GPU has fallen off the bus.",
    "|   1  NVIDIA H100 80GB HBM3          On  | 00000000:3B:00.0 Off |                    0 |",
    "pci bus id 0000:3b:00.0 is in use",
    "node0027:337034:337385 [0] NCCL INFO comm 0x43abd589d70a rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 0f000 "
    "commId 0x3ec2ac48c092c7a4 - Init COMPLETE",
    "frame #3: c10::cuda::CUDACachingAllocator::raw_alloc + 0x2f (0x7f8a2c1d3e4f in /opt/conda/lib/libc10_cuda.so)",
    "[2023-09-09 08:30:10,779] [INFO] [logging.py:96:log_dist] [Rank 0] step=100, skipped=0, lr=[1.174670e-04]",
    "{'loss': 3.0983, 'grad_norm': 1.1361, 'learning_rate': 6.3729e-06, 'epoch': 0.29}",
    "steps: 240 loss: 2.4253 iter time (s): 0.842 samples/sec: 159.372",
    "  7%|▊         | 150/2000 [04:15<52:25, 0.54it/s]",
    "RuntimeError: shape '[4, 512, 32, 128]' is invalid for input of size 15003606",
    "\tsize mismatch for model.embed_tokens.weight: copying a param with shape torch.Size([151936, 4096]) from checkpoint",
    f"[2024-12-31 02:02:59,888] INFO git: commit {COMMIT} (branch dev, dirty=False)",
    "INFO versions: torch 2.1.0a0+git23fc996, transformers 4.38.2, deepspeed 0.15.0+e3ddc80f",
    f"INFO verified checkpoint-370 (sha256={SHA})",
    f"{SHA}  model-00001-of-00002.safetensors",
    "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-cf279039-f3a7-2b2b-ec87-aac8c82e4f75)",
    "  rdzv_endpoint    : node0110:29400",
    "+ export MASTER_PORT=23456",
    "srun: error: node0110: task 0: Exited with exit code 1",
    "  exitcode  : -6 (pid: 2282081)",
    "  rank      : 1 (local_rank: 1)",
    "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    "OMP_NUM_THREADS=1",
    "| NVIDIA-SMI 525.85.12             Driver Version: 525.85.12   CUDA Version: 12.4     |",
    '  File "/opt/conda/lib/python3.9/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", '
    "line 347, in wrapper",
    "W0515 13:14:33.479410 2282078 torch/distributed/run.py:779] *****************************************",
    "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600321 milliseconds before timing out.",
    "  max_new_tokens: 1024",
    "  eos_token: </s>",
    "args: Namespace(pad_token_id=2, deepspeed='configs/ds_z2.json', max_seq_length=1024, local_rank=1)",
]


def test_a_diagnostic_log_comes_back_unchanged() -> None:
    text = "\n".join(DIAGNOSTIC_LOG) + "\n"
    assert mask(text) == text


def test_ports_exit_codes_and_ranks_survive_next_to_masked_addresses() -> None:
    output = mask("rank 3 on 10.1.2.3:29500 exited with exit code 1 (pid: 4242), MASTER_PORT=29500")
    assert output == "rank 3 on <IP-1>:29500 exited with exit code 1 (pid: 4242), MASTER_PORT=29500"
