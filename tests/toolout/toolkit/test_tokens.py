"""Client-side token counts: exact when the BPE file is available offline, else the documented estimate."""

from __future__ import annotations

import pytest

from extraction.documents.tokens import count_tokens
from toolout.toolkit import tokens


def test_the_estimate_is_three_utf8_bytes_per_token_rounded_up() -> None:
    assert tokens.estimate_tokens("") == 0
    assert tokens.estimate_tokens("abcd") == 2
    assert tokens.estimate_tokens("é") == 1  # 2 bytes


def test_without_the_bpe_file_the_counter_estimates_instead_of_downloading(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert not tokens.has_offline_encoding("o200k_base")
    assert tokens.token_counter("o200k_base") is tokens.estimate_tokens


def test_with_the_bpe_file_the_counter_is_exact() -> None:
    if not tokens.has_offline_encoding("o200k_base"):
        pytest.skip("no o200k_base BPE file offline here (TIKTOKEN_CACHE_DIR or litellm's copy)")
    count = tokens.token_counter("o200k_base")
    text = "The quick brown fox jumps over the lazy dog. " * 10
    assert count(text) == count_tokens(text, "o200k_base") != tokens.estimate_tokens(text)
