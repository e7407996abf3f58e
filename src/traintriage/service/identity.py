"""Who is calling: an anonymous address, an API key, or an evaluation code.

Keys and codes are random tokens shown once; only their SHA-256 is stored (they carry
enough entropy that a plain hash cannot be reversed by guessing). Anonymous callers are
known by a salted hash of their address; `X-Forwarded-For` counts only when the direct
peer is one of the configured trusted proxies.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

import sqlalchemy as sa

from traintriage.service.models import ApiKey, EvaluationCode
from traintriage.service.secrets_store import server_secret
from traintriage.service.store import Store

ANONYMOUS_DAILY_LIMIT = 3
ANONYMOUS_LIMIT_ENV = "TRAINTRIAGE_ANONYMOUS_DAILY_LIMIT"
CODE_DAILY_LIMIT = 50
CODE_LIFETIME = timedelta(days=14)
KEY_DAILY_LIMIT = 1000
KEY_PREFIX = "tt_key_"
CODE_PREFIX = "tt_eval_"
TRUSTED_PROXIES_ENV = "TRAINTRIAGE_TRUSTED_PROXIES"
DEFAULT_TRUSTED_PROXIES = "127.0.0.1"  # uvicorn's default too: a reverse proxy on the same host
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,255}\.[A-Za-z]{2,63}")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class IdentityError(Exception):
    """A credential that does not (or no longer) work; the message is shown to the caller as is."""


@dataclass(frozen=True)
class Caller:
    """The caller of one request: what they may keep (owner) and how much they may use (subject, limit)."""

    kind: Literal["anonymous", "key", "code"]
    subject: str  # the quota counter's name
    owner: str | None  # history owner; None for anonymous callers (no history)
    name: str
    daily_limit: int
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Issued:
    """A freshly created key or code: `token` is shown once and never stored."""

    id: int
    token: str
    expires_at: datetime | None = None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# --- anonymous callers -------------------------------------------------------------------


def trusted_proxies(spec: str | None = None) -> list[Network]:
    """Parse `TRAINTRIAGE_TRUSTED_PROXIES` (comma-separated addresses or CIDR networks)."""
    text = os.environ.get(TRUSTED_PROXIES_ENV, DEFAULT_TRUSTED_PROXIES) if spec is None else spec
    networks: list[Network] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError as exc:
            raise ValueError(f"{TRUSTED_PROXIES_ENV}: '{item}' is not an address or network") from exc
    return networks


def _is_trusted(address: str, proxies: list[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(peer: str, forwarded_for: str | None, proxies: list[Network]) -> str:
    """The caller's address: the peer, or, behind trusted proxies, the last untrusted X-Forwarded-For hop."""
    if not forwarded_for or not _is_trusted(peer, proxies):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",")[-32:] if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, proxies):
            return hop
    return hops[0] if hops else peer


def anonymous_caller(store: Store, address: str) -> Caller:
    salt = server_secret(store, "anonymous-salt")
    digest = hmac.new(salt.encode(), address.encode(), hashlib.sha256).hexdigest()[:32]
    return Caller("anonymous", f"anon:{digest}", None, "anonymous", anonymous_daily_limit())


