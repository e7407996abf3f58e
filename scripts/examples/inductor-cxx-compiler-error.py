#!/usr/bin/env python
"""Real example logs for `inductor-cxx-compiler-error` (new entry).

positive-1: torch.compile on CPU in a container without a usable C++ compiler
(CXX names a compiler that is not installed): "InvalidCxxCompiler: No working C++ compiler found".
positive-2: the compiler exists but rejects the command line (an -march value it does
not know, set through TORCHINDUCTOR_CPP_MARCH): "CppCompileError: C++ compile error".
Run: .venv/bin/python scripts/examples/inductor-cxx-compiler-error.py
"""
ID = "inductor-cxx-compiler-error"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


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
    from _runner import self_runner
    run = self_runner(ID, __file__)
    # CXX names a compiler that is not installed in this image
    run("positive-1.log", "single", env={"CXX": "g++-13"})
    # the compiler exists but rejects the command line (-march value it does not know)
    run("positive-2.log", "single", env={"TORCHINDUCTOR_CPP_MARCH": "sapphirerapids-x",
                                         "TORCHINDUCTOR_CACHE_DIR": "/tmp/tt-job/inductor-cache"})
