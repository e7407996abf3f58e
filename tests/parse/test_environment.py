"""Versions read from the lines a run prints about itself."""

from __future__ import annotations

import pytest

from traintriage.parse.environment import extract_environment


@pytest.mark.parametrize(
    ("line", "cuda"),
    [
        ("torch version: 2.15.0+cu132", "13.2"),  # the wheel's local tag has no dot
        ("torch==2.4.0+cu118", "11.8"),
        ("PyTorch version: 1.12.1+cu102", "10.2"),
        ("CUDA used to build PyTorch: 12.6", "12.6"),
        ("| NVIDIA-SMI 580.95.05   Driver Version: 580.95.05   CUDA Version: 13.0 |", "13.0"),
    ],
)
def test_cuda_version_in_each_form(line: str, cuda: str) -> None:
    assert extract_environment([line])["cuda"] == cuda


def test_a_cuda_tag_inside_a_longer_word_is_not_a_version() -> None:
    assert "cuda" not in extract_environment(["loaded kernels from libfoo+cu1324x.so"])
