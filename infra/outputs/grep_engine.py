"""The regex engine behind grep: Google RE2, because patterns come from LLM agents and users.

RE2 matches in time linear in the input (no backtracking), so `(a+)+$` over a megabyte of `a`
answers in milliseconds instead of hanging a worker (ReDoS). The price is that constructs which
need backtracking do not exist in RE2; they are refused here with a message that names the
construct, so the agent can rewrite the pattern instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import re2

from extraction.documents.line_matchers import (
    LineMatcher,
    LiteralMatcher,
    check_pattern,
    every_line,
    iter_line_hits,
    iter_view_hits,
)
from extraction.documents.lines import decode
from extraction.errors import InvalidInput, PatternError

MAX_PATTERN_CHARS = 4096
MAX_MEM = 64 << 20  # RE2's program + DFA cache budget; past it RE2 falls back to its (still linear) NFA

_HINT = (
    "RE2 guarantees linear-time matching (no pattern can hang it), so it has no backreferences, lookaround, "
    "atomic groups, possessive quantifiers or conditionals. Rewrite the pattern, or set regex=false for a "
    "plain-text search"
)

_OPERATORS = (  # RE2 "invalid perl operator: <op>" → what the user wrote
    ("(?=", "lookahead (?=...)"),
    ("(?!", "negative lookahead (?!...)"),
    ("(?<=", "lookbehind (?<=...)"),
    ("(?<!", "negative lookbehind (?<!...)"),
    ("(?>", "atomic groups (?>...)"),
    ("(?(", "conditionals (?(...)...)"),
    ("(?#", "inline comments (?#...)"),
    ("(?P=", "named backreferences (?P=name)"),
)
_ESCAPES = {  # RE2 "invalid escape sequence: \\<c>" → what the user wrote
    **{str(d): f"backreferences (\\{d})" for d in range(1, 10)},
    "k": "named backreferences (\\k<name>)",
    "Z": "the \\Z anchor (use $ or \\z)",
    "G": "the \\G anchor",
}
_UNSAFE_FOR_BLOCKS = re.compile(r"\\[Az]|\(\?[a-zA-Z-]*m")  # anchors/flags whose meaning differs per line vs per block


def compile_matcher(pattern: str, *, regex: bool, ignore_case: bool) -> LineMatcher:
    """The matcher grep uses: a `LiteralMatcher` for plain text, an `Re2Matcher` for regexes."""
    check_pattern(pattern)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidInput(
            f"the pattern is {len(pattern)} chars long; the limit is {MAX_PATTERN_CHARS}", pattern=pattern[:100]
        )
    if not regex:
        return Re2LiteralMatcher(pattern, ignore_case)
    return Re2Matcher(pattern, ignore_case=ignore_case)


def _options(*, ignore_case: bool, never_nl: bool) -> re2.Options:
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.never_nl = never_nl
    options.max_mem = MAX_MEM
    options.log_errors = False  # errors become PatternError; RE2 would also print them to stderr
    return options


def _compile(pattern: str | bytes, options: re2.Options) -> re2._Regexp:
    try:
        return re2.compile(pattern, options)
    except re2.error as err:
        shown = pattern.decode("utf-8", "replace") if isinstance(pattern, bytes) else pattern
        raise pattern_error(shown, err.args[0] if err.args else str(err)) from None


def pattern_error(pattern: str, detail: str | bytes) -> PatternError:
    """A PatternError that names the unsupported construct when RE2's message reveals one."""
    detail = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else detail
    construct = _construct(detail)
    if construct:
        message = f"the regex '{pattern}' uses {construct}, which the regex engine (RE2) does not support. {_HINT}."
    elif "too large" in detail or "too big" in detail:
        message = f"the regex '{pattern}' is too large for the engine's memory budget ({detail}); simplify it"
    else:
        message = f"invalid regex '{pattern}': {detail} (the engine is RE2)"
    return PatternError(message, pattern=pattern, engine="re2", detail=detail, construct=construct)


