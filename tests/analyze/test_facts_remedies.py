"""Facts the fix variants filter on: the stack of non-Python tools, and remedies the log shows
already in use (a line that only recommends a remedy does not count)."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import facts_of as _facts
from traintriage.analyze.facts import kept_texts, remedies_in_use
from traintriage.pipeline import run_bytes

OOM_HINT = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.25 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 78.14 GiB memory in "
            "use. Of the allocated memory 70.02 GiB is allocated by PyTorch, and 6.61 GiB is reserved by PyTorch but "
            "unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
            "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def test_advice_printed_by_the_failure_is_not_a_remedy_in_use() -> None:
    assert remedies_in_use([OOM_HINT]) == []
    assert remedies_in_use(["torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                            "NCCLUtils.hpp:317, unhandled system error (run with NCCL_DEBUG=INFO for details), "
                            "NCCL version 2.21.5"]) == []


def test_remedies_in_use_from_the_lines_that_show_them() -> None:
    lines = [
        "+ export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "gpu-a07:81231:81231 [0] NCCL INFO Bootstrap : Using ib0:10.12.0.7<0>",
        "/workspace/train.py:88: UserWarning: Anomaly Detection has been enabled. This mode will increase the runtime "
        "and should only be enabled for debugging.",
        "[rank0]:[I1202 09:00:01.000000 4410 ProcessGroupNCCL.cpp:951] [PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL "
        "environments: NCCL version: 2.21.5, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_ENABLE_TIMING: 0",
        '  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 4720, in monitored_barrier',
    ]
    assert sorted(remedies_in_use(lines)) == ["anomaly-mode", "async-error-handling", "expandable-segments",
                                              "monitored-barrier", "nccl-debug-info"]
    assert remedies_in_use(["TORCH_NCCL_ASYNC_ERROR_HANDLING=0 torchrun --nproc-per-node 8 train.py"]) == []


def test_a_start_up_line_far_from_the_failure_is_still_read() -> None:
    progress = "".join(f"step {i} loss {2.0 - i / 1000:.4f}\n" for i in range(1, 400))
    text = "+ export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n" + progress + OOM_HINT + "\n"
    run, _ = run_bytes([("job.log", text.encode())])
    assert remedies_in_use(kept_texts(run.scans)) == ["expandable-segments"]
    without, _ = run_bytes([("job.log", (progress + OOM_HINT + "\n").encode())])
    assert remedies_in_use(kept_texts(without.scans)) == []


def test_llama_cpp_is_recognised_from_its_own_lines(tmp_path: Path) -> None:
    facts = _facts(tmp_path, (
        "ggml_cuda_init: failed to initialize CUDA: CUDA-capable device(s) is/are busy or unavailable\n"
        "warning: no usable GPU found, --gpu-layers option will be ignored\n"
        "llama_model_loader: loaded meta data with 29 key-value pairs and 339 tensors from /models/m.gguf\n"))
    assert facts.stack == ["llama-cpp"]


def test_lua_torch_paths_do_not_make_a_pytorch_run(tmp_path: Path) -> None:
    facts = _facts(tmp_path, (
        "/home/u/torch/install/bin/luajit: cuda runtime error (2) : out of memory at "
        "/tmp/luarocks_cutorch-scm-1-4113/cutorch/lib/THC/generic/THCStorage.cu:66\n"
        "stack traceback:\n"
        "\t[C]: in function 'resize'\n"
        "\t/home/u/torch/install/share/lua/5.1/nn/SpatialConvolution.lua:96: in function 'updateOutput'\n"
        "\ttrain.lua:120: in function 'opfunc'\n"))
    assert "lua-torch" in facts.stack and "pytorch" not in facts.stack


def test_tensorflow_and_jax_are_recognised(tmp_path: Path) -> None:
    tf = _facts(tmp_path, (
        "2026-11-30 10:02:19.873120: E tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:434] Could not "
        "create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
        "tensorflow.python.framework.errors_impl.UnimplementedError: Graph execution error:\n"))
    assert tf.stack == ["tensorflow"]
    jax = _facts(tmp_path, (
        '  File "/opt/venv/lib/python3.11/site-packages/jax/_src/interpreters/pxla.py", line 1285, in __call__\n'
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        "17179869184 bytes.\n"))
    assert jax.stack == ["jax"]


def test_anomaly_mode_around_backward_only_has_no_forward_trace() -> None:
    backward_only = ("/venv/lib/python3.11/site-packages/torch/autograd/graph.py:829: UserWarning: Error detected in "
                     "SqrtBackward0. No forward pass information available. Enable detect anomaly during forward pass "
                     "for more information. (Triggered internally at /pytorch/torch/csrc/autograd/"
                     "python_anomaly_mode.cpp:100.)")
    assert remedies_in_use([backward_only]) == ["anomaly-mode"]
    forward = backward_only.replace("No forward pass information available. Enable detect anomaly during forward "
                                    "pass for more information.", "Traceback of forward call that caused the error:")
    assert remedies_in_use([forward]) == ["anomaly-mode", "anomaly-mode-forward"]


def test_torch_2_15_oom_message_says_expandable_segments_are_on() -> None:
    """With the setting on, torch 2.15 replaces the allocator's hint by this sentence."""
    line = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.19 GiB of which 1.12 GiB is free. Of the allocated memory 71.40 GiB is allocated by PyTorch, and "
            "5.83 GiB is reserved by PyTorch but unallocated. expandable_segments is enabled. If instead the process "
            "is running out of virtual address space (VSZ), expandable segments may be over-reserving VA")
    assert remedies_in_use([line]) == ["expandable-segments"]
    assert remedies_in_use([line.replace("expandable_segments is enabled. ", "")]) == []


def test_a_remedy_in_use_after_lines_that_only_recommend_it() -> None:
    advice = "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    assert remedies_in_use([advice] * 50) == []
    assert remedies_in_use([advice] * 50 + ["NCCL_DEBUG=INFO torchrun --nproc-per-node 8 train.py"]) == ["nccl-debug-info"]
