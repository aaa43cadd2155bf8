"""Root fixtures: offline tokenizers for every test; server fixtures live in tests/fixtures."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from infra.tokenizer_files import ensure_offline_encodings

ensure_offline_encodings()

pytest_plugins = [
    "tests.fixtures.redis",
    "tests.fixtures.s3",
    "tests.fixtures.offline_model",
    "tests.fixtures.api_server",
    "tests.fixtures.stack",
    "tests.fixtures.faults",
    "tests.fixtures.multihost",
    "tests.fixtures.measurements",
]
