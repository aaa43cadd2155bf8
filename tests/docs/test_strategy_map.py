"""docs/strategies.md lists each strategy's modules by layer, written by `docs/hooks/strategy_map.py` from its
`STRATEGIES` and the modules' docstrings; the check fails when a listed module moves, when a module that looks like
a strategy's is listed nowhere, and when the page was not rewritten since the tree changed. The tests below run
that check on the tree and on scratch copies of it with a module moved or added."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.docs_pages import ROOT, docs_hook, page

PAGE = page("strategies.md")
MAP = docs_hook("strategy_map")


def scratch_tree(tmp_path: Path) -> Path:
    """The layers' Python files and pyproject.toml, copied: a tree to move and add modules in."""
    for top in MAP.LAYERS:
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__", "*.lua", "*.json"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_strategy_map_is_the_trees() -> None:
    assert MAP.problems(ROOT, PAGE) == []


def test_the_query_strategy_spans_every_layer() -> None:
    query = MAP.section(PAGE).split("### `query`")[1].split("### ")[0]
    for module in ("extraction/texts/query.py", "infra/query/store.py", "workers/job/query.py"):
        assert f"* `{module}` — " in query, module
    assert "* `offline_model/query_agent.py` — " in query


def test_a_listed_module_that_moved_fails_and_says_which(tmp_path: Path) -> None:
    tree = scratch_tree(tmp_path)
    (tree / "workers/job/query.py").rename(tree / "workers/job/sql.py")
    found = MAP.problems(tree, PAGE)
    assert found == [
        f"workers/job/query.py is listed in docs/hooks/strategy_map.py but is not in the tree; {MAP.HOW_TO_FIX}"
    ]


def test_a_new_strategy_module_listed_nowhere_fails(tmp_path: Path) -> None:
    tree = scratch_tree(tmp_path)
    (tree / "workers/job/truncate.py").write_text('"""The truncate strategy\'s own step."""\n')
    (tree / "extraction/strategies/summary.py").write_text('"""A summary strategy."""\n')
    assert [p.split(",")[0] for p in MAP.problems(tree, PAGE)] == [
        "extraction/strategies/summary.py looks like a strategy's module",
        "workers/job/truncate.py looks like a strategy's module",
    ]


def test_a_module_joining_the_strategies_contract_must_be_listed(tmp_path: Path) -> None:
    tree = scratch_tree(tmp_path)
    (tree / "workers/job/digest.py").write_text('"""A digest strategy."""\n')
    pyproject = tree / "pyproject.toml"
    contract = '"workers.job.pipeline", "workers.job.agent", "workers.job.query"'
    assert contract in pyproject.read_text()
    pyproject.write_text(pyproject.read_text().replace(contract, contract + ', "workers.job.digest"'))
    assert [p.split(",")[0] for p in MAP.problems(tree, PAGE)] == [
        "workers/job/digest.py looks like a strategy's module"
    ]


def test_a_module_added_to_a_listed_package_makes_the_page_stale(tmp_path: Path) -> None:
    tree = scratch_tree(tmp_path)
    (tree / "infra/query/joins.py").write_text('"""Joins across an output\'s tables."""\n')
    assert MAP.problems(tree, PAGE) == [
        "docs/strategies.md's strategy map differs from the tree; run `python docs/hooks/strategy_map.py`"
    ]
    assert "* `infra/query/joins.py` — Joins across an output's tables." in MAP.render(tree)


def test_a_page_without_the_map_fails() -> None:
    assert MAP.problems(ROOT, PAGE.replace(MAP.BEGIN, "")) == [
        "docs/strategies.md has no strategy map between its markers; run `python docs/hooks/strategy_map.py`"
    ]
