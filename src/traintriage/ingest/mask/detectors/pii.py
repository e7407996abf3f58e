"""Personal and network data: e-mail addresses, IPv4/IPv6 and MAC addresses, user names.

Addresses get numbered placeholders (``<IP-3>``) that stay the same throughout a log, so
"rank 5 on <IP-3> timed out" still correlates with "<IP-3>:29500 refused". Validation is
left to the standard library's ``ipaddress``; version strings, netmasks, loopback, C++
scopes (``c10::``) and PCI bus ids are not addresses and stay.
"""

from __future__ import annotations

import ipaddress

from traintriage.ingest.mask.detectors._syntax import ASSIGN, KEY_CLOSE, OPEN
from traintriage.ingest.mask.filters import (
    is_git_host_address,
    is_glued_to_word,
    is_not_ipv6,
    is_null_mac,
    is_placeholder,
    is_reserved_ipv4,
    is_service_user,
    is_version_context,
)
from traintriage.ingest.mask.model import Candidate, Detector, LazyRegex

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"


def _lower(value: str) -> str:
    return value.lower()


def _ipv6_identity(value: str) -> str:
    try:
        return ipaddress.IPv6Address(value.split("%", 1)[0]).compressed
    except ValueError:
        return value.lower()


def _dashed_ipv4_identity(value: str) -> str:
    return value.replace("-", ".")


def _not_ipv4(c: Candidate) -> bool:
    try:
        ipaddress.IPv4Address(c.value.replace("-", "."))
    except ValueError:
        return True
    return False


EMAIL = Detector(
    name="email",
    kind="EMAIL",
    prefilter=(r"[A-Za-z0-9._%+-]@[A-Za-z0-9-]+\.[A-Za-z]{2}",),
    pattern=LazyRegex(
        r"(?<![A-Za-z0-9._%+-])(?P<s>[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
        r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,24})(?![A-Za-z0-9-])"
    ),
    priority=45,
    filters=(is_git_host_address,),
    normalize=_lower,
    doc="E-mail addresses (git@github.com remotes excepted).",
)

IPV4 = Detector(
    name="ipv4",
    kind="IP",
    prefilter=(r"[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]",),
    pattern=LazyRegex(r"(?<![0-9.])(?P<s>" + _OCTET + r"(?:\." + _OCTET + r"){3})(?![0-9]|\.[0-9])"),
    priority=30,
    filters=(is_glued_to_word, is_version_context, is_reserved_ipv4),
    doc="IPv4 addresses; ports, CIDR suffixes and loopback/netmask addresses stay.",
)

IPV4_HOSTNAME = Detector(
    name="ipv4-in-hostname",
    kind="IP",
    prefilter=(r"ip-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}-[0-9]",),
    pattern=LazyRegex(r"(?<![A-Za-z0-9-])ip-(?P<s>[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3})(?![0-9-])"),
    priority=31,
    filters=(_not_ipv4,),
    normalize=_dashed_ipv4_identity,
    doc="Cloud host names that spell an address (ip-10-0-1-23.ec2.internal); same placeholder as 10.0.1.23.",
)

IPV6 = Detector(
    name="ipv6",
    kind="IP",
    prefilter=(r"[0-9A-Fa-f]::[0-9A-Fa-f]", r"(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]"),
    pattern=LazyRegex(
        r"(?<![\w.])(?P<s>[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:%[A-Za-z0-9_.]{1,16})?)(?![\w:.])"
    ),
    priority=30,
    filters=(is_not_ipv6,),
    normalize=_ipv6_identity,
    doc="IPv6 addresses validated by the ipaddress module; ::1 and short C++-scope look-alikes stay.",
)

MAC = Detector(
    name="mac-address",
    kind="MAC",
    prefilter=(
        r"[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}",
        r"[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}",
    ),
    pattern=LazyRegex(
        r"(?<![0-9A-Fa-f:.-])(?P<s>[0-9A-Fa-f]{2}(?P<sep>[:-])[0-9A-Fa-f]{2}(?:(?P=sep)[0-9A-Fa-f]{2}){4}"
        r"(?:(?P=sep)[0-9A-Fa-f]{2}){0,14})(?![0-9A-Fa-f:-])"
    ),
    priority=30,
    filters=(is_null_mac,),
    normalize=_lower,
    doc="Ethernet MAC and InfiniBand hardware addresses (6 to 20 octets); broadcast stays.",
)

