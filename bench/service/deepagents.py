"""deepagents with and without ToolOutMiddleware: the same task, what the main model receives, calls, seconds.

    python -m bench.service.deepagents [--mb 20] [--redis-url redis://127.0.0.1:6379/10]

The task: a tool returns an orders JSON of `--mb` MB with one planted order (ORD-77731); the agent must
name its customer, status and failure_reason. The main model is the offline model (its simple agent:
it calls the tool, then follows whatever the tool message asks: deepagents' eviction message → `read_file`
of the first 100 lines, as that message says; toolout's too-large message → `tool_output`). Both runs use
`create_deep_agent` with the same tool and `ChatOpenAI` on the offline model over HTTP; "with" adds
`middleware=[ToolOutMiddleware(...)]`, nothing else.

Measured per run: the main model's requests (calls), the tokens it received summed over its requests
(tiktoken, the offline encoding; the messages, and apart the tool definitions), the run's wall seconds,
and whether the final answer holds the planted record. docs/integrations/deepagents.md quotes its table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass

import httpx
from deepagents import create_deep_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from bench.service.harness import running_stack
from toolout.devstack import datasets
from toolout.integrations.langchain import ToolOutMiddleware
from toolout.toolkit.tokens import token_counter

TASK = f"Call get_orders.\nExtract: {datasets.ORDER_NEEDLE.request}"


@dataclass
class Run:
    name: str
    calls: int = 0
    tokens: int = 0
    tool_tokens: int = 0
    seconds: float = 0.0
    found: bool = False
    tools: str = ""


def counting_model(model_url: str, run: Run) -> ChatOpenAI:
    """ChatOpenAI whose requests are counted: one call, and the tokens of the messages it carries."""
    count = token_counter()

    async def on_request(request: httpx.Request) -> None:
        body = json.loads(request.content or b"{}")
        run.calls += 1
        run.tokens += sum(count(json.dumps(message, ensure_ascii=False)) for message in body.get("messages", []))
        run.tool_tokens += count(json.dumps(body.get("tools") or [], ensure_ascii=False))

    client = httpx.AsyncClient(event_hooks={"request": [on_request]}, timeout=600)
    return ChatOpenAI(  # type: ignore[call-arg]  # its fields' aliases (model, base_url, api_key) are what it documents
        model="toolout-offline", base_url=model_url, api_key="offline", max_retries=0, http_async_client=client
    )


async def one_run(name: str, model_url: str, orders: str, middleware: list) -> Run:
    run = Run(name)

    @tool
    def get_orders() -> str:
        """Every order of the shop (large JSON)."""
        return orders

    agent = create_deep_agent(model=counting_model(model_url, run), tools=[get_orders], middleware=middleware)
    started = time.perf_counter()
    state = await agent.ainvoke({"messages": [{"role": "user", "content": TASK}]}, {"recursion_limit": 50})
    run.seconds = time.perf_counter() - started
    answer = str(state["messages"][-1].content)
    run.found = datasets.ORDER_NEEDLE.needle in answer
    run.tools = answer.split("\n", 1)[0].removeprefix("Done. Tools called: ").rstrip(".")
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=20, help="size of the orders JSON")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/10", help="a Redis database it may flush")
    args = parser.parse_args()
    orders = '{"items":' + b"".join(datasets.json_orders(args.mb << 20)).decode() + "}"
    with running_stack(args.redis_url, model={"TOOLOUT_OFFLINE_LATENCY_MS": "0"}, worker={"concurrency": 4}) as stack:
        assert stack.model_url and stack.api_url

        async def both() -> list[Run]:
            plain = await one_run("deepagents", stack.model_url or "", orders, [])
            middleware = ToolOutMiddleware(api_url=stack.api_url)
            offloaded = await one_run("deepagents + ToolOutMiddleware", stack.model_url or "", orders, [middleware])
            await middleware.aclose()
            return [plain, offloaded]

        runs = asyncio.run(both())
    rows = [
        [r.name, r.tools, str(r.calls), f"{r.tokens:,}", f"{r.tool_tokens:,}", f"{r.seconds:.1f}", _yes(r.found)]
        for r in runs
    ]
    header = ["run", "tools called", "model calls", "message tokens", "tool-definition tokens", "seconds", "found"]
    print(f"deepagents, one {args.mb} MB tool result (markdown, as in docs/integrations/deepagents.md)\n")
    for row in [header, ["---"] * len(header), *rows]:
        print("| " + " | ".join(row) + " |")
    return 0 if runs[1].found else 1


def _yes(found: bool) -> str:
    return "yes" if found else "no"


if __name__ == "__main__":
    raise SystemExit(main())
