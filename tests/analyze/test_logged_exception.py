"""An exception a logger printed with its traceback (the program caught it), followed by more training
steps of the same rank, did not stop the run; the same lines with nothing after them did."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

LOGGED = [
    "[default1]:2026-03-02 10:11:04,736 [rank1] ERROR train: pretrained head not found; starting from random init",
    "[default1]:Traceback (most recent call last):",
    '[default1]:  File "/srv/job/train.py", line 61, in load_head',
    "[default1]:    state = torch.load(path, map_location='cpu')",
    '[default1]:  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 1561, in load',
    '[default1]:    with _open_file_like(f, "rb") as opened_file:',
    "[default1]:FileNotFoundError: [Errno 2] No such file or directory: '/srv/job/head.pt'",
]
STEPS = [f"[default1]:2026-03-02 10:11:0{5 + i},100 [rank1] INFO train: step {10 * (i + 1)} loss {1.9 - 0.2 * i:.2f}"
         for i in range(4)]


def test_a_logged_exception_then_more_steps_is_not_the_failure(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(LOGGED + STEPS) + "\n")
    assert diagnose([str(path)]).status.value == "no-failure"


def test_a_logged_exception_with_nothing_after_it_is_the_failure(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(STEPS + LOGGED) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "file-not-found"


def test_another_ranks_steps_do_not_excuse_it(tmp_path: Path) -> None:
    others = [line.replace("[default1]", "[default0]").replace("[rank1]", "[rank0]") for line in STEPS]
    path = tmp_path / "train.log"
    path.write_text("\n".join(LOGGED + others) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "file-not-found"


CHAINED = [
    "[default1]:2026-03-02 10:11:04,736 [rank1] ERROR train.ckpt: checkpoint save failed (attempt 1/3); retrying",
    "[default1]:Traceback (most recent call last):",
    '[default1]:  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 1003, in save',
    "[default1]:    _save(",
    "[default1]:OSError: [Errno 28] No space left on device",
    "[default1]:",
    "[default1]:During handling of the above exception, another exception occurred:",
    "[default1]:",
    "[default1]:Traceback (most recent call last):",
    '[default1]:  File "/srv/job/train.py", line 180, in save_ckpt',
    "[default1]:    torch.save(state, fh)",
    "[default1]:RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 255616 vs 255508",
]


def test_a_logged_chain_of_tracebacks_then_more_steps_is_not_the_failure(tmp_path: Path) -> None:
    """The log record stands above the first traceback of the chain, not above the last."""
    path = tmp_path / "train.log"
    path.write_text("\n".join(CHAINED + STEPS) + "\n")
    assert diagnose([str(path)]).status.value == "no-failure"


def test_the_same_chain_without_its_log_record_is_the_failure(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(CHAINED[1:] + STEPS) + "\n")
    assert diagnose([str(path)]).status.value != "no-failure"


def _logged_then_crash(record: str) -> list[str]:
    """A logged exception under `record`, then another error nothing caught, with no step in between."""
    crash = [
        "[default1]:Traceback (most recent call last):",
        '[default1]:  File "/srv/job/train.py", line 204, in <module>',
        "[default1]:    batch = next(loader_iter)",
        '[default1]:  File "/srv/job/data.py", line 58, in __getitem__',
        "[default1]:    fh = open(self.files[index], 'rb')",
        "[default1]:OSError: [Errno 24] Too many open files: '/data/shards/s00412.npy'",
    ]
    return STEPS + [LOGGED[0].replace("pretrained head not found; starting from random init", record)] + LOGGED[1:] + crash


def test_an_error_logged_as_handled_gives_way_to_the_failure_after_it(tmp_path: Path) -> None:
    """The record says the program carried on (`trying next one`), and another error stopped the run before
    any step showed it: that later error is the cause."""
    path = tmp_path / "train.log"
    path.write_text("\n".join(_logged_then_crash("failed to read /srv/job/head.pt, trying next one")) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "too-many-open-files"


def test_an_error_logged_without_carrying_on_stays_the_first_failure(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(_logged_then_crash("could not load /srv/job/head.pt")) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "file-not-found"


def test_a_run_whose_every_error_was_logged_as_handled_did_not_fail(tmp_path: Path) -> None:
    """The last handled error has no step after it, only the run's own closing record."""
    handled = [LOGGED[0].replace("pretrained head not found; starting from random init",
                                 "evaluation at step 40 failed; skipping this round")] + LOGGED[1:]
    closing = "[default1]:2026-03-02 10:11:09,400 [rank1] INFO train: done: 40 steps"
    path = tmp_path / "train.log"
    path.write_text("\n".join(STEPS + handled + [closing]) + "\n")
    assert diagnose([str(path)]).status.value == "no-failure"


def test_a_handled_error_then_the_same_error_uncaught_is_the_failure(tmp_path: Path) -> None:
    handled = [LOGGED[0].replace("pretrained head not found; starting from random init",
                                 "evaluation at step 40 failed; skipping this round")] + LOGGED[1:]
    path = tmp_path / "train.log"
    path.write_text("\n".join(STEPS + handled + LOGGED[1:]) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "file-not-found"
