"""Cloud credentials: AWS key ids, secret keys and session tokens; GCP; Azure.

AWS key ids and GCP API keys follow the gitleaks formats (aws-access-token, gcp-api-key);
AWS secret keys are 40 base64 characters with no prefix, so they are found by their key;
session tokens start with the base64 of their fixed header (``IQoJb3JpZ2luX2Vj``).
GCP service-account private keys are PEM blocks (``keys.py``).
"""

from __future__ import annotations

from traintriage.ingest.mask.detectors._syntax import ASSIGN, HS_ASSIGN, HS_KEY_CLOSE, KEY_CLOSE, OPEN
from traintriage.ingest.mask.filters import is_placeholder, is_reference
from traintriage.ingest.mask.model import Detector, LazyRegex

FORMAT = 95
CONTEXT = 85

AWS_ACCESS_KEY_ID = Detector(
    name="aws-access-key-id",
    kind="AWS_KEY_ID",
    prefilter=(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}",),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9])(?P<s>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)"
        r"[A-Z0-9]{16})(?![A-Za-z0-9])"
    ),
    priority=FORMAT,
    doc="AWS access key ids (AKIA..., ASIA... temporary, and the other IAM prefixes).",
)

AWS_SECRET_KEY = Detector(
    name="aws-secret-key",
    kind="AWS_SECRET_KEY",
    prefilter=(
        r"secret[_-]?(?:access[_-]?)?key" + HS_KEY_CLOSE + HS_ASSIGN,
        r"secret[_-]?(?:access[_-]?)?key[ \t]",
    ),
    pattern=LazyRegex(
        r"(?i:secret[_-]?(?:access[_-]?)?key)(?:"
        + KEY_CLOSE
        + ASSIGN
        + r"|[ \t]+)"
        + OPEN
        + r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
    ),
    priority=CONTEXT,
    caseless_prefilter=True,
    filters=(is_placeholder, is_reference),
    learn=True,
    doc="AWS secret access keys (40 base64 characters) after aws_secret_access_key= or secret_key:.",
)

AWS_SESSION_TOKEN = Detector(
    name="aws-session-token",
    kind="AWS_SESSION_TOKEN",
    prefilter=(r"IQoJb3JpZ2luX2Vj", r"FwoGZXIvYXdzE", r"session[_-]?token"),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9+/])(?P<s>(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/]{20,}={0,2})"
        r"|(?i:session[_-]?token)(?:"
        + KEY_CLOSE
        + ASSIGN
        + r"|[ \t]+)"
        + OPEN
        + r"(?P<s2>[A-Za-z0-9+/]{100,}={0,2})"
    ),
    priority=FORMAT,
    caseless_prefilter=True,
    learn=True,
    doc="AWS STS session tokens (IQoJb3JpZ2luX2Vj... / FwoGZXIvYXdzE...) or long values of *_SESSION_TOKEN.",
)

GCP_API_KEY = Detector(
    name="gcp-api-key",
    kind="GCP_API_KEY",
    prefilter=(r"AIza[A-Za-z0-9_-]{35}",),
    pattern=LazyRegex(r"(?<![A-Za-z0-9_-])(?P<s>AIza[A-Za-z0-9_-]{35})(?![A-Za-z0-9_-])"),
    priority=FORMAT,
    doc="Google Cloud API keys (AIza...).",
)

GCP_OAUTH_TOKEN = Detector(
    name="gcp-oauth-token",
    kind="GCP_OAUTH_TOKEN",
    prefilter=(r"ya29\.[A-Za-z0-9_-]{20}", r"1//0[A-Za-z0-9_-]{30}", r"GOCSPX-[A-Za-z0-9_-]{20}"),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9_.-])(?P<s>ya29\.[A-Za-z0-9_-]{20,}|1//0[A-Za-z0-9_-]{30,}|GOCSPX-[A-Za-z0-9_-]{20,})"
        r"(?![A-Za-z0-9_-])"
    ),
    priority=FORMAT,
    doc="Google OAuth access tokens (ya29.), refresh tokens (1//0) and client secrets (GOCSPX-).",
)

GCP_KEY_ID = Detector(
    name="gcp-private-key-id",
    kind="GCP_KEY_ID",
    prefilter=(r"private[_-]?key[_-]?id",),
    pattern=LazyRegex(
        r"(?i:private[_-]?key[_-]?id)"
        + KEY_CLOSE
        + ASSIGN
        + OPEN
        + r"(?P<s>[0-9A-Za-z]{16,64})(?![0-9A-Za-z])"
    ),
    priority=CONTEXT,
    caseless_prefilter=True,
    learn=True,
    doc='The "private_key_id" of a GCP service-account key file (40 hex digits, other ids accepted).',
)

AZURE_STORAGE_KEY = Detector(
    name="azure-storage-key",
    kind="AZURE_KEY",
    prefilter=(r"(?:AccountKey|SharedAccessKey|PrimaryKey|SecondaryKey)=",),
    pattern=LazyRegex(
        r"(?i:AccountKey|SharedAccessKey|PrimaryKey|SecondaryKey)=(?P<s>[A-Za-z0-9+/]{20,}={0,2})"
    ),
    priority=CONTEXT,
    caseless_prefilter=True,
    learn=True,
    doc="Azure storage and service-bus keys inside connection strings (AccountKey=...).",
)

AZURE_SAS = Detector(
    name="azure-sas-signature",
    kind="AZURE_SAS",
    prefilter=(r"[?&;]sig=[A-Za-z0-9%+/=_-]{16}", r"SharedAccessSignature="),
    pattern=LazyRegex(
        r"(?:[?&;]sig=|SharedAccessSignature=(?:[^\s'\"]{0,500}?[?&;]sig=)?)(?P<s>[A-Za-z0-9%+/=_-]{16,})"
    ),
    priority=CONTEXT,
    caseless_prefilter=True,
    learn=True,
    doc="Azure shared-access-signature `sig=` parameters in blob URLs and connection strings.",
)

AZURE_AD_SECRET = Detector(
    name="azure-ad-client-secret",
    kind="AZURE_CLIENT_SECRET",
    prefilter=(r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31}",),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9_~.-])(?P<s>[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])"
    ),
    priority=FORMAT,
    doc="Azure AD (Entra) application client secrets (xxx8Q~...).",
)

DETECTORS = (
    AWS_ACCESS_KEY_ID,
    AWS_SECRET_KEY,
    AWS_SESSION_TOKEN,
    GCP_API_KEY,
    GCP_OAUTH_TOKEN,
    GCP_KEY_ID,
    AZURE_STORAGE_KEY,
    AZURE_SAS,
    AZURE_AD_SECRET,
)
