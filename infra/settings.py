"""The one settings class. Every field is documented in docs/configuration.md; every env var is `TOOLOUT_<FIELD>`."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Literal

from platformdirs import user_data_path
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DATA_DIR = user_data_path("toolout", appauthor=False)
"""What an installed toolout keeps by default belongs to the user who runs it, never to the package's own folder
(site-packages): `~/.local/share/toolout` on Linux (`$XDG_DATA_HOME/toolout`), the platform's equivalent elsewhere."""
OFFLINE_MODEL = "openai/toolout-offline"
OFFLINE_API_BASE = "http://127.0.0.1:8765/v1"
OFFLINE_API_KEY = "offline"
"""The offline model (`offline_model/`, a test double): its endpoint is the default of its own name only. Any other
model goes to `model_api_base`/`model_api_key` when set, else where litellm's provider conventions say
(`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …)."""
STAGES = ("map", "reduce", "agent")
"""The stages a job calls a model in: map calls, reduce calls, the read-grep sub-agent's turns."""


class ModelConfig(BaseModel):
    """What the operator says about one model (`TOOLOUT_MODELS`, a JSON object keyed by litellm model name).

    Every field is optional: the endpoint defaults to `model_api_base`/`model_api_key`, the limits to
    litellm's model map (else `model_context_tokens`/`model_max_output_tokens`), and no rpm/tpm means
    the provider's limits are not paced.
    """

    api_base: str | None = None
    api_key: str | None = Field(None, repr=False)
    context_tokens: int | None = Field(None, ge=1)
    max_output_tokens: int | None = Field(None, ge=1)
    rpm: int | None = Field(None, ge=1, description="requests per minute the provider allows (shared by all workers)")
    tpm: int | None = Field(None, ge=1, description="tokens per minute (prompt + max_tokens) the provider allows")


