"""The store-time counter gives tiktoken's counts exactly, piece by piece, on every encoding gigatoken covers."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from extraction.documents.stats import measure
from extraction.documents.tokens import tiktoken_counter
from extraction.tokenizer_files import ensure_offline_encodings
from infra.outputs import tokenizers
from infra.outputs.tokenizers import PRETOKENIZERS, GigatokenCounter, cached_ranks_file, gigatoken_for, store_counter

ensure_offline_encodings()

CORPUS = Path("/work/shared/corpus")
"""Real tool outputs (logs, CSV, JSON, HTML) on the development machines; the generated documents run everywhere."""


def generated_documents() -> dict[str, bytes]:
    """Shapes that stress a BPE port: specials' text, emoji and CJK, long runs, invalid UTF-8, raw bytes."""
    rng = random.Random(7)
    ndjson = "".join(json.dumps({"id": i, "name": f"user{i}", "score": rng.random()}) + "\n" for i in range(3000))
    unicode = "日本語のテキスト 中文 한국어 Ελληνικά русский العربية 😀🎉👍🏽 👨‍👩‍👧 e\u0301 \u200b\n" * 400
    runs = "".join(" " * rng.randint(1, 3000) + "7" * rng.randint(1, 3000) + "\t\r\n" * 40 for _ in range(20))
    specials = "text <|endoftext|> more <|endofprompt|><|fim_prefix|> 's 'RE 've\n" * 300
    invalid = bytearray(unicode.encode()[:60000])
    for _ in range(500):
        invalid[rng.randrange(len(invalid))] = rng.choice([0xFF, 0xC3, 0x80, 0xE2, 0xF0])
    return {
        "ndjson": ndjson.encode(),
        "unicode": unicode.encode(),
        "runs": runs.encode(),
        "specials": specials.encode(),
        "specials-in-few-pieces": (ndjson[:40000] + "<|endoftext|>" + ndjson[40000:]).encode(),
        "invalid-utf8": bytes(invalid),
        "random-bytes": rng.randbytes(50000),
    }


CORPUS_BYTES = 128 << 10
"""Enough of each corpus file for a few dozen pieces of 4 KiB, while the reference (tiktoken) stays quick."""


def documents() -> list[tuple[str, bytes]]:
    files = sorted(CORPUS.glob("*")) if CORPUS.is_dir() else []
    found = [(p.name, p.read_bytes()[:CORPUS_BYTES]) for p in files if p.is_file()]
    return found + sorted(generated_documents().items())


@pytest.mark.parametrize("encoding", sorted(PRETOKENIZERS))
def test_counts_equal_tiktoken_piece_by_piece(encoding: str) -> None:
    counter = store_counter(encoding, threads=3)
    assert isinstance(counter, GigatokenCounter)
    for name, data in documents():
        fast = measure([data], encoding, piece_bytes=4096, count_batch=counter)
        reference = measure([data], encoding, piece_bytes=4096)
        assert fast.index == reference.index, name
        assert fast.stats == reference.stats, name


def test_a_batch_mixing_specials_keeps_its_order() -> None:
    texts = ["plain " * 50, "a<|endoftext|>b", "", "日本語 😀", "<|endofprompt|>", "x" * 9000]
    assert store_counter("o200k_base", threads=2)(texts) == tiktoken_counter("o200k_base")(texts)


def test_encodings_gigatoken_lacks_count_with_tiktoken() -> None:
    counter = store_counter("p50k_base")
    assert not isinstance(counter, GigatokenCounter)
    data = generated_documents()["runs"]
    assert measure([data], "p50k_base", count_batch=counter) == measure([data], "p50k_base")


def test_without_gigatoken_installed_tiktoken_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    gigatoken_for.cache_clear()
    monkeypatch.setitem(sys.modules, "gigatoken", None)
    try:
        assert gigatoken_for("o200k_base") is None
        assert store_counter("o200k_base")(["hello world"]) == [2]
    finally:
        gigatoken_for.cache_clear()


def test_a_rank_file_missing_from_the_cache_means_tiktoken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tokenizers.get_encoding("cl100k_base")  # loaded (and cached in memory) from the real folder first
    gigatoken_for.cache_clear()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    try:
        assert cached_ranks_file("cl100k_base") is None
        assert gigatoken_for("cl100k_base") is None
    finally:
        gigatoken_for.cache_clear()


def test_the_rank_file_is_looked_up_where_tiktoken_puts_it_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr(tokenizers.tempfile, "gettempdir", lambda: "/nonexistent")
    assert cached_ranks_file("o200k_base") is None


def test_warm_up_loads_the_counter() -> None:
    tokenizers.warm_up("o200k_base")
    assert gigatoken_for("o200k_base") is not None
