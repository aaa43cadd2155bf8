"""Every module, file or dotted name a docs page cites is in the tree, so a page cannot send a reader to code that
moved: `infra/outputs/versions.py`, `infra.query.loaded_forms`, or `versions.py` under a heading that names its
folder (`### Stored outputs (`infra/outputs/`)`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.docs_pages import ROOT

TOPS = ("extraction", "infra", "workers", "api", "toolout", "offline_model", "bench", "tests")
PATH = re.compile(rf"`((?:{'|'.join(TOPS)})/[\w/.-]*)")
DOTTED = re.compile(rf"`((?:{'|'.join(TOPS[:-2])})(?:\.\w+)+)")
BARE = re.compile(r"`(\w+\.(?:py|lua))`")
SECTION = re.compile(r"^#{1,3} .*$", re.M)
NAME_LITERAL = re.compile(r"\"(toolout\.\w+)\"")


def defined_names(module: Path) -> set[str]:
    """What a module defines or imports at its top level."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def span_attributes(source: str) -> set[str]:
    """The span attributes a module names as dict keys (`{"chunk_index": index}`): `infra.tracing` prefixes each
    with `toolout.`."""
    dicts = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Dict)]
    keys = {k.value for d in dicts for k in d.keys if isinstance(k, ast.Constant)}
    return {f"toolout.{k}" for k in keys if isinstance(k, str) and k.isidentifier()}


def source_names() -> set[str]:
    """Dotted names the server spells as strings, not modules: Celery tasks (`toolout.start_extraction`) and span
    attributes (`toolout.job_id`, `toolout.chunk_index`)."""
    sources = [p.read_text(encoding="utf-8") for top in ("workers", "infra") for p in (ROOT / top).rglob("*.py")]
    literals = {name for text in sources for name in NAME_LITERAL.findall(text)}
    traced = [text for text in sources if "traced_step(" in text or "def _attributes(" in text]
    return literals | {name for text in traced for name in span_attributes(text)}


SOURCE_NAMES = source_names()


def dotted_exists(name: str) -> bool:
    """A module or package, a name such a module defines (`infra.query.loaded_forms`), or a name the source spells."""
    if name in SOURCE_NAMES:
        return True
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if module.is_file():
            return cut == len(parts) or parts[cut] in defined_names(module)
    return False


def bare_names_not_found(text: str) -> list[str]:
    """Files named without their folder (`versions.py`) that are not under the folders their section's heading
    names, or, under a heading that names none, nowhere in the tree."""
    headings = ["", *(m.group(0) for m in SECTION.finditer(text))]
    missing = []
    for heading, body in zip(headings, SECTION.split(text), strict=True):
        named = [ROOT / p for p in PATH.findall(heading)]
        folders = [p.parent if p.suffix else p for p in named] or [ROOT / top for top in TOPS]
        for name in sorted(set(BARE.findall(body))):
            if not any(next(folder.rglob(name), None) for folder in folders):
                missing.append(f"{heading.strip() or '(before the first heading)'}: {name}")
    return missing


def not_in_the_tree(text: str) -> list[str]:
    """Every path, dotted name and folderless file a page's text cites that the tree does not have."""
    paths = sorted({p.rstrip("/.") for p in PATH.findall(text)} - {""})
    found = [f"no such path: {p}" for p in paths if not any(ROOT.glob(p.replace("*", "[!/]*")))]
    found += [f"no such name: {n}" for n in sorted(set(DOTTED.findall(text))) if not dotted_exists(n)]
    return found + [f"no such file: {b}" for b in bare_names_not_found(text)]


@pytest.mark.parametrize("path", sorted((ROOT / "docs").rglob("*.md")), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_names_only_what_the_tree_has(path: Path) -> None:
    assert not_in_the_tree(path.read_text(encoding="utf-8")) == []


def test_each_check_finds_what_moved() -> None:
    stale = (
        "The engine (`extraction/variable_stream.py`, `extraction.output_routing`, `infra.settings.NoSuchSetting`).\n"
        "### Stored outputs (`infra/outputs/`)\n* `session_buffers.py` — gone\n* `versions.py` — there\n"
    )
    assert not_in_the_tree(stale) == [
        "no such path: extraction/variable_stream.py",
        "no such name: extraction.output_routing",
        "no such name: infra.settings.NoSuchSetting",
        "no such file: ### Stored outputs (`infra/outputs/`): session_buffers.py",
    ]


def test_each_check_passes_what_is_there() -> None:
    there = (
        "`extraction/variables/stream.py`, `extraction/variables/`, `infra.settings.Settings`, `infra.query`, "
        "`toolout.start_extraction` (a task), `toolout.job_id` (a span attribute), `infra/stores/jobs/lua/*.lua`\n"
        "### The toolkit (`toolout/toolkit/runtime.py`)\n* `session.py`\n"
    )
    assert not_in_the_tree(there) == []