def _construct(detail: str) -> str | None:
    if detail.startswith("invalid perl operator:"):
        op = detail.split(":", 1)[1].strip()
        return next((name for prefix, name in _OPERATORS if prefix.startswith(op) or op.startswith(prefix)), None)
    if detail.startswith("invalid escape sequence:"):
        seq = detail.split(":", 1)[1].strip()
        return _ESCAPES.get(seq[1:2]) if seq.startswith("\\") else None
    if detail.startswith("bad repetition operator:"):
        return f"possessive quantifiers ({detail.split(':', 1)[1].strip()})"
    return None


class Re2LiteralMatcher(LiteralMatcher):
    """A `LiteralMatcher` (same per-line meaning) whose whole-block search runs in RE2.

    RE2 finds a literal with memchr-style skipping, faster than `bytes.find` (`bench/micro`). It runs on raw
    bytes in Latin-1 mode (byte for byte, like `bytes.find`); ignore_case takes this path only
    for an ASCII needle over an ASCII block, where ASCII case folding is all casefold() does.
    Everything else falls back to the pure matcher's own paths.
    """

    def __init__(self, text: str, ignore_case: bool = False) -> None:
        super().__init__(text, ignore_case)
        exact_bytes = not ignore_case and "\ufffd" not in text
        self._re = None
        if exact_bytes or (ignore_case and text.isascii()):
            options = _options(ignore_case=ignore_case, never_nl=False)
            options.encoding, options.literal = re2.Options.Encoding.LATIN1, True
            self._re = _compile(text.encode("utf-8"), options)

    def candidate_offsets(self, block: bytes, start: int, end: int) -> Iterator[int]:
        if self._re is None or (self.ignore_case and not _ascii(block, start, end)):
            return super().candidate_offsets(block, start, end)
        return iter_line_hits(block, start, end, lambda p: _first(self._re, block, p, end))


def _ascii(block: bytes, start: int, end: int) -> bool:
    """Whether `block[start:end]` is ASCII; grep scans a block in slices, so not the whole block each time."""
    return block.isascii() if start == 0 and end == len(block) else block[start:end].isascii()


def _first(regexp: re2._Regexp, data: bytes, pos: int, end: int) -> int:
    found = regexp.search(data, pos, end)
    return found.start() if found else -1


class Re2Matcher:
    """An RE2 regex, tried per line (`search`) and over whole blocks (`candidate_offsets`).

    The block regex runs in multi-line mode with `never_nl` (no match may cross a newline), so
    a block hit is a hit inside one line. Where raw bytes would not mean what the decoded line
    means — invalid UTF-8 (which decodes to U+FFFD) or CRLF (`$` must match before `\\r`) — the
    block is searched through a decoded, CRLF-normalised view with the same lines.
    """

    def __init__(self, pattern: str, *, ignore_case: bool = False) -> None:
        self.pattern, self.ignore_case = pattern, ignore_case
        self._line = _compile(pattern, _options(ignore_case=ignore_case, never_nl=False))
        self._block = None
        if not _UNSAFE_FOR_BLOCKS.search(pattern):
            self._block = _compile("(?m)" + pattern, _options(ignore_case=ignore_case, never_nl=True))

    def search(self, line: str) -> bool:
        return self._line.search(line) is not None

    def span(self, line: str) -> tuple[int, int] | None:
        found = self._line.search(line)
        return found.span() if found else None

    def candidate_offsets(self, block: bytes, start: int, end: int) -> Iterator[int]:
        if self._block is None:
            return every_line(block, start, end)
        has_cr = block.find(b"\r", start, end) >= 0
        if not has_cr and _ascii(block, start, end):
            return iter_line_hits(block, start, end, lambda p: self._find(block, p, end))
        text = decode(block[start:end])
        if not has_cr and "\ufffd" not in text:  # valid UTF-8: the raw bytes mean what the lines mean
            return iter_line_hits(block, start, end, lambda p: self._find(block, p, end))
        view = text.replace("\r\n", "\n").removesuffix("\r").encode("utf-8")
        return iter_view_hits(block, start, end, view, lambda p: self._find(view, p, len(view)))

    def _find(self, data: bytes, pos: int, end: int) -> int:
        return _first(self._block, data, pos, end)
