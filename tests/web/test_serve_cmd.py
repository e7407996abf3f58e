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


def serve(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "traintriage.cli.entry", "serve", *args], capture_output=True,
                          text=True, check=False, timeout=60, env=dict(os.environ, **env))


def test_a_taken_port_is_one_line() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve("--port", str(port))
    assert done.returncode == 64
    assert done.stderr == f"traintriage: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_a_database_that_cannot_be_opened_is_one_line() -> None:
    from tests.web.live import free_port

    done = serve("--port", str(free_port()), TRAINTRIAGE_DATABASE_URL="nosuchdialect://x")
    assert done.returncode == 64
    assert done.stderr.startswith("traintriage: error: cannot open the database (TRAINTRIAGE_DATABASE_URL): ")
    assert done.stderr.count("\n") == 1
