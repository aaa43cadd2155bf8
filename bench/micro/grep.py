"""P4: `grep_lines` over a 100 MB stored log vs `grep -n` on the same file, in the same run.

    python -m bench.micro.grep [--mb 100] [--runs 3] [--block-mb 8] [--path /tmp/toolout-bench-grep.log]

The log is generated deterministically (cached at --path) with a few planted needles. Each case
reports the best of --runs wall-clock times (page cache warm for both sides) and the ratio
ours/grep, twice: with the blob's `LineIndex` (the service's path — the index is built at ingest
or on first Read; its one-off build time is printed) and without it (every newline counted).
The target, <= 1.5x, applies to the indexed path. Exit status 1 if an indexed case misses it
or any run disagrees with grep on the matching line numbers.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from extraction.documents.grep import grep_lines
from extraction.documents.lines import LineIndex, index_blob
from infra.outputs.grep_engine import compile_matcher

TARGET = 1.5
NEEDLE = "NEEDLE-7f3a"
CASES = [  # (name, pattern, regex, ignore_case, grep flags)
    ("literal", NEEDLE, False, False, ["-F"]),
    ("regex", r"status=5[0-9][0-9] latency=[0-9]{4,}ms", True, False, ["-E"]),
    ("literal -i", "needle-7F3A", False, True, ["-F", "-i"]),
]

T = TypeVar("T")


class FileReader:
    """A minimal file-backed `BlobReader` (the bench must not depend on a particular blob store)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def size(self, key: str) -> int:
        return self.path.stat().st_size

    def read_range(self, key: str, start: int, end: int) -> bytes:
        with self.path.open("rb") as handle:
            handle.seek(start)
            return handle.read(max(0, end - start))

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int = 8 << 20
    ) -> Iterator[bytes]:
        end = self.size(key) if end is None else end
        with self.path.open("rb", buffering=0) as handle:
            handle.seek(start)
            while start < end and (block := handle.read(min(block_size, end - start))):
                start += len(block)
                yield block


def generate(path: Path, megabytes: int) -> None:
    """A realistic-looking access log; needles (and a few 5xx slow requests) planted at fixed lines."""
    rng = random.Random(4)
    target, lines, written = megabytes << 20, [], 0
    with path.open("wb") as out:
        n = 0
        while written < target:
            n += 1
            line = _log_line(rng, n)
            lines.append(line)
            written += len(line) + 1
            if len(lines) == 10_000:
                out.write(("\n".join(lines) + "\n").encode())
                lines = []
        out.write(("\n".join(lines) + "\n").encode() if lines else b"")


def _log_line(rng: random.Random, n: int) -> str:
    status = 503 if n % 250_007 == 0 else rng.choice((200, 200, 200, 201, 204, 301, 404, 500))
    latency = rng.randint(1000, 9999) if status == 503 else rng.randint(1, 900)
    note = f" marker={NEEDLE}" if n % 333_331 == 0 else ""
    return (
        f"2026-01-{1 + n // 3_000_000:02d}T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z "
        f"INFO [worker-{rng.randint(1, 16)}] id={rng.getrandbits(48):012x} GET /api/v1/items/{rng.randint(1, 99999)} "
        f"status={status} latency={latency}ms{note}"
    )


def best_of(runs: int, fn: Callable[[], T]) -> tuple[float, T]:
    """The fastest of `runs` runs (at least one), and the last run's value."""
    seconds, values = [], []
    for _ in range(max(1, runs)):
        started = time.perf_counter()
        values.append(fn())
        seconds.append(time.perf_counter() - started)
    return min(seconds), values[-1]


def run_grep(path: Path, pattern: str, flags: list[str]) -> list[int]:
    done = subprocess.run(["grep", "-n", *flags, "--", pattern, str(path)], capture_output=True, check=False)
    return [int(line.split(b":", 1)[0]) for line in done.stdout.splitlines()]


def run_ours(
    path: Path, pattern: str, regex: bool, ignore_case: bool, index: LineIndex | None, block: int
) -> list[int]:
    matcher = compile_matcher(pattern, regex=regex, ignore_case=ignore_case)
    result = grep_lines(FileReader(path), "bench", matcher, max_matches=10_000, index=index, block_size=block)
    return [int(line.split(":", 1)[0]) for line in result.text.splitlines()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--block-mb", type=float, default=8, help="grep_lines block_size in MiB")
    parser.add_argument("--path", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "toolout-bench-grep.log")
    args = parser.parse_args()
    if not args.path.exists() or args.path.stat().st_size < args.mb << 20:
        generate(args.path, args.mb)
    size, block = args.path.stat().st_size, int(args.block_mb * (1 << 20))
    build_t, index = best_of(1, lambda: index_blob(FileReader(args.path), "bench"))
    print(
        f"P4 grep: {size / 2**20:.0f} MiB, block {args.block_mb:g} MiB, best of {args.runs}, target "
        f"ours/grep <= {TARGET}x (indexed)"
    )
    print(
        f"  LineIndex build (once per blob): {build_t * 1000:.0f} ms, {len(index.offsets)} offsets, "
        f"{index.lines:,} lines"
    )
    failed = False
    for name, pattern, regex, ignore_case, flags in CASES:
        run_grep(args.path, pattern, flags)  # warm the page cache
        theirs_t, theirs = best_of(args.runs, functools.partial(run_grep, args.path, pattern, flags))
        print(f"  {name:<11} grep -n {' '.join(flags):<5} {theirs_t * 1000:7.1f} ms  ({len(theirs)} matching lines)")
        for label, idx in (("indexed", index), ("no index", None)):
            run = functools.partial(run_ours, args.path, pattern, regex, ignore_case, idx, block)
            ours_t, ours = best_of(args.runs, run)
            ratio = ours_t / theirs_t
            ok = ours == theirs and (idx is None or ratio <= TARGET)
            failed |= not ok
            verdict = (
                "MISMATCH" if ours != theirs else ("ok" if ratio <= TARGET else ("MISS" if idx is not None else "over"))
            )
            print(f"      grep_lines {label:<9} {ours_t * 1000:7.1f} ms   ratio {ratio:4.2f}x   {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
