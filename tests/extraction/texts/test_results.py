"""The agent-visible result texts, character for character (docs/spec/tool-output.md §Results)."""

from extraction.texts.report import NO_RELEVANT_DATA
from extraction.texts.results import abstract_text, failed_text, not_found_abstract, unknown_handle_text

HANDLE = "3f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b"


def test_abstract_text_is_the_exact_success_format() -> None:
    assert abstract_text("github_search", HANDLE, "full-chunked", "Three repos match.") == (
        "ABSTRACT FROM TOOL OUTPUT github_search WITH HANDLE 3f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b, "
        "STRATEGY:full-chunked:\n\nThree repos match."
    )


def test_failed_text_is_the_exact_failure_format() -> None:
    assert failed_text("fetch", HANDLE, "read-grep", "the sub-agent gave no final report") == (
        "TOOL_OUTPUT FAILED FOR fetch WITH HANDLE 3f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b, "
        "STRATEGY:read-grep:\n\nthe sub-agent gave no final report"
    )


def test_not_found_abstract_says_what_was_searched_and_what_is_there() -> None:
    body = not_found_abstract("  the API key of service X ", "Access logs from 2024, HTTP status codes and paths.")
    assert body == (
        "NO RELEVANT DATA FOUND\n\n"
        "Searched for: the API key of service X\n\n"
        "What the document contains instead: Access logs from 2024, HTTP status codes and paths."
    )


def test_not_found_abstract_does_not_repeat_the_models_marker() -> None:
    body = not_found_abstract("errors", "NO RELEVANT DATA FOUND\nOnly INFO-level log lines.")
    assert body == (
        "NO RELEVANT DATA FOUND\n\nSearched for: errors\n\nWhat the document contains instead: Only "
        "INFO-level log lines."
    )
    assert body.count(NO_RELEVANT_DATA) == 1


def test_not_found_abstract_without_a_description_says_so() -> None:
    assert not_found_abstract("errors", "NO RELEVANT DATA FOUND") == (
        "NO RELEVANT DATA FOUND\n\nSearched for: errors\n\n"
        "What the document contains instead: The extractor did not describe what the document contains."
    )


def test_not_found_wrapped_as_a_success() -> None:
    text = abstract_text("ls", HANDLE, "truncate", not_found_abstract("x", "file names"))
    assert text.startswith(
        f"ABSTRACT FROM TOOL OUTPUT ls WITH HANDLE {HANDLE}, STRATEGY:truncate:\n\nNO RELEVANT DATA FOUND\n"
    )


def test_unknown_handle_is_a_success_that_points_at_the_too_large_message() -> None:
    assert unknown_handle_text(HANDLE) == (
        "ABSTRACT FROM TOOL OUTPUT unknown WITH HANDLE 3f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b, STRATEGY:none:\n\n"
        "No tool output is stored under handle 3f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b. Handles come from the "
        '"Tool output is too large" message that replaced an oversized tool result; copy the handle exactly '
        "from that message (handles belong to the session that created them)."
    )


def test_unknown_handle_names_the_tool_when_known() -> None:
    assert unknown_handle_text("h1", tool_name="tool_output", mode_used="auto").startswith(
        "ABSTRACT FROM TOOL OUTPUT tool_output WITH HANDLE h1, STRATEGY:auto:\n\nNo tool output is stored "
        "under handle h1."
    )
