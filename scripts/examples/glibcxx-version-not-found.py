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

import pathlib
import subprocess
import sysconfig

from _runner import PY, TORCHRUN, run_logged

ID = "glibcxx-version-not-found"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
SITE = "miniconda3/envs/train/lib/python3.11/site-packages"  # in the scratch dir, on PYTHONPATH

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


def build_extension(t: pathlib.Path) -> None:
    """fasttok/_fasttok*.so, linked against a stand-in libstdc++.so.6 with GLIBCXX_3.4.32 (then removed)."""
    site = t / SITE
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


if __name__ == "__main__":
    files = {f"{SITE}/fasttok/__init__.py": "", "train.py": TRAIN}
    env = {"PYTHONPATH": "{tmp}/" + SITE}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29791", "--tee", "3",
                                      "train.py", "torchrun"], files=files, setup=build_extension, env=env)
    run_logged(ID, "positive-2.log", [PY, "train.py", "plain"], files=files, setup=build_extension, env=env)