class Settings(BaseSettings):
    """Runtime configuration of API, workers and CLI (env prefix `TOOLOUT_`)."""

    model_config = SettingsConfigDict(env_prefix="TOOLOUT_", env_file=None, extra="ignore")

    # --- wiring -------------------------------------------------------------------------------
    redis_url: str = "redis://127.0.0.1:6379/0"
    broker_url: str | None = Field(None, description="Celery broker; defaults to redis_url")
    redis_sentinels: str | None = Field(
        None,
        description="host:port,host:port of Redis Sentinels: the primary is asked of them, and followed on failover",
    )
    redis_sentinel_master: str = Field("toolout", description="the master name the Sentinels monitor")
    redis_cluster: bool = Field(
        False,
        description="redis_url is one node of a Redis Cluster (the client finds the others); the broker is then "
        "RabbitMQ or a standalone Redis (broker_url), since Celery's Redis transport cannot use a cluster",
    )
    blob_store: str = Field(
        f"file://{DATA_DIR / 'blobs'}",
        description="file:///abs/path or s3://bucket[/prefix]; default: the user's data dir",
    )
    s3_endpoint_url: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_region: str = "us-east-1"
    s3_multipart_threshold_bytes: int = 16 << 20
    s3_multipart_chunk_bytes: int = 16 << 20
    blob_read_block_bytes: int = 8 << 20

    # --- model --------------------------------------------------------------------------------
    model: str = OFFLINE_MODEL
    model_api_base: str | None = Field(None, description="None: the offline model's for it, else the provider's own")
    model_api_key: str | None = Field(None, repr=False, description="None: the provider's variable (OPENAI_API_KEY, …)")
    offline_model_api_base: str = Field(
        OFFLINE_API_BASE, description="where the offline model answers (its own name only; compose: its service)"
    )
    model_context_tokens: int = Field(128_000, description="used when litellm does not know the model")
    model_max_output_tokens: int = Field(4_096, description="reserved for each answer")
    model_timeout_seconds: float = 60.0
    model_num_retries: int = 2
    tokenizer_encoding: str = "o200k_base"
    model_probe_timeout_seconds: float = Field(
        2.0, gt=0, lt=3, description="/readyz: how long the model endpoint may take to answer GET /models"
    )
    model_probe_cache_seconds: float = Field(
        5.0, ge=0, description="/readyz: how long a model probe's answer is reused"
    )

    # --- a model per stage, fallbacks, provider limits (docs/models.md) ----------------------
    map_model: str | None = Field(None, description="the map calls' model (default: model)")
    reduce_model: str | None = Field(None, description="the reduce calls' model (default: model)")
    agent_model: str | None = Field(None, description="the read-grep sub-agent's model (default: model)")
    map_fallbacks: list[str] = Field(default_factory=list, description="tried in order when the map model fails")
    reduce_fallbacks: list[str] = Field(default_factory=list)
    agent_fallbacks: list[str] = Field(default_factory=list)
    allowed_models: list[str] = Field(
        default_factory=list, description="models a request may name (`model`); empty = requests cannot choose"
    )
    models: dict[str, ModelConfig] = Field(
        default_factory=dict, description="per litellm model: endpoint, limits, rpm/tpm (JSON)"
    )
    rate_limit_burst_seconds: float = Field(
        1.0, gt=0, description="how far ahead of its model's pace a call may go (rpm/tpm burst tolerance)"
    )

    # --- oversize & mode choice --------------------------------------------------------------
    tool_response_max_bytes: int = 12_000
    context_budget_tokens: int = Field(8_000, description="tokens the calling agent can still spend on one tool result")
    max_chunks_for_full_mode: int = 1
    long_line_bytes: int = 1000
    chunk_overlap: float = Field(0.10, ge=0.0, le=0.5)
    max_reduce_depth: int = 4
    truncate_bytes: int = 12_000
    evidence: bool = Field(
        True, description="answers cite the lines they came from, and each quote is checked against the output"
    )

    # --- limits & lifetimes -------------------------------------------------------------------
    max_upload_bytes: int = 1 << 30
    upload_read_timeout_seconds: float = Field(
        60.0, gt=0, description="an upload whose client sends nothing for this long is cut (408), like nginx's"
    )
    max_uploads_in_flight: int = Field(
        256, ge=1, description="uploads one API process receives at once; past it a new one gets 503, Retry-After"
    )
    max_extract_chars: int = 8_000
    session_ttl_seconds: int = 24 * 3600
    job_ttl_seconds: int = 24 * 3600
    job_deadline_seconds: int = 1800
    console: bool = Field(True, description="serve the web console at /console/ (static pages; it calls the API)")
    trace_max_bytes: int = Field(
        256 * 1024, ge=0, description="a job's trace (what each model call read and said) is cut here; 0 = off"
    )
    max_wait_seconds: float = 30.0

    # --- variables, output routing, buffers ---------------------------------------------------
    inline_output_max_bytes: int = Field(
        16_384, ge=0, description="outputs up to this size live in their Redis record: no blob round trip"
    )
    max_resolved_value_chars: int = Field(
        1_000_000, ge=1, description="a $reference resolving to more characters is refused (pass the handle)"
    )
    grep_time_budget_seconds: float = Field(
        10.0,
        ge=0,
        description="one grep (REST, buffer_ops, the read-grep agent's Grep) stops after this long with the "
        "matches so far and the line it stopped at (0 = no budget)",
    )
    retired_version_grace_seconds: int = Field(
        300, ge=0, description="a replaced version of a variable or file stays readable this long (then swept)"
    )
    sweep_interval_seconds: float = Field(
        60.0, gt=0, description="how often the API deletes idle sessions, expired sessions and outputs, old versions"
    )
    tenant_ttl_seconds: dict[str, int] = Field(
        default_factory=dict,
        description="tenant -> TTL its new sessions get when the upload asks none (JSON); none: only the idle TTL",
    )

    # --- process memory (infra.process.memory) ---------------------------------------------------------
    malloc_arena_max: int = Field(
        2, ge=0, description="glibc malloc arenas per process (API, worker); 0 leaves glibc's 8 per core"
    )
    malloc_trim_interval_seconds: float = Field(
        60.0, ge=0, description="how often the API and workers hand free heap pages back to the kernel; 0 = never"
    )
    memory_snapshot_dir: str = Field(
        "", description="on SIGUSR2 the API or worker writes where its memory sits here (infra.process.snapshots)"
    )
    malloc_mmap_threshold_bytes: int = Field(
        128 * 1024, ge=0, description="blocks this big or bigger get pages of their own; 0 = glibc's sliding bound"
    )

    # --- workers ------------------------------------------------------------------------------
    worker_concurrency: int = 8
    task_soft_time_limit_seconds: int = 240
    task_time_limit_seconds: int = 300
    visibility_timeout_seconds: int = 3600
    map_retry_on_bad_report: int = 1
    max_failed_chunk_fraction: float = Field(
        0.25,
        ge=0.0,
        le=1.0,
        description="a map-reduce job whose unreadable chunks exceed this share falls back to truncate; "
        "fewer are named in a WARNING and the answer covers the rest (0 = any failed chunk falls back)",
    )

    # --- read-grep sub-agent ------------------------------------------------------------------
    agent_max_turns: int = 15
    agent_max_tool_calls_per_turn: int = 10
    agent_max_total_tokens: int = 200_000

    # --- query strategy (DuckDB over structured outputs; turn and token bounds: the agent_* above) ---
    query_memory_limit_mb: int = Field(512, ge=64, description="DuckDB memory limit per connection (load or query)")
    query_threads: int = Field(1, ge=1, description="DuckDB threads per connection")
    query_load_threads: int = Field(
        0,
        ge=0,
        description="DuckDB threads of a load (a document to Parquet: the preload, a first question); 0: one per core",
    )
    query_temp_dir: str | None = Field(None, description="where loads and queries spill; None: the system temp dir")
    query_max_temp_mb: int = Field(8192, ge=16, description="spill space one connection may use")
    query_statement_timeout_seconds: float = Field(10.0, gt=0, description="a model's SQL is interrupted after this")
    query_max_sql_chars: int = Field(8000, ge=100, description="a model's SQL longer than this is refused unparsed")
    query_max_cell_chars: int = Field(
        1000, ge=50, description="a result value is cut to this many characters in DuckDB"
    )
    query_max_result_bytes: int = Field(262144, ge=1024, description="one Query result's values stop at this size")
    query_load_timeout_seconds: float = Field(600.0, gt=0, description="a load taking longer is stopped (not loadable)")
    query_process_memory_mb: int = Field(
        2048, ge=256, description="address space a query/load child process may add (RLIMIT_AS); passed: killed"
    )
    query_process_cpu_seconds: float = Field(
        60.0, gt=0, description="CPU seconds one query or load may use in its child process (RLIMIT_CPU)"
    )
    query_max_rows: int = Field(50, ge=1, description="rows one Query result shows at most")
    query_max_result_tokens: int = Field(3000, ge=200, description="tokens one Query or Schema result takes at most")
    query_preload: bool = Field(
        True, description="load an oversized structured output's tables when it is stored, before any question"
    )
    query_load_wait_seconds: float = Field(
        300.0, ge=0, description="how long a question waits for a load of the same content already running"
    )

    # --- access control & fault tolerance -----------------------------------------------------
    auth_mode: Literal["keys", "dev"] = Field("keys", description="dev = no authentication (announced loudly)")
    api_keys: dict[str, str] = Field(
        default_factory=dict, description="sha256(key) hex -> tenant; more via `toolout keys`"
    )
    idempotency_ttl_seconds: int = 24 * 3600
    unredacted_tenants: dict[str, str] = Field(
        default_factory=dict,
        description="tenant -> why its jobs read outputs with their secrets (logged); every other tenant's jobs "
        "read the redacted view (docs/privacy.md)",
    )
    max_concurrent_jobs_per_tenant: int = 16
    max_llm_calls_per_job: int = 2000

    # --- hedged model calls (infra/llm/hedging; the defaults' arithmetic is in its policy module) --
    hedge_enabled: bool = Field(
        True, description="send a hedge copy of a call that waits past the trigger (false: never; docs/performance.md)"
    )
    hedge_percentile: float = Field(90.0, gt=0, le=100, description="the trigger's percentile of the latency window")
    hedge_median_multiple: float = Field(2.0, ge=0, description="the trigger is at least this many medians")
    hedge_floor_seconds: float = Field(1.0, ge=0, description="the trigger is at least this many seconds")
    hedge_min_samples: int = Field(20, ge=1, description="latencies a window needs before its percentiles are used")
    hedge_initial_delay_seconds: float = Field(3.0, ge=0, description="the trigger until a window has min_samples")
    hedge_window: int = Field(200, ge=1, description="latencies kept per model and stage (per worker process)")
    hedge_budget_fraction: float = Field(0.10, ge=0, le=1, description="hedges per job: this share of its calls")
    hedge_per_call: int = Field(2, ge=1, description="hedges one call may send (one per trigger it waits past)")
    result_cache_ttl_seconds: int = Field(
        24 * 3600,
        ge=0,
        description="how long a finished extraction may answer the same request again (0 = no result cache)",
    )
    estimate_answer_tokens: int = Field(
        1000, ge=1, description="what an estimate assumes one map or reduce answer takes (capped at the model's)"
    )
    watchdog_interval_seconds: float = 15.0
    job_max_attempts: int = Field(
        2, description="a job past its deadline is retried until this many attempts, then failed"
    )
    max_task_deliveries: int = Field(
        3,
        ge=2,
        description="a job's task message is delivered at most this many times: each delivery before the last runs "
        "its step (redelivered when its worker died), the last one fails the job naming the step instead",
    )

    # --- webhooks ------------------------------------------------------------------------------
    webhook_secret: str | None = Field(None, description="master secret the per-tenant signing secrets derive from")
    webhook_allow_private: bool = Field(False, description="allow callback URLs on private/loopback networks")
    webhook_timeout_seconds: float = 10.0
    webhook_max_attempts: int = Field(8, ge=1)
    webhook_retry_base_seconds: float = Field(2.0, gt=0, description="first retry delay; doubles each attempt")

    # --- api ----------------------------------------------------------------------------------
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    api_keep_alive_seconds: int = Field(
        75,
        gt=0,
        description="how long the API keeps an idle HTTP connection open: longer than a client reuses one (httpx "
        "and so the SDK: 5 s), so a request is never sent on a connection the server is closing (a reset)",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = Field(
        "text", description="json: one object a line with trace_id and job_id (API and worker processes)"
    )

    @field_validator(
        "broker_url",
        "redis_sentinels",
        "s3_endpoint_url",
        "s3_access_key_id",
        "s3_secret_access_key",
        "model_api_base",
        "model_api_key",
        "webhook_secret",
        mode="before",
    )
    @classmethod
    def _empty_means_unset(cls, value: object) -> object:
        """`TOOLOUT_MODEL_API_BASE=` (empty) must mean "the provider's default", not an empty URL."""
        return None if value == "" else value

    @field_validator("map_fallbacks", "reduce_fallbacks", "agent_fallbacks", "allowed_models", "models", mode="before")
    @classmethod
    def _json_text(cls, value: object) -> object:
        """JSON text given as a value (not through the environment, which decodes it): decode it the same way."""
        return json.loads(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _timeouts_are_ordered(self) -> Settings:
        """LLM timeout < soft limit < hard limit < visibility timeout, or redelivery races the task."""
        chain = [
            self.model_timeout_seconds,
            self.task_soft_time_limit_seconds,
            self.task_time_limit_seconds,
            self.visibility_timeout_seconds,
        ]
        if chain != sorted(chain) or len(set(chain)) != len(chain):
            raise ValueError(
                "timeouts must be strictly ordered: model_timeout_seconds < task_soft_time_limit_seconds "
                f"< task_time_limit_seconds < visibility_timeout_seconds (got {chain})"
            )
        return self

    @model_validator(mode="after")
    def _cluster_has_its_own_broker(self) -> Settings:
        """A Redis Cluster holds the state; Celery's messages need a broker it can use, named on its own."""
        if self.redis_cluster and self.redis_sentinels:
            raise ValueError("redis_cluster and redis_sentinels exclude each other: a cluster fails over by itself")
        if self.redis_cluster and self.broker_url is None:
            raise ValueError(
                "redis_cluster needs broker_url (amqp://… or a standalone redis://…): Celery cannot use a cluster"
            )
        return self

    @field_validator("redis_sentinels")
    @classmethod
    def _sentinels_are_addresses(cls, value: str | None) -> str | None:
        if value is not None:
            parse_sentinels(value)
        return value

    @property
    def sentinels(self) -> list[tuple[str, int]]:
        """The Sentinels' addresses; empty when Redis is reached at `redis_url` itself."""
        return parse_sentinels(self.redis_sentinels) if self.redis_sentinels else []

    @property
    def celery_broker_url(self) -> str:
        return self.broker_url or self.redis_url

    def stage_model(self, stage: str) -> str:
        """The model a stage (`map`, `reduce`, `agent`) calls, unless a request names one."""
        chosen: str | None = getattr(self, f"{stage}_model")
        return chosen or self.model

    def stage_models(self, requested: str | None = None) -> dict[str, str]:
        """Each stage's model for a job: the one the request named, else the stage's own."""
        return {stage: requested or self.stage_model(stage) for stage in STAGES}

    def model_chain(self, stage: str, model: str) -> list[str]:
        """`model`, then the stage's fallbacks in order (each model once)."""
        fallbacks: list[str] = getattr(self, f"{stage}_fallbacks")
        return list(dict.fromkeys([model, *fallbacks]))

    def model_config_for(self, model: str) -> ModelConfig:
        """The operator's word on `model`; its endpoint defaults to the deployment's `model_api_base`/`_key`, and
        for the offline model alone, with neither set, to the offline model's address (never for a named one)."""
        own = self.models.get(model, ModelConfig())
        defaults = {"api_base": self.model_api_base, "api_key": self.model_api_key}
        if model == OFFLINE_MODEL and self.model_api_base is None:
            defaults = {"api_base": self.offline_model_api_base, "api_key": self.model_api_key or OFFLINE_API_KEY}
        return own.model_copy(update={k: v for k, v in defaults.items() if getattr(own, k) is None})


def parse_sentinels(text: str) -> list[tuple[str, int]]:
    """`host:port,host:port` -> [(host, port), ...]; a malformed entry is a clear error at start-up."""
    addresses = []
    for entry in (part.strip() for part in text.split(",")):
        host, _, port = entry.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(
                f"redis_sentinels: {entry!r} is not host:port (expected e.g. 10.0.0.5:26379,10.0.0.6:26379)"
            )
        addresses.append((host, int(port)))
    return addresses


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings, read once from the environment."""
    return Settings()
