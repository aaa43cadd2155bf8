"""The Python reference is complete: every public name of the SDK clients, the Toolkit, the framework integrations
and the embedded mode is rendered on docs/reference/python.md with its signature and a docstring.

"Public" is what a user can reach: a module's `__all__`, and for a class every name `dir()` lists without a
leading underscore that toolout itself defines (inherited from toolout's own bases, such as the SDK's
`Endpoints`, included; a framework base's hooks, such as LangChain's `AgentMiddleware`, left to the framework's
docs). The page is rendered by mkdocstrings exactly as `make docs` renders it (the same handler options and
Griffe extension, from mkdocs.yml), in a site of that one page, and the test reads the HTML: a name missing from
the page, a callable without a signature or a name without a docstring fails.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parents[1]

CLASSES = {
    "toolout.client.ToolOutClient": "toolout.client:ToolOutClient",
    "toolout.client.AsyncToolOutClient": "toolout.client:AsyncToolOutClient",
    "toolout.toolkit.Toolkit": "toolout.toolkit:Toolkit",
}
"""Rendered id -> the class it documents (`module:name`)."""
FUNCTIONS = [
    "toolout.toolkit.tool.tool",
    "toolout.toolkit.tool.define_tool",
    "toolout.toolkit.composite.composite_tool",
]
MODULES = [
    "toolout.local",
    "toolout.integrations.langchain",
    "toolout.integrations.pydantic_ai",
    "toolout.integrations.openai_agents",
]
"""Rendered whole: each name of their `__all__`."""

HEADING = re.compile(r'<h\d id="(toolout\.[\w.]+)" class="doc doc-heading">')


def own_public_names(cls: type) -> list[str]:
    """What `dir(cls)` offers without a leading underscore and toolout defines (the first class of the MRO that
    has the name is toolout's)."""
    names = []
    for name in dir(cls):
        owner = next((c for c in cls.__mro__ if name in vars(c)), None)
        if not name.startswith("_") and owner is not None and owner.__module__.startswith("toolout"):
            names.append(name)
    return names


def expected() -> dict[str, bool]:
    """Every rendered id the page must have -> whether it is a callable (so it must show a signature)."""
    wanted: dict[str, bool] = {}

    def add_class(prefix: str, cls: type) -> None:
        wanted[prefix] = False  # a class shows its bases and docstring; its `__init__` its parameters
        for name in own_public_names(cls):
            wanted[f"{prefix}.{name}"] = callable(getattr(cls, name)) and not isinstance(
                inspect.getattr_static(cls, name), property
            )

    for prefix, target in CLASSES.items():
        module, _, name = target.partition(":")
        add_class(prefix, getattr(importlib.import_module(module), name))
    for path in FUNCTIONS:
        wanted[path] = True
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        assert module.__all__, module_name
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and value.__module__ == module_name:
                add_class(f"{module_name}.{name}", value)
            else:
                wanted[f"{module_name}.{name}"] = callable(value)
    return wanted


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The reference page built by mkdocs with the site's mkdocstrings configuration: id -> its HTML section
    (from its heading to the next object's heading)."""
    tmp = tmp_path_factory.mktemp("reference")
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    handler = next(p["mkdocstrings"] for p in site["plugins"] if isinstance(p, dict) and "mkdocstrings" in p)
    options = handler["handlers"]["python"]
    options["paths"] = [str(ROOT)]
    options["options"]["extensions"] = [
        str(ROOT / extension) if extension.startswith("docs/") else extension
        for extension in options["options"]["extensions"]
    ]
    (tmp / "docs").mkdir()
    (tmp / "docs" / "index.md").write_text((ROOT / "docs" / "reference" / "python.md").read_text())
    config = {
        "site_name": "reference",
        "docs_dir": str(tmp / "docs"),
        "site_dir": str(tmp / "site"),
        "theme": site["theme"],
        "plugins": [{"mkdocstrings": handler}],
        "markdown_extensions": site["markdown_extensions"],
    }
    (tmp / "mkdocs.yml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(tmp / "mkdocs.yml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    html = (tmp / "site" / "index.html").read_text()
    starts = [(m.start(), m.group(1)) for m in HEADING.finditer(html)]
    ends = [start for start, _ in starts[1:]] + [len(html)]
    return {name: html[start:end] for (start, name), end in zip(starts, ends, strict=True)}


def test_every_public_name_is_rendered(rendered: dict[str, str]) -> None:
    assert sorted(set(expected()) - set(rendered)) == []


def test_every_public_callable_shows_its_signature(rendered: dict[str, str]) -> None:
    unsigned = [
        name
        for name, is_callable in expected().items()
        if is_callable and "doc-signature" not in rendered.get(name, "")
    ]
    assert unsigned == []


def test_every_public_name_has_a_docstring(rendered: dict[str, str]) -> None:
    """A docstring renders as plain paragraphs in the object's section (its bases line is a `<p class=...>`);
    mkdocstrings leaves a member without one out of the page, which the first test catches, so this catches a
    rendered object whose section is empty or only a signature."""
    bare = [name for name in expected() if name in rendered and "<p>" not in rendered[name]]
    assert bare == []


def test_the_async_client_shows_its_calls_as_coroutines(rendered: dict[str, str]) -> None:
    """The SDK's calls are descriptors (`toolout.sdk.endpoint`): docs/hooks/griffe_endpoints.py renders them as
    methods, awaited on the async client and returning the plan's result, not the plan."""
    store = rendered["toolout.client.AsyncToolOutClient.store"]
    assert "doc-label-async" in store and "Plan" not in store
    assert "doc-label-async" not in rendered["toolout.client.ToolOutClient.store"]


def test_the_classes_have_what_the_issue_counts() -> None:
    """The clients inherit their calls: a `dir()` that missed them would make the tests above vacuous."""
    from toolout.client import AsyncToolOutClient, ToolOutClient

    assert len(own_public_names(ToolOutClient)) >= 28 and "tool_output" in own_public_names(AsyncToolOutClient)
    assert "toolout.integrations.langchain.ToolOutMiddleware.wrap_tool_call" in expected()
    assert "toolout.integrations.langchain.ToolOutMiddleware.abefore_agent" in expected()  # a hook toolout overrides


def test_the_package_exports_what_the_reference_page_lists() -> None:
    """`toolout.__all__` and the names docs/reference/python.md gives for `import toolout` are the same list, and
    each resolves to the object its own module documents."""
    import toolout

    section = (ROOT / "docs" / "reference" / "python.md").read_text().split("## The `toolout` package", 1)[1]
    listed = re.findall(r"`(\w+)`", section.split("\n\n", 2)[1])
    assert sorted(listed) == sorted(toolout.__all__)
    for name in toolout.__all__[1:]:
        module = importlib.import_module(toolout._PUBLIC[name])
        assert getattr(toolout, name) is getattr(module, name), name
