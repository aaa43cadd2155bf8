"""docs/architecture.md's module map is written from the modules' docstrings, so it names every module there is and
no other (what the rest of every page names is checked by tests/docs/test_named_files.py).

`docs/hooks/module_map.py` writes the map and checks it (`make docs` fails on a stale one, as this test does). The
tests below also run that check on a scratch copy of the tree with a module renamed or re-described, to show it
names what moved.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.docs_pages import ROOT, docs_hook, page

PAGE = page("architecture.md")


MAP = docs_hook("module_map")


def scratch_tree(tmp_path: Path) -> Path:
    """The mapped packages' Python files, copied: a tree to rename and rewrite modules in."""
    for top in MAP.MAPPED:
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__", "*.lua", "*.json"))
    return tmp_path


def test_the_module_map_is_the_trees() -> None:
    assert MAP.problems(ROOT, PAGE) == []


def test_the_map_names_every_module_of_every_mapped_package() -> None:
    named = set(MAP.NAMED.findall(MAP.section(PAGE)))
    for top in MAP.MAPPED:
        modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / top).rglob("*.py") if p.name != "__init__.py"}
        assert modules <= named, sorted(modules - named)
        assert modules, top


def test_a_renamed_module_fails_the_map_and_says_which(tmp_path: Path) -> None:
    tree = scratch_tree(tmp_path)
    (tree / "extraction/documents/chunking.py").rename(tree / "extraction/documents/chunk_plans.py")
    assert MAP.problems(tree, PAGE) == [
        f"docs/architecture.md names extraction/documents/chunking.py, which does not exist; {MAP.HOW_TO_FIX}",
        f"extraction/documents/chunk_plans.py exists, but docs/architecture.md's module map does not name it; "
        f"{MAP.HOW_TO_FIX}",
    ]


def test_a_module_moved_to_another_package_fails_the_map(tmp_path: Path) -> None:
    tree = scratch_tree(tmp_path)
    (tree / "workers/job/preload.py").rename(tree / "workers/celery/preload.py")
    found = MAP.problems(tree, PAGE)
    assert [p.split(";")[0] for p in found] == [
        "docs/architecture.md names workers/job/preload.py, which does not exist",
        "workers/celery/preload.py exists, but docs/architecture.md's module map does not name it",
    ]


def test_a_module_whose_docstring_changed_fails_the_map(tmp_path: Path) -> None:
    tree = scratch_tree(tmp_path)
    module = tree / "extraction/strategies/truncate.py"
    module.write_text('"""Cut the middle of a document."""\n' + module.read_text().split('"""', 2)[2])
    assert MAP.problems(tree, PAGE) == [
        f"docs/architecture.md's module map differs from the modules' docstrings; {MAP.HOW_TO_FIX}"
    ]


def test_a_page_without_the_map_fails() -> None:
    assert MAP.problems(ROOT, PAGE.replace(MAP.BEGIN, "")) == [
        f"docs/architecture.md has no module map between its markers; {MAP.HOW_TO_FIX}"
    ]


def test_the_first_sentence_keeps_a_code_span_whole() -> None:
    assert MAP.first_sentence('"""A parser for `<a> ... `. More here."""') == "A parser for `<a> ... `."
    assert MAP.first_sentence('"""Does it load? Decided from its first bytes."""') == "Does it load?"
    assert MAP.first_sentence("x = 1\n") == ""