_USER_CHARS = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}"
HOME_PATH_USER = Detector(
    name="home-path-user",
    kind="USER",
    prefilter=(
        r"/(?:home|Users|users|var/mail|var/spool/mail)/[A-Za-z0-9_]",
        r"[A-Za-z]:(?:\\\\|\\|/)(?:Users|Documents and Settings)",
    ),
    pattern=LazyRegex(
        r"/(?:home|Users|users|var/mail|var/spool/mail)/(?P<s>" + _USER_CHARS + r")(?![A-Za-z0-9._-])"
        r"|(?i:[A-Z]:(?:\\\\|\\|/)(?:Users|Documents and Settings)(?:\\\\|\\|/))(?P<s2>[^\\/\s'\":*?<>|]{1,64})"
    ),
    priority=40,
    filters=(is_service_user, is_placeholder),
    learn=True,
    doc="User names in home directories (/home/<u>, /Users/<u>, C:\\Users\\<u>).",
)

USER_FIELD = Detector(
    name="user-field",
    kind="USER",
    prefilter=(
        r"(?:USER|LOGNAME|USERNAME|USER_NAME|user|username|user_name|login_user|owner)(?:\\?[\"'`])?\]?[ \t]{0,3}[:=]",
        r"[ug]id=[0-9]+\(",
    ),
    pattern=LazyRegex(
        r"(?<![\w-])(?:(?:[A-Z][A-Z0-9]*_)*(?:USER|LOGNAME|USERNAME|USER_NAME)|user|username|user_name|login_user"
        r"|owner)" + KEY_CLOSE + ASSIGN + OPEN + r"(?P<s>[A-Za-z_][A-Za-z0-9._-]{1,63})(?![A-Za-z0-9._@-])"
        r"|\b[ug]id=[0-9]+\((?P<s2>[A-Za-z_][A-Za-z0-9._-]{0,63})\)"
    ),
    priority=40,
    filters=(is_service_user, is_placeholder),
    learn=True,
    doc="USER=, LOGNAME=, SLURM_JOB_USER=, user= fields of env dumps and sysinfo lines; `id` output.",
)

SSH_USER = Detector(
    name="ssh-user",
    kind="USER",
    prefilter=(
        # "@" then an address: keyed on the literal, this costs the scanner a third less than
        # the same test led by the user name's character class (measured, make bench-patterns).
        r"@\[?[0-9A-Fa-f]",
        r"ssh[ \t][^\n@]*@",
        r"@[A-Za-z0-9.-]+: Permission denied",
        r"@[A-Za-z0-9.-]+:[~/][^ \t\n$#]*[$#]",
    ),
    pattern=LazyRegex(
        r"(?<![\w.@-])(?P<s>[A-Za-z_][A-Za-z0-9._-]{0,31})@(?=(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![0-9.])"
        r"|\[?[0-9A-Fa-f]{1,4}:[0-9A-Fa-f:]+\]?)"
        r"|\bssh\b[^\n@]{0,200}?[ \t](?P<s2>[A-Za-z_][A-Za-z0-9._-]{0,31})@[A-Za-z0-9.-]+"
        r"|(?<![\w.@-])(?P<s3>[A-Za-z_][A-Za-z0-9._-]{0,31})@[A-Za-z0-9.-]+: Permission denied"
        r"|^(?:\([\w.-]{1,40}\)[ \t]*)?(?P<s4>[A-Za-z_][A-Za-z0-9._-]{0,31})@[A-Za-z0-9.-]+:[~/][^\s$#]{0,200}[$#]"
    ),
    priority=40,
    filters=(is_service_user,),
    learn=True,
    doc="Login names in user@host: ssh targets, 'Permission denied' lines, shell prompts (me@node:~$).",
)

DETECTORS = (EMAIL, IPV4, IPV4_HOSTNAME, IPV6, MAC, HOME_PATH_USER, USER_FIELD, SSH_USER)
