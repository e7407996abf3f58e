"""Versions and hardware named in the log (torch, CUDA, NCCL, driver, DeepSpeed, GPU)."""

from __future__ import annotations

import re

_EXTRACTORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("torch", re.compile(r"(?:PyTorch version:?|\btorch(?:\.__version__)?\s*(?:version)?\s*[:=]?)\s*v?(\d+\.\d+\.\d+[\w.+]*)")),
    ("cuda", re.compile(r"(?:CUDA Version:?|CUDA used to build PyTorch:)\s*(\d+\.?\d*)|\+cu(\d{2,3})\b")),
    ("nccl", re.compile(r"NCCL version (\d+\.\d+\.\d+)")),
    ("driver", re.compile(r"Driver Version: ?(\d+[\d.]*)")),
    ("deepspeed", re.compile(r"(?:DeepSpeed info: version=|\bdeepspeed(?:\s+version)?\s*[:=]\s*)(\d+\.\d+\.\d+[\w.+]*)")),
    ("transformers", re.compile(r"transformers(?:\s+version)?\s*[:=]\s*(\d+\.\d+\.\d+[\w.]*)")),
    ("python", re.compile(r"Python version:? (\d+\.\d+\.?\d*)")),
    ("rocm", re.compile(r"ROCM used to build PyTorch: (\S+)")),
    ("gpu", re.compile(r"(NVIDIA (?:[A-Z]\d{2,4}|GeForce|RTX|Tesla|A100|H100|H200|B200|GB200|L40|L4)[\w -]*?\d+GB[\w ]*|"
                       r"NVIDIA (?:[A-Z]\d{2,4}|GeForce RTX \d+|Tesla \w+|A100|H100|H200|B200|GB200|L40S?|L4)\b[\w-]*|AMD Instinct MI\d+\w*)")),
)


def extract_environment(lines: list[str]) -> dict[str, str]:
    """The first value found for each key; later lines do not override earlier ones."""
    found: dict[str, str] = {}
    for text in lines:
        for key, pattern in _EXTRACTORS:
            if key in found:
                continue
            match = pattern.search(text)
            if match:
                found[key] = (match.group(1) or _wheel_cuda(match.group(2))).strip()
    return found


def _wheel_cuda(tag: str) -> str:
    """A wheel's local version tag without its dot: `+cu132` is CUDA 13.2, `+cu118` 11.8."""
    return f"{tag[:-1]}.{tag[-1]}"
