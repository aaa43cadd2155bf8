"""What the engine's protocols are served by, one group per thing fronted: `redis/` and `blobstore/` (plumbing),
`stores/`, `llm/`, `outputs/`, `query/`, `planning/`, `webhooks/` (domain), `wiring/` (entry points open the
stores there); settings, errors, logs and tracing at the ground. The rules: docs/architecture.md."""
