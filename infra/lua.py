"""Lua scripts live in `.lua` files beside the store that runs them; this reads one by name."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def lua_source(package: str, name: str) -> str:
    """The text of `<package>/lua/<name>.lua` (shipped as package data)."""
    return (files(package) / "lua" / f"{name}.lua").read_text(encoding="utf-8")
