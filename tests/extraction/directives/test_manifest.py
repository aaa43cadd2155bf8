"""Routed-output manifests, character for character (docs/spec/directives.md §Manifest)."""

from __future__ import annotations

from extraction.directives.manifest import MAX_PATHS, RoutedItem, chars_of, input_manifest, tool_manifest
from extraction.directives.specs import parse_destination


def test_a_routed_tool_output_leaves_one_line() -> None:
    destination = parse_destination("variable:search_results")
    assert tool_manifest("search", destination, 12340) == (
        "[tool output routed] search -> variable:search_results (total 12,340 chars)"
    )
    assert tool_manifest("fetch", "discard", 5) == "[tool output routed] fetch -> discard (total 5 chars)"
    assert tool_manifest("x", "file:a/2026-01-01", 1234567) == (
        "[tool output routed] x -> file:a/2026-01-01 (total 1,234,567 chars)"
    )


def test_the_seed_input_manifest_example_exactly() -> None:
    items = [
        RoutedItem(path="notes/2026-01-01", chars=4000),
        RoutedItem(path="notes/2026-01-02", chars=4000),
        RoutedItem(path="notes/2026-01-03", chars=4340),
    ]
    assert input_manifest(items, parse_destination("variable:foo")) == (
        "[input routed] 3 files -> variable:foo (total 12,340 chars)\n"
        "paths: notes/2026-01-01, notes/2026-01-02, notes/2026-01-03"
    )


def test_one_item_is_singular_and_items_without_paths_have_no_paths_line() -> None:
    assert input_manifest([RoutedItem(chars=10)], "file:archive/2026-01-01", noun="variable") == (
        "[input routed] 1 variable -> file:archive/2026-01-01 (total 10 chars)"
    )
    assert input_manifest([], "variable:foo") == "[input routed] 0 files -> variable:foo (total 0 chars)"


def test_a_long_paths_line_is_capped() -> None:
    items = [RoutedItem(path=f"f{i}", chars=1) for i in range(MAX_PATHS + 3)]
    text = input_manifest(items, "variable:foo")
    assert text.startswith(f"[input routed] {MAX_PATHS + 3} files -> variable:foo (total {MAX_PATHS + 3} chars)\n")
    assert text.endswith(f", f{MAX_PATHS - 1}, … and 3 more")


def test_sizes_are_characters_not_bytes() -> None:
    text = "héllo wörld ☀"
    assert chars_of(text) == 13
    assert chars_of(text.encode()) == 13
    assert len(text.encode()) == 17
