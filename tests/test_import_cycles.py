"""The tree has no import circles, and the check that `make lint` runs finds one when there is one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.import_cycles import PACKAGES, circles


def test_the_tree_has_no_import_circle() -> None:
    assert circles(PACKAGES) == []


def test_a_circle_through_a_type_checking_import_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "loopy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from loopy.b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from loopy.c import C\nB = 1\n"
    )
    (package / "c.py").write_text("import loopy.a\nC = 2\n")
    (package / "d.py").write_text("import loopy.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "loopy", raising=False)
    assert circles(["loopy"]) == [["loopy.a", "loopy.b", "loopy.c"]]
