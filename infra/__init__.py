"""Adapters behind the engine's protocols: blob stores, job store, litellm, settings, offline model."""
