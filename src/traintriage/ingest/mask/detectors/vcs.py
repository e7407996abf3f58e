"""Source-hosting and chat tokens: GitHub, GitLab, Slack, and chat webhooks.

Formats follow gitleaks (github-pat, github-fine-grained-pat, github-app-token,
gitlab-pat and its siblings, slack-*-token, slack-webhook-url).
"""

from __future__ import annotations

import re

from traintriage.ingest.mask.model import Detector, LazyRegex

FORMAT = 100

GITHUB_TOKEN = Detector(
    name="github-token",
    kind="GITHUB_TOKEN",
    prefilter=(r"gh[pousr]_[A-Za-z0-9]{36}", r"github_pat_[A-Za-z0-9_]{22}"),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9_])(?P<s>gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9])"
    ),
    priority=FORMAT,
    doc="GitHub personal, OAuth, user-to-server, server-to-server, refresh and fine-grained tokens.",
)

GITLAB_TOKEN = Detector(
    name="gitlab-token",
    kind="GITLAB_TOKEN",
    prefilter=(
        r"gl(?:pat|dt|ptt|rt|cbt|ft|imt|oas|soat|agent|ffct)-[A-Za-z0-9_-]{20}",
        r"GR1348941[A-Za-z0-9_-]{20}",
    ),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9_-])(?P<s>gl(?:pat|dt|ptt|rt|cbt|ft|imt|oas|soat|agent|ffct)-[A-Za-z0-9_-]{20,300}"
        r"(?:\.[0-9a-z]{2}[0-9a-z]{7})?|GR1348941[A-Za-z0-9_-]{20,})(?![A-Za-z0-9_-])"
    ),
    priority=FORMAT,
    doc="GitLab personal, deploy, trigger, runner, CI job and other prefixed tokens.",
)

SLACK_TOKEN = Detector(
    name="slack-token",
    kind="SLACK_TOKEN",
    prefilter=(r"xox[abposer]-[A-Za-z0-9-]{10}", r"xapp-[0-9]-[A-Za-z0-9-]{10}"),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9_-])(?P<s>(?:xox[abposer]|xapp)-[A-Za-z0-9-]{10,255})(?![A-Za-z0-9_-])"
    ),
    priority=FORMAT,
    doc="Slack bot, user, app, workspace and configuration tokens (xoxb-, xoxp-, xapp-, ...).",
)


def _webhook_kind(match: re.Match[str], key: str) -> str:
    if match.group("s") is not None:
        return "SLACK_WEBHOOK"
    return "DISCORD_WEBHOOK" if match.group("s2") is not None else "TEAMS_WEBHOOK"


WEBHOOK = Detector(
    name="chat-webhook",
    kind="WEBHOOK",
    prefilter=(
        r"hooks\.slack\.com/(?:services|workflows|triggers)/",
        r"discord(?:app)?\.com/api/webhooks/",
        r"\.webhook\.office\.com/webhookb2/",
    ),
    pattern=LazyRegex(
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9+/_-]{16,})"
        r"|discord(?:app)?\.com/api/webhooks/(?P<s2>\d+/[A-Za-z0-9_-]{16,})"
        r"|\.webhook\.office\.com/webhookb2/(?P<s3>[A-Za-z0-9@/_-]{32,})"
    ),
    priority=FORMAT,
    caseless_prefilter=True,
    kind_of=_webhook_kind,
    doc="Slack, Discord and Microsoft Teams incoming-webhook URLs: the path is the secret.",
)

DETECTORS = (GITHUB_TOKEN, GITLAB_TOKEN, SLACK_TOKEN, WEBHOOK)
