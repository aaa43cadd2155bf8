"""Every `TOOLOUT_*` setting is read by the code: a field nothing reads is a knob that turns nothing.

The proof walks the source's syntax trees (not its text): a field counts as read where an expression reads it as
an attribute of a settings object — a name or attribute ending in `settings` (`settings.x`, `rt.settings.x`,
`self._settings.x`), or `get_settings()` / `Settings(...)` — outside `infra/settings.py`. A field read only inside
one of `Settings`' own public members (`stage_model` reads `map_model` as `getattr(self, f"{stage}_model")`)
counts when that member is read the same way elsewhere. Validators do not count: they check, they do not use.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from infra.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ("extraction", "infra", "workers", "api", "toolout", "offline_model", "examples")
SETTINGS_FILE = ROOT / "infra" / "settings.py"


def is_settings(node: ast.expr) -> bool:
    """`settings`, `x.settings`, `self._settings`, `get_settings()`, `Settings(...)`."""
    if isinstance(node, ast.Name):
        return node.id.endswith("settings")
    if isinstance(node, ast.Attribute):
        return node.attr.endswith("settings")
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        return name in {"get_settings", "Settings"}
    return False


def read_attributes(tree: ast.AST) -> Iterator[str]:
    """Every attribute read off a settings object in `tree`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and is_settings(node.value):
            yield node.attr


def source_reads() -> set[str]:
    files = [p for package in SOURCE for p in (ROOT / package).rglob("*.py") if p != SETTINGS_FILE]
    return {name for path in files for name in read_attributes(ast.parse(path.read_text(), str(path)))}


def fields_read_by_members() -> dict[str, set[str]]:
    """Each public member of `Settings` (method or property, not a validator) -> the fields its body reads:
    `self.<field>`, and `getattr(self, f"...")` patterns matched against the field names."""
    module = ast.parse(SETTINGS_FILE.read_text())
    cls = next(n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    fields = set(Settings.model_fields)
    members: dict[str, set[str]] = {}
    for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")):
        read = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)} & fields
        for text in (n for n in ast.walk(fn) if isinstance(n, ast.JoinedStr)):
            pattern = "".join(
                re.escape(part.value) if isinstance(part, ast.Constant) else r"\w+" for part in text.values
            )
            read |= {f for f in fields if re.fullmatch(pattern, f)}
        members[fn.name] = read
    return members


def test_every_setting_is_read_outside_the_settings_module() -> None:
    reads = source_reads()
    through_members = {
        field for member, fields in fields_read_by_members().items() if member in reads for field in fields
    }
    unread = sorted(set(Settings.model_fields) - reads - through_members)
    assert unread == [], f"settings nothing reads (read them or remove them): {unread}"


def test_the_walk_sees_the_dynamic_reads_it_relies_on() -> None:
    """The members that read fields by pattern are found, so the test above is not passing on a blind spot."""
    members = fields_read_by_members()
    assert {"map_model", "reduce_model", "agent_model"} <= members["stage_model"]
    assert {"map_fallbacks", "agent_fallbacks"} <= members["model_chain"]
    assert members["sentinels"] == {"redis_sentinels"}
    code = "rt.settings.redis_url; body.model; get_settings().api_port; settings.model = 'x'"
    assert set(read_attributes(ast.parse(code))) == {"redis_url", "api_port"}
