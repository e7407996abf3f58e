"""JWTs, Authorization headers, credentials in URLs, secret query parameters, CLI passwords."""

from __future__ import annotations

import base64
import json

import pytest

from tests.mask.cases import Case, check_case, check_negative
from tests.mask.fakes import ALNUM, URLSAFE, fake, mask, password


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


JWT = ".".join(
    [
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "fake-user", "iat": 1700000000}),
        fake(URLSAFE, 43, 71),
    ]
)
BEARER = fake(URLSAFE, 48, 72, "FAKE")
BASIC = base64.b64encode(b"trainer:" + password(73).encode()).decode()
URL_PW = password(74)
PARAM = fake(ALNUM, 32, 75, "FAKE")
NETRC_PW = password(76)

CASES = [
    Case("jwt", f"WARNING auth - token expired, refreshing: {JWT}", JWT, "JWT"),
    Case("jwt", f"open https://mlflow.example.internal/d/1?jwt={JWT}", JWT, "JWT"),
    Case(
        "authorization-header",
        f"+ curl -sSf -H 'Authorization: Bearer {BEARER}' https://api.example.internal/x",
        BEARER,
        "AUTH",
    ),
    Case(
        "authorization-header",
        f"send: b'GET /api HTTP/1.1\\r\\nHost: x.internal\\r\\nAuthorization: Basic {BASIC}\\r\\nAccept: */*\\r\\n'",
        BASIC,
        "AUTH",
    ),
    Case(
        "authorization-header",
        f"request headers={{'Authorization': 'token {BEARER}', 'User-Agent': 'x'}}",
        BEARER,
        "AUTH",
    ),
    Case("authorization-header", f"PRIVATE-TOKEN: {BEARER}", BEARER, "AUTH"),
    Case(
        "url-credentials",
        f"  url: postgresql+psycopg2://optuna:{URL_PW}@db.example.internal:5432/optuna",
        URL_PW,
        "URL_PASSWORD",
    ),
    Case(
        "url-credentials",
        f"redis.exceptions.ConnectionError: Error 111 (url=redis://:{URL_PW}@cache:6379/0)",
        URL_PW,
        "URL_PASSWORD",
    ),
    Case(
        "url-credentials",
        f"connecting to mongodb+srv://evals:{URL_PW}@cluster0.fake.mongodb.net/db",
        URL_PW,
        "URL_PASSWORD",
    ),
    Case(
        "url-credentials",
        f"MLFLOW_TRACKING_URI=https://mlflow:{URL_PW}@mlflow.example.internal",
        URL_PW,
        "URL_PASSWORD",
    ),
    Case("url-credentials", f"https://{PARAM}@artifacts.example.internal/x", PARAM, "URL_PASSWORD"),
    Case(
        "url-secret-parameter",
        f"pushing to https://x.internal/api/v1/push?api_key={PARAM}&run=12",
        PARAM,
        "API_KEY",
    ),
    Case(
        "url-secret-parameter",
        f"Max retries exceeded with url: /api/v1/metrics?token={PARAM} (Caused by x)",
        PARAM,
        "TOKEN",
    ),
    Case(
        "command-line-password",
        f"machine mlflow.example.internal login trainer password {NETRC_PW}",
        NETRC_PW,
        "PASSWORD",
    ),
    Case("command-line-password", f"  password {NETRC_PW}", NETRC_PW, "PASSWORD"),
    Case(
        "command-line-password",
        f"+ docker login -u trainer -p {NETRC_PW} registry.example.internal",
        NETRC_PW,
        "PASSWORD",
    ),
    Case("command-line-password", f"+ curl -u trainer:{NETRC_PW} https://x.internal", NETRC_PW, "PASSWORD"),
    Case("command-line-password", f"+ sshpass -p '{NETRC_PW}' ssh node01", NETRC_PW, "PASSWORD"),
]

NEGATIVES = [
    "https://github.com/pytorch/pytorch/issues/12345",
    "http://localhost:8080/metrics?step=100&epoch=2",
    "Running on local URL:  http://0.0.0.0:7860",
    "Authorization: required",
    "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='huggingface.co', port=443)",
    "tokenizer_config.json: 100%|██████████| 2.54k/2.54k [00:00<00:00, 12.3MB/s]",
    "Enter your password below",
    "+ mkdir -p /workspace/checkpoints",
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_web_credentials_are_masked(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("line", NEGATIVES)
def test_web_look_alikes_survive(line: str) -> None:
    check_negative(line)


def test_url_keeps_scheme_user_host_and_port() -> None:
    output = mask(f"url: postgresql://optuna:{URL_PW}@10.52.1.33:5432/optuna")
    assert output == "url: postgresql://optuna:<URL_PASSWORD-1>@<IP-1>:5432/optuna"


def test_query_keeps_other_parameters() -> None:
    output = mask(CASES[11].line)
    assert output.endswith("?api_key=<API_KEY-1>&run=12")
