"""Follow-up questions on a diagnosis, answered from the KB entries of its root cause and alternatives.

Each answer sentence is a sentence of a KB section and cites it as {entry, section}: the
service never says anything the knowledge base does not. Retrieval is BM25 (bm25s) over
the sentences of those few entries, with a nudge towards the sections a question of that
kind is about ("how do I confirm" -> confirm, verify). With `TRAINTRIAGE_LLM_URL` (an
OpenAI-compatible endpoint) an LLM may rephrase the retrieved sentences; any sentence it
writes without a valid citation is dropped, and any failure falls back to the extract.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import bm25s
from bm25s.stopwords import STOPWORDS_EN_PLUS

from traintriage.kb.loader import load_kb
from traintriage.plain import plain

LLM_URL_ENV = "TRAINTRIAGE_LLM_URL"
LLM_MODEL_ENV = "TRAINTRIAGE_LLM_MODEL"
LLM_KEY_ENV = "TRAINTRIAGE_LLM_API_KEY"
MAX_SENTENCES = 3
MAX_QUESTION = 500
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])")
_WORDS = re.compile(r"[a-z0-9]+")

# Question words -> the sections that usually answer them.
_INTENTS: tuple[tuple[frozenset[str], frozenset[str]], ...] = (
    (frozenset({"confirm", "check", "verify", "prove", "cheap", "cheaply", "test", "sure", "tell"}),
     frozenset({"confirm", "verify"})),
    (frozenset({"fix", "solve", "resolve", "workaround", "deepspeed", "fsdp", "megatron", "vllm", "trainer",
                "lightning", "slurm", "use", "using", "change"}), frozenset({"fix", "prevention"})),
    (frozenset({"why", "cause", "caused", "hardware", "software", "bug", "driver", "mechanism", "happen"}),
     frozenset({"mechanism", "summary"})),
    (frozenset({"inference", "serving", "affect", "affects", "scale", "bigger", "nodes", "impact"}),
     frozenset({"scale", "perspectives", "mechanism"})),
    (frozenset({"prevent", "avoid", "again", "future", "monitor"}), frozenset({"prevention"})),
)
ROOT_BONUS = 0.6
ALTERNATIVE_WEIGHT = 0.8
_STOPWORDS = sorted(set(STOPWORDS_EN_PLUS) | {"use", "using", "happen", "happens"})
WEAK_TAIL = 0.35


class QuestionError(ValueError):
    """A question that cannot be asked (empty or too long)."""


@dataclass(frozen=True)
class Passage:
    entry: str
    section: str
    text: str


def _stem(word: str) -> str:
    """A light suffix stripper: enough for 'affects'/'affect', 'confirming'/'confirm'."""
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _stem_words(words: list[str]) -> list[str]:
    """bm25s.tokenize hands the stemmer the whole vocabulary at once."""
    return [_stem(word) for word in words]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def entry_passages(entry: Mapping[str, Any]) -> list[Passage]:
    """Every sentence of an entry's prose sections, labelled with the section it belongs to."""
    entry_id = str(entry["id"])
    found: list[Passage] = []

    def add(section: str, texts: Iterable[str]) -> None:
        found.extend(Passage(entry_id, section, s) for text in texts if text for s in _sentences(str(text)))

    add("summary", [entry.get("summary") or ""])
    add("mechanism", [entry.get("mechanism") or ""])
    add("symptoms", [f"{s['symptom']} {s['why']}" for s in entry.get("symptoms") or []])
    add("confirm", entry.get("confirm") or [])
    fix = entry.get("fix") or {}
    add("fix", [fix.get("summary") or ""])
    add("fix", [s if isinstance(s, str) else f"{s['step']} {s['because']}" for s in fix.get("steps") or []])
    add("verify", [entry.get("verify") or ""])
    add("prevention", entry.get("prevention") or [])
    add("perspectives", list((entry.get("perspectives") or {}).values()))
    add("scale", [entry.get("scale") or ""])
    return found


def entries_of(document: Mapping[str, Any]) -> list[str]:
    """The diagnosis's root cause and its alternatives (candidates), best first, each once."""
    ids: list[str] = []
    root = document.get("root_cause")
    if isinstance(root, Mapping) and root.get("id"):
        ids.append(str(root["id"]))
    ids += [str(c["id"]) for c in document.get("candidates") or [] if isinstance(c, Mapping) and c.get("id")]
    return list(dict.fromkeys(ids))


