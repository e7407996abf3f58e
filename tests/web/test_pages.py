"""Pages in process: forms (CSRF, post/redirect/get, errors on the form), escaping, downloads."""

from __future__ import annotations

import json
import re
import tempfile
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette import formparsers

from tests.web.conftest import SAMPLE, csrf
from traintriage.pipeline import diagnose
from traintriage.report.render import render_markdown


def post_form(client: TestClient, path: str, **fields: Any) -> Any:
    return client.post(path, files={name: (None, value) for name, value in fields.items()}, follow_redirects=False)


def test_a_form_without_its_token_is_refused(client: TestClient) -> None:
    csrf(client)
    answer = post_form(client, "/diagnose", log="torch.OutOfMemoryError: CUDA out of memory.", csrf="forged" * 8)
    assert answer.status_code == 403 and "Traceback" not in answer.text


def test_an_empty_form_shows_the_form_again_with_one_line(client: TestClient) -> None:
    answer = post_form(client, "/diagnose", log="   \n", csrf=csrf(client))
    assert answer.status_code == 422
    message = re.search(r'id="form-error">([^<]*)<', answer.text)
    assert message and message.group(1) == "no input: paste a log or choose log files"


def test_post_redirect_get_and_downloads_match_the_cli(client: TestClient) -> None:
    answer = post_form(client, "/diagnose", log=SAMPLE.read_bytes(), csrf=csrf(client))
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert re.fullmatch(r"/d/[\w-]+", location)
    page = client.get(location)
    cli = diagnose([str(SAMPLE)])
    assert cli.root_cause is not None and cli.root_cause.title in page.text
    document = json.loads(client.get(f"{location}/diagnosis.json").text)
    assert document["root_cause"]["id"] == cli.root_cause.id
    assert document["initiating_rank"] == cli.initiating_rank and "views" not in document
    markdown = client.get(f"{location}/diagnosis.md").text
    expected = render_markdown(cli).replace(str(SAMPLE), "pasted.log")
    assert markdown.splitlines()[:3] == expected.splitlines()[:3]


def test_uploads_are_never_spooled_to_a_temporary_file(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Starlette spools file parts past 1 MB to a temporary file; ours stay in memory."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a temporary file was opened for an upload")

    for name in ("SpooledTemporaryFile", "TemporaryFile", "NamedTemporaryFile", "mkstemp"):
        monkeypatch.setattr(tempfile, name, refuse)
    monkeypatch.setattr(formparsers, "SpooledTemporaryFile", refuse)  # bound at Starlette's import
    big = SAMPLE.read_bytes() + b"".join(b"step %d ok\n" % n for n in range(300_000))
    answer = client.post("/api/v1/diagnoses", files=[("file", ("rank0.log", big))])
    assert answer.status_code == 201, answer.text
    assert answer.json()["stats"]["bytes"] == len(big)


def test_a_hostile_line_is_escaped(client: TestClient) -> None:
    hostile = "torch.OutOfMemoryError: CUDA out of memory. <script>alert(1)</script> Tried to allocate 2.00 GiB\n"
    location = post_form(client, "/diagnose", log=hostile, csrf=csrf(client)).headers["location"]
    html = client.get(location).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html


@pytest.mark.parametrize(("path", "status", "text"), [
    ("/kb/compare?ids=cuda-oom", 422, "compare two or three entries"),
    ("/kb/compare?ids=cuda-oom,nope", 404, "no entry &#39;nope&#39;"),
    ("/kb/nope", 404, "no entry &#39;nope&#39;"),
    ("/systems/nope", 404, "no entry names the system"),
    ("/d/nope", 404, "no such result"),
])
def test_errors_are_pages_with_one_line(client: TestClient, path: str, status: int, text: str) -> None:
    answer = client.get(path)
    assert answer.status_code == status and text in answer.text and "Traceback" not in answer.text


def test_a_form_past_the_size_limit_says_so_on_the_form(client: TestClient) -> None:
    big = b"step 1 ok\n" * (900 << 10)  # 9 MB, the test app takes 8
    answer = post_form(client, "/diagnose", log=big, csrf=csrf(client))
    assert answer.status_code == 413
    assert "upload larger than 8 MB; run &#39;traintriage diagnose&#39; on your machine" in answer.text


@pytest.mark.parametrize(("log", "heading", "shown"), [
    ("step 1 loss 2.0\nstep 2 loss 1.9\ntraining done\n", "Nothing in this log says the run failed", None),
    ('step 1 loss 2.0\nTraceback (most recent call last):\n  File "train.py", line 3, in <module>\n    main()\n'
     '  File "/usr/lib/python3/site-packages/flux/capacitor.py", line 88, in align\n    raise ZorgError(msg)\n'
     "ZorgError: the flux capacitor is misaligned\n", "no known failure class explains it",
     "ZorgError: the flux capacitor is misaligned"),
])
def test_runs_without_a_known_root_cause_say_so(client: TestClient, log: str, heading: str, shown: str | None) -> None:
    location = post_form(client, "/diagnose", log=log, csrf=csrf(client)).headers["location"]
    html = client.get(location).text
    assert heading in html and "Root cause" not in html
    if shown:
        assert shown in html


def test_compare_three_entries(client: TestClient) -> None:
    html = client.get("/kb/compare?ids=cuda-oom,cuda-oom-fragmentation,host-oom-killed").text
    assert html.count('<th scope="col"><a href="/kb/') == 3
