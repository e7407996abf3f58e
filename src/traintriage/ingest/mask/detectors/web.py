"""Credentials in web traffic and command lines: JWTs, Authorization and API-key headers,
passwords inside URLs, secret query parameters, netrc entries and ``-p``/``-u`` flags.

Header and command-line shapes follow gitleaks (jwt, curl-auth-header, curl-auth-user) and
detect-secrets (BasicAuthDetector, JwtTokenDetector).
"""

from __future__ import annotations

from traintriage.ingest.mask.detectors._syntax import ASSIGN, HS_ASSIGN, HS_KEY_CLOSE, KEY_CLOSE, OPEN
from traintriage.ingest.mask.detectors.naming import kind_from_key_group
from traintriage.ingest.mask.filters import (
    is_number,
    is_placeholder,
    is_plain_word,
    is_reference,
    shorter_than,
)
from traintriage.ingest.mask.model import Detector, LazyRegex

JWT = Detector(
    name="jwt",
    kind="JWT",
    prefilter=(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8}",),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9_-])(?P<s>eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){1,3}={0,2})"
        r"(?![A-Za-z0-9_-])"
    ),
    priority=90,
    doc="JSON Web Tokens and JWEs (eyJ<header>.<payload>.<signature>).",
)

_SCHEMES = (
    r"(?i:bearer|basic|token|digest|negotiate|ntlm|bot|apikey|api-key|jwt|oauth|sso-key|gitlab-ci-token)"
)
_HEADER_NAMES = (
    r"(?i:x-api-key|api-key|x-auth-token|x-access-token|private-token|job-token|x-vault-token|x-goog-api-key"
    r"|ocp-apim-subscription-key|x-amz-security-token|x-functions-key|x-figma-token|x-jfrog-art-api)"
)
AUTH_HEADER = Detector(
    name="authorization-header",
    kind="AUTH",
    prefilter=(
        r"authorization" + HS_KEY_CLOSE + HS_ASSIGN,
        r"(?:x-api-key|api-key|x-auth-token|x-access-token|private-token|job-token|x-vault-token|x-goog-api-key"
        r"|ocp-apim-subscription-key|x-amz-security-token|x-functions-key|x-figma-token|x-jfrog-art-api)"
        + HS_KEY_CLOSE
        + HS_ASSIGN,
    ),
    pattern=LazyRegex(
        r"(?i:(?:proxy-)?authorization)" + KEY_CLOSE + ASSIGN + OPEN + r"(?:" + _SCHEMES + r"[ \t]+)?"
        r"(?P<s>(?!AWS4-HMAC)[A-Za-z0-9._~+/=:-]{8,})"
        r"|" + _HEADER_NAMES + KEY_CLOSE + ASSIGN + OPEN + r"(?P<s2>[A-Za-z0-9._~+/=-]{8,})"
    ),
    priority=70,
    caseless_prefilter=True,
    filters=(is_placeholder, is_reference, is_plain_word),
    learn=True,
    doc="Authorization: Bearer/Basic/Token credentials and API-key headers (x-api-key, PRIVATE-TOKEN).",
)

URL_CREDENTIALS = Detector(
    name="url-credentials",
    kind="URL_PASSWORD",
    prefilter=(r"://[^ \t\n/?#@'\"<>]*:[^ \t\n/?#'\"<>]*@", r"://[A-Za-z0-9_.~-]{20}[A-Za-z0-9_.~-]*@"),
    pattern=LazyRegex(
        r"(?i:\b[a-z][a-z0-9+.-]{1,20})://(?:[^\s:/?#@'\"<>\\]{0,128}):(?P<s>[^\s/?#'\"<>\\]{1,256})@(?=[\w\[.-])"
        r"|(?i:\b[a-z][a-z0-9+.-]{1,20})://(?P<s2>[A-Za-z0-9_.~-]{20,128})@(?=[\w\[.-])"
    ),
    priority=65,
    filters=(is_placeholder, is_reference),
    learn=True,
    doc="Passwords in user:password@host URLs (databases, brokers, trackers) and tokens used as the user.",
)

_PARAM_KEYS = (
    r"access_token|refresh_token|id_token|auth_token|api_token|private_token|hf_token|token|api_key|apikey"
    r"|api-key|key|signature|x-amz-signature|x-amz-security-token|x-amz-credential|jwt|auth|password|passwd"
    r"|pwd|pass|secret|client_secret|code|sessionid|session"
)
URL_PARAM = Detector(
    name="url-secret-parameter",
    kind="TOKEN",
    prefilter=(r"[?&;](?:" + _PARAM_KEYS + r")=",),
    pattern=LazyRegex(r"[?&;](?P<k>(?i:" + _PARAM_KEYS + r"))=(?P<s>[^&\s'\"#<>\\]{6,})"),
    priority=60,
    caseless_prefilter=True,
    filters=(is_placeholder, is_reference, is_plain_word, is_number),
    kind_of=kind_from_key_group,
    learn=True,
    doc="Secret query parameters: ?token=, &api_key=, &signature=, X-Amz-Signature= ...",
)

CLI_PASSWORD = Detector(
    name="command-line-password",
    kind="PASSWORD",
    prefilter=(
        r"password[ \t]+[^ \t\n]",
        r"login[^\n]*[ \t](?:-p|--password)[ \t=]",
        r"sshpass[ \t]+-p",
        r"curl[^\n]*[ \t](?:-u|--user)[ \t=]",
        r"mysql[^\n]*[ \t]-p[^ \t\n]",
    ),
    pattern=LazyRegex(
        r"(?i:\bpassword)[ \t]+(?P<s>[^\s'\"]+)[ \t]*$"
        r"|(?i:\blogin)[ \t]+[^\s]+[ \t]+(?i:password)[ \t]+(?P<s2>[^\s'\"]+)"
        r"|\blogin\b[^\n]{0,200}?[ \t](?:-p|--password)(?:[ \t]+|=)['\"]?(?P<s3>[^\s'\"]+)"
        r"|\bsshpass[ \t]+-p[ \t]*['\"]?(?P<s4>[^\s'\"]+)"
        r"|\bcurl\b[^\n]{0,300}?[ \t](?:-u|--user)(?:[ \t]+|=)['\"]?[^:\s'\"]*:(?P<s5>[^\s'\"]+)"
        r"|\bmysql(?:dump|admin)?\b[^\n]{0,200}?[ \t]-p(?P<s6>[^\s'\"]{4,})"
    ),
    priority=60,
    caseless_prefilter=True,
    filters=(is_placeholder, is_reference, shorter_than(4), is_plain_word),
    learn=True,
    doc="netrc `machine h login u password p`, `docker login -p`, `sshpass -p`, `curl -u user:pass`, `mysql -p`.",
)

DETECTORS = (JWT, AUTH_HEADER, URL_CREDENTIALS, URL_PARAM, CLI_PASSWORD)
