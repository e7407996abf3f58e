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

import pathlib
import subprocess
import sysconfig

from _runner import PY, TORCHRUN, run_logged

ID = "extension-abi-mismatch"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-311-x86_64-linux-gnu.so
SITE = "env/lib/python3.11/site-packages"  # in the scratch dir, on PYTHONPATH

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


def build_extensions(tmp: pathlib.Path) -> None:
    build(tmp / SITE, "flash_attn_2_cuda", "_ZN3c104cuda9SetDeviceEi")
    build(tmp / SITE, "amp_C", "_ZNK3c1010TensorImpl36is_contiguous_nondefault_policy_implENS_12MemoryFormatE")


FILES = {
    f"{SITE}/flash_attn/__init__.py": '__version__ = "2.5.6"\n\nfrom flash_attn.flash_attn_interface import (\n'
                                      '    flash_attn_func,\n    flash_attn_varlen_func,\n)\n',
    f"{SITE}/flash_attn/flash_attn_interface.py": "import torch\nimport torch.nn as nn\n\n# isort: off\n"
                                                  "# We need to import the CUDA kernels after importing torch\n"
                                                  "import flash_attn_2_cuda as flash_attn_gpu\n",
    "train.py": TRAIN,
}


if __name__ == "__main__":
    env = {"PYTHONPATH": "{tmp}/" + SITE}
    run_logged(ID, "positive-1.log", [PY, "train.py", "flash"], files=FILES, setup=build_extensions, env=env)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29771", "--tee", "3",
                                      "train.py", "apex"], files=FILES, setup=build_extensions, env=env)
