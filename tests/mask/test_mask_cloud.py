"""AWS, GCP and Azure credentials."""

from __future__ import annotations

import pytest

from tests.mask.cases import Case, check_case, check_negative
from tests.mask.fakes import ALNUM, B64, HEX, UPPER, URLSAFE, fake, mask

AKIA = "AKIA" + fake(UPPER + "234567", 16, 21, "FAKE")
ASIA = "ASIA" + fake(UPPER + "234567", 16, 22, "FAKE")
AWS_SECRET = fake(B64, 40, 23, "Fake")
SESSION = "IQoJb3JpZ2luX2Vj" + fake(B64, 300, 24, "FAKE") + "=="
GCP_API = "AIza" + fake(URLSAFE, 35, 25, "FAKE")
YA29 = "ya29.a0" + fake(URLSAFE, 120, 26, "FAKE")
KEY_ID = fake(HEX, 40, 27, "fa4e")
AZURE_KEY = fake(B64, 86, 28, "FAKE") + "=="
SAS_SIG = fake(ALNUM, 20, 29, "FAKE") + "%2B" + fake(ALNUM, 20, 30) + "%3D"
AD_SECRET = "Fk18Q~" + fake(ALNUM + "_~.-", 34, 31, "FAKE")

CASES = [
    Case("aws-access-key-id", f"AWS_ACCESS_KEY_ID={AKIA}", AKIA, "AWS_KEY_ID"),
    Case(
        "aws-access-key-id",
        f"DEBUG botocore.auth: Credential={AKIA}/20240101/us-east-1/s3/aws4_request",
        AKIA,
        "AWS_KEY_ID",
    ),
    Case(
        "aws-access-key-id", f'{{"aws_access_key_id": "{ASIA}", "region": "us-east-1"}}', ASIA, "AWS_KEY_ID"
    ),
    Case("aws-secret-key", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET, "AWS_SECRET_KEY"),
    Case("aws-secret-key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "AWS_SECRET_KEY"),
    Case("aws-secret-key", f"    secret_key: '{AWS_SECRET}'", AWS_SECRET, "AWS_SECRET_KEY"),
    Case(
        "aws-secret-key",
        f"args: Namespace(aws_secret_access_key='{AWS_SECRET}', seed=42)",
        AWS_SECRET,
        "AWS_SECRET_KEY",
    ),
    Case("aws-session-token", f"AWS_SESSION_TOKEN={SESSION}", SESSION, "AWS_SESSION_TOKEN"),
    Case("aws-session-token", f"  aws_session_token = {SESSION}", SESSION, "AWS_SESSION_TOKEN"),
    Case("gcp-api-key", f"GOOGLE_API_KEY={GCP_API}", GCP_API, "GCP_API_KEY"),
    Case("gcp-api-key", f"GET https://maps.googleapis.com/x?key={GCP_API} 403", GCP_API, "GCP_API_KEY"),
    Case(
        "gcp-oauth-token",
        f"+ curl -H 'Authorization: Bearer {YA29}' https://storage.googleapis.com/b",
        YA29,
        "GCP_OAUTH_TOKEN",
    ),
    Case("gcp-private-key-id", f'  "private_key_id": "{KEY_ID}",', KEY_ID, "GCP_KEY_ID"),
    Case(
        "azure-storage-key",
        f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=fakeckpt;AccountKey={AZURE_KEY};"
        "EndpointSuffix=core.windows.net",
        AZURE_KEY,
        "AZURE_KEY",
    ),
    Case(
        "azure-storage-key",
        f'svc = BlobServiceClient.from_connection_string("AccountName=fakedata;AccountKey={AZURE_KEY};")',
        AZURE_KEY,
        "AZURE_KEY",
    ),
    Case(
        "azure-sas-signature",
        "INFO uploading to https://fakeacct.blob.core.windows.net/ckpts/1/model.safetensors?sv=2022-11-02&ss=b"
        f"&srt=o&sp=rwc&se=2024-01-01T00:00:00Z&spr=https&sig={SAS_SIG}",
        SAS_SIG,
        "AZURE_SAS",
    ),
    Case(
        "azure-ad-client-secret", f"client credential {AD_SECRET} rejected", AD_SECRET, "AZURE_CLIENT_SECRET"
    ),
]

NEGATIVES = [
    "s3://fake-bucket/checkpoints/step-1000/model.safetensors uploaded (1.2 GiB)",
    "AWS_DEFAULT_REGION=us-east-1",
    "AWS_PROFILE=training",
    "botocore.exceptions.NoCredentialsError: Unable to locate credentials",
    "AccountName=fakeckpt;EndpointSuffix=core.windows.net",
    "https://fakeacct.blob.core.windows.net/ckpts/1/model.safetensors?sv=2022-11-02&ss=b&srt=o&sp=rwc",
    "google.auth.exceptions.DefaultCredentialsError: Could not automatically determine credentials.",
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_cloud_credentials_are_masked(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("line", NEGATIVES)
def test_cloud_look_alikes_survive(line: str) -> None:
    check_negative(line)


def test_sas_url_keeps_everything_but_the_signature() -> None:
    line = CASES[-2].line
    output = mask(line)
    assert output.startswith(
        "INFO uploading to https://fakeacct.blob.core.windows.net/ckpts/1/model.safetensors?sv="
    )
    assert output.endswith("&sig=<AZURE_SAS-1>")


def test_service_account_file_printed_as_json() -> None:
    body = "\\n".join(fake(B64, 64, 40 + i, "FAKE" if i == 0 else "") for i in range(25))
    lines = [
        "{",
        '  "type": "service_account",',
        '  "project_id": "fake-project-123456",',
        f'  "private_key_id": "{KEY_ID}",',
        f'  "private_key": "-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n",',
        '  "client_email": "trainer@fake-project-123456.iam.gserviceaccount.com",',
        "}",
    ]
    output = mask("\n".join(lines))
    for piece in body.split("\\n"):
        assert piece[:8] not in output
    assert KEY_ID not in output
    assert "-----BEGIN PRIVATE KEY-----" in output and "-----END PRIVATE KEY-----" in output
    assert '"project_id": "fake-project-123456"' in output
    assert output.count("\n") == len(lines) - 1
