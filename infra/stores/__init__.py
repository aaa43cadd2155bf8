"""The stores behind the engine's protocols (jobs, records, result cache, idempotency, API keys), each a
protocol with a Redis implementation and an in-memory twin; the key migration between layouts."""
