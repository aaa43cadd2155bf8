"""The README's "your own agent loop" quickstart, extracted and run as it is written.

Against the API over real HTTP (in-memory stores, jobs in-process: `live_api`) and the offline model
served in this process, reached by litellm through `OPENAI_API_BASE` as any OpenAI-compatible
endpoint would be. The model name in the README is a real one; the offline model ignores it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs_pages import blocks, page, section
from tests.toolout.variables_server import require_variable_routes

ROOT = Path(__file__).resolve().parents[2]


def quickstart() -> str:
    [code] = blocks(section(page("README.md"), "## Quickstart: your own agent loop"), "python")
    return code


def test_the_quickstart_is_at_most_15_lines() -> None:
    assert len(quickstart().strip().splitlines()) <= 15


@pytest.fixture()
def offline_model() -> Iterator[str]:
    from offline_model.server import create_app
    from tests.fixtures.api_server import serve_app

    with serve_app(create_app()) as url:
        yield f"{url}/v1"


@pytest.mark.integration  # a Python process of its own (litellm's import alone is ~5 s) and two HTTP servers
def test_the_quickstart_runs_and_the_model_reads_the_abstract(live_api, offline_model) -> None:
    require_variable_routes(live_api.url)
    env = {
        **os.environ,
        "TOOLOUT_API_URL": live_api.url,
        "OPENAI_API_BASE": offline_model,
        "OPENAI_API_KEY": "offline",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run(
        [sys.executable, "-c", quickstart()], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("Done. Tools called: get_orders, tool_output.\nLast tool result:\n")
    assert "ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE " in done.stdout
