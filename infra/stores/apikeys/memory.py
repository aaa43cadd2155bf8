"""Stored API keys in process memory (embedded mode, unit tests)."""

from __future__ import annotations

import threading

from infra.stores.apikeys.base import ApiKeyInfo, ApiKeyStore, configured_keys


class MemoryApiKeyStore(ApiKeyStore):
    def __init__(self, configured: dict[str, str] | None = None) -> None:
        self.configured = configured_keys(configured or {})
        self._stored: dict[str, ApiKeyInfo] = {}
        self._lock = threading.Lock()

    def stored_tenant(self, digest: str) -> str | None:
        with self._lock:
            info = self._stored.get(digest)
        return info.tenant if info else None

    def store(self, info: ApiKeyInfo) -> None:
        with self._lock:
            self._stored[info.key_hash] = info

    def stored(self) -> list[ApiKeyInfo]:
        with self._lock:
            return list(self._stored.values())

    def forget(self, digest: str) -> None:
        with self._lock:
            self._stored.pop(digest, None)
