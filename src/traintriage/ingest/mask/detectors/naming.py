"""Name the kind of a keyed secret from its key, so ``COMET_API_KEY=...`` becomes ``<COMET_KEY-1>``.

The first row whose fragment occurs in the normalised key wins; order matters.
"""

from __future__ import annotations

import re

KIND_BY_KEY_FRAGMENT: tuple[tuple[str, str], ...] = (
    ("wandb", "WANDB_KEY"),
    ("comet", "COMET_KEY"),
    ("neptune", "NEPTUNE_TOKEN"),
    ("hugging", "HF_TOKEN"),
    ("hf_", "HF_TOKEN"),
    ("hub_token", "HF_TOKEN"),
    ("openai", "OPENAI_KEY"),
    ("anthropic", "ANTHROPIC_KEY"),
    ("claude", "ANTHROPIC_KEY"),
    ("github", "GITHUB_TOKEN"),
    ("gh_token", "GITHUB_TOKEN"),
    ("gitlab", "GITLAB_TOKEN"),
    ("slack", "SLACK_TOKEN"),
    ("session_token", "SESSION_TOKEN"),
    ("secret_access_key", "AWS_SECRET_KEY"),
    ("aws_secret", "AWS_SECRET_KEY"),
    ("azure", "AZURE_KEY"),
    ("private_key_id", "GCP_KEY_ID"),
    ("private_key", "PRIVATE_KEY"),
    ("client_secret", "CLIENT_SECRET"),
    ("pass", "PASSWORD"),
    ("pwd", "PASSWORD"),
    ("secret", "SECRET"),
    ("api_key", "API_KEY"),
    ("apikey", "API_KEY"),
    ("access_key", "ACCESS_KEY"),
    ("token", "TOKEN"),
    ("auth", "AUTH"),
    ("credential", "CREDENTIAL"),
    ("signature", "SIGNATURE"),
    ("sig", "SIGNATURE"),
    ("jwt", "JWT"),
    ("code", "AUTH_CODE"),
    ("session", "SESSION"),
    ("key", "KEY"),
)


def kind_from_key(key: str, default: str) -> str:
    """The kind a key names (``MLFLOW_TRACKING_PASSWORD`` -> ``PASSWORD``), else ``default``."""
    normalized = key.lower().replace("-", "_")
    for fragment, kind in KIND_BY_KEY_FRAGMENT:
        if fragment in normalized:
            return kind
    return default


def kind_from_key_group(match: re.Match[str], key: str) -> str:
    """``kind_of`` hook for detectors that read a key: name the kind after it."""
    return kind_from_key(key, "TOKEN")
