"""An agent loop on toolout's toolkit: a 20 MB tool output, a typed `$var` reference, a routed output.

The model is the offline model (deterministic, no LLM: it follows the task's tool names; see
offline_model/README.md), so this runs anywhere `make demo` runs. It shows:

1. `get_orders` returns a 20 MB JSON document: the model sees toolout's "Tool output is too large"
   message instead, calls `tool_output`, and reads the ABSTRACT;
2. `show_order` gets `"$get_orders_1.items[0]"`: the toolkit resolves it through the service, and
   the tool receives a typed `Order`, not text;
3. `search` is routed (`@tools search(output=variable:search)`): the model sees only the manifest,
   and reads the result back with `buffer_ops`.

Run it on `make demo`'s stack (the offline model, the API and a Celery worker as processes; Redis
on 127.0.0.1:6379, started by `make redis` if needed):

    .venv/bin/python examples/agent_loop.py                  # starts that stack, runs, stops it
    .venv/bin/python examples/agent_loop.py --api-url http://127.0.0.1:8000 --model-url http://127.0.0.1:8765/v1

The second form uses a stack you started yourself (docs/guides/deploy.md, "Running it yourself").
With a real model, pass `--model openai/gpt-4o-mini --model-url ''` and a natural-language task.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from toolout.devstack import datasets
from toolout.toolkit import Toolkit, tool

ORDERS_BYTES = 20 << 20
TASK = """Call get_orders. Then call show_order with {"order": "$get_orders.items[0]"}.
Then call search with {"q": "payment failed"}.
Extract: Find the order with id ORD-77731: give its customer, status and the failure_reason."""


class Customer(BaseModel):
    name: str
    city: str


class LineItem(BaseModel):
    sku: str
    product: str
    qty: int


class Order(BaseModel):
    id: str
    customer: Customer
    items: list[LineItem]
    status: str
    total_cents: int
    failure_reason: str | None = None


@tool
def get_orders() -> str:
    """Every order of the shop, as one JSON document {"items": [...]} (large)."""
    return '{"items":' + b"".join(datasets.json_orders(ORDERS_BYTES)).decode() + "}"


@tool
def show_order(order: Order) -> str:
    """Summarise one order; pass it by reference, e.g. "$get_orders_1.items[0]"."""
    return (
        f"{order.id}: {order.customer.name} ({order.customer.city}), {order.status}, {order.total_cents / 100:.2f} EUR"
    )


@tool
def search(q: str) -> str:
    """Search the shop's help center."""
    return "\n".join(f"{n}. help article about {q!r}, part {n}" for n in range(1, 201))


def run(api_url: str, model: str, model_url: str | None) -> int:
    kit = Toolkit([get_orders, show_order, search], api_url=api_url, routes="@tools search(output=variable:search)")
    with kit:
        extra = {"api_base": model_url, "api_key": "offline"} if model_url else {}
        messages = [{"role": "system", "content": "You run a shop."}, {"role": "user", "content": TASK}]
        result = kit.run_agent(model, messages, max_turns=10, **extra)
    for message in result.messages[2:]:
        print(transcript_line(message))
    print(f"\nanswer ({result.stop} after {result.turns} turns, {result.tool_calls} tool calls):\n{result.text}")
    return 0 if result.stop == "answered" else 1


def transcript_line(message: dict) -> str:
    if message["role"] == "assistant" and message.get("tool_calls"):
        calls = ", ".join(f"{c['function']['name']}({c['function']['arguments']})" for c in message["tool_calls"])
        return f"model -> {calls}"
    text = str(message.get("content") or "")
    shown = text if len(text) <= 400 else text[:400] + f" … ({len(text):,} chars)"
    return f"{message['role']:>9}: {shown}"


@contextlib.contextmanager
def demo_stack() -> Iterator[tuple[str, str]]:
    """`make demo`'s processes (offline model, API, one Celery worker), stopped on exit."""
    from infra.settings import get_settings
    from toolout.devstack import demo, processes

    processes.ensure_redis(get_settings().redis_url)
    services, api_url, env = demo.start_stack(Path(tempfile.mkdtemp(prefix="toolout-example-")), 1)
    with processes.running(*services):
        yield api_url, env["TOOLOUT_MODEL_API_BASE"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api-url", help="a running toolout API (default: start make demo's stack)")
    parser.add_argument("--model-url", help="the model's API base (the offline model's /v1)")
    parser.add_argument("--model", default="openai/toolout-offline", help="a litellm model string")
    args = parser.parse_args(argv)
    if args.api_url:
        return run(args.api_url, args.model, args.model_url or None)
    with demo_stack() as (api_url, model_url):
        return run(api_url, args.model, model_url)


if __name__ == "__main__":
    sys.exit(main())
