"""The embedded mode (`toolout.local.serve`: the API on in-memory stores and a thread pool, in this process)
behind an integration: no Redis, no worker, no service to run. The OpenAI Agents SDK's loop on the offline
model, a 2 MB result: too large, `tool_output`, the planted record in the answer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from tests.toolout.integrations.conftest import NEEDLE, TASK
from toolout.devstack import datasets
from toolout.integrations.openai_agents import offload
from toolout.local import serve

pytestmark = pytest.mark.integration  # the offline model and the embedded API serve HTTP in this process


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    from offline_model.server import create_app
    from tests.fixtures.api_server import serve_app

    with serve_app(create_app()) as url:
        yield f"{url}/v1"


def test_an_integration_on_the_embedded_service(model_url: str) -> None:
    set_tracing_disabled(True)
    orders = '{"items":' + b"".join(datasets.json_orders(2 << 20)).decode() + "}"

    @function_tool
    def get_orders() -> str:
        """Every order of the shop (large JSON)."""
        return orders

    client = AsyncOpenAI(base_url=model_url, api_key="offline", max_retries=0)
    model = OpenAIChatCompletionsModel(model="toolout-offline", openai_client=client)
    with serve("openai/toolout-offline", api_base=model_url, api_key="offline") as url:
        agent = offload(Agent(name="shop", model=model, tools=[get_orders]), api_url=url)
        result = asyncio.run(Runner.run(agent, TASK))
    assert result.final_output.startswith("Done. Tools called: get_orders, tool_output.")
    assert NEEDLE in result.final_output
