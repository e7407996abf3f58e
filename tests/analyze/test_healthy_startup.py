"""TensorFlow's start-up warnings about optional libraries: the run goes on, it did not fail."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose
from traintriage.report.model import Status

_DSO = ("2026-12-03 07:12:40.185615: W tensorflow/tsl/platform/default/dso_loader.cc:66] Could not load dynamic "
        "library 'libcudart.so.12'; dlerror: libcudart.so.12: cannot open shared object file: No such file or "
        "directory; LD_LIBRARY_PATH: /usr/local/nvidia/lib64")
_STUB = ("2026-12-03 07:12:40.185670: I tensorflow/tsl/cuda/cudart_stub.cc:28] Ignore above cudart dlerror if you "
         "do not have a GPU set up on your machine.")
_FACTORY = ("2026-12-03 07:12:40.300000: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] Unable to "
            "register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been "
            "registered")


def test_import_warnings_alone_are_healthy(tmp_path: Path) -> None:
    path = tmp_path / "tf-start.log"
    path.write_text("\n".join([_DSO, _STUB, _FACTORY]) + "\n")
    assert diagnose([str(path)]).status is Status.no_failure


def test_a_crash_after_the_warnings_is_still_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "tf-crash.log"
    path.write_text("\n".join([_DSO, _STUB, "Traceback (most recent call last):",
                               '  File "/workspace/train.py", line 12, in <module>',
                               "    import tensorflow as tf",
                               "ImportError: libcudart.so.12: cannot open shared object file: No such file or "
                               "directory"]) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status is not Status.no_failure
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "shared-library-missing"
