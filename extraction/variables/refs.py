"""The `$ref` grammar: one scanner shared by whole-value parsing, interpolation and streaming.

Grammar (docs/spec/variables.md §Syntax: `$var.field.sub`, plus array indexes)::

    ref    = "$" name { "." field | "[" index "]" }
    name   = [A-Za-z_][A-Za-z0-9_]*          the variable (ASCII, as names are)
    field  = a Unicode identifier            Python's str.isidentifier(): XID_Start XID_Continue*
    index  = ["-"] 1-18 ASCII digits         negative counts from the end, as in Python

Where a reference starts and stops inside longer text (each rule has a test):

* `$` starts a reference only when the character before it is not an ASCII letter, digit, `_`
  or another `$`: `US$5`, `a$b`, shell `$$` and LaTeX `$$x^2$$` stay literal text.
* The name must be followed by something that cannot continue a word: `$café` is no reference
  (not `$caf` + `é`).
* `.` joins a field only when a field name follows: `costs $5.`, `see $orders.` (end of a
  sentence), `$price.50` keep their dots as text.
* `[` joins an index only as a complete `[digits]` / `[-digits]`: `$x[abc]` and `$x[ 1]` end
  the reference before the `[`.
* `$` followed by a non-letter (`$5`, `$ `, `$(…)`, `${HOME}`) is just a dollar sign.
* A reference is at most `MAX_REF_CHARS` long; a longer `$…` run is literal text. This bounds
  what a stream must hold back and what one reference can cost.

There is no escape syntax: text is never altered except by substituting a reference.

Streaming: `scan_ref(..., final=False)` answers `NEED_MORE` when the text ended before the
reference's extent was decided (`$weather_` could become `$weather_nyc`; `$x.` could become
`$x.field`). `find_refs` then reports where that undecided suffix starts, so a stream holds
back exactly that suffix and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from extraction.variables.errors import VariableError

PathKey = str | int
Path = tuple[PathKey, ...]

MAX_REF_CHARS: Final = 1024
MAX_INDEX_DIGITS: Final = 18
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASCII_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ASCII_NAME_START = _ASCII_NAME_CHARS - frozenset("0123456789")
_DIGITS = frozenset("0123456789")
_NAME_TAIL = re.compile(r"[A-Za-z0-9_]*")


class InvalidReference(VariableError):
    """A text that should be exactly one `$ref` is not (or a `Ref` was built with a bad part)."""

    code = "invalid_reference"


@dataclass(frozen=True)
class Ref:
    """A parsed reference: the variable `name` and the `path` of fields (str) and indexes (int)."""

    name: str
    path: Path = ()

    def __post_init__(self) -> None:
        if not _NAME_RE.fullmatch(self.name):
            raise InvalidReference(f"invalid variable name {self.name!r} in a reference", name=self.name)
        for key in self.path:
            _check_key(key)
        if len(format_ref(self)) > MAX_REF_CHARS:
            raise InvalidReference(f"a reference is at most {MAX_REF_CHARS} chars long", name=self.name)

    def __str__(self) -> str:
        return format_ref(self)

    @classmethod
    def _scanned(cls, name: str, path: Path) -> Ref:
        """A Ref the scanner built: valid by construction, so validation is skipped (hot path)."""
        ref = object.__new__(cls)
        object.__setattr__(ref, "name", name)
        object.__setattr__(ref, "path", path)
        return ref

    def prefix(self, steps: int) -> Ref:
        """The reference cut to its first `steps` path keys (where an error happened)."""
        return Ref(self.name, self.path[:steps])


def _check_key(key: object) -> None:
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise InvalidReference(f"a path key is a field name or an int index, not {key!r}", key=repr(key))
    if isinstance(key, str) and not key.isidentifier():
        raise InvalidReference(f"field {key!r} cannot be written in a reference (not an identifier)", key=key)
    if isinstance(key, int) and len(str(abs(key))) > MAX_INDEX_DIGITS:
        raise InvalidReference(f"index {key} has more than {MAX_INDEX_DIGITS} digits", key=key)


def format_ref(ref: Ref) -> str:
    """The canonical text of a reference: `$name.field[0].sub` (what `parse_ref` reads back)."""
    return "$" + ref.name + "".join(f".{key}" if isinstance(key, str) else f"[{key}]" for key in ref.path)


class Scanned(NamedTuple):
    """A reference found by `scan_ref`: it spans `text[start:end]`."""

    end: int
    ref: Ref


class RefSpan(NamedTuple):
    """A reference found in a text, at `text[start:end]`."""

    start: int
    end: int
    ref: Ref


class _NeedMore:
    def __repr__(self) -> str:
        return "NEED_MORE"


NEED_MORE: Final = _NeedMore()
"""`scan_ref`'s answer when the text ended before the reference's extent was decided."""


class _Undecided(Exception):
    """Internal: the scan reached the end of a non-final text."""


class _TooLong(Exception):
    """Internal: the scan went past `MAX_REF_CHARS`."""


def scan_ref(text: str, start: int, *, final: bool = True, before: str = "") -> Scanned | _NeedMore | None:
    """The reference starting at `text[start]` (a `$`), None when there is none, or `NEED_MORE`.

    `before` is the text preceding `text` (only its last character matters: it decides whether
    a `$` at `text[0]` may start a reference). `final=False` means more text may follow.
    """
    prev = text[start - 1] if start > 0 else before[-1:]
    if text[start : start + 1] != "$" or prev in _ASCII_NAME_CHARS or prev == "$":
        return None
    reader = _Reader(text, start, final)
    try:
        return reader.ref()
    except _Undecided:
        return NEED_MORE
    except _TooLong:
        return None


class _Reader:
    """One scan: reads characters with end-of-text and length-limit semantics."""

    def __init__(self, text: str, start: int, final: bool) -> None:
        self.text, self.start, self.final = text, start, final
        self.limit = start + MAX_REF_CHARS + 1

    def char(self, i: int) -> str:
        """Character `i`; "" at the end of a final text."""
        if i >= self.limit:
            raise _TooLong
        if i < len(self.text):
            return self.text[i]
        if self.final:
            return ""
        raise _Undecided

    def ref(self) -> Scanned | None:
        i = self.start + 1
        if self.char(i) not in _ASCII_NAME_START:
            return None
        i = _name_end(self.text, i)
        if _continues_word(self.char(i)):
            return None
        name, path = self.text[self.start + 1 : i], list[PathKey]()
        while (step := self.field(i) or self.index(i)) is not None:
            key, i = step
            path.append(key)
        return Scanned(i, Ref._scanned(name, tuple(path)))

    def field(self, i: int) -> tuple[str, int] | None:
        """`.field` at `i`: (field, end) or None."""
        if self.char(i) != "." or not self.char(i + 1).isidentifier():
            return None
        j = i + 2
        while _continues_word(self.char(j)):
            j += 1
        return self.text[i + 1 : j], j

    def index(self, i: int) -> tuple[int, int] | None:
        """`[n]` or `[-n]` at `i`: (n, end) or None."""
        if self.char(i) != "[":
            return None
        first = i + 2 if self.char(i + 1) == "-" else i + 1
        j = first
        while self.char(j) in _DIGITS:
            if j - first == MAX_INDEX_DIGITS:
                return None
            j += 1
        if j == first or self.char(j) != "]":
            return None
        return int(self.text[i + 1 : j]), j + 1


def _name_end(text: str, start: int) -> int:
    """End of the run of ASCII name characters at `start` (one C-level regex step, not a loop)."""
    match = _NAME_TAIL.match(text, start)
    return match.end() if match else start


def _continues_word(ch: str) -> bool:
    """A character that can continue an identifier (XID_Continue)."""
    return bool(ch) and ("a" + ch).isidentifier()


def find_refs(text: str, *, final: bool = True, before: str = "") -> tuple[list[RefSpan], int]:
    """The references in `text`, and where its undecided tail starts (`len(text)` when `final`).

    Only `$` positions are examined (`str.find`), so text without `$` costs one C scan.
    """
    spans: list[RefSpan] = []
    pos = 0
    while (at := text.find("$", pos)) >= 0:
        found = scan_ref(text, at, final=final, before=before)
        if isinstance(found, _NeedMore):
            return spans, at
        if found is None:
            pos = at + 1
            continue
        spans.append(RefSpan(at, found.end, found.ref))
        pos = found.end
    return spans, len(text)


def whole_ref(text: str) -> Ref | None:
    """The reference when `text` is exactly one reference and nothing else (resolved to the typed value)."""
    found = scan_ref(text, 0) if text.startswith("$") else None
    return found.ref if isinstance(found, Scanned) and found.end == len(text) else None


def parse_ref(text: str) -> Ref:
    """`text` as a reference; `InvalidReference` saying why when it is not exactly one."""
    ref = whole_ref(text)
    if ref is None:
        raise InvalidReference(
            f"{text[:80]!r} is not a reference: write $name, $name.field or $name.items[0].id", text=text[:200]
        )
    return ref


def iter_refs(value: Any) -> Iterator[Ref]:
    """Every reference in the strings of a JSON-like value (dict keys are not references)."""
    if isinstance(value, str):
        if "$" in value:
            yield from (span.ref for span in find_refs(value)[0])
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_refs(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from iter_refs(item)


def contains_variable_ref(value: Any) -> bool:
    """Whether resolving `value` could change it: lets a client skip the resolve round trip.

    For raw JSON arguments, `"$" not in args_json` is an even cheaper first test.
    """
    return next(iter_refs(value), None) is not None
