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
