#!/usr/bin/env python
"""Real example logs for `inductor-cxx-compiler-error` (new entry).

positive-1: torch.compile on CPU in a container without a usable C++ compiler
(CXX names a compiler that is not installed): "InvalidCxxCompiler: No working C++ compiler found".
positive-2: the compiler exists but rejects the command line (an -march value it does
not know, set through TORCHINDUCTOR_CPP_MARCH): "CppCompileError: C++ compile error".
Run: .venv/bin/python scripts/examples/inductor-cxx-compiler-error.py
"""
ID = "inductor-cxx-compiler-error"
# --- runner: re-executes this file as the training script and saves its real output ---
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "src/traintriage/kb/examples" / ID
VENV_BIN = pathlib.Path(sys.executable).parent
# this CPU venv has no numpy; torch warns about it at import: not part of the failure
DROP = re.compile(r"Failed to initialize NumPy|_conversion_method_template")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(name: str, mode: str, nproc: int = 0, env: dict | None = None) -> str:
    """Run this file as /tmp/tt-job/<ID>/train.py (plain python, or torchrun --tee 3)."""
    work = pathlib.Path("/tmp/tt-job") / ID
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(__file__, work / "train.py")
    if nproc:
        cmd = [str(VENV_BIN / "torchrun"), f"--nproc-per-node={nproc}", "--tee=3",
               f"--master-port={_free_port()}", "train.py"]
    else:
        cmd = [sys.executable, "train.py"]
    full_env = dict(os.environ, TT_MODE=mode, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.run(cmd, cwd=work, env=full_env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    text = "".join(l for l in proc.stdout.splitlines(keepends=True) if not DROP.search(l))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_text(text)
    print(f"{name}: exit {proc.returncode}, {len(text.splitlines())} lines")
    return text


def train(mode: str) -> None:
    import torch

    @torch.compile
    def gelu_bias(x, b):
        return torch.nn.functional.gelu(x + b)

    print(f"CXX={os.environ.get('CXX')} TORCHINDUCTOR_CPP_MARCH={os.environ.get('TORCHINDUCTOR_CPP_MARCH')}", flush=True)
    print("warming up compiled kernels ...", flush=True)
    gelu_bias(torch.randn(64, 64), torch.randn(64))


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    # CXX names a compiler that is not installed in this image
    run("positive-1.log", "single", env={"CXX": "g++-13"})
    # the compiler exists but rejects the command line (-march value it does not know)
    run("positive-2.log", "single", env={"TORCHINDUCTOR_CPP_MARCH": "sapphirerapids-x",
                                         "TORCHINDUCTOR_CACHE_DIR": "/tmp/tt-job/inductor-cache"})
