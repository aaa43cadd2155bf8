"""Generate the sync twins from their async source (what httpx does with `scripts/unasync.py`).

How to change a twin (e.g. `ToolOutClient` or `SyncTransport`):

1. edit the async source (`toolout/sdk/async_client.py`), never the generated file: its header
   says so, and the check below fails on a hand edit;
2. if the sync and async code must wait differently, add an `x` / `x_sync` pair to
   `toolout/sdk/driving.py` and a line to `NAMES` below, rather than a branch in the source;
3. run `python -m toolout._unasync` to rewrite the generated file, and commit both;
4. `python -m toolout._unasync --check` (run by `make lint` and by `tests/toolout/test_unasync.py`)
   exits 1 and names every generated file that differs from what the generator makes now.

The rewrite is a handful of regular expressions over the source text, applied in order: the
`async`/`await` keywords go, then each async name becomes its sync twin (whole words only); the
result goes through `ruff format` (a `_sync` name can push a line past the limit), so the generated
file passes the same lint as the rest. It is a developer tool (it needs the dev extra's ruff):
nothing imports it at runtime, so the light install never needs it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = {"toolout/sdk/async_client.py": "toolout/sdk/sync_client.py"}
"""Each async source (relative to the repository) and the sync module generated from it."""

KEYWORDS = [(r"\basync (def|with|for)\b", r"\1"), (r"\bawait ", "")]
NAMES = {
    "AsyncToolOutClient": "ToolOutClient",
    "AsyncTransport": "SyncTransport",
    "AsyncClient": "Client",
    "AsyncIterator": "Iterator",
    "AsyncIterable[str] | Iterable[str]": "Iterable[str]",
    "AsyncIterable, AsyncIterator, Iterable": "Iterable, Iterator",
    "Asynchronous": "Synchronous",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "aclose": "close",
    "aread": "read",
    "aiter_text": "iter_text",
    "run_async": "run_sync",
    "until_canceled": "until_canceled_sync",
    "cancelable_sleep": "cancelable_sleep_sync",
    "sendable": "sendable_sync",
    "encoded": "encoded_sync",
}
"""Async name → sync twin, replaced as whole words (longest first, so a name inside a longer one is safe)."""


def header(source: str) -> str:
    """The generated module's first lines: where it comes from, and where its documentation is."""
    return (
        f"# Generated from {source} by toolout/_unasync.py (python -m toolout._unasync); do not edit.\n"
        f'"""The sync twin of `{_module(source)}`: see that module for what it does and why."""'
    )


def unasync(text: str, source: str) -> str:
    """The sync module for the async source `text` (at repository path `source`)."""
    for pattern, replacement in KEYWORDS:
        text = re.sub(pattern, replacement, text)
    names = sorted(NAMES, key=len, reverse=True)
    alternatives = "|".join(re.escape(name) for name in names)
    text = re.sub(rf"(?<!\w)({alternatives})(?!\w)", lambda m: NAMES[m.group(1)], text)
    return _docstring(text, source)


def _docstring(text: str, source: str) -> str:
    """Replace the source's module docstring by the header that names the source."""
    if not text.startswith('"""'):
        raise ValueError(f"{source} must start with its module docstring")
    return header(source) + text[text.index('"""', 3) + 3 :]


def _module(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def formatted(text: str, target: str, root: Path = ROOT) -> str:
    """`text` as `ruff format` (with the repository's settings) would write it to `target`."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise RuntimeError("the generator formats with ruff: install the dev extra (pip install -e '.[dev]')")
    done = subprocess.run(
        [ruff, "format", "--stdin-filename", target, "-"], input=text, capture_output=True, text=True, cwd=root
    )
    if done.returncode != 0:
        raise RuntimeError(f"ruff format failed on the generated {target}: {done.stderr}")
    return done.stdout


def generated(source: str, target: str, root: Path = ROOT) -> str:
    """What `target` must contain: `source` rewritten, then formatted."""
    return formatted(unasync((root / source).read_text(encoding="utf-8"), source), target, root)


def stale(root: Path = ROOT) -> list[str]:
    """The generated files that differ from what the generator makes now (missing ones included)."""
    out = []
    for source, target in PAIRS.items():
        wanted = generated(source, target, root)
        path = root / target
        if not path.exists() or path.read_text(encoding="utf-8") != wanted:
            out.append(target)
    return out


def write(root: Path = ROOT) -> None:
    for source, target in PAIRS.items():
        (root / target).write_text(generated(source, target, root), encoding="utf-8")


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print("usage: python -m toolout._unasync [--check]", file=sys.stderr)
        return 2
    if not argv:
        write()
        return 0
    behind = stale()
    for target in behind:
        print(f"{target} is stale: run `python -m toolout._unasync` and commit the result", file=sys.stderr)
    return 1 if behind else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