def retrieve(question: str, passages: list[Passage], limit: int = MAX_SENTENCES) -> list[Passage]:
    """The passages that best answer the question, best first; none when nothing relates to it.

    BM25 scores the sentences (normalised to the best one). When the question says what kind
    of answer it wants (confirm, fix, why...), the sections of that kind answer it even where
    BM25 finds no shared word; the root cause's entry (the first) outranks the alternatives.
    """
    if not passages:
        return []
    tokens = bm25s.tokenize([p.text for p in passages], stopwords=_STOPWORDS, stemmer=_stem_words,
                            show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    query = bm25s.tokenize(question, stopwords=_STOPWORDS, stemmer=_stem_words, return_ids=False,
                           show_progress=False)[0]
    scores = retriever.get_scores(query) if query else [0.0] * len(passages)
    best = max(float(max(scores)), 1e-9)
    words = set(_WORDS.findall(question.lower()))
    favoured: set[str] = set().union(*(sections for keys, sections in _INTENTS if words & keys))
    root = passages[0].entry
    ranked = []
    for index, passage in enumerate(passages):
        relevance = float(scores[index]) / best
        is_root = passage.entry == root
        if passage.section in favoured:
            relevance = 1.0 + relevance / 2 + (ROOT_BONUS if is_root else 0.0)
        elif relevance < WEAK_TAIL:
            continue
        elif not is_root:
            relevance *= ALTERNATIVE_WEIGHT
        ranked.append((relevance, index))
    ranked.sort(key=lambda pair: (-pair[0], pair[1]))
    return [passages[index] for _, index in ranked[:limit]]


def answer(document: Mapping[str, Any], question: str) -> dict[str, Any]:
    """`{"answer", "sentences": [{"text", "entry", "section"}], "citations": [{"entry", "section"}]}`."""
    question = question.strip()
    if not question:
        raise QuestionError("the question is empty")
    if len(question) > MAX_QUESTION:
        raise QuestionError(f"the question is longer than {MAX_QUESTION} characters")
    kb = load_kb()
    passages: list[Passage] = []
    for entry_id in entries_of(document):
        entry = kb.get(entry_id)
        if entry is not None:
            entry_plain = plain(entry)
            assert isinstance(entry_plain, dict)
            passages += entry_passages(entry_plain)
    chosen = retrieve(question, passages)
    if not chosen:
        return {"answer": "The knowledge base entries of this diagnosis say nothing about that question.",
                "sentences": [], "citations": []}
    sentences = _rephrased(question, chosen) if os.environ.get(LLM_URL_ENV) else None
    if not sentences:
        sentences = [{"text": p.text, "entry": p.entry, "section": p.section} for p in chosen]
    citations = list({(s["entry"], s["section"]): {"entry": s["entry"], "section": s["section"]}
                      for s in sentences}.values())
    return {"answer": " ".join(s["text"] for s in sentences), "sentences": sentences, "citations": citations}


def _rephrased(question: str, chosen: list[Passage]) -> list[dict[str, str]] | None:
    """Ask the configured LLM to phrase an answer from the numbered passages only; None on any failure."""
    import httpx

    numbered = "\n".join(f"[{i}] {p.text}" for i, p in enumerate(chosen, 1))
    prompt = ("Answer the question using only the numbered passages. Write at most three sentences, "
              "one per line, each ending with the passage number it comes from in brackets, like [2]. "
              "Add nothing the passages do not say.\n\n"
              f"Passages:\n{numbered}\n\nQuestion: {question}")
    headers = {"Authorization": f"Bearer {os.environ[LLM_KEY_ENV]}"} if os.environ.get(LLM_KEY_ENV) else {}
    try:
        response = httpx.post(os.environ[LLM_URL_ENV].rstrip("/") + "/chat/completions", headers=headers, timeout=20,
                              json={"model": os.environ.get(LLM_MODEL_ENV, "default"), "temperature": 0,
                                    "messages": [{"role": "user", "content": prompt}]})
        response.raise_for_status()
        content = str(response.json()["choices"][0]["message"]["content"])
    except (httpx.HTTPError, KeyError, IndexError, TypeError, json.JSONDecodeError):
        return None
    sentences = []
    for line in content.splitlines()[:MAX_SENTENCES * 2]:
        cited = re.fullmatch(r"\s*(.{1,600}?)\s*\[(\d{1,2})\]\s*", line)
        if cited and 1 <= int(cited.group(2)) <= len(chosen):
            passage = chosen[int(cited.group(2)) - 1]
            sentences.append({"text": cited.group(1), "entry": passage.entry, "section": passage.section})
    return sentences[:MAX_SENTENCES] or None
