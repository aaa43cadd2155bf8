"""The strategies page (docs/strategies.md): each strategy's modules by layer, written from the modules' docstrings.

    python docs/hooks/strategy_map.py            # rewrite the page's map
    python docs/hooks/strategy_map.py --check    # exit 1 and say what is wrong when the map is stale

A strategy is spread over the layers (the query strategy: its texts in extraction/, DuckDB in infra/query/, its
steps in workers/, its offline player in offline_model/), so no folder shows one whole. `STRATEGIES` says which
modules are whose; the page is rendered from it, one line per module (the first sentence of its docstring, as in
the module map of docs/architecture.md, `docs/hooks/module_map.py`). As a MkDocs hook it fails the build when the
page differs from what the tree gives, and `tests/docs/test_strategy_map.py` fails the same way: a listed module
that moved, a module that looks like a strategy's but is listed nowhere, or a page not rewritten since.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAGE = "strategies.md"
LAYERS = ("extraction", "infra", "workers", "offline_model")
"""The layers a strategy spans, in the page's order: the engine, what serves it, the job's steps, the offline model."""
STRATEGIES: dict[str, tuple[str, ...]] = {
    "full-chunked": (
        "extraction/documents/chunking.py",
        "extraction/strategies/mapreduce.py",
        "extraction/strategies/reduce_plan.py",
        "extraction/strategies/coverage.py",
        "workers/job/pipeline.py",
    ),
    "read-grep": (
        "extraction/documents/grep.py",
        "extraction/strategies/agent.py",
        "extraction/texts/tools.py",
        "infra/outputs/grep_engine.py",
        "infra/outputs/stored.py",
        "workers/job/agent.py",
        "workers/job/sub_agent.py",
        "offline_model/agent.py",
    ),
    "query": (
        "extraction/strategies/agent.py",
        "extraction/texts/query.py",
        "infra/query/",
        "workers/job/query.py",
        "workers/job/preload.py",
        "workers/job/sub_agent.py",
        "offline_model/query_agent.py",
    ),
    "truncate": ("extraction/strategies/truncate.py",),
}
"""Each strategy's modules; a path ending in `/` is a whole package (a module added to it is on the page at once)."""
SHARED = (
    "extraction/strategies/routing.py",
    "extraction/strategies/planning.py",
    "extraction/strategies/estimate.py",
    "workers/job/context.py",
    "workers/job/runtime.py",
    "workers/job/outcomes.py",
    "workers/job/steps.py",
    "workers/job/drive.py",
)
"""What every strategy's modules share: the mode choice and its planning, the job context, its endings, its steps."""
NOT_STRATEGIES = {"offline_model/tool_agent.py": "the offline model as a simple agent, for agent loops' tests"}
"""Modules whose names sound like a strategy's but are none's, with why."""
STRATEGY_WORDS = re.compile(r"chunk|mapreduce|reduce|grep|query|truncate|agent|pipeline")
"""A module whose path says one of these belongs on the page (or in `NOT_STRATEGIES`)."""
ENGINE = "extraction/strategies"
"""Every module of the engine's strategies package is on the page: a strategy's, or shared."""
CONTRACT = "strategies"
"""The import-linter contract (pyproject.toml) whose modules are the strategies' worker parts: each is on the page."""
BEGIN = "<!-- strategy map: written by docs/hooks/strategy_map.py from STRATEGIES and the docstrings; do not edit -->"
END = "<!-- end of the strategy map -->"
HOW_TO_FIX = "list it in docs/hooks/strategy_map.py, then run `python docs/hooks/strategy_map.py`"


