"""ML-platform tokens: Hugging Face, OpenAI, Anthropic, Weights & Biases, Neptune, Comet.

Formats follow the gitleaks rule set (huggingface-access-token, openai-api-key,
anthropic-api-key); W&B and Comet keys have no prefix, so they are found by the key
that names them (``WANDB_API_KEY=``, ``wandb login``, ``comet_api_key=``).
"""

from __future__ import annotations

from traintriage.ingest.mask.detectors._syntax import ASSIGN, HS_ASSIGN, HS_KEY_CLOSE, KEY_CLOSE, OPEN
from traintriage.ingest.mask.filters import is_placeholder, is_reference
from traintriage.ingest.mask.model import Detector, LazyRegex

FORMAT = 100
CONTEXT = 85

HF_TOKEN = Detector(
    name="hf-token",
    kind="HF_TOKEN",
    prefilter=(r"hf_[A-Za-z0-9]{30}", r"api_org_[A-Za-z0-9]{30}"),
    pattern=LazyRegex(r"(?<![A-Za-z0-9_])(?P<s>(?:hf|api_org)_[A-Za-z0-9]{30,64})(?![A-Za-z0-9])"),
    priority=FORMAT,
    doc="Hugging Face user and organisation access tokens (hf_..., api_org_...).",
)

OPENAI_KEY = Detector(
    name="openai-key",
    kind="OPENAI_KEY",
    prefilter=(r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{30}", r"sk-[A-Za-z0-9]{32}", r"T3BlbkFJ"),
    pattern=LazyRegex(
        r"(?<![\w-])(?P<s>sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{30,}"
        r"|[A-Za-z0-9_-]{8,}T3BlbkFJ[A-Za-z0-9_-]{8,}|[A-Za-z0-9]{32,}))(?![\w-])"
    ),
    priority=FORMAT,
    doc="OpenAI project, service-account, admin and legacy keys (sk-..., T3BlbkFJ marker).",
)

ANTHROPIC_KEY = Detector(
    name="anthropic-key",
    kind="ANTHROPIC_KEY",
    prefilter=(r"sk-ant-",),
    pattern=LazyRegex(r"(?<![\w-])(?P<s>sk-ant-[a-z]{2,12}\d{0,3}-[A-Za-z0-9_-]{32,})(?![\w-])"),
    priority=FORMAT + 1,
    doc="Anthropic API and admin keys (sk-ant-api03-..., sk-ant-admin01-...).",
)

_WANDB_VALUE = r"(?P<{}>(?:local-)?[A-Za-z0-9_-]{{32,}})"
WANDB_KEY = Detector(
    name="wandb-key",
    kind="WANDB_KEY",
    prefilter=(
        r"wandb[A-Za-z0-9_.-]{0,30}(?:key|token)" + HS_KEY_CLOSE + HS_ASSIGN,
        r"wandb[A-Za-z0-9_.-]{0,30}(?:key|token)[ \t]",
        r"wandb[ \t]+login",
        r"wandb\.login\(",
    ),
    pattern=LazyRegex(
        r"(?i:wandb[\w.-]{0,30}?(?:key|token))(?:"
        + KEY_CLOSE
        + ASSIGN
        + r"|[ \t]+)"
        + OPEN
        + _WANDB_VALUE.format("s")
        + r"|wandb[ \t]+login(?:[ \t]+--?[\w-]+)*[ \t]+"
        + OPEN
        + _WANDB_VALUE.format("s2")
        + r"|wandb\.login\([^)]{0,200}?key[ \t]*=[ \t]*[\"']"
        + _WANDB_VALUE.format("s3")
    ),
    priority=CONTEXT,
    caseless_prefilter=True,
    filters=(is_placeholder, is_reference),
    learn=True,
    doc="Weights & Biases API keys after WANDB_API_KEY=, --wandb_key, `wandb login`, wandb.login(key=).",
)

NEPTUNE_TOKEN = Detector(
    name="neptune-token",
    kind="NEPTUNE_TOKEN",
    prefilter=(r"eyJhcGlf", r"neptune[A-Za-z0-9_.-]{0,30}token"),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9+/])(?P<s>eyJhcGlf[A-Za-z0-9+/_-]{16,}={0,2})"
        r"|(?i:neptune[\w.-]{0,30}?token)(?:"
        + KEY_CLOSE
        + ASSIGN
        + r"|[ \t]+)"
        + OPEN
        + r"(?P<s2>[A-Za-z0-9+/_=-]{24,})"
    ),
    priority=CONTEXT + 1,
    caseless_prefilter=True,
    filters=(is_placeholder, is_reference),
    learn=True,
    doc='Neptune API tokens: base64 JSON starting {"api_... (eyJhcGlf), or after NEPTUNE_API_TOKEN=.',
)

COMET_KEY = Detector(
    name="comet-key",
    kind="COMET_KEY",
    prefilter=(r"comet[A-Za-z0-9_.-]{0,30}key",),
    pattern=LazyRegex(
        r"(?i:comet[\w.-]{0,30}?key)(?:"
        + KEY_CLOSE
        + ASSIGN
        + r"|[ \t]+)"
        + OPEN
        + r"(?P<s>[A-Za-z0-9_-]{20,})"
    ),
    priority=CONTEXT,
    caseless_prefilter=True,
    filters=(is_placeholder, is_reference),
    learn=True,
    doc="Comet ML API keys after COMET_API_KEY= or comet_api_key=.",
)

DETECTORS = (HF_TOKEN, OPENAI_KEY, ANTHROPIC_KEY, WANDB_KEY, NEPTUNE_TOKEN, COMET_KEY)
