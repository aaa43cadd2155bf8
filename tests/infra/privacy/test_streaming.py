"""Secrets that straddle blocks are found and replaced whole; a private key runs across lines and blocks."""

from __future__ import annotations

from collections import Counter

from infra.privacy.scanner import HyperscanScanner
from infra.privacy.streaming import Detector, redacted_blocks, safe_cut
from tests.fixtures.planted_secrets import planted

SCANNER = HyperscanScanner()


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_a_secret_cut_by_a_block_boundary_is_found_at_the_seam() -> None:
    item = next(p for p in planted() if p.kind == "github_token")
    data = b"x" * 1000 + item.line.encode() + b"\n" + b"y" * 1000
    boundary = 1000 + item.line.index(item.secret) + 10
    detector = Detector(SCANNER)
    for block in (data[:boundary], data[boundary:]):
        detector.feed(block)
    assert detector.found
    clean = Detector(SCANNER)
    clean.feed(b"nothing to see\n" * 100)
    assert not clean.found


def test_streamed_redaction_equals_redacting_the_whole_text() -> None:
    items = planted()
    text = "".join(f"line {n}: {item.line}\n" for n, item in enumerate(items)).encode()
    for size in (7, 64, 4096):
        counts: Counter[str] = Counter()
        streamed = b"".join(redacted_blocks(cut(text, size), SCANNER, counts))
        assert streamed == SCANNER.redact(text, Counter())
        assert sum(counts.values()) == len(items)


def test_a_multiline_private_key_is_redacted_from_begin_to_end_across_blocks() -> None:
    body = "\n".join("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" + str(n) for n in range(20))
    text = f"before\n-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\nafter\n".encode()
    counts: Counter[str] = Counter()
    out = b"".join(redacted_blocks(cut(text, 50), SCANNER, counts))
    assert out == b"before\n[REDACTED:pem_private_key]\nafter\n" and counts == {"pem_private_key": 1}


def test_a_private_key_without_its_end_is_redacted_to_the_end() -> None:
    text = b"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nMIIEpA\n"
    assert b"".join(redacted_blocks(cut(text, 8), SCANNER, Counter())) == b"[REDACTED:pem_private_key]"


def test_a_long_line_is_cut_after_a_comma_or_at_the_limit() -> None:
    assert safe_cut(b'{"a": 1, "b": 2', limit=1000) == 0
    assert safe_cut(b'{"a": 1, "b": 2', limit=10) == len(b'{"a": 1,')
    assert safe_cut(b"line one\nline", limit=10) == len(b"line one\n")
    assert safe_cut(b"z" * 50, limit=10) == 50
