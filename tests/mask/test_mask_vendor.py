"""Hugging Face, OpenAI, Anthropic, W&B, Neptune and Comet tokens."""

from __future__ import annotations

import base64
import json

import pytest

from tests.mask.cases import Case, check_case, check_negative
from tests.mask.fakes import ALNUM, HEX, URLSAFE, fake, hf_token, wandb_key

HF = hf_token()
OPENAI_PROJ = "sk-proj-" + fake(URLSAFE, 58, 11, "FAKE") + "T3BlbkFJ" + fake(URLSAFE, 58, 12)
OPENAI_LEGACY = "sk-" + fake(ALNUM, 20, 13, "FAKE") + "T3BlbkFJ" + fake(ALNUM, 20, 14)
ANTHROPIC = "sk-ant-api03-" + fake(URLSAFE, 93, 15, "FAKE") + "AA"
WANDB = wandb_key()
NEPTUNE = base64.b64encode(
    json.dumps(
        {"api_address": "https://app.neptune.ai", "api_key": "fa4e0000-fake-4fa4-8fa4-fa4efa4efa4e"}
    ).encode()
).decode()
COMET = fake(ALNUM, 25, 16, "FAKE")

CASES = [
    Case("hf-token", f"HF_TOKEN={HF}", HF, "HF_TOKEN"),
    Case("hf-token", f"+ huggingface-cli login --token {HF}", HF, "HF_TOKEN"),
    Case("hf-token", f"Pushing to team/model with token={HF} done", HF, "HF_TOKEN"),
    Case("hf-token", f"args: Namespace(seed=1, hub_token='{HF}', lr=0.1)", HF, "HF_TOKEN"),
    Case(
        "hf-token",
        "org token api_org_" + fake(ALNUM, 34, 17, "FAKE"),
        "api_org_" + fake(ALNUM, 34, 17, "FAKE"),
        "HF_TOKEN",
    ),
    Case("openai-key", f"OPENAI_API_KEY={OPENAI_PROJ}", OPENAI_PROJ, "OPENAI_KEY"),
    Case("openai-key", f'    os.environ["OPENAI_API_KEY"] = "{OPENAI_LEGACY}"', OPENAI_LEGACY, "OPENAI_KEY"),
    Case("openai-key", f"headers={{'Authorization': 'Bearer {OPENAI_PROJ}'}}", OPENAI_PROJ, "OPENAI_KEY"),
    Case("anthropic-key", f"ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC, "ANTHROPIC_KEY"),
    Case(
        "anthropic-key",
        f"send: b'POST /v1/messages\\r\\nx-api-key: {ANTHROPIC}\\r\\n'",
        ANTHROPIC,
        "ANTHROPIC_KEY",
    ),
    Case("anthropic-key", f'client = anthropic.Anthropic(api_key="{ANTHROPIC}")', ANTHROPIC, "ANTHROPIC_KEY"),
    Case("wandb-key", f"+ export WANDB_API_KEY={WANDB}", WANDB, "WANDB_KEY"),
    Case("wandb-key", f"+ wandb login {WANDB}", WANDB, "WANDB_KEY"),
    Case("wandb-key", f"+ wandb login --relogin {WANDB}", WANDB, "WANDB_KEY"),
    Case("wandb-key", f'[rank3]:     wandb.login(key="{WANDB}")', WANDB, "WANDB_KEY"),
    Case("wandb-key", f"python train.py --wandb_key={WANDB} --lr 3e-4", WANDB, "WANDB_KEY"),
    Case("wandb-key", f"Namespace(wandb_api_key='{WANDB}', seed=0)", WANDB, "WANDB_KEY"),
    Case("neptune-token", f"NEPTUNE_API_TOKEN={NEPTUNE}", NEPTUNE, "NEPTUNE_TOKEN"),
    Case(
        "neptune-token",
        f'run = neptune.init_run(project="team/x", api_token="{NEPTUNE}")',
        NEPTUNE,
        "NEPTUNE_TOKEN",
    ),
    Case("neptune-token", f'    "neptune_api_token": "{NEPTUNE}"', NEPTUNE, "NEPTUNE_TOKEN"),
    Case("comet-key", f"+ export COMET_API_KEY={COMET}", COMET, "COMET_KEY"),
    Case("comet-key", f"Namespace(comet_api_key='{COMET}', seed=0)", COMET, "COMET_KEY"),
    Case("comet-key", f'        "comet_api_key": "{COMET}",', COMET, "COMET_KEY"),
]

NEGATIVES = [
    "from huggingface_hub import hf_hub_download, hf_hub_url",
    "HF_HUB_ENABLE_HF_TRANSFER=1",
    "HF_TOKEN_PATH=/opt/cache/token",
    "Set HF_TOKEN to access gated models",
    "pip install scikit-learn sk-video",
    "wandb: Tracking run with wandb version 0.17.0",
    "wandb: Run data is saved locally in /workspace/wandb/run-20240101_000000-abcd1234",
    "WANDB_MODE=offline",
    "WANDB_PROJECT=llama-ft",
    "comet_ml is installed but COMET_API_KEY is not set.",
    "[2024-05-02 12:55:02,466] INFO git: commit " + fake(HEX, 40, 18) + " (branch main, dirty=False)",
    "neptune: run logged to https://app.neptune.ai/team/x/e/X-12",
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_vendor_tokens_are_masked(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("line", NEGATIVES)
def test_vendor_look_alikes_survive(line: str) -> None:
    check_negative(line)
