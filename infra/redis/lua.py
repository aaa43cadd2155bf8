"""Lua scripts live in `.lua` files beside the store that runs them; this reads one by name.

A store whose scripts share helpers keeps them in `lua/_prelude.lua`, which is put before each of its
scripts (Redis runs every script on its own, so there is nothing to `require`); a store split into parts
names the package whose prelude its parts share. Names the scripts take
from Python models (hash fields, statuses) come first, as a `header` of Lua tables the store generates
with `lua_table`: a script says `F.status`, never `'status'`, so a renamed field cannot leave it behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib.resources import files

PRELUDE = "_prelude"


@cache
def lua_source(package: str, name: str, header: str = "", prelude_from: str | None = None) -> str:
    """`header`, then `<prelude_from>/lua/_prelude.lua` (`package`'s by default) when there is one, then
    `<package>/lua/<name>.lua`."""
    prelude = files(prelude_from or package) / "lua" / f"{PRELUDE}.lua"
    shared = prelude.read_text(encoding="utf-8") if prelude.is_file() else ""
    return header + shared + (files(package) / "lua" / f"{name}.lua").read_text(encoding="utf-8")


def lua_table(name: str, values: Mapping[str, str | bool] | Sequence[str], *, strict: bool = True) -> str:
    """`local NAME = {...}` for a mapping (keys must be Lua identifiers) or a list of strings.

    A strict table (a mapping) raises on a key it does not hold, so a misspelt `F.stauts` fails the
    script loudly instead of passing nil to a Redis command; a set to test membership in is not strict.
    """
    if isinstance(values, Mapping):
        items = ", ".join(f"{key} = {_literal(value)}" for key, value in values.items())
    else:
        items, strict = ", ".join(_literal(value) for value in values), False  # a list is walked to its first nil
    table = f"local {name} = {{{items}}}\n"
    if strict:
        table += f"setmetatable({name}, {{__index = function(_, key) error('{name} has no ' .. tostring(key)) end}})\n"
    return table


def _literal(value: str | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    escaped = "".join(ch if ch.isprintable() and ch not in "'\\" else f"\\{ord(ch)}" for ch in value)
    return f"'{escaped}'"
