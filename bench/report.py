"""How every benchmark prints its verdicts: one aligned table, PASS or MISS against each target."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def print_table(rows: Sequence[tuple[str, ...]]) -> None:
    """Rows of (measure, value, target, result), or as many columns as the header has; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for number, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip())
        if number == 0:
            print("  ".join("-" * width for width in widths))


def run_parts(
    parts: Sequence[str],
    runners: Mapping[str, Callable[[Any], Sequence[tuple[str, ...]]]],
    titles: Mapping[str, str],
    args: Any,
) -> int:
    """Run each named part, print its title, seconds and table; exit status 1 when any row MISSes a target."""
    missed = False
    for part in parts:
        started = time.perf_counter()
        rows = runners[part](args)
        print(f"{titles[part]}  ({time.perf_counter() - started:.0f} s)")
        print_table(rows)
        print(flush=True)
        missed |= any(row[3] == "MISS" for row in rows)
    return 1 if missed else 0
