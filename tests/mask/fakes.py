"""Obviously fake, format-valid secrets for the masking tests, and the leak check.

Every value is built here from a fixed seed, marked FAKE/fa4e where its alphabet allows,
and never copied from any corpus.
"""

from __future__ import annotations

import random

from traintriage.ingest.mask import Masker

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def fake(alphabet: str, n: int, seed: int, mark: str = "") -> str:
    """``mark`` followed by random characters of ``alphabet``, ``n`` characters in all."""
    rng = random.Random(seed)
    return mark + "".join(rng.choice(alphabet) for _ in range(n - len(mark)))


def hf_token(seed: int = 1) -> str:
    return "hf_" + fake(UPPER + LOWER, 34, seed, "FAKE")


def github_token(prefix: str = "ghp", seed: int = 2) -> str:
    return f"{prefix}_" + fake(ALNUM, 36, seed, "FAKE")


def wandb_key(seed: int = 3) -> str:
    return fake(HEX, 40, seed, "fa4e")


def password(seed: int = 4) -> str:
    return fake(ALNUM + "!#%^*+=-_.~", 18, seed, "Fk")


def mask(text: str) -> str:
    """Mask ``text`` (one or more lines) with a fresh masker, as one log."""
    return Masker().mask_chunk(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")


def leaked(secret: str, output: str) -> bool:
    """The secret-score rule: whole value, or any 8-character piece of a value of 12+ characters."""
    if secret in output:
        return True
    if len(secret) < 12:
        return False
    return any(secret[i : i + 8] in output for i in range(len(secret) - 7))


def assert_masked(line: str, secret: str, kind: str | None = None) -> str:
    """Mask ``line``; assert nothing of ``secret`` is left and, if given, the kind is named."""
    output = mask(line)
    assert not leaked(secret, output), f"{secret!r} leaked in {output!r}"
    if kind is not None:
        assert f"<{kind}-" in output, f"expected a <{kind}-n> placeholder in {output!r}"
    assert output.count("\n") == line.count("\n")
    return output


def assert_kept(line: str) -> None:
    """Mask ``line``; assert it comes back unchanged."""
    output = mask(line)
    assert output == line, f"changed: {line!r} -> {output!r}"
