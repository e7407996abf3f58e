"""torch.save reports any failed write the same way (`unexpected pos N vs M`, `basic_ios::clear: iostream
error`): after `File too large` (EFBIG, a file-size limit) that is no full disk; after `No space left on
device` it is."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of


def _save_failure(first_error: str) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 967, in save',
        "    _save(",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 1268, in _save',
        "    zip_file.write_record(name, storage, num_bytes)",
        first_error,
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/srv/job/train.py", line 212, in <module>',
        "    torch.save(state, ckpt_path)",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 966, in save',
        "    with _open_zipfile_writer(f) as opened_zipfile:",
        "RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 37820864 vs 37820752",
    ]


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    return root_of(tmp_path, "\n".join(lines) + "\n")


def test_a_write_past_a_file_size_limit_is_no_full_disk(tmp_path: Path) -> None:
    assert _root(tmp_path, _save_failure("OSError: [Errno 27] File too large")) != "disk-full"


def test_the_same_error_after_no_space_left_is_a_full_disk(tmp_path: Path) -> None:
    assert _root(tmp_path, _save_failure("OSError: [Errno 28] No space left on device")) == "disk-full"
