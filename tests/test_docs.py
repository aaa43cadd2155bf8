"""The docs stay true: every fenced block parses as its language, and every page that shows code meant to be
run names the test that runs it (or says why its blocks are fragments).

The site itself is built with `mkdocs build --strict` (`make docs`, in CI): a broken link or a page missing
from the navigation fails there.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess

import pytest

from tests.docs_pages import ROOT, blocks, fenced_blocks, page, pages, section

RUN_BY = {
    "README.md": [
        "tests/toolout/test_dev_quickstarts.py",
        "tests/toolout/mcp/test_docs_mcp_config.py",
        "tests/test_docs.py",
    ],
    "getting-started.md": ["tests/toolout/test_dev_quickstarts.py"],  # curl and SDK run; the CLI lines parse
    "guides/toolkit.md": ["tests/test_docs.py"],  # its block is the README's quickstart, checked equal below
    "guides/mcp.md": ["tests/toolout/mcp/test_docs_mcp_config.py"],
    "guides/mcp-proxy.md": ["tests/toolout/mcp/test_proxy_cli.py"],
    "guides/variables.md": ["tests/api/test_docs_variables_guide.py"],
    "guides/deploy.md": ["tests/compose/test_deploy_guide.py"],  # its Compose section, run by `make test-compose`
    "reference/rest.md": ["tests/infra/webhooks/test_delivery.py"],
    "models.md": ["tests/infra/llm/test_catalog_settings.py"],  # the recipe's exports, read as Settings
    **{
        f"integrations/{guide}.md": ["tests/toolout/integrations/test_guides.py"]
        for guide in ("langchain", "deepagents", "pydantic-ai", "openai-agents")
    },
}
"""Pages with python, bash or json blocks, and the tests that run (or parse and check) those blocks."""

# integrations/*.md: the first python block is the guide (run); the later ones (a ToolNode, toolout.local.serve)
# continue the reader's own code: they only have to parse.
# reference/rest.md: besides the webhook receiver (run), its SDK and embedded-mode snippets continue the reader's
# own code (`big_output_bytes`): they only have to parse.
CHECKED = {"python", "bash", "json"}


def test_every_page_with_code_names_the_test_that_runs_it() -> None:
    with_code = {p for p in pages() if any(lang in CHECKED for lang, _ in fenced_blocks(page(p)))}
    assert with_code <= set(RUN_BY), sorted(with_code - set(RUN_BY))
    for name, tests in RUN_BY.items():
        for test in tests:
            assert (ROOT / test).is_file(), test
            source = (ROOT / test).read_text()
            assert name in source or (name == "README.md" and "README" in source), (name, test)


@pytest.mark.parametrize("name", pages())
def test_every_block_parses_as_its_language(name: str) -> None:
    for lang, body in fenced_blocks(page(name)):
        if lang == "python":
            ast.parse(body)
        elif lang == "json":
            json.loads(body)
        elif lang == "bash" and shutil.which("bash"):
            done = subprocess.run(["bash", "-n"], input=body, capture_output=True, text=True, check=False)
            assert done.returncode == 0, (name, done.stderr)


def test_the_readme_framework_quickstart_is_the_langchain_guide_that_runs() -> None:
    """`tests/toolout/integrations/test_guides.py` runs the guide's block as written; the README shows the same."""
    readme = blocks(section(page("README.md"), "## Quickstart: an agent framework"), "python")
    assert readme == blocks(page("integrations/langchain.md"), "python")[:1]


def test_the_toolkit_guide_shows_the_quickstart_the_readme_runs() -> None:
    readme = blocks(section(page("README.md"), "## Quickstart: your own agent loop"), "python")
    assert blocks(page("guides/toolkit.md"), "python")[0] == readme[0]


def test_every_page_is_in_the_site_navigation() -> None:
    """MkDocs only warns about a page left out of the nav when `validation.omitted_files` says so; keep it on."""
    config = (ROOT / "mkdocs.yml").read_text()
    assert "omitted_files: warn" in config and "strict: true" in config
    for name in pages():
        if name != "README.md":
            assert f" {name}" in config, name


NOTEBOOK = {
    "a design seed's number": re.compile(r"\bseed 0\d\d\b", re.I),
    "a bench's code name (F1)": re.compile(r"\bF\d+\b"),
    "a test's code name (R1)": re.compile(r"\bR\d+\b"),
    "a numbered fix": re.compile(r"\bfix \d+\b", re.I),
    "a work round": re.compile(r"\bthis round\b", re.I),
}
"""Lab-notebook shorthand a reader cannot resolve: the pages say what was measured or changed instead."""


@pytest.mark.parametrize("name", pages())
def test_no_page_speaks_lab_notebook(name: str) -> None:
    text = page(name)
    found = {what: sorted(set(p.findall(text))) for what, p in NOTEBOOK.items() if p.search(text)}
    assert found == {}, name


def test_the_notebook_patterns_catch_what_they_are_for() -> None:
    sample = "keeps seed 002's schema; F1 at 32 chunks; R1's job; as fix 10 did; this round added"
    assert all(p.search(sample) for p in NOTEBOOK.values())
    assert not any(p.search("RFC 9110, HTTP/1.1, fixes 1-4, a round trip, 128 @ 500 ms") for p in NOTEBOOK.values())
