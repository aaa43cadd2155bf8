"""Counting tokens on the client, offline: tiktoken when its BPE file is at hand, else an estimate.

tiktoken downloads an encoding's BPE file on first use; agents often run without internet (and a
download in the middle of an agent turn is never welcome). So:

1. `extraction.tokenizer_files.ensure_offline_encodings()` points tiktoken's cache at the files litellm
   ships, when litellm is installed (stdlib only: nothing is imported from litellm);
2. if the encoding's file is in tiktoken's cache (`TIKTOKEN_CACHE_DIR`, `DATA_GYM_CACHE_DIR`, or
   tiktoken's default temp folder), tokens are counted exactly;
3. otherwise (the light install without litellm or a warmed cache) tokens are ESTIMATED as
   `ceil(utf8_bytes / 3)`, never downloaded. Three bytes per token over-counts English prose
   (about 4) and is close for JSON and logs, so a budget based on it errs on the safe side:
   it compacts a little early rather than overflowing the context.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from extraction.documents.tokens import DEFAULT_ENCODING, count_tokens
from extraction.tokenizer_files import ensure_offline_encodings

TokenCounter = Callable[[str], int]
ESTIMATE_BYTES_PER_TOKEN = 3
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def estimate_tokens(text: str) -> int:
    """The documented fallback: one token per 3 UTF-8 bytes, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / ESTIMATE_BYTES_PER_TOKEN)


def tiktoken_cache_dir() -> Path:
    """Where tiktoken looks for BPE files (same rules as `tiktoken.load.read_file_cached`)."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    return Path(folder) if folder else Path(tempfile.gettempdir()) / "data-gym-cache"


def has_offline_encoding(name: str) -> bool:
    """True when tiktoken can load `name` without the network."""
    ensure_offline_encodings()
    key = hashlib.sha1(ENCODING_URL.format(name=name).encode()).hexdigest()
    return (tiktoken_cache_dir() / key).is_file()


def token_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """Exact counts with `encoding` when it is available offline, else `estimate_tokens`."""
    if has_offline_encoding(encoding):
        return lambda text: count_tokens(text, encoding)
    return estimate_tokens
