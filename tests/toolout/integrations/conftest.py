"""What the framework tests share: the 20 MB orders JSON with its planted order, the task the offline
model's simple agent follows (call the tool, then `tool_output` on the too-large message), and the
exact too-large message the service would write for a stored output."""

from __future__ import annotations

import pytest

from extraction.documents.stats import measure
from extraction.documents.tokens import DEFAULT_ENCODING
from extraction.texts.oversize import too_large_message
from tests.fixtures.stack import Stack
from toolout.client import ToolOutAPIError
from toolout.devstack import datasets

ORDERS_BYTES = 20 << 20
NEEDLE = datasets.ORDER_NEEDLE.needle
TASK = f"Call get_orders.\nExtract: {datasets.ORDER_NEEDLE.request}"
SMALL_TASK = 'Call get_order with {"id": "ORD-1"}.'
SMALL_ORDER = '{"id": "ORD-1", "status": "paid", "customer": {"name": "Ada", "city": "Oslo"}}'


def chat_openai(model_url: str):  # type: ignore[no-untyped-def]
    """LangChain's ChatOpenAI on the offline model, with an HTTP client of its own: its default async client is
    shared process-wide and bound to the first event loop (each test runs its own `asyncio.run`)."""
    import httpx
    from langchain_openai import ChatOpenAI

    client = httpx.AsyncClient(timeout=300)
    return ChatOpenAI(
        model="toolout-offline", base_url=model_url, api_key="offline", max_retries=0, http_async_client=client
    )


@pytest.fixture(scope="session")
def orders_json() -> str:
    return '{"items":' + b"".join(datasets.json_orders(ORDERS_BYTES)).decode() + "}"


def expected_too_large(content: str, handle: str) -> str:
    """The message the service writes for `content` stored as `handle` (measured as the service measures)."""
    return too_large_message(measure([content.encode()], DEFAULT_ENCODING).stats, handle)


def session_deleted(stack: Stack, handle: str) -> bool:
    """The run's session went at the run's end, and its outputs with it."""
    with stack.client() as client:
        try:
            client.output(handle)
        except ToolOutAPIError as exc:
            return exc.status == 404
    return False
