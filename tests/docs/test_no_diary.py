"""The docs say what a user can do and what it costs, not how the project got there.

A page that names an issue, a work session, the machine the docs were written on or the people who wrote them is a
lab notebook: the reader cannot resolve any of it. That history lives in CHANGELOG.md, in dated entries. Each
pattern below is narrow on purpose, so that ordinary prose ("stop the worker", "a session's outputs", "Issue a
key") still passes; `test_each_pattern_passes_ordinary_prose` keeps it so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs_pages import FENCE, ROOT

DIARY = {
    "an issue number": re.compile(r"\bissues? #?\d+", re.I),
    "a work stop": re.compile(r"\b(?:this|that|last|next|previous|current) stop\b|\bstop \d+\b", re.I),
    "a work session or branch": re.compile(r"\bthis (?:session|branch)\b|\bbranch `[\w/-]+`", re.I),
    "a to-do": re.compile(r"\bstill to do\b|\bleft undone\b|\bto-dos?\b|\bnot done yet\b", re.I),
    "the people who wrote it": re.compile(
        r"\bengineers?\b|\b(?:other|another) (?:helpers?|sessions)\b|\bthe lead\b(?!-)", re.I
    ),
    "a path of the build machine": re.compile(r"/work/|site-packages/|/home/\w+/|/root/\S"),
}
"""What gives a diary away, each with what it is."""

PROSE_ONLY = {"a temporary path of the build machine": re.compile(r"/tmp/\S")}
"""Matched outside code blocks only: a block may show what a command prints, temp directory included."""


def docs_pages() -> list[Path]:
    """Every Markdown page of the docs site."""
    return sorted((ROOT / "docs").rglob("*.md"))


def diary_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, what was found, the line) for every diary mark in a page's text."""
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    found = [
        (n, what, line) for n, line in enumerate(text.splitlines(), 1) for what, p in DIARY.items() if p.search(line)
    ]
    found += [
        (n, what, line)
        for n, line in enumerate(prose.splitlines(), 1)
        for what, p in PROSE_ONLY.items()
        if p.search(line)
    ]
    return sorted(found)


def diary_report(path: Path) -> str:
    """Each diary mark of a page as `path:line: what: the line`, one a line; empty when there is none."""
    found = diary_lines(path.read_text(encoding="utf-8"))
    return "\n".join(f"{path.name}:{n}: {what}: {line.strip()[:160]}" for n, what, line in found)


@pytest.mark.parametrize("path", docs_pages(), ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_no_page_reads_like_a_diary(path: Path) -> None:
    assert diary_report(path) == "", "move the history to CHANGELOG.md, say what a user gets instead"


PLANTED = {
    "an issue number": "The record behind those numbers, newest first (issue 30).",
    "a work stop": "Measured on a quiet box with the code of this stop.",
    "a work session or branch": "The per-model count now rides with the map's output (branch `perf`).",
    "a to-do": "Still to do for the soak: run the hour again.",
    "the people who wrote it": "The box was shared with other engineers' suites.",
    "a path of the build machine": "On the corpus pages (`/work/shared/corpus`, Python 3.11 docs).",
}


@pytest.mark.parametrize("what", sorted(PLANTED))
def test_a_planted_diary_line_fails_its_page(tmp_path: Path, what: str) -> None:
    page = tmp_path / "planted.md"
    page.write_text(f"# A page\n\nA true sentence.\n\n{PLANTED[what]}\n", encoding="utf-8")
    assert diary_report(page) == f"planted.md:5: {what}: {PLANTED[what]}"


def test_a_temp_path_counts_in_prose_not_in_what_a_command_prints() -> None:
    printed = "```\ntoolout dev: ready\n  blobs: /tmp/toolout-dev-k3j1/blobs\n```\n"
    assert diary_lines(printed) == []
    assert [what for _, what, _ in diary_lines("The logs were in /tmp/pytest-of-root/ that day.\n")] == [
        "a temporary path of the build machine"
    ]


def test_each_pattern_passes_ordinary_prose() -> None:
    prose = (
        "Stop the worker; a grep stops after 10 s; the job stops at its next step. A session's outputs stay; "
        "delete a session with DELETE. Issue a key with `toolout keys create`; the issuer is named. "
        "Redis keys of other tenants; a part of a stage; multipart parts of 16 MiB; `/root` is never shown; "
        "`/v1/outputs/{handle}/lines`; the lead-in of a prompt; what the branch coverage measures."
    )
    assert diary_lines(prose) == []
