"""Each integration guide's code (integrations/langchain.md, integrations/deepagents.md, integrations/pydantic-ai.md,
integrations/openai-agents.md under docs/: the first python block) runs as written,
against the stack, with the framework's OpenAI client pointed at the offline model by the standard
OPENAI_BASE_URL / OPENAI_API_KEY variables and toolout found by TOOLOUT_API_URL."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GUIDES = ["langchain", "deepagents", "pydantic-ai", "openai-agents"]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)

pytestmark = pytest.mark.slow


def first_block(guide: str) -> str:
    found = BLOCK.search((ROOT / "docs" / "integrations" / f"{guide}.md").read_text())
    assert found, f"no python block in docs/integrations/{guide}.md"
    return found.group(1)


def test_each_guide_adds_at_most_five_lines_to_the_hello_world() -> None:
    for guide in GUIDES:
        toolout_lines = [
            line for line in first_block(guide).splitlines() if "toolout" in line.lower() or "ToolOut" in line
        ]
        assert 1 <= len(toolout_lines) <= 5, (guide, toolout_lines)


@pytest.mark.parametrize("guide", GUIDES)
def test_the_guide_runs_as_written(guide: str, local_stack, offline_model_url, tmp_path) -> None:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": offline_model_url,
        "OPENAI_API_KEY": "offline",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "TOOLOUT_API_URL": local_stack.api_url,
    }
    script = tmp_path / f"guide_{guide.replace('-', '_')}.py"  # not the framework's own module name
    script.write_text(first_block(guide))
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip()
