"""The toolkit imports with pydantic, the standard library and `extraction` only (client side, no server deps)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ALLOWED = {
    "pydantic",
    "pydantic_core",
    "typing_extensions",
    "typing_inspection",
    "annotated_types",
    "extraction",
    "toolout",
}

PROBE = """
import json, sys
before = set(sys.modules)
import toolout.toolkit
print(json.dumps(sorted({name.split('.')[0] for name in set(sys.modules) - before})))
"""


def test_importing_the_toolkit_loads_nothing_but_pydantic_and_the_stdlib() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    foreign = {name for name in loaded - ALLOWED if name not in sys.stdlib_module_names and not name.startswith("_")}
    assert foreign == set()
    assert {"toolout", "pydantic"} <= loaded  # the probe did import something: it can see a foreign module


RUNTIME_PROBE = """
import json, sys
import toolout.toolkit
toolout.toolkit.Toolkit  # the runtime, loaded on first use
print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))
"""
SERVER_PACKAGES = {"fastapi", "starlette", "celery", "kombu", "redis", "boto3", "botocore", "litellm", "uvicorn"}


def test_the_runtime_loads_the_sdk_but_no_server_package() -> None:
    out = subprocess.run([sys.executable, "-c", RUNTIME_PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert "httpx" in loaded  # the probe reached the runtime
    assert loaded & SERVER_PACKAGES == set()