def anonymous_daily_limit() -> int:
    """`TRAINTRIAGE_ANONYMOUS_DAILY_LIMIT`, else 3 diagnoses a day per address."""
    value = os.environ.get(ANONYMOUS_LIMIT_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else ANONYMOUS_DAILY_LIMIT


# --- API keys ------------------------------------------------------------------------------


def create_key(store: Store, name: str, daily_limit: int = KEY_DAILY_LIMIT) -> Issued:
    if not name.strip() or len(name) > 200:
        raise ValueError("a key needs a name of 1 to 200 characters")
    if daily_limit < 1:
        raise ValueError("a key's daily limit must be at least 1")
    token = KEY_PREFIX + secrets.token_urlsafe(24)
    row = ApiKey(name=name.strip(), prefix=token[:12], key_hash=token_hash(token), daily_limit=daily_limit,
                 created_at=store.clock(), revoked_at=None)
    with store.sessions.begin() as session:
        session.add(row)
    return Issued(row.id, token)


def list_keys(store: Store) -> list[ApiKey]:
    with store.sessions() as session:
        return list(session.scalars(sa.select(ApiKey).order_by(ApiKey.id)))


def revoke_key(store: Store, key_id: int) -> bool:
    with store.sessions.begin() as session:
        row = session.get(ApiKey, key_id)
        if row is None or row.revoked_at is not None:
            return False
        row.revoked_at = store.clock()
    return True


# --- evaluation codes ----------------------------------------------------------------------


def request_code(store: Store, organisation: str, contact_email: str) -> int:
    """A workplace asks for an evaluation code; an admin approves it later. Returns the request id."""
    organisation, contact_email = organisation.strip(), contact_email.strip()
    if not 1 <= len(organisation) <= 200:
        raise ValueError("the organisation needs 1 to 200 characters")
    if len(contact_email) > 320 or not _EMAIL.fullmatch(contact_email):
        raise ValueError("the contact e-mail address is not valid")
    row = EvaluationCode(organisation=organisation, contact_email=contact_email, status="requested",
                         requested_at=store.clock(), daily_limit=CODE_DAILY_LIMIT)
    with store.sessions.begin() as session:
        session.add(row)
    return row.id


def approve_code(store: Store, request_id: int) -> Issued:
    """Approve a request: the code works for 14 days from now. Raises ValueError when not pending."""
    token = CODE_PREFIX + secrets.token_urlsafe(18)
    now = store.clock()
    with store.sessions.begin() as session:
        row = session.get(EvaluationCode, request_id)
        if row is None:
            raise ValueError(f"no evaluation code request {request_id}")
        if row.status != "requested":
            raise ValueError(f"evaluation code {request_id} is already {row.status}")
        row.status, row.approved_at, row.expires_at = "approved", now, now + CODE_LIFETIME
        row.prefix, row.code_hash = token[:12], token_hash(token)
    return Issued(request_id, token, now + CODE_LIFETIME)


def create_code(store: Store, organisation: str, contact_email: str) -> Issued:
    """Request and approve in one step (an admin issuing a code directly)."""
    return approve_code(store, request_code(store, organisation, contact_email))


def list_codes(store: Store) -> list[EvaluationCode]:
    with store.sessions() as session:
        return list(session.scalars(sa.select(EvaluationCode).order_by(EvaluationCode.id)))


def revoke_code(store: Store, code_id: int) -> bool:
    with store.sessions.begin() as session:
        row = session.get(EvaluationCode, code_id)
        if row is None or row.status == "revoked":
            return False
        row.status = "revoked"
    return True


# --- resolving a credential ----------------------------------------------------------------


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def caller_for_token(store: Store, token: str) -> Caller:
    """The key's or code's caller. Raises IdentityError with a message the caller can act on."""
    digest = token_hash(token.strip())
    with store.sessions() as session:
        key = session.scalar(sa.select(ApiKey).where(ApiKey.key_hash == digest))
        code = None if key else session.scalar(sa.select(EvaluationCode).where(EvaluationCode.code_hash == digest))
    return _caller_of(store, key, code)


def caller_for_subject(store: Store, subject: str) -> Caller:
    """The caller a signed session names (`key:<id>` or `code:<id>`), checked again for revocation and expiry."""
    kind, _, number = subject.partition(":")
    if kind not in ("key", "code") or not number.isdigit():
        raise IdentityError("unknown API key or evaluation code")
    with store.sessions() as session:
        key = session.get(ApiKey, int(number)) if kind == "key" else None
        code = session.get(EvaluationCode, int(number)) if kind == "code" else None
    if code is not None and code.code_hash is None:
        code = None  # a request not approved yet
    return _caller_of(store, key, code)


def _caller_of(store: Store, key: ApiKey | None, code: EvaluationCode | None) -> Caller:
    if key is not None:
        if key.revoked_at is not None:
            raise IdentityError("this API key was revoked; ask your traintriage admin for a new one")
        return Caller("key", f"key:{key.id}", f"key:{key.id}", key.name, key.daily_limit)
    if code is not None:
        if code.status == "revoked":
            raise IdentityError("this evaluation code was revoked")
        assert code.expires_at is not None
        if store.clock() >= code.expires_at:
            raise IdentityError(
                f"this evaluation code expired on {code.expires_at:%Y-%m-%d %H:%M} UTC (codes last 14 days); "
                "ask your traintriage admin for an API key to keep using the service")
        return Caller("code", f"code:{code.id}", f"code:{code.id}", code.organisation, code.daily_limit,
                      code.expires_at)
    raise IdentityError("unknown API key or evaluation code")
