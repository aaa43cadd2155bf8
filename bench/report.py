"""How every benchmark prints its verdicts: one aligned table, PASS or MISS against each target."""

from __future__ import annotations


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def print_table(rows: list[tuple[str, str, str, str]]) -> None:
    """Rows of (measure, value, target, result); the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for number, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip())
        if number == 0:
            print("  ".join("-" * width for width in widths))
