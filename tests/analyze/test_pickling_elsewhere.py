"""A pickling error is the spawn start method's only when multiprocessing was handing a process its
arguments; one raised while torch.save or an object collective pickles is about the object itself."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of

SITE = "/opt/venv/lib/python3.11/site-packages"
IN_TORCH_SAVE = f"""Traceback (most recent call last):
  File "/srv/job/train.py", line 45, in <module>
    torch.save({{"model": model.state_dict(), "sched": scheduler}}, path)
  File "{SITE}/torch/serialization.py", line 1003, in save
    _save(
  File "{SITE}/torch/serialization.py", line 1253, in _save
    pickler.dump(obj)
_pickle.PicklingError: Can't pickle <function <lambda> at 0x7f3a1c0b2ee0>: attribute lookup <lambda> on __main__ failed
"""
IN_SPAWN = f"""Traceback (most recent call last):
  File "/srv/job/train.py", line 88, in <module>
    for batch in loader:
  File "{SITE}/torch/utils/data/dataloader.py", line 1040, in __init__
    w.start()
  File "/usr/lib/python3.11/multiprocessing/process.py", line 121, in start
    self._popen = self._Popen(self)
  File "/usr/lib/python3.11/multiprocessing/popen_spawn_posix.py", line 47, in _launch
    reduction.dump(process_obj, fp)
_pickle.PicklingError: Can't pickle <function <lambda> at 0x7f3a1c0b2ee0>: attribute lookup <lambda> on __main__ failed
"""



def test_pickling_in_torch_save_is_not_the_spawn_start_method(tmp_path: Path) -> None:
    assert root_of(tmp_path, IN_TORCH_SAVE) != "pickling-error-spawn"


def test_pickling_while_starting_a_worker_is(tmp_path: Path) -> None:
    assert root_of(tmp_path, IN_SPAWN) == "pickling-error-spawn"


IN_SPAWNED_CHILD_SAVE = f"""-- Process 0 terminated with the following error:
Traceback (most recent call last):
  File "{SITE}/torch/multiprocessing/spawn.py", line 87, in _wrap
    fn(i, *args)
  File "/srv/job/train.py", line 51, in worker
    torch.save(model, path)
  File "{SITE}/torch/serialization.py", line 1003, in save
    _save(
  File "{SITE}/torch/serialization.py", line 1253, in _save
    pickler.dump(obj)
AttributeError: Can't pickle local object 'Net.__init__.<locals>.<lambda>'
"""


def test_torch_multiprocessing_running_the_child_is_not_multiprocessing_starting_it(tmp_path: Path) -> None:
    assert root_of(tmp_path, IN_SPAWNED_CHILD_SAVE) != "pickling-error-spawn"
