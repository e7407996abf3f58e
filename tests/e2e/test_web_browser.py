"""The web app in a real browser (Debian's Chromium driven by Playwright) against a running
`traintriage serve`: what a user does during an incident, and that a hostile log stays text.

Screenshots of the main pages are kept in tests/e2e/artifacts/ (git-ignored) for review.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.web.live import LiveServer, free_port, live_server
from tests.web.runs import crashed_run

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("web-browser")]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).parent / "artifacts"
SAMPLE = Path(__file__).resolve().parents[2] / "src/traintriage/data/sample/job-4412.log"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("/usr/bin/chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("Debian's chromium is not installed (/usr/bin/chromium); `apt-get install chromium` to run")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("web-browser"), TRAINTRIAGE_MAX_UPLOAD_MB="1") as running:
        yield running


@pytest.fixture
def page(browser: Browser, server: LiveServer) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    yield opened
    context.close()


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def paste_and_diagnose(page: Page, text: str) -> None:
    """Paste a log into the home page's form, submit it and wait for its result page."""
    page.get_by_label("Paste a log").fill(text)
    page.get_by_role("button", name="Diagnose", exact=True).click()
    page.wait_for_url(re.compile(r"/d/[\w-]+$"))


def cli_root_cause(*paths: Path) -> tuple[str, str]:
    import json

    done = subprocess.run([sys.executable, "-m", "traintriage.cli.entry", "diagnose", "--format", "json",
                           *map(str, paths)], capture_output=True, check=False)
    root = json.loads(done.stdout)["root_cause"]
    return root["id"], root["title"]


def test_paste_a_log_and_read_the_root_cause(page: Page) -> None:
    page.goto("/")
    shot(page, "home")
    paste_and_diagnose(page, SAMPLE.read_text())
    entry_id, title = cli_root_cause(SAMPLE)
    verdict = page.locator("header.verdict")
    assert verdict.get_by_role("heading", level=1).inner_text() == title
    assert entry_id in verdict.inner_text() and "confidence" in verdict.inner_text()
    assert "First failed: rank" in verdict.inner_text()
    assert page.locator("ol.evidence mark").count() >= 1
    assert page.locator("figure.timeline svg circle").count() >= 2
    shot(page, "result")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "result-phone")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the result page scrolls sideways on a phone ({width}px)"


def test_upload_a_per_rank_run(page: Page, tmp_path: Path) -> None:
    files = crashed_run(tmp_path)
    page.goto("/")
    page.get_by_label("Or choose log files").set_input_files([str(f) for f in files])
    page.get_by_role("button", name="Diagnose", exact=True).click()
    page.wait_for_url(re.compile(r"/d/[\w-]+$"))
    entry_id, title = cli_root_cause(*files)
    verdict = page.locator("header.verdict").inner_text()
    assert title in verdict and "First failed: rank 2" in verdict
    collateral = page.locator("section", has=page.get_by_role("heading", name=re.compile("Collateral")))
    assert "0-1" in collateral.inner_text()
    sources = page.locator("ol.evidence .where code").all_inner_texts()
    assert any(s.startswith("rank2.log:") for s in sources)
    shot(page, "result-per-rank")


def test_try_a_sample_then_open_its_entry(page: Page) -> None:
    page.goto("/")
    page.get_by_role("button", name=re.compile("^CUDA out of memory")).click()
    page.wait_for_url(re.compile(r"/d/[\w-]+$"))
    verdict = page.locator("header.verdict")
    assert "cuda-oom" in verdict.inner_text()
    page.get_by_role("radio", name="Engineer").focus()  # the perspective switch works from the keyboard
    page.keyboard.press("ArrowRight")
    assert page.get_by_role("radio", name="On-call").is_checked()
    assert page.locator("#view-panel-oncall").is_visible() and not page.locator("#view-panel-engineer").is_visible()
    verdict.get_by_role("link").first.click()
    page.wait_for_url(re.compile(r"/kb/cuda-oom$"))
    for section in ("Summary", "Mechanism", "Symptoms", "Confirm", "Fix", "Verify", "Prevention", "Perspectives",
                    "References"):
        assert page.get_by_role("heading", name=section, exact=True).is_visible()
    shot(page, "entry")


def test_search_the_encyclopedia_by_an_error_message(page: Page) -> None:
    page.goto("/kb")
    page.get_by_label("Search: words, or an error message pasted from a log").fill(
        "RuntimeError: CUDA error: an illegal memory access was encountered")
    page.get_by_role("button", name="Search").click()
    first = page.locator("ul.entries li").first
    assert first.get_attribute("data-id") == "cuda-illegal-memory-access"
    shot(page, "kb-search")


def test_filter_then_compare_two_entries(page: Page) -> None:
    page.goto("/kb")
    page.get_by_label("Category").select_option("memory")
    page.get_by_role("button", name="Search").click()
    categories = {li.get_attribute("data-category") for li in page.locator("ul.entries li").all()}
    assert categories == {"memory"}
    page.goto("/kb/compare?ids=cuda-oom,cuda-oom-fragmentation")
    headers = page.locator("table.compare thead th").all_inner_texts()
    assert any("cuda-oom-fragmentation" in h for h in headers) and any(h.endswith("cuda-oom") for h in headers)
    apart = page.locator("tr.apart td").all_inner_texts()
    assert len(apart) == 2 and all(apart)
    shot(page, "compare")


