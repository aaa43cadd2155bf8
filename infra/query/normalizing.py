"""A JSON document DuckDB refuses for its keys, rewritten so it loads: the fallback of `loading`.

JSON allows an object to repeat a key (readers keep the last value) and to hold keys that differ
only in case; DuckDB's reader refuses the first, and inside a nested object the second (its column
names ignore case). Only then is the document parsed in Python, once, with the last value of a
repeated key kept and a key colliding in case renamed `<key>_<n>`; each rename is said in the
Schema. It runs in the load's child process, under its memory and time limits.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extraction.documents.structured import StructuredKind

Pairs = list[tuple[str, Any]]


def rewrite(source: Path, kind: StructuredKind, target: Path) -> dict[str, str]:
    """`source` rewritten into `target` without repeated or case-colliding keys; new name → key renamed."""
    renamed: dict[str, str] = {}
    hook = _object_hook(renamed)
    with source.open(encoding="utf-8", errors="replace") as src, target.open("w", encoding="utf-8") as out:
        if kind is StructuredKind.NDJSON:
            for line in src:
                if line.strip():
                    out.write(json.dumps(json.loads(line, object_pairs_hook=hook)) + "\n")
        else:
            json.dump(json.load(src, object_pairs_hook=hook), out)
    return renamed


def _object_hook(renamed: dict[str, str]) -> Callable[[Pairs], dict[str, Any]]:
    def build(pairs: Pairs) -> dict[str, Any]:
        out: dict[str, Any] = {}
        folded: set[str] = set()
        for key, value in pairs:
            name = key if key in out or key.lower() not in folded else _free(key, folded)
            if name != key:
                renamed[name] = key
            out[name] = value  # a repeated key: the last value, as JSON readers keep it
            folded.add(name.lower())
        return out

    return build


def _free(key: str, folded: set[str]) -> str:
    n = 1
    while f"{key}_{n}".lower() in folded:
        n += 1
    return f"{key}_{n}"
