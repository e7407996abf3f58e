"""False-positive filters: the second axis, apart from the detectors.

Each filter answers one question about a candidate span ("is this a placeholder?", "is
this dotted quad a version?") and returns True when the text must be kept. Detectors list
the filters that apply to them; the same filter serves many detectors.
"""

from __future__ import annotations

import ipaddress
import re

from traintriage.ingest.mask.model import Candidate, Filter

_PLACEHOLDER = re.compile(
    r"""(?ix)
    ^(?:
        \*+ | x{3,} | \.{3,} | -+ | _+ | \#+ | \?+ | 0+       # masked or empty
      | none | null | nil | undefined | true | false | yes | no | on | off
      | <[^<>]*> | \[[^\[\]]*\] | \{\{.*\}\} | \$\{[^}]*\} | \$\(.*\) | \$[A-Za-z_]\w*
      | %\([^)]*\)[sdr] | %[A-Za-z_]\w*% | @[A-Za-z_]\w*@ | \{[A-Za-z_]\w*\} | \{\d*\}
      | (?:<)?redacted(?:>)? | \[redacted\] | \[filtered\] | hidden | masked | secret | password
      | changeme | change_me | your[_-]\w+ | my[_-]\w+ | dummy\w* | placeholder | example\w*
      | not[_-]?set | unset | empty | required | optional | str | string | int | env
    )$
    """
)
_REFERENCE = re.compile(
    r"""(?x)
    ^(?:
        [a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+(?:\(\))?   # attribute path: tokenizer.eos_token
      | [A-Za-z_][\w.]*\(.*                               # a call: os.getenv(...), get_token()
      | (?:os\.)?environ\[.*                              # os.environ["X"]
      | [A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+                     # an env var name: HF_TOKEN, DB_PASSWORD
    )$
    """
)
_PATH = re.compile(r"^(?:~|\.{1,2})?/(?:[a-z0-9._-]+/)*[a-z0-9._-]*(?:\.[a-z0-9]{1,6})?$|^[A-Za-z]:\\")
_LOWER_WORDS = re.compile(r"^[a-z]+(?:[_ -][a-z]+)*$")
_UPPER_WORD = re.compile(r"^[A-Z]+$")
_NUMBER = re.compile(r"^[+-]?[\d.,:eE_+-]+$")
_PASSWORD_KEY = re.compile(r"(?i)pass|pwd")
_SPECIAL_TOKEN_KEY = re.compile(
    r"(?i)(?:^|[^a-z])(?:pad|eos|bos|unk|sep|cls|mask|image|audio|video|start|end|special|default|"
    r"chat|system|user|assistant|think|tool|decoder_start|prefix|suffix|middle|stop|sos|boi|eoi)_?token$"
)
_ANSI_BEFORE = re.compile(r"\x1b\[[0-9;]*m$")
# fmt: off
_VERSION_WORDS = frozenset({
    "cudnn", "cuda", "nccl", "driver", "cublas", "cufft", "curand", "cusolver", "cusparse", "nvjitlink",
    "nvtx", "nvrtc", "tensorrt", "trt", "python", "torch", "triton", "jax", "jaxlib", "openmpi", "mpi",
    "ucx", "efa", "libfabric", "gcc", "glibc", "kernel", "firmware", "bios", "vbios", "fw", "rev", "build",
    "release", "linux", "ubuntu", "debian", "centos", "rhel", "rocky", "ofed", "mofed", "mlnx_ofed", "ver",
    "vers", "v",
})
# fmt: on
_WORD_REVERSED = re.compile(r"[\w-]+")
_CLI_FLAG = re.compile(r"^--?[A-Za-z][\w-]*$")
_VERSION_AFTER = re.compile(
    r"(?:[+~]|-\d|-(?:cu|rc|dev|post|alpha|beta|[a-z]*\d*ubuntu|el\d|py\d)|\.\d)", re.I
)
MAX_SPREAD_LENGTH = 512
_NETMASK_OCTETS = frozenset({"0", "128", "192", "224", "240", "248", "252", "254", "255"})
# Accounts that belong to no person: masking them hides nothing and breaks paths.
# fmt: off
_SERVICE_USERS = frozenset({
    "root", "user", "username", "runner", "jovyan", "ubuntu", "ec2-user", "centos", "admin", "vscode",
    "codespace", "codespaces", "nobody", "shared", "public", "guest", "builder", "worker", "app", "ray",
    "git", "docker", "jenkins", "gitlab-runner", "azureuser", "cloudshell", "colab", "sagemaker-user",
    "linuxbrew", "me", "you", "name", "your_name", "yourname", "your-user", "someone", "example",
})
# fmt: on
# Words that name things in a training log: never spread such a "user name" over the log.
# fmt: off
_COMMON_WORDS = frozenset({
    "data", "train", "training", "model", "models", "test", "tests", "work", "home", "share", "scratch",
    "project", "projects", "deploy", "build", "nvidia", "cuda", "python", "conda", "local", "cache", "dev",
    "prod", "team", "lab", "research", "ml", "ai", "gpu", "node", "master", "main", "checkpoint", "logs",
    "output", "outputs", "runs", "run", "src", "code", "config", "configs", "eval", "bin", "lib", "opt",
    "tmp", "var", "usr", "etc", "mnt", "workspace", "torch", "trainer", "bot", "service", "system",
    "mlflow", "optuna", "postgres", "mysql", "redis", "mongo", "wandb", "minio", "airflow", "jupyter",
    "slurm", "hadoop", "spark", "kafka", "nginx", "daemon", "www-data", "svc", "ci", "deployer", "evals",
})
# fmt: on


