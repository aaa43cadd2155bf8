"""The variables guide's examples (variables, routing, buffer_ops), run as written against a live API.

Every ```bash block of the section runs, in order, in one bash process (so `SESSION` and `ops` carry over),
with the guide's base URL swapped for the test server's; what each block prints must be the ```text
block shown under it, once handles (UUIDs) and dates are masked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.docs_pages import page
from tests.fixtures.api_server import ApiServer

GUIDE = "guides/variables.md"
GUIDE_URL = "http://127.0.0.1:8000"
END = "@@END-OF-BLOCK@@"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def examples() -> list[tuple[str, str]]:
    """(bash, expected output) pairs of the section, in order; a block with no text block prints nothing."""
    fences = re.findall(r"```(bash|text)\n(.*?)```", section_text(), flags=re.DOTALL)
    pairs: list[tuple[str, str]] = []
    for kind, body in fences:
        if kind == "bash":
            pairs.append((body, ""))
        else:
            assert pairs and not pairs[-1][1], "a text block must follow a bash block"
            pairs[-1] = (pairs[-1][0], body)
    return pairs


def section_text() -> str:
    """The whole guide: every part of it (variables, routing, buffer_ops) has examples."""
    return page(GUIDE)


def masked(output: str) -> str:
    return DATE.sub("<date>", UUID.sub("<uuid>", output)).strip()


def test_the_section_has_examples_for_each_part() -> None:
    pairs = examples()
    assert len(pairs) >= 10
    for route in ("/resolve", "/resolve-stream", "/instructions", "output=variable:", "/buffer_ops", "/routing/parse"):
        assert any(route in bash for bash, _ in pairs), route


def test_every_example_prints_what_the_readme_shows(api_server: ApiServer) -> None:
    missing = [tool for tool in ("bash", "curl", "jq") if shutil.which(tool) is None]
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the guide's examples need {missing}")
        pytest.skip(f"the guide's examples need {missing}")
    pairs = examples()
    script = "set -euo pipefail\n" + "".join(f'{bash}\necho\necho "{END}"\n' for bash, _ in pairs)
    script = script.replace(GUIDE_URL, api_server.url)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    outputs = done.stdout.split(f"{END}\n")
    assert len(outputs) == len(pairs) + 1
    for (bash, expected), printed in zip(pairs, outputs, strict=False):
        assert masked(printed) == masked(expected), bash
