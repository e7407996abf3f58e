"""The team pages in a real browser (Debian's Chromium through Playwright) against a running server:
the quota page, asking for a code, signing in with it, asking a question, history, alert rules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.test_web_browser import browser as browser  # noqa: F401 (module-scoped Chromium)
from tests.e2e.test_web_browser import shot
from tests.service.receivers import http_receiver
from tests.service.server import sqlite_team_server
from tests.service.test_team_server import OOM_LOG
from traintriage.service import identity
from traintriage.service.store import Store

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("web-browser")]


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Store]]:
    with sqlite_team_server(tmp_path, TRAINTRIAGE_ANONYMOUS_DAILY_LIMIT="1") as running:
        yield running


@pytest.fixture
def page(browser: Browser, site: tuple[str, Store]) -> Iterator[Page]:  # noqa: F811
    context = browser.new_context(base_url=site[0], viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    yield opened
    context.close()


def _paste(page: Page) -> None:
    page.goto("/")
    page.get_by_label("Paste a log").fill(OOM_LOG)
    page.get_by_role("button", name="Diagnose", exact=True).click()


def test_from_quota_page_to_code_to_history_questions_and_alerts(page: Page, site: tuple[str, Store]) -> None:
    url, store = site
    _paste(page)
    page.wait_for_url(re.compile(r"/d/[\w-]+$"))
    _paste(page)  # the anonymous allowance (1 here) is used up: the form's script shows why
    page.locator("#upload-status.error").wait_for()
    assert "resets at" in page.locator("#upload-status").inner_text()
    assert "/evaluation-code" in page.locator("#upload-status").inner_text()
    without_script = page.context.browser.new_context(base_url=url, java_script_enabled=False)  # type: ignore[union-attr]
    plain = without_script.new_page()
    _paste(plain)
    assert plain.get_by_role("heading", name="Today's allowance is used up").is_visible()
    assert "resets at" in plain.get_by_role("alert").inner_text()
    shot(plain, "team-quota")
    plain.get_by_role("link", name="ask for one").click()
    plain.get_by_label("Organisation").fill("Example Labs")
    plain.get_by_label("Contact e-mail").fill("ops@example.org")
    plain.get_by_role("button", name="Ask for a code").click()
    assert "received" in plain.locator("#code-requested").inner_text()
    without_script.close()
    [request] = identity.list_codes(store)
    token = identity.approve_code(store, request.id).token

    page.goto("/sign-in")
    page.get_by_label("Key or code").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/account$"))
    assert "Example Labs" in page.locator("#account").inner_text()
    assert page.locator("#remaining").inner_text() == "50"
    cookie = next(c for c in page.context.cookies() if c["name"] == "traintriage_session")
    assert cookie["httpOnly"] and token not in cookie["value"]
    shot(page, "team-account")

    _paste(page)  # a code holder: stored in its history
    page.wait_for_url(re.compile(r"/d/[\w-]+$"))
    page.get_by_label("Ask a follow-up question").fill("How do I confirm it cheaply?")
    page.get_by_role("button", name="Ask", exact=True).click()
    first_citation = page.locator("#answer li a.badge").first
    assert first_citation.inner_text() == "cuda-oom · confirm"
    assert first_citation.get_attribute("href") == "/kb/cuda-oom#confirm"  # every cited section has an anchor
    shot(page, "team-answer")

    page.goto("/history?q=tried+to+allocate")
    assert page.locator("#history tbody tr").count() == 1
    shot(page, "team-history")
    page.get_by_role("button", name=re.compile("^Delete the diagnosis")).click()
    assert page.locator("#history-empty").is_visible()

    with http_receiver() as (hook, received):
        page.goto("/alerts")
        page.get_by_label("Name").fill("OOM on the big cluster")
        page.get_by_label("Value").fill("cuda-oom")
        page.get_by_label("Webhook URL or e-mail address").fill(hook)
        page.get_by_role("button", name="Create rule").click()
        assert len(page.locator("#signing-secret").inner_text()) == 64
        page.get_by_role("link", name="OOM on the big cluster").click()
        page.get_by_role("button", name="Send test").click()
        assert "delivered (HTTP 200)" in page.locator("#deliveries").inner_text()
        shot(page, "team-alert-rule")
    assert len(received.requests) == 1
