"""`traintriage site build`: every page of the encyclopedia, linked relatively, nothing dangling."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

LINK = re.compile(r'(?:href|src|data-index)="([^"]*)"')


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "out"
    done = subprocess.run([sys.executable, "-m", "traintriage.cli.entry", "site", "build", str(out)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("traintriage: wrote ")
    return out


def test_every_entry_and_system_has_a_page(site: Path) -> None:
    index = json.loads((site / "search-index.json").read_text())
    assert len(index) > 100  # the whole KB (compared with load_kb() it would race with KB edits mid-suite)
    assert {p.stem for p in (site / "kb").glob("*.html")} == {row["id"] for row in index}
    systems = {system for row in index for system in row["systems"]}
    assert {p.stem for p in (site / "systems").glob("*.html")} == systems | {"index"}


def test_every_link_is_relative_and_resolves(site: Path) -> None:
    pages = list(site.rglob("*.html"))
    assert len(pages) > 200
    for page in pages:
        for target in LINK.findall(page.read_text()):
            parts = urlsplit(target)
            if parts.scheme == "https" or target.startswith("#"):
                continue
            assert not target.startswith("/"), (page, target)
            assert (page.parent / unquote(parts.path)).resolve().is_file(), (page, target)


def test_pages_are_the_servers_templates_without_the_server(site: Path) -> None:
    entry = (site / "kb" / "cuda-oom.html").read_text()
    assert "<h2>Mechanism</h2>" in entry and 'href="../static/style.css"' in entry
    assert 'action="/diagnose"' not in (site / "index.html").read_text()
