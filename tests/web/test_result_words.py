"""The web result page says what the CLI report says: both render one report model through the
same words (first failed, facts of the run, exception, the user's frame, summary)."""

from __future__ import annotations

import time
from html import unescape

from traintriage.kb.loader import load_kb
from traintriage.pipeline import run_bytes
from traintriage.report.build import build_diagnosis
from traintriage.report.render import report_words, text_lines
from traintriage.web.document import build_document
from traintriage.web.links import Links
from traintriage.web.rendering import render
from traintriage.web.routes.pages import page_context

_STEPS = "".join(f"[rank1]:[2026-12-02 10:05:{s:02d},000] INFO train: step {s} loss 2.1\n" for s in (39, 40))
_OOM = ("[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/workspace/proj/train.py", line 88, in main\n'
        "[rank1]:     loss = model(batch).sum()\n"
        '[rank1]:   File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751, in _call_impl\n'
        "[rank1]:     return forward_call(*args, **kwargs)\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity "
        "of 79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.88 GiB memory in use.\n")
_WATCHDOG = ("[rank0]:[E1202 10:15:03.000001 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=212, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) "
             "ran for 600012 milliseconds before timing out.\n")


def _page(log: str) -> tuple[dict[str, str | None], list[tuple[str, str]], str]:
    run, started = run_bytes([("job.out", log.encode())])
    diagnosis = build_diagnosis(run.sources, run.scans, run.analysis, load_kb(), time.perf_counter() - started)
    html = render("result.html", Links(), **page_context("x", build_document(diagnosis, run)))
    return report_words(diagnosis), text_lines(diagnosis), " ".join(unescape(html).split())


def test_result_page_and_cli_report_say_the_same_things() -> None:
    words, rows, page = _page(_STEPS + _OOM + _WATCHDOG)
    assert words["first_failed"] and words["first_failed"].startswith("rank 1")
    assert words["your_code"] == "/workspace/proj/train.py:88 in main"
    assert words["facts"] and "failed at step 40" in words["facts"]
    cli = dict((label, text) for label, text in rows if label)
    for label, key in (("First failed", "first_failed"), ("Run", "facts"), ("Your code", "your_code"),
                       ("Summary", "summary")):
        assert cli[label] == words[key]
        assert " ".join(str(words[key]).split()) in page, key


def test_result_page_marks_what_the_signature_matched() -> None:
    _, _, page = _page(_OOM)
    assert "<mark>CUDA out of memory. Tried to allocate 2.00 GiB" in page


def test_a_hang_reads_the_same_on_the_page() -> None:
    log = "".join(f"[rank{r}]:[2026-12-02 10:05:{s:02d},000] INFO train: step {s} loss 2.1\n"
                  for s in (7, 8) for r in (0, 1)) + _WATCHDOG + _WATCHDOG.replace("rank0", "rank1").replace("Rank 0", "Rank 1")
    words, _, page = _page(log)
    assert words["facts"] and "stopped making progress after step 8" in words["facts"]
    assert "stopped making progress after step 8" in page