def module_map() -> ModuleType:
    """The module map's hook, for its `first_sentence` (docs/hooks is no package: loaded from its file)."""
    spec = importlib.util.spec_from_file_location("strategy_map_module_map", Path(__file__).with_name("module_map.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def modules(root: Path, listed: tuple[str, ...]) -> list[str]:
    """The listed modules that exist at `root`, a package expanded to its modules (its `__init__` left out)."""
    found = []
    for path in listed:
        if path.endswith("/"):
            found += sorted(
                p.relative_to(root).as_posix() for p in (root / path).glob("*.py") if p.name != "__init__.py"
            )
        elif (root / path).is_file():
            found.append(path)
    return found


def missing(root: Path) -> list[str]:
    """Listed modules (or packages) that are not at `root`: moved, renamed or deleted."""
    listed = [*SHARED, *(p for paths in STRATEGIES.values() for p in paths)]
    return sorted({p for p in listed if not ((root / p).is_dir() if p.endswith("/") else (root / p).is_file())})


def strategy_modules(root: Path) -> set[str]:
    """Every module the page must name: the engine's strategies, the contract's, and any whose path says a strategy."""
    there = {p.relative_to(root).as_posix() for top in LAYERS for p in (root / top).rglob("*.py")}
    there = {p for p in there if not p.endswith("__init__.py") and "__pycache__" not in p}
    named = {p for p in there if STRATEGY_WORDS.search(p) or p.startswith(ENGINE + "/")}
    return (named | contract_modules(root)) - set(NOT_STRATEGIES)


def contract_modules(root: Path) -> set[str]:
    """The files of the `strategies` independence contract's modules (one not in the tree is `missing`'s to name)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    names = next(c["modules"] for c in contracts if c["id"] == CONTRACT)
    return {path for name in names if (root / (path := name.replace(".", "/") + ".py")).is_file()}


def line(root: Path, path: str, first_sentence: Any) -> str:
    return f"* `{path}` — {first_sentence((root / path).read_text(encoding='utf-8'))}"


def block(root: Path, title: str, listed: tuple[str, ...], first_sentence: Any) -> str:
    """One strategy (or the shared modules): a line per layer it has modules in, its modules under it."""
    found = modules(root, listed)
    lines = [f"### {title}", ""]
    for layer in LAYERS:
        mine = [p for p in found if p.split("/")[0] == layer]
        if mine:
            lines += [f"**`{layer}/`**", "", *(line(root, p, first_sentence) for p in mine), ""]
    return "\n".join(lines).rstrip()


def render(root: Path = ROOT) -> str:
    first_sentence = module_map().first_sentence
    blocks = [block(root, f"`{name}`", listed, first_sentence) for name, listed in STRATEGIES.items()]
    blocks.append(block(root, "Shared by every strategy", SHARED, first_sentence))
    return "\n\n".join([BEGIN, *blocks, END])


def section(page_text: str) -> str:
    start, end = page_text.find(BEGIN), page_text.find(END)
    return page_text[start : end + len(END)] if 0 <= start < end else ""


def problems(root: Path, page_text: str) -> list[str]:
    """What is wrong with the page's map against the tree at `root`, in words; empty when it is current."""
    if not section(page_text):
        return [f"docs/{PAGE} has no strategy map between its markers; run `python docs/hooks/strategy_map.py`"]
    found = [f"{p} is listed in docs/hooks/strategy_map.py but is not in the tree; {HOW_TO_FIX}" for p in missing(root)]
    listed = set(modules(root, (*SHARED, *(p for paths in STRATEGIES.values() for p in paths))))
    found += [
        f"{p} looks like a strategy's module, but docs/hooks/strategy_map.py lists it under none; {HOW_TO_FIX}"
        for p in sorted(strategy_modules(root) - listed)
    ]
    if not found and section(page_text) != render(root):
        found.append(f"docs/{PAGE}'s strategy map differs from the tree; run `python docs/hooks/strategy_map.py`")
    return found


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: a stale map fails the build (the same check as the test)."""
    return module_map().fail_when_stale(markdown, page, PAGE, lambda text: problems(ROOT, text))


def main(argv: list[str]) -> int:
    check = lambda text: problems(ROOT, text)  # noqa: E731
    return module_map().write_or_check(argv, PAGE, "strategy map", check, section, lambda: render(ROOT))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
