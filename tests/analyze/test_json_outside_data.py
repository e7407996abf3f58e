"""A JSONDecodeError is a corrupt sample when a Dataset or data loader was reading it, not when the script
parses its own config file with the same json module."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of

JSON_FRAMES = [
    '  File "/usr/lib/python3.11/json/__init__.py", line 293, in load',
    "    return loads(fp.read(),",
    '  File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode',
    "    obj, end = self.scan_once(s, idx)",
    "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 4 column 1 (char 26)",
]


def _log(frames: list[str]) -> str:
    return "\n".join(["Traceback (most recent call last):", *frames, *JSON_FRAMES]) + "\n"


def test_a_config_the_script_parses_is_no_corrupt_sample(tmp_path: Path) -> None:
    frames = ['  File "/srv/job/train.py", line 104, in main', "    cfg.update(json.load(f))"]
    assert root_of(tmp_path, _log(frames)) != "corrupt-data-sample"


def test_a_record_a_dataset_reads_is_a_corrupt_sample(tmp_path: Path) -> None:
    frames = [
        '  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", line 52, in fetch',
        "    data = [self.dataset[idx] for idx in possibly_batched_index]",
        '  File "/srv/job/data.py", line 41, in __getitem__',
        "    record = json.load(f)",
    ]
    assert root_of(tmp_path, _log(frames)) == "corrupt-data-sample"
