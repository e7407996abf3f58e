"""Where a webhook may point: not at the server's own network unless the operator says so.

Any member can create an alert rule, and the server then POSTs to the URL they gave. Left
open, that lets a member make the server call its own admin ports, the cloud metadata
service (169.254.169.254) or hosts on the internal network (server-side request forgery).
So loopback, private, link-local, shared, multicast and reserved addresses are refused,
both when the rule is created and at every delivery (a name may resolve elsewhere later),
unless they fall in `TRAINTRIAGE_WEBHOOK_ALLOW_NETS` (comma-separated networks, e.g. an
internal chat server's `10.20.0.0/16`).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from urllib.parse import urlsplit

ALLOW_NETS_ENV = "TRAINTRIAGE_WEBHOOK_ALLOW_NETS"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class ForbiddenTarget(ValueError):
    """The URL's host is, or resolves to, an address webhooks may not reach."""


def allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    nets = []
    for item in os.environ.get(ALLOW_NETS_ENV, "").split(","):
        if item.strip():
            try:
                nets.append(ipaddress.ip_network(item.strip(), strict=False))
            except ValueError:
                continue  # a typo allows nothing rather than everything
    return nets


def is_internal(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


def check_address(address: Address) -> None:
    if is_internal(address) and not any(address in net for net in allowed_networks()):
        raise ForbiddenTarget(f"webhooks may not reach {address} (an internal address); the server's "
                              f"operator can allow it with {ALLOW_NETS_ENV}")


def check_url(url: str, *, resolve: bool = True) -> None:
    """Refuse a URL whose host is an internal address, or (with `resolve`) resolves to one."""
    host = urlsplit(url).hostname or ""
    literal = _address_literal(host)
    if literal is not None:
        check_address(literal)
        return
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        check_address(ipaddress.ip_address("127.0.0.1"))
    if not resolve:
        return
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise ForbiddenTarget(f"cannot resolve the webhook host {host!r}") from exc
    for info in infos:
        check_address(ipaddress.ip_address(info[4][0]))


def _address_literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return None  # a name, not an address
