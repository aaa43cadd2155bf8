"""What request-unique path names do to CPython's table of interned strings: the workers' one-off RSS step.

    python -m bench.profiles.interned [--live 1000,20000] [--paths 200000]

pathlib interns every part of a path it parses (`sys.intern`), so a `Path` built from a session id and a handle
puts two request-unique strings in the table that also holds every identifier of every imported module. A
mortal interned string leaves the table when its last reference goes, but the table grows and shrinks only when
it is rebuilt, to three times the strings alive at that moment rounded up to a power of two. A worker's imports
hold ~87,000 identifiers, just under the 2^18-slot table's limit (87,381), so the size the table is rebuilt at
depends on how many path parts are alive in that instant: a busy moment rebuilds it at 2^19 slots (7.6 MB instead
of 3.8 MB), and RSS steps up by 3.8 MB, once, hours in.

This imports what a warmed-up worker imports, starts tracemalloc, builds `--paths` paths of unique parts while
keeping the last `--live` of them alive, and prints the biggest block allocated since, with where: a rebuilt
table is one block at pathlib's `sys.intern`. Found (issue 33, sixth soak hour, 2 cores): 3.84 MB with 1,000 alive
(the table rebuilt at its old size), 7.69 MB with 20,000 (doubled).
"""

from __future__ import annotations

import argparse
import collections
import os
import tracemalloc
import uuid
from pathlib import Path


def warm_worker_imports() -> None:
    """The modules a worker holds after its warm-up (`workers.celery.main`): their identifiers fill the table."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import importlib

    for module in ("workers.celery.main", "workers.job.query", "litellm", "openai.resources"):
        importlib.import_module(module)
    from infra.llm.client import HEDGED_PATH_MODULES

    for module in HEDGED_PATH_MODULES:
        importlib.import_module(module)


def biggest_block(live: int, paths: int) -> tuple[float, str]:
    """MB and source line of the largest allocation made while `paths` unique paths pass, `live` at a time."""
    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    alive: collections.deque[Path] = collections.deque(maxlen=live)
    for _ in range(paths):
        alive.append(Path("/var/toolout/sessions", uuid.uuid4().hex, f"{uuid.uuid4().hex}.json"))
    grown = tracemalloc.take_snapshot().compare_to(before, "lineno")
    tracemalloc.stop()
    top = max(grown, key=lambda stat: stat.size_diff)
    frame = top.traceback[0]
    return top.size_diff / 1e6, f"{frame.filename}:{frame.lineno}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", default="1000,20000", help="paths kept alive at a time (comma-separated)")
    parser.add_argument("--paths", type=int, default=200_000, help="paths built in all, per case")
    args = parser.parse_args(argv)
    warm_worker_imports()
    for live in (int(n) for n in args.live.split(",")):
        mb, where = biggest_block(live, args.paths)
        print(f"{live:>7,} alive: biggest new block {mb:.2f} MB at {where}")


if __name__ == "__main__":
    main()
