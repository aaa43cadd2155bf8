"""Typed errors of variable naming and `$ref` resolution, and the constructors that word them.

The constructors live here, not in the resolver, so that every implementation of a
`VariableSource` — the in-memory one in `extraction.variables.resolve` and the server's streaming JSON
walker over a blob — reports the same failure with the same words and the same `details`:
what was asked, where the walk stopped, and what does exist at that level (variable names,
object keys, or an array's index range). Lists of names/keys are capped so that an object with
100 000 keys does not produce a 2 MB error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from extraction.errors import InvalidInput

MAX_LISTED = 50
"""At most this many names or keys are listed in a message (and in `details["available"]`)."""


class VariableError(InvalidInput):
    """Base of the variable errors: the caller named or addressed a variable wrongly."""

    code = "variable_error"


class InvalidVariableName(VariableError):
    """A variable name does not match `[A-Za-z_][A-Za-z0-9_]*` (or is too long)."""

    code = "invalid_variable_name"


class UnknownVariable(VariableError):
    """`$name` names no variable of the session; `details["available"]` lists those that exist."""

    code = "unknown_variable"


class MissingField(VariableError):
    """A path step found nothing: no such key, an index out of range, or a step into a scalar."""

    code = "missing_field"


class NotJSON(VariableError):
    """A field was asked of a text (non-JSON) output, which has no fields."""

    code = "not_json"


class ValueTooLarge(VariableError):
    """A reference resolves to more characters than the caller allows; pass the handle instead."""

    code = "value_too_large"


def listing(items: Iterable[str], limit: int = MAX_LISTED) -> tuple[list[str], int]:
    """The first `limit` items and how many there are in all (for "a, b, … and N more")."""
    shown: list[str] = []
    total = 0
    for item in items:
        if total < limit:
            shown.append(item)
        total += 1
    return shown, total


def _joined(shown: Sequence[str], total: int) -> str:
    more = total - len(shown)
    return ", ".join(shown) + (f", … and {more:,} more" if more else "")


def unknown_variable(name: str, available: Iterable[str]) -> UnknownVariable:
    """`$name` is not a variable; the message lists the ones that are."""
    shown, total = listing(sorted(available))
    if total:
        where = f"available variables: {_joined([f'${n}' for n in shown], total)}"
    else:
        where = "no variables are saved yet"
    return UnknownVariable(f"unknown variable ${name}; {where}", name=name, available=shown, available_count=total)


def missing_key(at: str, key: str | int, keys: Iterable[str]) -> MissingField:
    """The object at reference `at` has no key `key`; lists the keys it does have."""
    shown, total = listing(keys)
    shown_key = f'"{key}"' if isinstance(key, str) else f'"{key}" ([{key}] on an object looks up the key "{key}")'
    has = f"its fields are: {_joined(shown, total)}" if total else "it is an empty object"
    return MissingField(
        f"{at} has no field {shown_key}; {has}",
        reference=at,
        key=key,
        kind="object",
        available=shown,
        available_count=total,
    )


def index_out_of_range(at: str, index: int, length: int) -> MissingField:
    """The array at `at` has no item `index`; says which indexes exist."""
    valid = f"valid indexes are 0 to {length - 1} (or -{length} to -1 from the end)" if length else "it is empty"
    return MissingField(
        f"{at} has {length:,} item{'s' if length != 1 else ''}, so [{index}] is out of range; {valid}",
        reference=at,
        key=index,
        kind="array",
        length=length,
    )


def not_a_container(at: str, key: str | int, kind: str, length: int | None = None) -> MissingField:
    """A step into a value that cannot take it: a field of a scalar, or a field name on an array."""
    step = f"field .{key}" if isinstance(key, str) else f"item [{key}]"
    if kind == "array":
        hint = f"; use an index such as {at}[0]" if length else ""
        message = f"{at} is an array of {length or 0:,} items, not an object, so it has no {step}{hint}"
    else:
        message = f"{at} is {_article(kind)} {kind}, so it has no {step}"
    details: dict[str, object] = {"reference": at, "key": key, "kind": kind}
    if length is not None:
        details["length"] = length
    return MissingField(message, **details)


def _article(kind: str) -> str:
    return "an" if kind[:1] in "aeiou" else "a"


def not_json(name: str, wanted: str) -> NotJSON:
    """A field (`wanted`, the full reference) was asked of `$name`, a text output."""
    return NotJSON(
        f"${name} is text, not JSON, so {wanted} cannot be resolved (text has no fields); "
        f'use "${name}" for the whole text, or read parts of it with buffer_ops',
        name=name,
        reference=wanted,
    )


def value_too_large(reference: str, chars: int, limit: int, handle: str | None = None) -> ValueTooLarge:
    """`reference` resolves to `chars` characters, over `limit`: suggest the handle or a narrower path."""
    instead = f'pass the handle "{handle}" instead' if handle else "pass the stored output's handle instead"
    return ValueTooLarge(
        f"{reference} resolves to {chars:,} chars, over the {limit:,}-char limit for a resolved value; "
        f"{instead}, or a narrower path that selects only the part you need",
        reference=reference,
        chars=chars,
        limit=limit,
        handle=handle,
    )
