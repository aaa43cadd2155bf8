"""How every benchmark prints its verdicts: one aligned table, PASS or MISS against each target."""

from __future__ import annotations

from collections.abc import Sequence


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def print_table(rows: Sequence[tuple[str, ...]]) -> None:
    """Rows of (measure, value, target, result), or as many columns as the header has; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for number, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip())
        if number == 0:
            print("  ".join("-" * width for width in widths))
