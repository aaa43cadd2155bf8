"""The module map of docs/architecture.md, written from the modules' own docstrings, so it names only what exists.

    python docs/hooks/module_map.py            # rewrite the map in docs/architecture.md
    python docs/hooks/module_map.py --check    # exit 1 and say what moved when the page's map is stale

As a MkDocs hook it fails the build when the page's map differs from what the tree gives (`make docs` runs with
--strict in CI), and `tests/docs/test_module_map.py` fails the same way: a module renamed, moved or added without
its line on the page is caught before the page can send a newcomer to a file that is not there. Each line is the
first sentence of the module's docstring; a package heads its modules with its own.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAGE = "architecture.md"
MAPPED = ("extraction", "workers")
"""The packages mapped module by module: the engine, and the job's steps with their executors."""
BEGIN = "<!-- module map: written by docs/hooks/module_map.py from the docstrings; do not edit by hand -->"
END = "<!-- end of the module map -->"
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")
"""Where a sentence ends: a stop, then a capital, a code span or a bracket (a stop inside a code span is no end)."""
NAMED = re.compile(r"^\* `([\w/]+\.py)`", re.M)
HOW_TO_FIX = "run `python docs/hooks/module_map.py` to write the map again from the tree"


def first_sentence(source: str) -> str:
    """The first sentence of a module's docstring, on one line; empty when it has none."""
    doc = ast.get_docstring(ast.parse(source)) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    for end in SENTENCE_END.finditer(paragraph):
        if paragraph[: end.start()].count("`") % 2 == 0:
            return paragraph[: end.start()]
    return paragraph


def packages(root: Path) -> list[Path]:
    """Every package under the mapped roots, outermost first."""
    found = [p.parent for top in MAPPED for p in (root / top).rglob("__init__.py")]
    return sorted(found, key=lambda p: p.relative_to(root).parts)


def render(root: Path = ROOT) -> str:
    """The map as the page holds it, between its markers: one block per package, one line per module."""
    blocks = []
    for package in packages(root):
        name = package.relative_to(root).as_posix()
        lines = [f"**`{name}/`** — {first_sentence((package / '__init__.py').read_text(encoding='utf-8'))}", ""]
        for module in sorted(package.glob("*.py")):
            if module.name != "__init__.py":
                summary = first_sentence(module.read_text(encoding="utf-8"))
                lines.append(f"* `{module.relative_to(root).as_posix()}` — {summary}")
        blocks.append("\n".join(lines))
    return "\n\n".join([BEGIN, *blocks, END])


def section(page_text: str) -> str:
    """The map as the page holds it now (empty when its markers are missing)."""
    start, end = page_text.find(BEGIN), page_text.find(END)
    return page_text[start : end + len(END)] if 0 <= start < end else ""


def problems(root: Path, page_text: str) -> list[str]:
    """What is wrong with the page's map against the tree at `root`, in words; empty when it is current."""
    held = section(page_text)
    if not held:
        return [f"docs/{PAGE} has no module map between its markers; {HOW_TO_FIX}"]
    named = set(NAMED.findall(held))
    there = {p.relative_to(root).as_posix() for top in MAPPED for p in (root / top).rglob("*.py")}
    there = {p for p in there if not p.endswith("__init__.py")}
    found = [f"docs/{PAGE} names {m}, which does not exist" for m in sorted(named - there)]
    found += [f"{m} exists, but docs/{PAGE}'s module map does not name it" for m in sorted(there - named)]
    if not found and held != render(root):
        found.append(f"docs/{PAGE}'s module map differs from the modules' docstrings")
    return [f"{p}; {HOW_TO_FIX}" for p in found]


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: a stale map fails the build (the same check as the test)."""
    return fail_when_stale(markdown, page, PAGE, lambda text: problems(ROOT, text))


def fail_when_stale(markdown: str, page: Any, page_name: str, check: Callable[[str], list[str]]) -> str:
    """A generated page's MkDocs hook: the build fails with what `check` finds wrong on `page_name`."""
    if page.file.src_uri == page_name and (found := check(markdown)):
        from mkdocs.exceptions import PluginError

        raise PluginError("\n".join(found))
    return markdown


def main(argv: list[str]) -> int:
    return write_or_check(argv, PAGE, "module map", lambda text: problems(ROOT, text), section, lambda: render(ROOT))


def write_or_check(
    argv: list[str],
    page_name: str,
    what: str,
    check: Callable[[str], list[str]],
    current: Callable[[str], str],
    rendered: Callable[[], str],
) -> int:
    """A generated page's command: `--check` says what is stale, otherwise the section is written anew."""
    path = ROOT / "docs" / page_name
    text = path.read_text(encoding="utf-8")
    if "--check" in argv:
        found = check(text)
        print("\n".join(found) or f"docs/{page_name}: the {what} is current")
        return 1 if found else 0
    if not current(text):
        print(f"docs/{page_name} has no markers to write the {what} between", file=sys.stderr)
        return 1
    path.write_text(text.replace(current(text), rendered()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