def is_placeholder(c: Candidate) -> bool:
    """Templating, masking and null values (``${HF_TOKEN}``, ``<pad>``, ``****``, ``None``)."""
    return bool(_PLACEHOLDER.match(c.value.strip()))


def is_reference(c: Candidate) -> bool:
    """A name that points at a secret rather than holds one (``args.token``, ``HF_TOKEN``)."""
    return bool(_REFERENCE.match(c.value))


def is_path(c: Candidate) -> bool:
    """A file path (``GOOGLE_APPLICATION_CREDENTIALS=/etc/sa.json``)."""
    return bool(_PATH.match(c.value))


def shorter_than(n: int) -> Filter:
    """Values below ``n`` characters are config words, not credentials."""

    def short(c: Candidate) -> bool:
        return len(c.value) < n

    short.__name__ = f"shorter_than_{n}"
    return short


def is_plain_word(c: Candidate) -> bool:
    """A lowercase word or an all-caps word: a setting (``bearer``, ``expired``), not a secret.

    Under a password key a lowercase word may still be the password, so it is kept there
    only when it is a known placeholder (``is_placeholder``).
    """
    value = c.value
    if _UPPER_WORD.match(value):
        return True
    return bool(_LOWER_WORDS.match(value)) and not _PASSWORD_KEY.search(c.key)


def is_number(c: Candidate) -> bool:
    """Numbers (``token: 1024``) unless the key says password, where digits are a PIN."""
    return bool(_NUMBER.match(c.value)) and not _PASSWORD_KEY.search(c.key)


def is_special_token_key(c: Candidate) -> bool:
    """Tokenizer settings (``eos_token: </s>``, ``pad_token="<pad>"``), not credentials."""
    return bool(_SPECIAL_TOKEN_KEY.search(c.key))


def is_glued_to_word(c: Candidate) -> bool:
    """A dotted quad inside a word (``x1.2.3.4``) unless an ANSI colour code is what precedes it."""
    if c.start == 0 or not c.line[c.start - 1].isalpha():
        return False
    return not _ANSI_BEFORE.search(c.line[max(0, c.start - 16) : c.start])


def is_version_context(c: Candidate) -> bool:
    """``cudnn=8.9.2.26``, ``nvidia-cublas-cu12==12.1.3.1``, ``v1.2.3.4``, ``1.2.3.4+cu118``."""
    line, start, end = c.line, c.start, c.end
    if _VERSION_AFTER.match(line, end, end + 12):
        return True
    if start == 0:
        return False
    before = line[max(0, start - 40) : start]
    if before.endswith(("==", ">=", "<=", "~=", "!=")):
        return True
    if before[-1] in "vV" and (len(before) == 1 or not before[-2].isalpha()):
        return True
    word = _WORD_REVERSED.match(before.rstrip(" \t:=/(")[::-1])
    if word is None:
        return False
    name = word.group(0)[::-1].lower()
    return name in _VERSION_WORDS or "version" in name


def is_reserved_ipv4(c: Candidate) -> bool:
    """Loopback, unspecified, broadcast and netmasks identify nobody and help diagnosis."""
    value = c.value
    if value.startswith("127.") or value == "0.0.0.0":
        return True
    octets = value.split(".")
    return octets[0] == "255" and all(o in _NETMASK_OCTETS for o in octets)


def is_not_ipv6(c: Candidate) -> bool:
    """Colon groups that are not a routable address: C++ scopes, times, ``::1``, ``fe80::1``."""
    value = c.value.split("%", 1)[0]
    try:
        address = ipaddress.IPv6Address(value)
    except ValueError:
        return True
    if address.is_loopback or address.is_unspecified:
        return True
    groups = [g for g in value.split(":") if g]
    if len(groups) >= 3:
        return False
    return not (len(groups) == 2 and re.match(r"(?i)^(?:fe[89ab]|f[cd]|[23])", groups[0]))


def is_null_mac(c: Candidate) -> bool:
    """Broadcast and all-zero hardware addresses (``ff:ff:ff:ff:ff:ff``) identify no machine."""
    digits = set(re.sub(r"[:-]", "", c.value.lower()))
    return digits <= {"0"} or digits <= {"f"}


def is_service_user(c: Candidate) -> bool:
    """Shared or default accounts (``root``, ``ubuntu``, ``runner``): not personal data."""
    return c.value.lower() in _SERVICE_USERS


def is_git_host_address(c: Candidate) -> bool:
    """``git@github.com`` is an SSH remote, not a person's mail address."""
    local, _, domain = c.value.partition("@")
    return local.lower() == "git"


def may_spread(kind: str, value: str) -> bool:
    """Whether a value found once is masked wherever else it appears later in the log.

    A user name that is also a common word would blank unrelated paths, and very short
    values would hit by chance, so only distinctive values spread.
    """
    if len(value) > MAX_SPREAD_LENGTH:
        return False
    if kind == "USER":
        return len(value) >= 4 and value.lower() not in _COMMON_WORDS and value.lower() not in _SERVICE_USERS
    return len(value) >= 8


def is_pem_marker(c: Candidate) -> bool:
    """``-----BEGIN ...``: the key block itself is masked by the private-key detector."""
    return c.value.startswith("-----")


def is_cli_flag(c: Candidate) -> bool:
    """The next flag of a command line (``--token --other``), not the token's value.

    A quoted value is a value even when it starts with a dash (``--password '-x9'``).
    """
    if c.start > 0 and c.line[c.start - 1] in "'\"":
        return False
    return bool(_CLI_FLAG.match(c.value))
