"""Finding and replacing credentials in bytes, all rules at once.

`SecretScanner` is what the store needs: whether a piece of content holds any secret (one pass of every
rule together), and the piece with each secret replaced by `[REDACTED:<kind>]`. Content that holds no
secret (nearly all of it) costs one scan; only a piece that matches is searched rule by rule, with RE2
(linear time, no backtracking, and the groups that say which part of a match is the secret).

`HyperscanScanner` finds with Intel's Hyperscan, `Re2Scanner` with an RE2 set: both one automaton for all
the rules; Hyperscan's is the one that keeps up with the store (bench/micro/redaction.py measures both).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import hyperscan
import re2

from infra.privacy.rules import RULES, Rule

MAX_MEMORY = 256 << 20
"""What RE2 may spend on the set's automaton: the rules together need far less, and a set that runs out
of it stops matching instead of slowing down."""


class SecretScanner(Protocol):
    """Finds the credentials of a rule set in UTF-8 (or any ASCII-compatible) bytes."""

    name: str

    def holds_secret(self, data: bytes) -> bool:
        """Whether any rule matches somewhere in `data`."""
        ...

    def redact(self, data: bytes, counts: Counter[str]) -> bytes:
        """`data` with every secret replaced by `[REDACTED:<kind>]`, each counted by kind into `counts`."""
        ...


def replacement(kind: str) -> bytes:
    return f"[REDACTED:{kind}]".encode()


class Re2Scanner:
    """The rules as one RE2 set for finding, and each rule's own RE2 pattern for replacing."""

    name = "re2-set"

    def __init__(self, rules: Sequence[Rule] = RULES) -> None:
        options = re2.Options()
        options.max_mem = MAX_MEMORY
        self._set = re2.Set.SearchSet(options)
        for rule in rules:
            self._set.Add(rule.pattern)
        self._set.Compile()
        self._rules = list(rules)
        self._replacing = [re2.compile((rule.span or rule.pattern).encode(), options) for rule in rules]

    def holds_secret(self, data: bytes) -> bool:
        return bool(self._set.Match(data))

    def redact(self, data: bytes, counts: Counter[str]) -> bytes:
        for index in sorted(self._set.Match(data) or ()):  # None: no rule matched
            data = self._redact_rule(index, data, counts)
        return data

    def _redact_rule(self, index: int, data: bytes, counts: Counter[str]) -> bytes:
        kind, pattern = self._rules[index].kind, self._replacing[index]
        secret = 1 if pattern.groups else 0
        marker = replacement(kind)

        def replace(match: re2._Match) -> bytes:
            counts[kind] += 1
            whole, start, end = match.group(0), match.start(secret), match.end(secret)
            offset = match.start(0)
            return bytes(whole[: start - offset]) + marker + bytes(whole[end - offset :])

        return bytes(pattern.sub(replace, data))


class HyperscanScanner(Re2Scanner):
    """Finding with one Hyperscan database of every rule; replacing as `Re2Scanner` does."""

    name = "hyperscan"

    def __init__(self, rules: Sequence[Rule] = RULES) -> None:
        super().__init__(rules)
        self._database = hyperscan.Database()
        expressions, flags = zip(*(_hyperscan_form(rule.pattern) for rule in rules), strict=True)
        self._database.compile(
            expressions=list(expressions), ids=list(range(len(rules))), elements=len(rules), flags=list(flags)
        )
        self._scratches = threading.local()

    def _scratch(self) -> hyperscan.Scratch:
        """This thread's scratch space: Hyperscan refuses a scan while another thread uses the same scratch, and the
        API stores uploads on several threads at once."""
        scratch = getattr(self._scratches, "scratch", None)
        if scratch is None:
            scratch = self._scratches.scratch = hyperscan.Scratch(self._database)
        return scratch

    def holds_secret(self, data: bytes) -> bool:
        return bool(self._matching(data, first_only=True))

    def _matching(self, data: bytes, *, first_only: bool = False) -> set[int]:
        found: set[int] = set()

        def seen(rule: int, _start: int, _end: int, _flags: int, _context: object) -> bool:
            found.add(rule)
            return first_only  # True stops the scan

        with contextlib.suppress(hyperscan.ScanTerminated):  # the handler stopped it at the first match
            self._database.scan(data, match_event_handler=seen, scratch=self._scratch())
        return found

    def redact(self, data: bytes, counts: Counter[str]) -> bytes:
        for index in sorted(self._matching(data)):
            data = self._redact_rule(index, data, counts)
        return data


def _hyperscan_form(pattern: str) -> tuple[bytes, int]:
    """A rule's pattern as Hyperscan takes it: case folding as a flag, one report per rule and scan."""
    flags = hyperscan.HS_FLAG_SINGLEMATCH
    if pattern.startswith("(?i)"):
        pattern, flags = pattern[4:], flags | hyperscan.HS_FLAG_CASELESS
    return pattern.encode(), flags


def default_scanner() -> SecretScanner:
    """The scanner the store runs: built once per process (compiling the rules takes a moment)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = HyperscanScanner()
    return _DEFAULT


_DEFAULT: SecretScanner | None = None
