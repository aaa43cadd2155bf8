"""What a reference's path means on a JSON value, one step at a time, and how values become text.

The rules (a streaming walker over a blob must follow them too, using the same error
constructors from `extraction.variables.errors`):

* `.field` on an object: the value under that key; missing → `missing_key` listing the keys.
* `[i]` on an array: item `i`, negative from the end (Python); out of range → `index_out_of_range`.
* `[i]` on an object: the value under the key `"i"` (so `{"2024": …}` is reachable as `[2024]`).
* `.field` on an array, or any step into a string/number/boolean/null → `not_a_container`.
* Any step on a text (non-JSON) output → `not_json`.

Text form (interpolation into a longer string, and size accounting): strings as they are,
everything else compact JSON — `json.dumps(v, separators=(",", ":"), ensure_ascii=False)`.
"""

from __future__ import annotations

import json
from typing import Any

from extraction.variables.errors import index_out_of_range, missing_key, not_a_container, not_json
from extraction.variables.refs import PathKey, Ref, format_ref


def kind_of(value: Any) -> str:
    """The JSON type name of a Python value, as messages show it."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def step(value: Any, key: PathKey, at: str) -> Any:
    """One path step from `value` (found at reference text `at`); raises `MissingField` on failure."""
    if isinstance(value, dict):
        wanted = key if isinstance(key, str) else str(key)
        if wanted in value:
            return value[wanted]
        raise missing_key(at, key, (str(k) for k in value))
    if isinstance(value, (list, tuple)):
        if isinstance(key, str):
            raise not_a_container(at, key, "array", len(value))
        if -len(value) <= key < len(value):
            return value[key]
        raise index_out_of_range(at, key, len(value))
    raise not_a_container(at, key, kind_of(value))


def walk(value: Any, ref: Ref, *, text: bool = False) -> Any:
    """The value at `ref.path` inside `value` (the variable's content); `text`: it is not JSON."""
    if ref.path and text:
        raise not_json(ref.name, format_ref(ref))
    for steps, key in enumerate(ref.path):
        value = step(value, key, format_ref(ref.prefix(steps)))
    return value


def compact_json(value: Any) -> str:
    """The compact JSON text interpolated for non-string values (docs/spec/variables.md §Resolution)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def as_text(value: Any) -> str:
    """A value as it appears inside a longer string: strings as they are, the rest compact JSON."""
    return value if isinstance(value, str) else compact_json(value)
