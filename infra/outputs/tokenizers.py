"""Exact token counts at store time, several times faster than tiktoken: gigatoken, checked against tiktoken.

Every stored output is tokenized once, in full, as it arrives (`extraction.documents.stats`); with tiktoken
that pass was most of an upload's time. gigatoken reads the same BPE rank files and gives
the same counts, piece by piece, many times faster (docs/performance.md, "Token counts at store
time"; `tests/infra/test_tokenizers.py` proves the equality on every encoding it covers).

Two cases stay with tiktoken, so the counts never change:

* encodings gigatoken has no pretokenizer for here (p50k_base), or whose rank file is not in tiktoken's
  cache, or when gigatoken is not installed;
* pieces holding the text of a special token (`<|endoftext|>`): gigatoken always reads those as the
  special token, where the stats pass counts them as ordinary text.

Parallelism is ours, not gigatoken's: its own thread pool is off in forked workers (Celery's prefork) and
unsafe after a fork, so each batch is cut into one slice per thread and every thread runs gigatoken's
sequential path, which releases the GIL.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from extraction.documents.stats import default_threads
from extraction.documents.tokens import CountBatch, get_encoding, tiktoken_counter

if TYPE_CHECKING:
    import gigatoken

PRETOKENIZERS = {"o200k_base": "o200k", "cl100k_base": "cl100k"}
"""The encodings counted by gigatoken, with the pretokenizer (split regex) each one needs."""

_RANKS_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def store_counter(encoding_name: str, *, threads: int | None = None) -> CountBatch:
    """The fastest exact `CountBatch` for `encoding_name`: gigatoken when it can, else tiktoken."""
    threads = threads or default_threads()
    tokenizer = gigatoken_for(encoding_name)
    if tokenizer is None:
        return tiktoken_counter(encoding_name, threads=threads)
    return GigatokenCounter(tokenizer, encoding_name, threads=threads)


def warm_up(encoding_name: str) -> None:
    """Load and run the store-time counter once (seconds for gigatoken), so the first upload does not wait."""
    store_counter(encoding_name, threads=1)(["warm up"])


@cache
def gigatoken_for(encoding_name: str) -> gigatoken.Tokenizer | None:
    """gigatoken loaded from the rank file tiktoken itself verified and cached; None when it cannot be."""
    pretokenizer = PRETOKENIZERS.get(encoding_name)
    if pretokenizer is None:
        return None
    try:
        import gigatoken
    except ImportError:  # the server extra is not installed: tiktoken counts alone
        return None
    encoding = get_encoding(encoding_name)  # downloads (or finds) and checks the rank file first
    ranks = cached_ranks_file(encoding_name)
    if ranks is None:
        return None
    specials = {text: encoding.encode_single_token(text) for text in encoding.special_tokens_set}
    return gigatoken.Tokenizer.from_tiktoken(ranks, pretokenizer=pretokenizer, special_tokens=specials)


def cached_ranks_file(encoding_name: str) -> Path | None:
    """Where tiktoken keeps the encoding's rank file (`tiktoken.load.read_file_cached`), if it is there."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    base = Path(folder) if folder else Path(tempfile.gettempdir()) / "data-gym-cache"
    path = base / hashlib.sha1(_RANKS_URL.format(name=encoding_name).encode()).hexdigest()  # tiktoken's cache key
    return path if path.is_file() else None


class GigatokenCounter:
    """A `CountBatch` on gigatoken, sliced over threads, with tiktoken for pieces holding special-token text."""

    def __init__(self, tokenizer: gigatoken.Tokenizer, encoding_name: str, *, threads: int) -> None:
        self._tokenizer, self._threads = tokenizer, max(1, threads)
        self._fallback = tiktoken_counter(encoding_name)
        self._specials = sorted(get_encoding(encoding_name).special_tokens_set)

    def __call__(self, texts: list[str]) -> list[int]:
        special = [i for i, text in enumerate(texts) if any(s in text for s in self._specials)]
        if not special:
            return self._count_plain(texts)
        plain = sorted(set(range(len(texts))) - set(special))
        counts = dict(zip(plain, self._count_plain([texts[i] for i in plain]), strict=True))
        counts.update(zip(special, self._fallback([texts[i] for i in special]), strict=True))
        return [counts[i] for i in range(len(texts))]

    def _count_plain(self, texts: list[str]) -> list[int]:
        size = -(-len(texts) // self._threads) or 1
        slices = [texts[i : i + size] for i in range(0, len(texts), size)]
        if len(slices) <= 1:
            return self._count_slice(texts)
        with ThreadPoolExecutor(len(slices), thread_name_prefix="toolout-tokens") as pool:
            return [count for counts in pool.map(self._count_slice, slices) for count in counts]

    def _count_slice(self, texts: list[str]) -> list[int]:
        import awkward  # gigatoken's own dependency: there whenever this class is built

        tokens = self._tokenizer.encode_batch(texts, parallel=False)
        counts: list[int] = awkward.num(tokens, axis=1).to_list()
        return counts
