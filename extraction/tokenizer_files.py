"""Make tiktoken work offline by pointing it at the BPE files that litellm ships.

tiktoken downloads encodings on first use; this machine (and many deployments) has no internet.
litellm's wheel carries o200k_base, cl100k_base and p50k_base under the file names tiktoken's
cache expects, so setting TIKTOKEN_CACHE_DIR to that folder is enough. Nothing is imported from
litellm (its import is slow and reaches for the network); we only locate its package folder.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def litellm_tokenizer_dir() -> Path | None:
    """The folder inside the installed litellm package that holds tiktoken cache files."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


def ensure_offline_encodings() -> None:
    """Set TIKTOKEN_CACHE_DIR unless the operator already chose one."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    folder = litellm_tokenizer_dir()
    if folder is not None:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
