"""infra/ is grouped by what each part fronts: a newcomer guesses a module's home from its folder.

Only the ground every group stands on (settings, errors, logs, tracing) sits
at the top; every other module lives in a group whose `__init__` says in its docstring what the group fronts.
"""

from __future__ import annotations

import ast
from pathlib import Path

INFRA = Path(__file__).resolve().parents[2] / "infra"
GROUND = {"__init__.py", "settings.py", "errors.py", "logs.py", "tracing.py"}


def test_only_the_ground_sits_at_the_top_of_infra() -> None:
    assert {p.name for p in INFRA.glob("*.py")} == GROUND


def test_every_group_says_what_it_fronts() -> None:
    groups = [p for p in INFRA.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert len(groups) >= 8
    for group in groups:
        docstring = ast.get_docstring(ast.parse((group / "__init__.py").read_text(encoding="utf-8")))
        assert docstring and len(docstring) > 20, group.name
