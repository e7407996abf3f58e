"""Keyed secrets: ``password=``, ``token:``, ``secret=``, ``api_key=`` and their relatives.

Found wherever a log prints configuration: env dumps (``printenv``, ``environ({...})``),
argparse ``Namespace(...)``, JSON and YAML configs, and command lines (``--db-password x``).
Like detect-secrets' KeywordDetector, the key must *end* with the keyword, so
``pad_token_id=2`` and ``max_new_tokens: 1024`` are not keyed secrets; the value filters
then drop placeholders, references, paths, numbers and plain words.
"""

from __future__ import annotations

from traintriage.ingest.mask.detectors._syntax import (
    ASSIGN,
    BARE,
    HS_ASSIGN,
    HS_KEY_CLOSE,
    KEY_CLOSE,
    OPEN,
    QUOTED,
)
from traintriage.ingest.mask.detectors.naming import kind_from_key_group
from traintriage.ingest.mask.filters import (
    is_cli_flag,
    is_number,
    is_path,
    is_pem_marker,
    is_placeholder,
    is_plain_word,
    is_reference,
    is_special_token_key,
    shorter_than,
)
from traintriage.ingest.mask.model import Detector, LazyRegex

# Long keywords may end any key (PGPASSWORD, csrftoken); short ones only after a non-letter
# or an upper-case letter, so "bypass" and "oauth" are not keys.
LONG_KEYWORDS = (
    r"password|passwd|passphrase|secret|token|api[_-]?key|apikey|api[_-]?secret"
    r"|access[_-]?key(?:[_-]?id)?|private[_-]?key|credentials?"
    r"|(?:secret|client|account|master|encryption|signing|license|service|app|subscription|consumer|session|ssh"
    r"|storage|primary|secondary|shared)"
    r"[_-]?key"
)
SHORT_KEYWORDS = r"pass|pwd|auth"
KEYWORDS = LONG_KEYWORDS + "|" + SHORT_KEYWORDS
_KEYWORD = r"(?:(?i:" + LONG_KEYWORDS + r")|(?<![a-z])(?i:" + SHORT_KEYWORDS + r"))"
_VALUE = r"(?:" + QUOTED + r"|" + OPEN + r"(?P<s>" + BARE + r"))"

_FILTERS = (
    is_placeholder,
    is_reference,
    is_path,
    shorter_than(6),
    is_plain_word,
    is_number,
    is_special_token_key,
    is_pem_marker,
    is_cli_flag,
)

ASSIGNMENT = Detector(
    name="keyed-secret",
    kind="SECRET",
    prefilter=(r"(?:" + KEYWORDS + r")" + HS_KEY_CLOSE + HS_ASSIGN,),
    pattern=LazyRegex(r"(?P<kw>" + _KEYWORD + r")" + KEY_CLOSE + ASSIGN + _VALUE),
    priority=50,
    caseless_prefilter=True,
    filters=_FILTERS,
    kind_of=kind_from_key_group,
    learn=True,
    doc="KEY=value, key: value, 'key': 'value', key='value' where the key ends with a secret keyword.",
)

CLI_FLAG = Detector(
    name="keyed-secret-flag",
    kind="SECRET",
    prefilter=(r"--?[A-Za-z0-9_.-]{0,40}(?:" + KEYWORDS + r")[ \t=]",),
    pattern=LazyRegex(r"(?<![\w-])(?P<k>--?[\w.-]{0,40}?" + _KEYWORD + r")(?:[ \t]+|=)" + _VALUE),
    priority=51,
    caseless_prefilter=True,
    filters=_FILTERS,
    kind_of=kind_from_key_group,
    learn=True,
    doc="Command-line flags: --db-password 'x', --hub_token hf_x, --token=x.",
)

DETECTORS = (ASSIGNMENT, CLI_FLAG)
