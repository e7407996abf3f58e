"""The HTTP API of a running `traintriage serve`: the CLI's contract, problem details, and
that a raw upload never reaches the disk."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import jsonschema
import pytest
import zstandard

from tests.web.live import LiveServer, live_server
from traintriage.report.model import diagnosis_json_schema

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("web-api")]
SAMPLE = Path(__file__).resolve().parents[2] / "src/traintriage/data/sample/job-4412.log"
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("web-api"), TRAINTRIAGE_MAX_UPLOAD_MB="4") as running:
        yield running


@pytest.fixture(scope="module")
def api(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def cli_json(*paths: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "traintriage.cli.entry", "diagnose", "--format", "json",
                           *map(str, paths)], capture_output=True, check=False)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def contract(document: dict[str, object]) -> dict[str, object]:
    """The OUTPUT.md part of an answer, without what varies from run to run."""
    return {k: v for k, v in document.items() if k not in ("id", "url", "stats")}


def test_plain_text_post_answers_what_the_cli_answers(api: httpx.Client) -> None:
    answer = api.post("/api/v1/diagnoses", content=SAMPLE.read_bytes(), headers={"content-type": "text/plain"})
    assert answer.status_code == 201
    body = answer.json()
    jsonschema.validate(contract(body) | {"stats": body["stats"]}, diagnosis_json_schema())
    components = json.loads(json.dumps(api.get("/openapi.json").json()["components"]["schemas"])
                            .replace('"#/components/schemas/', '"#/$defs/'))
    jsonschema.validate(body, {"$defs": components, "$ref": "#/$defs/DiagnosisWithLink"})  # as published
    expected = cli_json(SAMPLE)
    for key in ("status", "initiating_rank", "ranks", "candidates", "collateral", "anomalies", "fix", "verify"):
        assert body[key] == expected[key], key
    root, cli_root = body["root_cause"], expected["root_cause"]
    assert isinstance(cli_root, dict)
    assert {k: v for k, v in root.items() if k != "evidence"} == {k: v for k, v in cli_root.items() if k != "evidence"}
    assert [(e["line"], e["rank"], e["text"]) for e in root["evidence"]] == \
        [(e["line"], e["rank"], e["text"]) for e in cli_root["evidence"]]
    assert answer.headers["location"] == body["url"]
    assert body["url"].endswith(f"/d/{body['id']}")
    again = api.get(f"/api/v1/diagnoses/{body['id']}")
    assert again.status_code == 200 and again.json() == body


def test_multipart_files_keep_their_names_and_may_be_compressed(api: httpx.Client) -> None:
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    files = [("file", ("rank0.log.gz", gzip.compress(b"".join(lines[:half])))),
             ("file", ("rank1.log.zst", zstandard.ZstdCompressor().compress(b"".join(lines[half:]))))]
    answer = api.post("/api/v1/diagnoses", files=files)
    assert answer.status_code == 201, answer.text
    sources = {e["source"] for e in answer.json()["root_cause"]["evidence"]} | \
        {t["source"] for t in answer.json()["timeline"]}
    assert sources <= {"rank0.log.gz", "rank1.log.gz", "rank0.log.zst", "rank1.log.zst"}
    assert answer.json()["stats"]["sources"] == 2


def test_json_body(api: httpx.Client) -> None:
    log = "step 10 loss 2.1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    answer = api.post("/api/v1/diagnoses", json={"log": log})
    assert answer.status_code == 201
    assert answer.json()["root_cause"]["id"] == "cuda-oom"


@pytest.mark.parametrize(("kwargs", "status", "detail"), [
    ({"content": b"", "headers": {"content-type": "text/plain"}}, 422, "no input"),
    ({"json": {"text": "x"}}, 422, '{"log": "..."}'),
    ({"content": b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 64, "headers": {"content-type": "text/plain"}},
     415, "looks like a binary file, not a text log"),
    ({"files": [("file", ("job.log.gz", b"\x1f\x8b\x08\x00not gzip at all"))]}, 422, "cannot decompress"),
    ({"content": b"x", "headers": {"content-type": "image/png"}}, 415, "unsupported content type"),
    ({"content": b"a" * (5 << 20), "headers": {"content-type": "text/plain"}}, 413, "larger than 4 MB"),
    ({"files": [("file", ("big.log.gz", gzip.compress(b"step 1 loss 2\n" * (20 << 20))))]}, 413, "once decompressed"),
])
def test_errors_are_problem_details_with_one_line_messages(api: httpx.Client, kwargs: dict[str, object],
                                                           status: int, detail: str) -> None:
    answer = api.post("/api/v1/diagnoses", **kwargs)  # type: ignore[arg-type]
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith(PROBLEM)
    problem = answer.json()
    assert problem["status"] == status and detail in problem["detail"]
    assert "\n" not in problem["detail"] and "Traceback" not in answer.text


def test_a_body_past_the_limit_is_refused_while_it_streams(api: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(64):  # 8 MB with no Content-Length: counted as it arrives
            yield b"b" * (128 << 10)

    answer = api.post("/api/v1/diagnoses", content=chunks(), headers={"content-type": "text/plain"})
    assert answer.status_code == 413


def test_kb_endpoints(api: httpx.Client) -> None:
    found = api.get("/api/v1/kb", params={"q": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"})
    assert found.json()[0]["id"] == "cuda-oom"
    deepspeed = api.get("/api/v1/kb", params={"system": "deepspeed", "severity": "high"}).json()
    assert deepspeed and all(e["severity"] == "high" and "deepspeed" in e["systems"] for e in deepspeed)
    entry = api.get("/api/v1/kb/cuda-oom").json()
    assert entry["id"] == "cuda-oom" and entry["fix"]["code"] and entry["perspectives"]["oncall"]
    missing = api.get("/api/v1/kb/no-such-entry")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith(PROBLEM)
    assert api.get("/api/v1/diagnoses/nope").status_code == 404


def test_openapi_docs_and_health(api: httpx.Client) -> None:
    schema = api.get("/openapi.json").json()
    assert {"/api/v1/diagnoses", "/api/v1/diagnoses/{diagnosis_id}", "/api/v1/kb", "/api/v1/kb/{entry_id}",
            "/healthz"} <= set(schema["paths"])
    body = schema["paths"]["/api/v1/diagnoses"]["post"]["requestBody"]["content"]
    assert {"multipart/form-data", "application/json", "text/plain"} <= set(body)
    docs = api.get("/docs", headers={"accept": "text/html"})
    assert docs.status_code == 200 and "/api/v1/diagnoses" in docs.text and "<script>" not in docs.text
    assert api.get("/healthz").json() == {"status": "ok", "database": True}


def test_pages_carry_a_strict_csp_and_forms_need_the_csrf_token(api: httpx.Client) -> None:
    page = api.get("/", headers={"accept": "text/html"})
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    forged = httpx.post(f"{api.base_url}/diagnose", files={"log": (None, "x")}, headers={"accept": "text/html"})
    assert forged.status_code == 403
    assert "Traceback" not in forged.text


def _containing(roots: list[Path], needle: bytes, since: float, *, deep: bool = True) -> list[Path]:
    """Files in `roots` (and below, when deep) changed since `since` whose bytes contain `needle`."""
    hits = []
    for root in roots:
        for path in (root.rglob("*") if deep else root.glob("*")) if root.is_dir() else []:
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_mtime >= since - 1 \
                        and path.stat().st_size < (64 << 20) and needle in path.read_bytes():
                    hits.append(path)
            except OSError:
                continue
    return hits


def test_a_raw_upload_never_reaches_the_disk(tmp_path: Path) -> None:
    """A unique line the diagnosis does not cite is nowhere on disk afterwards, and the line
    it does cite is stored masked (its e-mail address and token replaced)."""
    with live_server(tmp_path) as server, httpx.Client(base_url=server.url, timeout=60) as api:
        _upload_and_search(server, api)


def _upload_and_search(server: LiveServer, api: httpx.Client) -> None:
    started = time.time()
    token = f"planted-{uuid.uuid4().hex}"
    email = f"{uuid.uuid4().hex[:12]}@example.org"
    secret = "hf_" + uuid.uuid4().hex + "AbCdEf"
    filler = b"".join(f"step {n} loss {2.0 - n / 100:.3f}\n".encode() for n in range(60))
    log = (f"config note {token} (never cited)\n".encode() + filler
           + f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB user={email} token={secret}\n"
           .encode())
    padding = b"".join(f"dataloader batch {n} ok\n".encode() for n in range(40_000))  # past 1 MB: Starlette would spool
    answer = api.post("/api/v1/diagnoses", files=[("file", ("rank0.log", log + padding))])
    assert answer.status_code == 201
    body = answer.json()
    cited = body["root_cause"]["evidence"][0]["text"]
    assert "CUDA out of memory" in cited and email not in cited and secret not in cited
    page = api.get(f"/d/{body['id']}", headers={"accept": "text/html"}).text
    assert "CUDA out of memory" in page and token not in page
    server.process.terminate()  # a stopped server has flushed everything it would write
    server.process.wait(timeout=10)
    stored = server.database.read_bytes()
    assert b"CUDA out of memory. Tried to allocate 2.00 GiB" in stored  # the masked excerpt is kept
    system_temp = [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")]  # in case TMPDIR were ignored
    for needle in (token.encode(), email.encode(), secret.encode()):
        assert _containing([server.database.parent, server.tmpdir], needle, started) == []
        assert _containing(system_temp, needle, started, deep=False) == []
