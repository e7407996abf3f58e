"""Regenerate real examples for extension-abi-mismatch.

A prebuilt extension that was linked against another torch's C++ ABI is emulated by compiling
a tiny shared object that references a c10 symbol that the installed libc10 does not export
(`c10::cuda::SetDevice(int)`, `_ZN3c104cuda9SetDeviceEi`, whose signature changed in torch 2.2).
`import` then fails in the real dynamic loader with
"ImportError: <path>/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: ...".

positive-1.log: plain `python train.py` importing flash_attn (package layout as the real wheel:
  flash_attn/flash_attn_interface.py does `import flash_attn_2_cuda as flash_attn_gpu`).
positive-2.log: torchrun, 2 ranks, `--tee 3`, importing apex-style `amp_C` that references
  `c10::TensorImpl::is_contiguous_nondefault_policy_impl(c10::MemoryFormat) const`.

Run: .venv/bin/python scripts/examples/extension-abi-mismatch.py   (needs gcc)
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sysconfig
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "extension-abi-mismatch"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-311-x86_64-linux-gnu.so

EXT_C = r'''
extern void %(sym)s(void);
void *PyInit_%(mod)s(void) { %(sym)s(); return 0; }
'''

TRAIN = r'''
import logging, os, sys
import torch
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("train")
if sys.argv[1] == "flash":
    log.info("torch %s, building LlamaForCausalLM with attn_implementation=flash_attention_2", torch.__version__)
    from flash_attn import flash_attn_func
else:
    import torch.distributed as dist
    dist.init_process_group("gloo")
    log.info("rank %d: using apex fused multi-tensor optimizers", dist.get_rank())
    import amp_C
'''


def build(site: pathlib.Path, mod: str, sym: str) -> None:
    src = site / f"{mod}.c"
    src.write_text(EXT_C % {"sym": sym, "mod": mod})
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(site / f"{mod}{SUFFIX}"), str(src)], check=True)
    src.unlink()


def run(cmd: list[str], out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        site = pathlib.Path(tmp) / "env" / "lib" / "python3.11" / "site-packages"
        (site / "flash_attn").mkdir(parents=True)
        (site / "flash_attn" / "__init__.py").write_text(
            '__version__ = "2.5.6"\n\nfrom flash_attn.flash_attn_interface import (\n'
            '    flash_attn_func,\n    flash_attn_varlen_func,\n)\n')
        (site / "flash_attn" / "flash_attn_interface.py").write_text(
            "import torch\nimport torch.nn as nn\n\n# isort: off\n"
            "# We need to import the CUDA kernels after importing torch\n"
            "import flash_attn_2_cuda as flash_attn_gpu\n")
        build(site, "flash_attn_2_cuda", "_ZN3c104cuda9SetDeviceEi")
        build(site, "amp_C", "_ZNK3c1010TensorImpl36is_contiguous_nondefault_policy_implENS_12MemoryFormatE")
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(site))
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    run([str(VENV_BIN / "python"), "train.py", "flash"], OUT / "positive-1.log")
    run([str(VENV_BIN / "torchrun"), "--nproc-per-node", "2", "--master-port", "29771", "--tee", "3",
         "train.py", "apex"], OUT / "positive-2.log")
