"""Keyed secrets (password=, token:, secret=, api_key=) in env dumps, CLI args, JSON and YAML."""

from __future__ import annotations

import pytest

from tests.mask.cases import Case, check_case, check_negative
from tests.mask.fakes import ALNUM, fake, mask, password

PW = password(81)
TOKEN = fake(ALNUM, 36, 82, "FAKE")
SECRET = fake(ALNUM + "-_", 34, 83, "FAKE")
API_KEY = fake("0123456789abcdef", 32, 84, "fa4e")

CASES = [
    Case("keyed-secret", f"PGPASSWORD={PW}", PW, "PASSWORD"),
    Case("keyed-secret", f"MLFLOW_TRACKING_PASSWORD={PW}", PW, "PASSWORD"),
    Case("keyed-secret", f"+ export 'DB_PASSWORD={PW}'", PW, "PASSWORD"),
    Case(
        "keyed-secret",
        f"environ({{'SHELL': '/bin/bash', 'PGPASSWORD': '{PW}', 'HOME': '/root'}})",
        PW,
        "PASSWORD",
    ),
    Case("keyed-secret", f"args: Namespace(seed=0, db_password='{PW}', lr=3e-4)", PW, "PASSWORD"),
    Case("keyed-secret", f'        "password": "{PW}"', PW, "PASSWORD"),
    Case("keyed-secret", f'  password: "{PW}"', PW, "PASSWORD"),
    Case("keyed-secret", f'{{\\"password\\": \\"{PW}\\"}}', PW, "PASSWORD"),
    Case("keyed-secret", f"AUTH_TOKEN={TOKEN}", TOKEN, "TOKEN"),
    Case("keyed-secret", f"  token: {TOKEN}", TOKEN, "TOKEN"),
    Case("keyed-secret", f"SECRET_KEY={SECRET}", SECRET, "SECRET"),
    Case("keyed-secret", f'    "client_secret": "{SECRET}"', SECRET, "CLIENT_SECRET"),
    Case("keyed-secret", f"  secret: '{SECRET}'", SECRET, "SECRET"),
    Case("keyed-secret", f"API_KEY={API_KEY}", API_KEY, "API_KEY"),
    Case("keyed-secret", f"args: Namespace(api_key='{API_KEY}', local_rank=0)", API_KEY, "API_KEY"),
    Case(
        "keyed-secret", f'{{"auths": {{"registry.example.internal": {{"auth": "{TOKEN}"}}}}}}', TOKEN, "AUTH"
    ),
    Case("keyed-secret", f"my_token := {TOKEN}", TOKEN, "TOKEN"),
    Case("keyed-secret", f"AZURE_STORAGE_KEY={TOKEN}==", TOKEN, "AZURE_KEY"),
    Case("keyed-secret-flag", f"+ python train.py --db-password '{PW}' --lr 3e-4", PW, "PASSWORD"),
    Case("keyed-secret-flag", f"+ torchrun train.py --api-token {TOKEN} --wandb_project x", TOKEN, "TOKEN"),
    Case("keyed-secret-flag", f"+ python eval.py --secret={SECRET}", SECRET, "SECRET"),
]

NEGATIVES = [
    "args: Namespace(pad_token_id=2, max_seq_length=1024, local_rank=1)",
    "  eos_token: </s>",
    '  pad_token: "<pad>"',
    "  max_new_tokens: 1024",
    "  bos_token: <s>",
    '  mask_token: "[MASK]"',
    "use_auth_token=True",
    "TrainingArguments(hub_token=<HUB_TOKEN>, push_to_hub_token=None, hub_strategy=every_save)",
    "  token: ${HF_TOKEN}",
    '  password: "********"',
    "model.config.pad_token = tokenizer.eos_token",
    "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/sa.json",
    "usage: train.py [-h] [--hub_token HUB_TOKEN] [--db-password DB_PASSWORD]",
    "Token indices sequence length is longer than the specified maximum sequence length",
    "Using pad_token, but it is not set yet.",
    "bypass=passthrough",
    "TOKENIZERS_PARALLELISM=false",
    "SSH_AUTH_SOCK=/tmp/ssh-XXXX/agent.1234",
    "  auth_type: bearer",
    "  secret_name: hf-token",
    "password_file=/run/secrets/db",
    "token_budget: 4096",
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_keyed_secrets_are_masked(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("line", NEGATIVES)
def test_config_look_alikes_survive(line: str) -> None:
    check_negative(line)


def test_only_the_value_goes() -> None:
    output = mask(f"args: Namespace(pad_token_id=2, db_password='{PW}', local_rank=1)")
    assert output == "args: Namespace(pad_token_id=2, db_password='<PASSWORD-1>', local_rank=1)"


def test_a_learned_value_is_masked_later_without_its_key() -> None:
    output = mask(f"PGPASSWORD={PW}\nconnecting with {PW} failed")
    assert output == "PGPASSWORD=<PASSWORD-1>\nconnecting with <PASSWORD-1> failed"


def test_a_quoted_value_that_starts_with_a_dash_is_a_value() -> None:
    secret = "-Fake9Pw0rd-x1"
    assert (
        mask(f"+ python train.py --db-password '{secret}'")
        == "+ python train.py --db-password '<PASSWORD-1>'"
    )
