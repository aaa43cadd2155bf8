"""Paths in a session's file space (`output=file:PATH`, `@input file:PATH`, buffer_ops `export`).

A path is a template until it is written to: `{today}` stays as written in routing specs (so a
spec printed and parsed again is the same spec) and `expand_path(template, today)` fills it in
at write time, with the date the caller passes (the engine reads no clock).

Rules (`validate_file_path`), each refused with `InvalidFilePath` saying which:
* relative only: no leading `/`, no drive (`C:`), no `\\` (one separator: `/`);
* segments are non-empty and never `.` or `..` (no `a//b`, no trailing `/`, no way up);
* no control characters (Unicode category Cc: NUL, newlines, tabs, DEL, C1);
* `{` `}` only in the placeholders of `PLACEHOLDERS` (today: `{today}` → `YYYY-MM-DD`);
* at most `MAX_PATH_CHARS` characters.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Collection

from extraction.errors import InvalidInput

MAX_PATH_CHARS = 1024
PLACEHOLDERS = ("today",)
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_DRIVE = re.compile(r"[A-Za-z]:")


class InvalidFilePath(InvalidInput):
    """A file path that is absolute, climbs out with `..`, holds control characters, or is malformed."""

    code = "invalid_file_path"


def validate_file_path(path: str) -> str:
    """`path` unchanged when it is a valid relative path template; else `InvalidFilePath` saying why."""
    problem = _problem(path)
    if problem:
        raise InvalidFilePath(f"invalid file path {path[:200]!r}: {problem}", path=path[:200])
    return path


def _problem(path: str) -> str | None:
    if not path:
        return "it is empty"
    if len(path) > MAX_PATH_CHARS:
        return f"it is {len(path)} chars long; the limit is {MAX_PATH_CHARS}"
    control = next((ch for ch in path if unicodedata.category(ch) == "Cc"), None)
    if control is not None:
        return f"it contains the control character U+{ord(control):04X}"
    if path.startswith("/") or _DRIVE.match(path):
        return "only relative paths are allowed (no leading / or drive letter)"
    if "\\" in path:
        return "use / as the separator (a \\ is not allowed)"
    return _segment_problem(path.split("/")) or _placeholder_problem(path)


def _segment_problem(segments: list[str]) -> str | None:
    if "" in segments:
        return "it has an empty segment (a // or a trailing /)"
    if ".." in segments:
        return "'..' segments are not allowed (paths stay inside the session's file space)"
    if "." in segments:
        return "'.' segments are not allowed; write the path without them"
    return None


def _placeholder_problem(path: str) -> str | None:
    names = _PLACEHOLDER.findall(path)
    unknown = [name for name in names if name not in PLACEHOLDERS]
    if unknown:
        known = ", ".join("{" + name + "}" for name in PLACEHOLDERS)
        return f"unknown placeholder {{{unknown[0]}}} (known: {known})"
    if "{" in _PLACEHOLDER.sub("", path) or "}" in _PLACEHOLDER.sub("", path):
        return "unbalanced { or }"
    return None


def expand_path(template: str, today: dt.date) -> str:
    """The path to write: `{today}` becomes `today` as `YYYY-MM-DD` (e.g. notes/2026-01-01)."""
    validate_file_path(template)
    return template.replace("{today}", today.isoformat())


def fresh_file_path(path: str, existing: Collection[str]) -> str:
    """Write mode `new` for files: `path` when free, else `stem_2.ext`, `stem_3.ext`, … the first free."""
    if path not in existing:
        return path
    folder, _, name = path.rpartition("/")
    dot = name.rfind(".")
    stem, ext = (name[:dot], name[dot:]) if dot > 0 else (name, "")
    prefix = f"{folder}/" if folder else ""
    n = 2
    while f"{prefix}{stem}_{n}{ext}" in existing:
        n += 1
    return f"{prefix}{stem}_{n}{ext}"