def test_open_a_system_hub(page: Page) -> None:
    page.goto("/systems")
    page.get_by_role("link", name="deepspeed", exact=True).click()
    page.wait_for_url(re.compile(r"/systems/deepspeed$"))
    stages = page.locator("main section h2").all_inner_texts()
    order = ["Setup", "Launch", "Training step", "Checkpoint", "Evaluation", "Serving", "Any phase"]
    assert stages and stages == [s for s in order if s in stages]
    assert page.locator("ul.entries li").count() >= 10
    shot(page, "system-hub")


def test_a_hostile_log_stays_text(page: Page) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    hostile = ("step 1 loss 2.0 <img src=x onerror=alert(2)>\n"
               "torch.OutOfMemoryError: CUDA out of memory. <script>alert(1)</script> Tried to allocate 2.00 GiB\n"
               '"><svg onload=alert(3)>\n')
    page.goto("/")
    paste_and_diagnose(page, hostile)
    evidence = page.locator("ol.evidence").first
    assert "<script>alert(1)</script>" in evidence.inner_text()  # shown as text, around the marked match
    assert evidence.locator("mark").first.inner_text().startswith("torch.OutOfMemoryError")
    assert page.locator("main script, main img, main svg[onload]").count() == 0
    assert dialogs == []
    shot(page, "result-hostile")


def test_the_form_works_without_javascript(browser: Browser, server: LiveServer) -> None:
    context = browser.new_context(base_url=server.url, java_script_enabled=False)
    page = context.new_page()
    page.goto("/")
    paste_and_diagnose(page, "step 3 loss 2.0\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert "cuda-oom" in page.locator("header.verdict").inner_text()
    page.goto("/")
    page.get_by_role("button", name="Diagnose", exact=True).click()  # nothing pasted: the form says so
    assert page.get_by_role("alert").inner_text() == "no input: paste a log or choose log files"
    context.close()


@pytest.fixture(scope="module")
def static_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    out = tmp_path_factory.mktemp("static-site")
    subprocess.run([sys.executable, "-m", "traintriage.cli.entry", "site", "build", str(out)], check=True,
                   capture_output=True)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                "--directory", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=10)


def test_the_static_site_searches_by_an_error_message(browser: Browser, static_site: str) -> None:
    page = browser.new_page()
    page.goto(f"{static_site}/index.html")
    page.get_by_label("Search: words, or an error message pasted from a log").fill(
        "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered")
    page.get_by_role("button", name="Search").click()
    first = page.locator("ul.entries li:not([hidden])").first
    assert first.get_attribute("data-id") == "cuda-illegal-memory-access"
    first.get_by_role("link").first.click()
    assert page.get_by_role("heading", name="Mechanism").is_visible()
    shot(page, "static-entry")
    page.close()


def test_files_past_the_limit_are_refused_before_they_are_sent(page: Page, tmp_path: Path) -> None:
    big = tmp_path / "rank0.log"
    big.write_bytes(b"step 1 loss 2.0\n" * (90 << 10))  # 1.4 MB; this server takes 1 MB
    page.goto("/")
    page.get_by_label("Or choose log files").set_input_files(str(big))
    page.get_by_role("button", name="Diagnose", exact=True).click()
    status = page.get_by_role("status")
    assert "the limit is 1 MB" in status.inner_text()
    assert page.url.endswith("/")


def test_an_unknown_failure_names_the_users_line(page: Page) -> None:
    """A check of the project's own code, which no class explains: the page says it is unknown,
    shows the error line and where the user's code raised it."""
    page.goto("/")
    paste_and_diagnose(page,
        "Traceback (most recent call last):\n"
        '  File "/home/ana/seg/train.py", line 88, in <module>\n'
        "    check_labels(cfg)\n"
        '  File "/home/ana/seg/train.py", line 41, in check_labels\n'
        "    assert top < cfg.classes, f'Mask value {top} exceeds classes={cfg.classes}; relabel the masks'\n"
        "AssertionError: Mask value 9 exceeds classes=4; relabel the masks\n")
    verdict = page.locator("header.verdict")
    assert "unknown failure" in verdict.inner_text().lower()
    assert "train.py:41 in check_labels" in verdict.locator("p.note").inner_text()
    assert "Mask value 9 exceeds classes=4" in page.inner_text("main")
    shot(page, "unknown-failure")


def test_a_log_cut_inside_a_traceback_says_so(page: Page) -> None:
    """One rank's traceback stops before its exception line: the page names that rank, says why no
    line is quoted and offers the classes the last frame suggests."""
    page.goto("/")
    paste_and_diagnose(page,
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/home/ana/train.py", line 88, in main\n'
        "[rank2]:     with accelerator.accumulate(model):\n"
        '[rank2]:   File "/opt/venv/lib/python3.10/site-packages/accelerate/accelerator.py", line 1092, in accumulate\n'
        "[rank2]:     cm_stack.enter_context(self.no_sync(m))\n")
    verdict = page.locator("header.verdict")
    assert "rank 2" in verdict.locator("p.first-failed").inner_text()
    assert "ends inside a traceback" in verdict.inner_text()
    assert page.locator("#salient-title").count() == 0
    shot(page, "unknown-failure-cut")
