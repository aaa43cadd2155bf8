"""The reference MCP filesystem server from the npm registry, installed once into `var/npm` and run with node.

A real third-party upstream for `toolout mcp-proxy`'s tests. Without node or the registry the tests
skip on a laptop and fail under CI=true (`tests.fixtures.servers.unavailable`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.fixtures.servers import unavailable

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = "@modelcontextprotocol/server-filesystem"
VERSION = "2026.8.31"
PREFIX = ROOT / "var" / "npm" / f"server-filesystem-{VERSION}"
ENTRY = PREFIX / "node_modules" / PACKAGE / "dist" / "index.js"


def filesystem_server_entry() -> Path:
    """The installed server's entry script (`node ENTRY DIR...` serves those directories on stdio)."""
    if ENTRY.is_file():
        return ENTRY
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        unavailable("node and npm are needed to run the reference MCP filesystem server")
    command = [str(npm), "install", "--no-audit", "--no-fund", "--prefix", str(PREFIX), f"{PACKAGE}@{VERSION}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        unavailable(f"npm install {PACKAGE}@{VERSION} took over 300 s")
    if done.returncode != 0 or not ENTRY.is_file():
        unavailable(f"npm install {PACKAGE}@{VERSION} failed: {done.stderr[-2000:]}")
    return ENTRY


def node() -> str:
    path = shutil.which("node")
    assert path is not None
    return path
