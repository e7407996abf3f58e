"""The self-contained PyTorch fix examples run, unchanged, against the installed torch (CPU build).

Parsing (test_snippets.py) catches syntax; this catches an example that calls an API the
current release no longer has, passes a removed keyword, or raises on its own demo data.
The sets below are the examples that need neither a GPU, a checkpoint on disk nor a package
outside the dev extra; an entry whose example stops being self-contained must leave a set
deliberately (a reviewer sees the diff), not silently.

All examples of a set run in one child process (one torch import), each in a fresh
namespace as `__main__`, so a failure names its entry without paying an import per example.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from traintriage.kb.loader import load_kb

pytestmark = pytest.mark.xdist_group("kb-examples-run")  # one worker, so each group's child process runs once

EAGER = frozenset({
    "backward-twice", "checkpoint-corrupt", "cuda-misaligned-address", "cuda-too-many-resources",
    "dataloader-worker-error", "disk-full", "dtype-mismatch", "embedding-index-out-of-range",
    "filesystem-io-error", "fp16-value-overflow", "gpu-xid-page-fault", "grad-implicit-non-scalar",
    "inference-tensor-backward", "inplace-modification", "kernel-not-implemented-for-dtype",
    "leaf-inplace-requires-grad", "loss-spike-divergence", "loss-target-mismatch",
    "multinomial-invalid-probability", "rocm-memory-access-fault", "shape-mismatch", "tensor-no-grad",
    "user-code-exception", "view-non-contiguous", "worker-killed-by-signal",
})
COMPILED = frozenset({"dynamo-unsupported", "inductor-backend-failed", "inductor-cxx-compiler-error"})

_RUNNER = r"""
import json, sys, traceback
failures = {}
for entry_id, code in json.load(open(sys.argv[1])).items():
    try:
        exec(compile(code, f"<{entry_id} pytorch example>", "exec"), {"__name__": "__main__"})
    except BaseException:
        failures[entry_id] = traceback.format_exc(limit=-3)
json.dump(failures, open(sys.argv[2], "w"))
"""


@cache
def _failures(group: frozenset[str], workdir: str) -> dict[str, str]:
    """Run every example of the group in one child process; {entry id: traceback} of those that failed."""
    examples = {}
    for entry_id in sorted(group):
        code = load_kb().entries[entry_id].fix.code.get("pytorch")
        examples[entry_id] = code if code is not None else "raise SystemExit('no plain pytorch example any more')"
    source, result = Path(workdir) / "examples.json", Path(workdir) / "failures.json"
    source.write_text(json.dumps(examples), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _RUNNER, str(source), str(result)], cwd=workdir,
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0 and result.exists(), f"the example runner itself failed:\n{done.stderr[-2000:]}"
    failures: dict[str, str] = json.loads(result.read_text(encoding="utf-8"))
    return failures


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("kb-examples"))


@pytest.mark.parametrize("entry_id", sorted(EAGER))
def test_pytorch_fix_example_runs_on_the_cpu(entry_id: str, workdir: str) -> None:
    failure = _failures(EAGER, workdir).get(entry_id)
    assert failure is None, f"{entry_id}: the pytorch example failed:\n{failure}"


@pytest.mark.parametrize("entry_id", sorted(COMPILED))
def test_torch_compile_fix_example_compiles_and_runs_on_the_cpu(entry_id: str, workdir: str) -> None:
    failure = _failures(COMPILED, workdir).get(entry_id)
    assert failure is None, f"{entry_id}: the pytorch example failed:\n{failure}"


def test_a_broken_example_is_reported_with_its_entry(tmp_path: Path) -> None:
    source, result = tmp_path / "examples.json", tmp_path / "failures.json"
    source.write_text(json.dumps({"ok": "import math\nmath.sqrt(4)\n",
                                  "removed-kwarg": "import torch\ntorch.zeros(2, warmup_ratio=0.1)\n"}), encoding="utf-8")
    subprocess.run([sys.executable, "-c", _RUNNER, str(source), str(result)], cwd=tmp_path, check=True, timeout=240)
    failures = json.loads(result.read_text(encoding="utf-8"))
    assert set(failures) == {"removed-kwarg"} and "TypeError" in failures["removed-kwarg"]
