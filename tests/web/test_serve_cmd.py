"""`traintriage serve` without the serve extra: one line naming the pip command, no traceback."""

from __future__ import annotations

import subprocess
import sys

BLOCK_UVICORN = """
import sys
sys.modules["uvicorn"] = None  # as if the serve extra were not installed
sys.argv = ["traintriage", "serve"]
from traintriage.cli.entry import run
run()
"""


def test_serve_without_the_extra_names_the_pip_command() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK_UVICORN], capture_output=True, text=True, check=False)
    assert done.returncode == 64
    assert done.stderr == ("traintriage: error: the web app needs the serve extra: "
                           "pip install 'traintriage[serve]' (uvicorn is missing)\n")
