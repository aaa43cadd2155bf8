"""Scanning and redacting content as it streams by, block after block, never holding it whole.

A secret may straddle two blocks. Finding looks again at each seam (the end of one block and the start of
the next, `SEAM` bytes each way: longer than any secret's start that a rule needs to see). Replacing works
on pieces that end where no secret can go on: after a line break, else (a long single-line JSON) after a
comma; a private key whose END line has not come yet is carried into the next piece, up to `PEM_CARRY`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

import re2

from infra.privacy.rules import PEM_BEGIN
from infra.privacy.scanner import SecretScanner

SEAM = 4 << 10
"""Bytes of a block's end scanned again with the next block's start."""

PIECE_LIMIT = 16 << 20
"""A piece with no line break or comma is cut here anyway (a secret can be split only in such content)."""

PEM_CARRY = 1 << 20
"""How far a private key is carried to find its END line; past it, the rest of the piece is redacted."""

_PEM_BEGIN = re2.compile(PEM_BEGIN.encode())
_PEM_END = re2.compile(rb"-----END [A-Z0-9 ]{0,40}PRIVATE KEY")


class Detector:
    """Whether the content fed to it holds any secret (it stops scanning once it found one)."""

    def __init__(self, scanner: SecretScanner) -> None:
        self.scanner = scanner
        self.found = False
        self._tail = b""

    def feed(self, block: bytes) -> None:
        if self.found or not block:
            return
        seam = self._tail + block[:SEAM]
        self.found = self.scanner.holds_secret(seam) or self.scanner.holds_secret(block)
        self._tail = block[-SEAM:]


def redacted_blocks(blocks: Iterable[bytes], scanner: SecretScanner, counts: Counter[str]) -> Iterator[bytes]:
    """`blocks` with every secret replaced (`SecretScanner.redact`), counted by kind into `counts`."""
    pending = b""
    for block in blocks:
        pending += block
        cut = safe_cut(pending)
        if cut:
            yield scanner.redact(pending[:cut], counts)
            pending = pending[cut:]
    if pending:
        yield scanner.redact(pending, counts)


def safe_cut(data: bytes, limit: int = PIECE_LIMIT) -> int:
    """Where the next piece may end (0: wait for more): past the last line break or comma, before an
    unfinished private key."""
    cut = data.rfind(b"\n") + 1 or (data.rfind(b",") + 1 if len(data) >= limit else 0)
    if not cut and len(data) >= 4 * limit:
        cut = len(data)
    return _before_open_key(data, cut)


def _before_open_key(data: bytes, cut: int) -> int:
    """`cut`, or the start of a private key before it whose END line is not before it (kept for the next piece)."""
    begin = data.rfind(b"-----BEGIN ", max(0, cut - PEM_CARRY), cut)
    if begin < 0 or not _PEM_BEGIN.search(data[begin : begin + 80]):
        return cut
    if _PEM_END.search(data[begin:cut]):
        return cut
    return begin if begin > 0 else (cut if cut - begin >= PEM_CARRY else 0)
