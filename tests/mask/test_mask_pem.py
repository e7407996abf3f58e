"""Private-key blocks: multi-line, indented, rank-prefixed, one-line JSON, and truncated."""

from __future__ import annotations

from tests.mask.cases import Case, check_case
from tests.mask.fakes import B64, fake, leaked, mask
from traintriage.ingest.mask import Masker


def _body(seed: int, lines: int = 12, width: int = 64) -> list[str]:
    return [fake(B64, width, seed * 100 + i, "FAKE" if i == 0 else "") for i in range(lines)] + ["FaKeFaKe=="]


def _block(label: str, body: list[str], indent: str = "") -> list[str]:
    return [f"{indent}-----BEGIN {label}-----", *(indent + b for b in body), f"{indent}-----END {label}-----"]


def _assert_body_gone(body: list[str], output: str) -> None:
    for line in body:
        assert not leaked(line, output), f"{line!r} leaked"


def test_rsa_block_between_log_lines() -> None:
    body = _body(1)
    lines = [
        "[2024-01-01 00:00:00,000] DEBUG tls: loaded client key:",
        *_block("RSA PRIVATE KEY", body),
        "step=1 loss=2.5",
    ]
    output = mask("\n".join(lines))
    _assert_body_gone(body, output)
    out_lines = output.split("\n")
    assert len(out_lines) == len(lines)
    assert out_lines[1] == "-----BEGIN RSA PRIVATE KEY-----"
    assert out_lines[-2] == "-----END RSA PRIVATE KEY-----"
    assert out_lines[-1] == "step=1 loss=2.5"
    assert set(out_lines[2:-2]) == {"<PRIVATE_KEY-1>"}


def test_indented_openssh_key_in_yaml() -> None:
    body = _body(2, width=70)
    lines = [
        "  ssh_key: |",
        *_block("OPENSSH PRIVATE KEY", body, indent="    "),
        "  repo: git@github.com:x/y.git",
    ]
    output = mask("\n".join(lines))
    _assert_body_gone(body, output)
    assert "    <PRIVATE_KEY-1>" in output.split("\n")
    assert output.endswith("  repo: git@github.com:x/y.git")


def test_rank_prefixed_encrypted_key() -> None:
    body = _body(3)
    lines = [f"[rank0]: {line}" for line in _block("ENCRYPTED PRIVATE KEY", body)]
    output = mask("\n".join(lines))
    _assert_body_gone(body[:-1], output)
    assert output.split("\n")[0] == "[rank0]: -----BEGIN ENCRYPTED PRIVATE KEY-----"


def test_ec_key_with_armor_headers() -> None:
    body = _body(4, lines=3)
    lines = [
        "-----BEGIN EC PRIVATE KEY-----",
        "Proc-Type: 4,ENCRYPTED",
        "DEK-Info: AES-128-CBC,FA4E",
        "",
        *body,
        "-----END EC PRIVATE KEY-----",
    ]
    output = mask("\n".join(lines))
    _assert_body_gone(body, output)
    assert "Proc-Type: 4,ENCRYPTED" in output


def test_truncated_key_does_not_swallow_the_log() -> None:
    body = _body(5, lines=4)
    tail = [f"step={i}, loss=2.{i}" for i in range(10)]
    output = mask("\n".join(["-----BEGIN PRIVATE KEY-----", *body[:-1], *tail]))
    _assert_body_gone(body[:-1], output)
    for line in tail[3:]:
        assert line in output


def test_one_line_json_key() -> None:
    body = _body(6)
    line = (
        '  "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + "\\n".join(body)
        + '\\n-----END PRIVATE KEY-----\\n",'
    )
    output = mask(line)
    _assert_body_gone(body, output)
    assert (
        output
        == '  "private_key": "-----BEGIN PRIVATE KEY-----\\n<PRIVATE_KEY-1>\\n-----END PRIVATE KEY-----\\n",'
    )


def test_one_line_key_cut_short() -> None:
    body = _body(7)
    line = '{"private_key": "-----BEGIN PRIVATE KEY-----\\n' + "\\n".join(body[:5])
    check_case(Case("private-key", line, body[0], "PRIVATE_KEY"))


def test_block_split_across_chunks() -> None:
    body = _body(8)
    text = "\n".join(["key follows", *_block("RSA PRIVATE KEY", body), "done"]) + "\n"
    data = text.encode()
    cut = data.index(body[5].encode())
    cut = data.rindex(b"\n", 0, cut) + 1  # chunks end on line boundaries
    masker = Masker()
    output = (masker.mask_chunk(data[:cut]) + masker.mask_chunk(data[cut:])).decode()
    _assert_body_gone(body, output)
    assert output == mask(text)


def test_certificates_are_not_secrets() -> None:
    lines = ["-----BEGIN CERTIFICATE-----", fake(B64, 64, 9), "-----END CERTIFICATE-----"]
    assert mask("\n".join(lines)) == "\n".join(lines)


def test_same_key_printed_twice_gets_the_same_placeholder() -> None:
    block = _block("RSA PRIVATE KEY", _body(10))
    output = mask("\n".join([*block, "again:", *block]))
    assert "<PRIVATE_KEY-2>" not in output
