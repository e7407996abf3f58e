"""Follow-up answers: every sentence comes from, and cites, a section of the diagnosis's own entries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any

import pytest

from traintriage.kb.loader import load_kb
from traintriage.plain import plain
from traintriage.service.followup import QuestionError, answer, entry_passages

QUESTIONS = ["is this hardware or software?", "does it affect inference?", "how do I confirm it cheaply?",
             "what if I use DeepSpeed?"]


def _document(*ids: str) -> dict[str, Any]:
    return {"status": "failure", "root_cause": {"id": ids[0]},
            "candidates": [{"id": i, "confidence": 0.5} for i in ids]}


def _section_texts(entry_id: str) -> dict[str, str]:
    """Each section's whole text, whitespace collapsed, to check a cited sentence really is there."""
    entry = plain(load_kb().get(entry_id))
    assert isinstance(entry, dict)
    texts: dict[str, str] = {}
    for passage in entry_passages(entry):
        texts[passage.section] = texts.get(passage.section, "") + " " + passage.text
    return texts


@pytest.mark.parametrize("ids", [("cuda-oom", "cuda-oom-fragmentation"), ("nccl-watchdog-timeout",),
                                 ("loss-nan", "cuda-oom")])
@pytest.mark.parametrize("question", QUESTIONS)
def test_every_sentence_cites_a_section_of_the_diagnosis_that_contains_it(ids: tuple[str, ...], question: str) -> None:
    if any(load_kb().get(i) is None for i in ids):
        pytest.skip(f"KB has no entry among {ids}")
    result = answer(_document(*ids), question)
    assert result["sentences"], "a question of a known kind gets an answer"
    for sentence in result["sentences"]:
        assert sentence["entry"] in ids
        assert sentence["text"] in _section_texts(sentence["entry"])[sentence["section"]]
        assert {"entry": sentence["entry"], "section": sentence["section"]} in result["citations"]
    assert result["answer"] == " ".join(s["text"] for s in result["sentences"])


def test_a_confirm_question_is_answered_from_the_root_causes_confirm_section_first() -> None:
    result = answer(_document("cuda-oom", "cuda-oom-fragmentation"), "How do I confirm it cheaply?")
    assert result["citations"][0] == {"entry": "cuda-oom", "section": "confirm"}
    assert {c["section"] for c in result["citations"]} <= {"confirm", "verify"}


def test_a_stack_question_finds_the_fix_that_names_the_stack() -> None:
    result = answer(_document("cuda-oom"), "what if I use DeepSpeed?")
    assert result["sentences"][0]["section"] == "fix"
    assert "DeepSpeed" in result["sentences"][0]["text"]


def test_an_unrelated_question_gets_no_made_up_answer() -> None:
    result = answer(_document("cuda-oom"), "what is the weather in Paris?")
    assert result["citations"] == [] and "say nothing" in result["answer"]
    with pytest.raises(QuestionError):
        answer(_document("cuda-oom"), "   ")


@contextmanager
def _fake_llm(reply: str | None) -> Iterator[str]:
    """An OpenAI-compatible /chat/completions on 127.0.0.1 answering `reply` (or HTTP 500)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
            self.send_response(200 if reply is not None else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_an_llm_may_only_rephrase_cited_passages(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = "Check the numbers in the OOM message first. [1]\nIt is caused by cosmic rays.\nAlso see [9]"
    with _fake_llm(reply) as url:
        monkeypatch.setenv("TRAINTRIAGE_LLM_URL", url)
        plain_answer = answer(_document("cuda-oom"), "how do I confirm it?")
        monkeypatch.delenv("TRAINTRIAGE_LLM_URL")
        extract = answer(_document("cuda-oom"), "how do I confirm it?")
    assert plain_answer["answer"] == "Check the numbers in the OOM message first."
    assert plain_answer["citations"] == [extract["citations"][0]]
    with _fake_llm(None) as url:
        monkeypatch.setenv("TRAINTRIAGE_LLM_URL", url)
        assert answer(_document("cuda-oom"), "how do I confirm it?") == extract
