"""Regenerate real examples for glibcxx-version-not-found.

An extension built with GCC 13 needs the symbol version GLIBCXX_3.4.32 from libstdc++.so.6
(`std::ios_base_library_init()`); this machine's libstdc++ (GCC 12, libstdc++.so.6.0.30) stops
at GLIBCXX_3.4.30. The script links a small module against a stand-in libstdc++.so.6 that
carries that version node, then imports it against the system libstdc++: the dynamic loader
prints its real "version `GLIBCXX_3.4.32' not found (required by ...)" error.

positive-1.log: torchrun, 2 ranks, `--tee 3`, importing a tokenizer extension on each rank.
positive-2.log: plain `python train.py`.

Run: .venv/bin/python scripts/examples/glibcxx-version-not-found.py   (needs gcc)
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sysconfig
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "glibcxx-version-not-found"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")

TRAIN = r'''
import logging, sys
logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s:%(lineno)d - %(message)s", level=logging.INFO)
log = logging.getLogger("train")
if sys.argv[1] == "torchrun":
    import torch, torch.distributed as dist
    dist.init_process_group("gloo")
    log.info("rank %d: loading fast tokenizer", dist.get_rank())
else:
    import torch
    log.info("loading fast tokenizer")
from fasttok import _fasttok
'''


def sh(*cmd: str) -> None:
    subprocess.run(list(cmd), check=True)


def run(cmd: list[str], out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = pathlib.Path(tmp)
        site = t / "miniconda3" / "envs" / "train" / "lib" / "python3.11" / "site-packages"
        (site / "fasttok").mkdir(parents=True)
        (site / "fasttok" / "__init__.py").write_text("")
        stub = t / "stub"
        stub.mkdir()
        (stub / "v.map").write_text("GLIBCXX_3.4.32 { global: _ZSt21ios_base_library_initv; };\n")
        (stub / "s.c").write_text("void _ZSt21ios_base_library_initv(void) {}\n")
        sh("gcc", "-shared", "-fPIC", "-Wl,-soname,libstdc++.so.6", f"-Wl,--version-script={stub}/v.map",
           "-o", str(stub / "libstdc++.so.6"), str(stub / "s.c"))
        (stub / "ext.c").write_text("extern void _ZSt21ios_base_library_initv(void);\n"
                                    "void *PyInit__fasttok(void) { _ZSt21ios_base_library_initv(); return 0; }\n")
        sh("gcc", "-shared", "-fPIC", "-o", str(site / "fasttok" / f"_fasttok{SUFFIX}"), str(stub / "ext.c"),
           str(stub / "libstdc++.so.6"))
        for f in stub.iterdir():
            f.unlink()
        (t / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(site))
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    run([str(VENV_BIN / "torchrun"), "--nproc-per-node", "2", "--master-port", "29791", "--tee", "3",
         "train.py", "torchrun"], OUT / "positive-1.log")
    run([str(VENV_BIN / "python"), "train.py", "plain"], OUT / "positive-2.log")
