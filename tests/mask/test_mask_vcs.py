"""GitHub, GitLab and Slack tokens; Slack, Discord and Teams webhooks."""

from __future__ import annotations

import pytest

from tests.mask.cases import Case, check_case, check_negative
from tests.mask.fakes import ALNUM, DIGITS, URLSAFE, fake, github_token, mask

GHP = github_token("ghp", 51)
GHS = github_token("ghs", 52)
GHU = github_token("ghu", 53)
FINE = "github_pat_" + fake(ALNUM, 22, 54, "FAKE") + "_" + fake(ALNUM, 59, 55)
GLPAT = "glpat-" + fake(URLSAFE, 20, 56, "FAKE")
XOXB = "xoxb-" + fake(DIGITS, 12, 57) + "-" + fake(DIGITS, 13, 58) + "-" + fake(ALNUM, 24, 59, "FAKE")
XOXP = "xoxp-" + "-".join(fake(DIGITS, 12, 60 + i) for i in range(3)) + "-" + fake("0123456789abcdef", 32, 63)
HOOK = (
    "T" + fake(ALNUM.upper(), 10, 64) + "/B" + fake(ALNUM.upper(), 10, 65) + "/" + fake(ALNUM, 24, 66, "FAKE")
)
DISCORD = fake(DIGITS, 18, 67) + "/" + fake(URLSAFE, 68, 68, "FAKE")

CASES = [
    Case("github-token", f"+ git clone https://{GHP}@github.com/fake-team/tools.git", GHP, "GITHUB_TOKEN"),
    Case(
        "github-token",
        f"origin\thttps://fake-bot:{GHS}@github.com/fake-team/model.git (fetch)",
        GHS,
        "GITHUB_TOKEN",
    ),
    Case(
        "github-token", f"-e git+https://{GHU}@github.com/fake/repo.git@0123abc#egg=repo", GHU, "GITHUB_TOKEN"
    ),
    Case(
        "github-token",
        f"fatal: Authentication failed for 'https://x-access-token:{GHS}@github.com/fake/r.git/'",
        GHS,
        "GITHUB_TOKEN",
    ),
    Case("github-token", f"GITHUB_TOKEN={FINE}", FINE, "GITHUB_TOKEN"),
    Case(
        "gitlab-token",
        f"+ git clone https://oauth2:{GLPAT}@gitlab.example.internal/ml/configs.git",
        GLPAT,
        "GITLAB_TOKEN",
    ),
    Case("gitlab-token", f"  GITLAB_TOKEN: {GLPAT}", GLPAT, "GITLAB_TOKEN"),
    Case("slack-token", f"SLACK_BOT_TOKEN={XOXB}", XOXB, "SLACK_TOKEN"),
    Case("slack-token", f"  slack_token: {XOXP}", XOXP, "SLACK_TOKEN"),
    Case("chat-webhook", f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{HOOK}", HOOK, "SLACK_WEBHOOK"),
    Case(
        "chat-webhook",
        f"INFO notify: POST https://hooks.slack.com/services/{HOOK} -> 200",
        HOOK,
        "SLACK_WEBHOOK",
    ),
    Case("chat-webhook", f"webhook=https://discord.com/api/webhooks/{DISCORD}", DISCORD, "DISCORD_WEBHOOK"),
]

NEGATIVES = [
    "+ git clone https://github.com/fake-team/tools.git",
    "repo: git@github.com:fake-team/model.git",
    "Cloning into 'ghp_tools'...",
    "https://gitlab.example.internal/ml/configs/-/merge_requests/12",
    "xoxo-style names are fine",
    "INFO notify: POST https://hooks.slack.com/services -> 404",
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_vcs_and_chat_tokens_are_masked(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("line", NEGATIVES)
def test_vcs_look_alikes_survive(line: str) -> None:
    check_negative(line)


def test_clone_url_keeps_host_and_repo() -> None:
    output = mask(CASES[0].line)
    assert output == "+ git clone https://<GITHUB_TOKEN-1>@github.com/fake-team/tools.git"
