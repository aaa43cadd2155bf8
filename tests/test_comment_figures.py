"""Production comments and docstrings say why in the domain's words; measurements and history live elsewhere.

A figure measured once (milliseconds, "3x faster", what a profile showed) goes stale the day the code around it
changes, and an issue number sends a newcomer to a thread instead of explaining. The figures belong in
`bench/` and docs/performance.md, which re-measure them; settings that are figures ("every 0.2 s") are fine.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION = ("api", "workers", "extraction", "infra", "toolout", "offline_model")

FORBIDDEN = {
    "an issue number": re.compile(r"\bissues?\s+#?\d+|(?<![\w&/])#\d+\b", re.IGNORECASE),
    # "every 50 ms" is a setting (how often something runs), not a measurement
    "a duration in ms or µs": re.compile(r"(?<!every )\b\d+(?:[.,]\d+)?(?:\s?-\s?\d+(?:\.\d+)?)?\s?(?:ms|µs|us)\b"),
    # "measured" alone is the domain's word for an output's stats; a figure in the same clause is a finding
    "a measurement": re.compile(
        r"\b(?:measured|profiled|profiling|py-spy)\b[^.;:]{0,60}?\d|\bprofil(?:ed|ing|e) (?:showed|shows|found)\b",
        re.IGNORECASE,
    ),
    "a counted round trip": re.compile(r"\b\d+\s+(?:more\s+)?round[- ]trips?\b", re.IGNORECASE),
    "a speed-up": re.compile(
        r"\b\d+(?:\.\d+)?(?:\s?-\s?\d+(?:\.\d+)?)?\s?[x×]\s+(?:faster|slower)\b|"
        r"\b\d+(?:\.\d+)?\s?times (?:faster|slower)\b",
        re.IGNORECASE,
    ),
    "a session diary": re.compile(r"\bthis stop\b", re.IGNORECASE),
}


def comments(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def docstrings(source: str) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = node.body[0] if node.body else None
            if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
                for offset, line in enumerate(doc.value.value.splitlines()):
                    yield doc.lineno + offset, line


def offences(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    found = []
    for lineno, text in [*comments(source), *docstrings(source)]:
        for what, pattern in FORBIDDEN.items():
            if pattern.search(text):
                found.append(f"{path}:{lineno}: {what}: {text.strip()}")
    return found


def production_files(root: Path) -> list[Path]:
    return sorted(p for package in PRODUCTION for p in (root / package).rglob("*.py"))


def production_files_offences(root: Path) -> list[str]:
    return [line for path in production_files(root) if path.exists() for line in offences(path)]


def test_no_production_comment_cites_a_measurement_or_an_issue() -> None:
    found = production_files_offences(ROOT)
    assert not found, "move the figure to bench/ or docs/performance.md and say why instead:\n" + "\n".join(found)


def test_the_scan_reads_comments_and_docstrings_not_code(tmp_path: Path) -> None:
    (tmp_path / "infra").mkdir()
    planted = tmp_path / "infra" / "planted.py"
    planted.write_text(
        '"""A module.\n\nSince issue 30 the cache is 3x faster than before."""\n\n'
        'TIMEOUT = "30 ms"  # a string in code is a value, not a comment\n'
        "def f() -> None:\n"
        '    """Fused: profiling showed the fan-out spent 4-6 ms per wave."""\n'
        "    x = 1  # saves 2 round trips (#12)\n",
        encoding="utf-8",
    )
    found = sorted((int(line.split(":")[1]), line.split(": ", 2)[1]) for line in production_files_offences(tmp_path))
    assert found == [
        (3, "a speed-up"),
        (3, "an issue number"),
        (7, "a duration in ms or µs"),
        (7, "a measurement"),
        (8, "a counted round trip"),
        (8, "an issue number"),
    ]
