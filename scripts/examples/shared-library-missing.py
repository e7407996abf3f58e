"""Regenerate real examples for shared-library-missing.

The dynamic loader's own message is produced for real: a stand-in CUDA library with the right
SONAME (libcudnn.so.9 / libcudart.so.12) is built, an extension module is linked against it,
then the stand-in is deleted, so importing the extension fails exactly as on a host where the
CUDA/cuDNN runtime is not installed or not on the library path. The ctypes case calls
ctypes.CDLL("libnccl.so.2") directly, as vLLM's pynccl wrapper and CuPy do.

positive-1.log: torchrun, 2 ranks, `--tee 3`: `import xformers_ops` -> ImportError:
  libcudnn.so.9: cannot open shared object file: No such file or directory.
positive-2.log: plain `python serve.py`: ctypes.CDLL("libnccl.so.2") -> OSError: libnccl.so.2:
  cannot open shared object file: No such file or directory.
(negative-1.log is written by hand: a missing libGL.so.1 from opencv, the
neighbouring libgl-missing class.)

Run: .venv/bin/python scripts/examples/shared-library-missing.py   (needs gcc)
"""

from __future__ import annotations

import pathlib
import subprocess
import sysconfig

from _runner import PY, TORCHRUN, run_logged

ID = "shared-library-missing"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
SITE = "env/lib/python3.11/site-packages"  # in the scratch dir, on PYTHONPATH

TRAIN = r'''
import ctypes, logging, os, sys
logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("main")
if sys.argv[1] == "ext":
    import torch, torch.distributed as dist
    dist.init_process_group("gloo")
    log.info("rank %d: loading memory-efficient attention kernels", dist.get_rank())
    import xformers_ops
elif sys.argv[1] == "ctypes":
    log.info("initialising communicator for tensor parallel size 2")
    so_file = os.environ.get("VLLM_NCCL_SO_PATH", "libnccl.so.2")
    lib = ctypes.CDLL(so_file)
'''


def sh(*cmd: str) -> None:
    subprocess.run(list(cmd), check=True)


def build_extension(t: pathlib.Path) -> None:
    """xformers_ops*.so, linked against a stand-in libcudnn.so.9 that is then deleted."""
    site = t / SITE
    site.mkdir(parents=True)
    stub = t / "stub"
    stub.mkdir()
    (stub / "cudnn.c").write_text("int cudnnGetVersion(void) { return 90100; }\n")
    sh("gcc", "-shared", "-fPIC", "-Wl,-soname,libcudnn.so.9", "-o", str(stub / "libcudnn.so.9"),
       str(stub / "cudnn.c"))
    (stub / "ext.c").write_text("extern int cudnnGetVersion(void);\n"
                                "void *PyInit_xformers_ops(void) { cudnnGetVersion(); return 0; }\n")
    sh("gcc", "-shared", "-fPIC", "-o", str(site / f"xformers_ops{SUFFIX}"), str(stub / "ext.c"),
       str(stub / "libcudnn.so.9"))
    for f in stub.iterdir():
        f.unlink()  # the runtime library is now missing, as on the broken host


if __name__ == "__main__":
    files = {"serve.py": TRAIN}
    env = {"PYTHONPATH": "{tmp}/" + SITE}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29781", "--tee", "3",
                                      "serve.py", "ext"], files=files, setup=build_extension, env=env)
    run_logged(ID, "positive-2.log", [PY, "serve.py", "ctypes"], files=files, setup=build_extension, env=env)
