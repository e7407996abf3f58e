"""A truncated or corrupt file is a bad data sample when a Dataset was reading it, a bad checkpoint otherwise:
the library's message is the same, the traceback tells which file the run was reading."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of

SITE = "/opt/venv/lib/python3.11/site-packages"
TRUNCATED = ("ValueError: Failed to read all data for array. Expected (128, 64) = 8192 elements, could only read "
             "1311 elements. (file seems not fully written?)")
IN_WORKER = f"""step 40 loss 0.81
Traceback (most recent call last):
  File "/srv/job/train.py", line 77, in <module>
    for x, y in loader:
  File "{SITE}/torch/utils/data/dataloader.py", line 1480, in _process_data
    data.reraise()
ValueError: Caught ValueError in DataLoader worker process 1.
Original Traceback (most recent call last):
  File "{SITE}/torch/utils/data/_utils/worker.py", line 349, in _worker_loop
    data = fetcher.fetch(index)
  File "{SITE}/torch/utils/data/_utils/fetch.py", line 52, in fetch
    data = [self.dataset[idx] for idx in possibly_batched_index]
  File "/srv/job/data.py", line 31, in __getitem__
    feats = np.load(self.files[i])
  File "{SITE}/numpy/lib/_npyio_impl.py", line 484, in load
    return format.read_array(fid, allow_pickle=allow_pickle)
  File "{SITE}/numpy/lib/format.py", line 850, in read_array
    raise ValueError(msg % (shape, count, len(array)))
{TRUNCATED}
"""
IN_GETITEM = f"""Traceback (most recent call last):
  File "/srv/job/train.py", line 70, in <module>
    sample = ds[1204]
  File "/srv/job/data.py", line 31, in __getitem__
    feats = np.load(self.files[i])
  File "{SITE}/numpy/lib/format.py", line 850, in read_array
    raise ValueError(msg % (shape, count, len(array)))
{TRUNCATED}
"""
AT_RESUME = f"""Traceback (most recent call last):
  File "/srv/job/train.py", line 52, in <module>
    ema = np.load(os.path.join(ckpt_dir, "ema_weights.npy"))
  File "{SITE}/numpy/lib/format.py", line 850, in read_array
    raise ValueError(msg % (shape, count, len(array)))
{TRUNCATED}
"""
IN_MODULE_LIST = f"""Traceback (most recent call last):
  File "/srv/job/train.py", line 52, in <module>
    block = model.blocks[3]
  File "{SITE}/torch/nn/modules/container.py", line 334, in __getitem__
    return self._modules[self._get_abs_string_index(idx)]
  File "/srv/job/model.py", line 20, in load_block
    weights = np.load(path)
  File "{SITE}/numpy/lib/format.py", line 850, in read_array
    raise ValueError(msg % (shape, count, len(array)))
{TRUNCATED}
"""



def test_a_truncated_array_read_in_a_dataloader_worker_is_a_bad_sample(tmp_path: Path) -> None:
    assert root_of(tmp_path, IN_WORKER) == "corrupt-data-sample"


def test_a_truncated_array_read_in_a_datasets_getitem_is_a_bad_sample(tmp_path: Path) -> None:
    assert root_of(tmp_path, IN_GETITEM) == "corrupt-data-sample"


def test_the_same_message_while_resuming_is_a_bad_checkpoint(tmp_path: Path) -> None:
    assert root_of(tmp_path, AT_RESUME) == "checkpoint-corrupt"


def test_a_module_containers_getitem_is_not_a_dataset(tmp_path: Path) -> None:
    assert root_of(tmp_path, IN_MODULE_LIST) == "checkpoint-corrupt"
