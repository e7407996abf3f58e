"""Evidence quotes the part of a long line that decides, not its first 160 characters."""

from __future__ import annotations

from traintriage.report.quote import quote


def test_collective_mismatch_quotes_the_fields_that_differ() -> None:
    fingerprint = ("CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[{shape}], "
                   "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, "
                   "layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), "
                   "memory_format=(nullopt)))")
    line = ("[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
            + fingerprint.format(shape="1024") + ", but Rank 0 is running collective: "
            + fingerprint.format(shape="2048") + ". Collectives differ in the following aspects: Tensor Tensor shapes")
    quoted = quote(line, 160)
    assert "TensorShape=[1024]" in quoted and "TensorShape=[2048]" in quoted
    assert len(quoted) <= 160


def test_long_shape_error_keeps_the_shapes() -> None:
    line = ("2026-12-02 10:00:01,234 node-7 [rank3]: " + "x" * 10 + " while running model.forward in module "
            + "encoder.layers.11.mlp " * 8 + "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x3136 and 4096x10)")
    quoted = quote(line, 160)
    assert "(64x3136 and 4096x10)" in quoted
    assert len(quoted) <= 170


def test_short_lines_are_whole() -> None:
    assert quote("RuntimeError: CUDA error: an illegal memory access was encountered", 160) == \
        "RuntimeError: CUDA error: an illegal memory access was encountered"


def _kept(line: str, part: str, width: int = 160) -> str:
    start = line.index(part)
    quoted = quote(line, width, (start, start + len(part)))
    assert part in quoted, quoted
    assert len(quoted) <= width, len(quoted)
    return quoted


def test_the_signatures_match_survives_a_long_prefix() -> None:
    line = ("[default3]:[rank3]:[E1202 11:25:11.000400118 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=7340, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, "
            "Timeout(ms)=600000) ran for 600021 milliseconds before timing out.")
    quoted = _kept(line, "Watchdog caught collective operation timeout: WorkNCCL(")
    assert "OpType=ALLREDUCE" in quoted and "ran for 600021 milliseconds" in quoted


def test_a_match_at_the_end_of_a_long_line_keeps_the_head_of_the_message() -> None:
    line = ("[rank0]: RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
            "calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized")
    quoted = _kept(line, "Error 802: system not yet initialized")
    assert "cudaGetDeviceCount()" in quoted


def test_an_oom_keeps_the_request_and_the_sizes() -> None:
    line = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 1 has a total "
            "capacity of 79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.88 GiB "
            "memory in use. Of the allocated memory 71.02 GiB is allocated by PyTorch, and 5.31 GiB is reserved by "
            "PyTorch but unallocated.")
    quoted = _kept(line, "CUDA out of memory. Tried to allocate 3.91 GiB")
    assert quoted.startswith("…OutOfMemoryError:")
    assert "77.88 GiB" in quoted and "5.31 GiB" in quoted


def test_a_match_past_the_width_is_still_quoted() -> None:
    line = "x" * 300 + " CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k)`"
    _kept(line, "CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm(")


def test_whitespace_runs_do_not_shift_the_kept_part() -> None:
    line = "[rank0]:\t  ERROR   " + "y " * 100 + "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0."
    squeezed_part = "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0"
    _kept(line, squeezed_part)


def test_a_match_glued_to_a_long_path_is_quoted_whole() -> None:
    path = "/var/lib/docker/overlay2/" + "a1b2c3d4" * 12 + "/diff/opt/venv/lib/libcudnn_engines.so.9"
    line = f"failed to register layer: write {path}: no space left on device"
    quoted = _kept(line, ": no space left on device")
    assert quoted.endswith(": no space left on device")
