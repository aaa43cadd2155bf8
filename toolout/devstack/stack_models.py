"""A stack with three offline models on three ports, for a model per stage, fallbacks and provider limits.

* model A (`openai/gpt-4o-mini`, the map model): limited to `rpm` requests a minute — past them it answers 429;
* model B (`openai/gpt-4o`, the reduce model): no limits;
* model C (`openai/toolout-broken`): answers every call with a 429 or a 500. A request naming it (it is the
  only allowed model) falls back to B for its maps and to A for its reduce.

A and B keep names litellm prices, so every call has a cost; their windows are set small in
`TOOLOUT_MODELS` (3000 tokens) so a 50 kB document makes several chunks. The API and `workers` Celery
workers of `concurrency` threads each run on their own Redis database. Shared by the integration tests
of models and limits and by the bench that runs the same stack at full size (`bench/service/provider_limits.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import redis

from toolout.devstack import processes
from toolout.devstack.stack import Stack, answering_worker, launch, offline_env

CHEAP, STRONG, BROKEN = "openai/gpt-4o-mini", "openai/gpt-4o", "openai/toolout-broken"
WINDOW = {"api_key": "offline", "context_tokens": 3000, "max_output_tokens": 400}
KNOBS: dict[str, dict[str, str]] = {
    CHEAP: {},
    STRONG: {},
    BROKEN: {"TOOLOUT_OFFLINE_ERROR_RATE": "1", "TOOLOUT_OFFLINE_ERROR_KINDS": "429,500"},
}
"""Each model's offline-server knobs beyond its latency (A's rate limit is added from `rpm`)."""


def models_env(redis_url: str, root: Path, ports: dict[str, int], rpm: int) -> dict[str, str]:
    base = {model: f"http://127.0.0.1:{port}/v1" for model, port in ports.items()}
    models: dict[str, dict[str, Any]] = {
        CHEAP: {**WINDOW, "api_base": base[CHEAP], "rpm": rpm},
        STRONG: {**WINDOW, "api_base": base[STRONG]},
        BROKEN: {**WINDOW, "api_base": base[BROKEN]},
    }
    return {
        **offline_env(root, redis_url, base[CHEAP]),
        "TOOLOUT_MODEL": CHEAP,
        "TOOLOUT_MAP_MODEL": CHEAP,
        "TOOLOUT_REDUCE_MODEL": STRONG,
        "TOOLOUT_MAP_FALLBACKS": json.dumps([STRONG]),
        "TOOLOUT_REDUCE_FALLBACKS": json.dumps([CHEAP]),
        "TOOLOUT_ALLOWED_MODELS": json.dumps([BROKEN]),
        "TOOLOUT_MODELS": json.dumps(models),
        "TOOLOUT_MODEL_NUM_RETRIES": "1",
        "TOOLOUT_MODEL_TIMEOUT_SECONDS": "20",
        "TOOLOUT_MAX_CONCURRENT_JOBS_PER_TENANT": "100",
        "TOOLOUT_RESULT_CACHE_TTL_SECONDS": "0",
        "TOOLOUT_TASK_SOFT_TIME_LIMIT_SECONDS": "600",
        "TOOLOUT_TASK_TIME_LIMIT_SECONDS": "660",
        "TOOLOUT_JOB_DEADLINE_SECONDS": "1800",
    }


def start_models_stack(
    redis_url: str, root: Path, *, rpm: int, workers: int = 3, concurrency: int = 32, latency_ms: int = 40
) -> Stack:
    """Start it all and wait until every worker answers; on failure, stop what started and raise RuntimeError."""
    redis.Redis.from_url(redis_url).flushdb()
    ports = {model: processes.free_port() for model in (CHEAP, STRONG, BROKEN)}
    env, api_port, logs = models_env(redis_url, root, ports, rpm), processes.free_port(), root / "logs"
    stack = Stack("models", f"http://127.0.0.1:{api_port}", redis_url, env, logs)
    stack.model_urls = {model: f"http://127.0.0.1:{port}" for model, port in ports.items()}
    models = [model_service(model, port, rpm, latency_ms, logs) for model, port in ports.items()]
    names = [f"models-worker-{i + 1}" for i in range(workers)]
    worker_services = [answering_worker(name, env, logs, concurrency=concurrency) for name in names]
    return launch(stack, [*models, processes.api(api_port, env, logs), *worker_services], timeout=120)


def model_service(model: str, port: int, rpm: int, latency_ms: int, logs: Path) -> processes.Service:
    """One offline model with its knobs, logging in a folder of its own (the three share a log file name)."""
    limit = {"TOOLOUT_OFFLINE_RPM": str(rpm)} if model == CHEAP else {}
    env = {"TOOLOUT_OFFLINE_LATENCY_MS": str(latency_ms), **limit, **KNOBS[model]}
    return processes.offline_model(port, env, logs / model.split("/")[-1])
