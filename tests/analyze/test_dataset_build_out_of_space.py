"""datasets raises `DatasetGenerationError ... from e` whatever stopped the build; when `e` is ENOSPC the disk
filled up while the Arrow cache was written, and a malformed file is still the build error it names."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of


def _build_failed_because(cause: str) -> str:
    return "\n".join([
        "Generating train split: 0 examples [00:00, ? examples/s]",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.12/site-packages/datasets/builder.py", line 1870, in _prepare_split_single',
        "    writer.write_table(table)",
        '  File "/venv/lib/python3.12/site-packages/datasets/arrow_writer.py", line 620, in write_table',
        "    self.pa_writer.write_table(pa_table, writer_batch_size)",
        cause,
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/home/dev/sft/prepare.py", line 41, in <module>',
        '    ds = load_dataset("json", data_files=files, cache_dir=cache)',
        '  File "/venv/lib/python3.12/site-packages/datasets/builder.py", line 1898, in _prepare_split_single',
        '    raise DatasetGenerationError("An error occurred while generating the dataset") from e',
        "datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
    ]) + "\n"


def test_a_build_stopped_by_a_full_disk_is_disk_full(tmp_path: Path) -> None:
    assert root_of(tmp_path, _build_failed_because("OSError: [Errno 28] No space left on device")) == "disk-full"


def test_a_build_stopped_by_a_bad_record_stays_a_build_error(tmp_path: Path) -> None:
    cause = "pyarrow.lib.ArrowInvalid: JSON parse error: Missing a closing quotation mark in string. in row 12"
    assert root_of(tmp_path, _build_failed_because(cause)) == "hf-dataset-generation-error"
