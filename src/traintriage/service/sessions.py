"""Browser sessions: a key or code entered once is remembered as a signed cookie value.

The value names the caller (`key:<id>` or `code:<id>`) and an expiry, signed with HMAC-SHA256
under a server secret; the token itself never goes into the cookie. Every request re-checks
the key or code (revoked, expired) through `identity.caller_for_subject`.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

from traintriage.service.secrets_store import server_secret
from traintriage.service.store import Store

SESSION_LIFETIME = timedelta(days=14)


def _mac(store: Store, payload: str) -> str:
    return hmac.new(server_secret(store, "session-key").encode(), payload.encode(), hashlib.sha256).hexdigest()


def session_value(store: Store, subject: str, now: datetime) -> str:
    payload = f"{subject}|{int((now + SESSION_LIFETIME).timestamp())}"
    return f"{payload}|{_mac(store, payload)}"


def session_subject(store: Store, value: str, now: datetime) -> str | None:
    """The subject of a valid, unexpired session value; None for anything else."""
    payload, _, mac = value.rpartition("|")
    subject, _, expiry = payload.partition("|")
    if not (subject and expiry.isdigit() and mac) or len(value) > 200:
        return None
    if not hmac.compare_digest(mac, _mac(store, payload)) or int(expiry) < now.timestamp():
        return None
    return subject
