"""The two executors of SDK plans (`toolout.sdk.plans`): one sync, one async; nothing else sends requests.

Both are written once: `AsyncTransport` in `toolout.sdk.async_client`, and `SyncTransport` generated
from it into `toolout.sdk.sync_client` by `toolout._unasync`; the plan driver they share and the
primitives where they wait differently are in `toolout.sdk.driving`. This module keeps the names
where they have always been importable from.
"""

from __future__ import annotations

from toolout.sdk.async_client import AsyncTransport
from toolout.sdk.cancellation import Cancellation
from toolout.sdk.sync_client import SyncTransport

__all__ = ["AsyncTransport", "Cancellation", "SyncTransport"]
