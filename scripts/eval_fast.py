"""`make eval-fast`: the corpora of `make eval`, diagnosed in-process instead of one CLI run per case.

Same diagnosis (the Python API and the JSON renderer the CLI prints) and the same verdicts: each case
is judged by `../shared/corpus/eval.py`'s own `judge`. About a hundred times faster than `make eval`,
which is what makes it usable while tuning; `make eval` stays the reference. Writes one JSON row per
case (corpus, id, labels, verdicts, status, root, candidates, ranks) so two runs can be compared.

usage: eval_fast.py OUT.jsonl CORPUS_DIR...
"""

from __future__ import annotations

import json
import multiprocessing
import sys
from collections import Counter
from pathlib import Path

EVAL_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def _judge():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(EVAL_DIR))
    from eval import judge  # type: ignore[import-not-found]

    return judge


def run_case(work: tuple[str, dict]) -> dict:  # type: ignore[type-arg]
    corpus, case = work
    from traintriage.pipeline import diagnose
    from traintriage.report.render import render_json

    try:
        out = json.loads(render_json(diagnose([str(Path(corpus) / case["file"])], jobs=1)))
    except Exception as error:  # noqa: BLE001 - a crash is a verdict like any other, as in eval.py
        out = {"_error": repr(error)[:200]}
    top1, top3, _ = _judge()(case, out)
    root = out.get("root_cause") or {}
    return {"corpus": Path(corpus).name, "id": case["id"], "labels": case["labels"], "top1": top1, "top3": top3,
            "status": out.get("status"), "root": root.get("id"), "confidence": root.get("confidence"),
            "candidates": [c.get("id") for c in (out.get("candidates") or [])[:3]],
            "rank": out.get("initiating_rank"), "want_rank": case.get("initiating_rank"), "error": out.get("_error")}


def main() -> None:
    out_path, corpora = Path(sys.argv[1]), sys.argv[2:]
    work = [(corpus, json.loads(line)) for corpus in corpora
            for line in (Path(corpus) / "cases.jsonl").read_text().splitlines() if line.strip()]
    with multiprocessing.Pool(2) as pool, out_path.open("w") as out:
        rows = list(pool.imap(run_case, work, chunksize=4))
        out.writelines(json.dumps(row) + "\n" for row in rows)
    by_corpus: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for row in rows:
        by_corpus.setdefault(row["corpus"], []).append(row)
    for name, group in by_corpus.items():
        ranked = [r for r in group if r["want_rank"] is not None]
        print(f"{name}: n={len(group)} top1={sum(r['top1'] for r in group) / len(group):.3f} "
              f"top3={sum(r['top3'] for r in group) / len(group):.3f}"
              + (f" rank={sum(r['rank'] == r['want_rank'] for r in ranked)}/{len(ranked)}" if ranked else ""))
    errors = Counter(bool(r["error"]) for r in rows)[True]
    print(f"cases {len(rows)}: top1 {sum(r['top1'] for r in rows) / len(rows):.3f}, "
          f"top3 {sum(r['top3'] for r in rows) / len(rows):.3f}, tool errors {errors}")


if __name__ == "__main__":
    main()
