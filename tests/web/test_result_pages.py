"""The result page renders for every kind of diagnosis the KB's own examples produce."""

from __future__ import annotations

import time
from html import unescape

from traintriage.kb.loader import EXAMPLES_DIR, load_kb
from traintriage.pipeline import run_bytes
from traintriage.report.build import build_diagnosis
from traintriage.web import charts
from traintriage.web.document import build_document
from traintriage.web.links import Links
from traintriage.web.rendering import render
from traintriage.web.routes.pages import page_context


def test_every_entrys_first_example_renders() -> None:
    kb = load_kb()
    rendered = 0
    for path in sorted(EXAMPLES_DIR.glob("*/positive-1.log")):
        run, started = run_bytes([(path.name, path.read_bytes())])
        diagnosis = build_diagnosis(run.sources, run.scans, run.analysis, kb, time.perf_counter() - started)
        document = build_document(diagnosis, run)
        html = render("result.html", Links(), **page_context("x", document))
        root = document["root_cause"]
        expected = {"failure": root and root["title"], "unknown-failure": "no known failure class explains it",
                    "no-failure": "Nothing in this log says the run failed"}[document["status"]]
        assert expected in unescape(html), path
        timeline = charts.timeline(document["views"]["rank_events"])
        assert timeline is None or len(timeline.marks) <= len(document["views"]["rank_events"])
        rendered += 1
    assert rendered >= 150


def test_a_log_cut_inside_a_traceback_names_its_rank_and_no_empty_salient_block() -> None:
    """The log stops on a frame of rank 2's traceback: the page says who failed and why no line is
    quoted, instead of an empty list of salient lines."""
    log = ("[rank2]: Traceback (most recent call last):\n"
           '[rank2]:   File "/home/ana/train.py", line 88, in main\n'
           "[rank2]:     with accelerator.accumulate(model):\n"
           '[rank2]:   File "/opt/venv/lib/python3.10/site-packages/accelerate/accelerator.py", line 1092, in accumulate\n'
           "[rank2]:     cm_stack.enter_context(self.no_sync(m))\n")
    run, started = run_bytes([("cut.log", log.encode())])
    diagnosis = build_diagnosis(run.sources, run.scans, run.analysis, load_kb(), time.perf_counter() - started)
    html = unescape(render("result.html", Links(), **page_context("x", build_document(diagnosis, run))))
    assert "First failed:</strong> rank 2" in html
    assert "it ends inside a traceback, before the exception line" in html
    assert "Salient lines" not in html
