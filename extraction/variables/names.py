"""Variable names: the one validation rule, the default `<tool>_<n>` naming and `new`-mode names.

Names are `[A-Za-z_][A-Za-z0-9_]*`, at most `MAX_NAME_CHARS` long, case-sensitive — exactly
what a `$name` reference can spell, so every stored output is addressable.

Default naming (docs/spec/variables.md §Names: a per-tool counter rather than a timestamp, so names stay short
and stable for the model): `<base>_<n>`, where `<base>` is the tool name sanitised by
`tool_base_name` and `n` starts at 1 and counts per tool per session.

Sanitising a tool name (`tool_base_name`):
1. Unicode is NFKD-decomposed and combining marks dropped (`café` → `cafe`).
2. Case is kept (`webSearch` → `webSearch`): names are case-sensitive and a camel-case tool
   reads better unchanged than lowercased.
3. Every run of characters outside `[A-Za-z0-9_]` becomes one `_`, runs of `_` collapse to one,
   and `_` is stripped from both ends (`mcp__github.search` → `mcp_github_search`).
4. A leading digit gets a `_` prefix (`3d-render` → `_3d_render`); nothing left → `output`.
5. The base is cut so that `<base>_<n>` stays within `MAX_NAME_CHARS`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable
from typing import TypeGuard

from extraction.variables.errors import InvalidVariableName

MAX_NAME_CHARS = 128
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
EMPTY_BASE = "output"
_SUFFIX_ROOM = 12  # "_" + up to 11 digits of a counter
_NON_NAME = re.compile(r"[^A-Za-z0-9_]+")
_UNDERSCORES = re.compile(r"_{2,}")


def is_valid_name(name: object) -> TypeGuard[str]:
    """True when `name` can be a variable name (and so be written as `$name`)."""
    return isinstance(name, str) and len(name) <= MAX_NAME_CHARS and NAME_RE.fullmatch(name) is not None


def validate_name(name: object, *, what: str = "variable name") -> str:
    """`name` unchanged if valid; otherwise an `InvalidVariableName` saying what is wrong with it."""
    if is_valid_name(name):
        return name
    raise InvalidVariableName(f"invalid {what} {name!r}: {_name_problem(name)}", name=name)


def _name_problem(name: object) -> str:
    if not isinstance(name, str):
        return f"it must be a string, not {type(name).__name__}"
    if not name:
        return "it is empty; a name is a letter or _ followed by letters, digits or _"
    if len(name) > MAX_NAME_CHARS:
        return f"it is {len(name)} chars long; the limit is {MAX_NAME_CHARS}"
    if name[0].isdigit():
        return "it starts with a digit; a name starts with a letter or _ (for example _" + name + ")"
    bad = next(ch for ch in name if not (ch.isascii() and (ch.isalnum() or ch == "_")))
    return f"{bad!r} is not allowed; names use only ASCII letters, digits and _ (pattern [A-Za-z_][A-Za-z0-9_]*)"


def tool_base_name(tool: str) -> str:
    """The tool name made into a valid name prefix (rules in the module docstring)."""
    ascii_text = "".join(ch for ch in unicodedata.normalize("NFKD", tool) if not unicodedata.combining(ch))
    base = _UNDERSCORES.sub("_", _NON_NAME.sub("_", ascii_text)).strip("_")
    if base[:1].isdigit():
        base = "_" + base
    return base[: MAX_NAME_CHARS - _SUFFIX_ROOM] or EMPTY_BASE


def default_name(tool: str, n: int) -> str:
    """The `n`-th default name for `tool`'s outputs (for a server that keeps a counter per tool)."""
    if n < 1:
        raise InvalidVariableName(f"default names count from 1, got {n}", n=n)
    return f"{tool_base_name(tool)}_{n}"


def next_default_name(tool: str, existing: Iterable[str]) -> str:
    """The next default name for `tool` given the session's names: one past the highest `<base>_<n>`.

    Never one that exists (so a deleted `search_2` between `search_1` and `search_3` is not reused,
    and outputs keep their order); the counter is derived, not stored.
    """
    base = tool_base_name(tool)
    pattern = re.compile(re.escape(base) + r"_([1-9][0-9]{0,10})")
    numbers = [int(m.group(1)) for name in existing if (m := pattern.fullmatch(name))]
    return f"{base}_{max(numbers, default=0) + 1}"


def fresh_name(name: str, existing: Collection[str]) -> str:
    """Write mode `new`: `name` itself when free, else the first free of `name_2`, `name_3`, …"""
    validate_name(name)
    if name not in existing:
        return name
    n = 2
    while f"{name}_{n}" in existing:
        n += 1
    return validate_name(f"{name}_{n}")
