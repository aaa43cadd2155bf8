"""Session file paths: relative only, no way up, no control characters; `{today}` expanded at write time."""

from __future__ import annotations

import datetime as dt

import pytest

from extraction.directives.file_paths import (
    MAX_PATH_CHARS,
    InvalidFilePath,
    expand_path,
    fresh_file_path,
    validate_file_path,
)
from extraction.errors import InvalidInput


@pytest.mark.parametrize(
    "path",
    ["myfile", "results/{today}", "notes/2026-01-01", "a b/c,d (1).md", "~/x", "...", ".env", "dir/{today}/x.{today}"],
)
def test_valid_relative_paths_pass_unchanged(path: str) -> None:
    assert validate_file_path(path) == path


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("", "it is empty"),
        ("/etc/passwd", "only relative paths"),
        ("C:/x", "only relative paths"),
        ("a\\b", "use / as the separator"),
        ("../x", "'..' segments are not allowed"),
        ("a/../../x", "'..' segments are not allowed"),
        ("a/./b", "'.' segments are not allowed"),
        ("a//b", "empty segment"),
        ("dir/", "empty segment"),
        ("a\nb", "control character U+000A"),
        ("a\x00b", "control character U+0000"),
        ("a\x7f", "control character U+007F"),
        ("a\x85", "control character U+0085"),
        ("x/{date}", "unknown placeholder {date} (known: {today})"),
        ("x/{today", "unbalanced { or }"),
        ("x}", "unbalanced { or }"),
        ("a" * (MAX_PATH_CHARS + 1), f"the limit is {MAX_PATH_CHARS}"),
    ],
)
def test_bad_paths_are_refused_with_the_reason(path: str, problem: str) -> None:
    with pytest.raises(InvalidFilePath) as caught:
        validate_file_path(path)
    assert problem in caught.value.message
    assert isinstance(caught.value, InvalidInput)


def test_today_expands_to_the_iso_date_given() -> None:
    assert expand_path("results/{today}", dt.date(2026, 1, 1)) == "results/2026-01-01"
    assert expand_path("a/{today}/b-{today}.md", dt.date(2025, 12, 31)) == "a/2025-12-31/b-2025-12-31.md"
    assert expand_path("plain.md", dt.date(2026, 1, 1)) == "plain.md"
    with pytest.raises(InvalidFilePath):
        expand_path("/abs/{today}", dt.date(2026, 1, 1))


def test_new_mode_for_files_numbers_before_the_extension() -> None:
    assert fresh_file_path("reports/x.md", set()) == "reports/x.md"
    assert fresh_file_path("reports/x.md", {"reports/x.md"}) == "reports/x_2.md"
    assert fresh_file_path("reports/x.md", {"reports/x.md", "reports/x_2.md"}) == "reports/x_3.md"
    assert fresh_file_path("notes", {"notes"}) == "notes_2"
    assert fresh_file_path(".env", {".env"}) == ".env_2"
    assert fresh_file_path("a.tar.gz", {"a.tar.gz"}) == "a.tar_2.gz"
