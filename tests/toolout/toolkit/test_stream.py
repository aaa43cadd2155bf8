"""The agent's text stream, with `$var` references resolved chunk by chunk (sync and async)."""

from __future__ import annotations

import asyncio
import json

from tests.toolout.fake_service import FakeService
from toolout.toolkit.runtime import Toolkit


def kit_with_weather(fake: FakeService, client: object) -> Toolkit:
    setup = fake.sync_client()
    session = setup.create_session()
    body = json.dumps({"temperature": 72, "city": "NYC"}).encode()
    setup.store(session, body, tool_name="weather", content_type="application/json", name="weather_nyc")
    return Toolkit([], client=client, session_id=session)  # type: ignore[arg-type]


CHUNKS = ["It is $wea", "ther_nyc.temp", "erature°F in $weather_nyc", ".city; $HOME stays", "."]
EXPECTED = "It is 72°F in NYC; $HOME stays."


def test_references_split_across_chunks_resolve_and_unknown_ones_stay() -> None:
    fake = FakeService()
    kit = kit_with_weather(fake, fake.sync_client())
    out = list(kit.resolve_stream(CHUNKS))
    assert "".join(out) == EXPECTED
    assert out[0] == "It is "  # text before a reference is not held back
    lookups = [json.loads(r.content)["value"] for r in fake.requests if r.url.path.endswith("/resolve")]
    assert sorted(lookups) == ["$HOME", "$weather_nyc.city", "$weather_nyc.temperature"]  # once each


def test_non_text_items_pass_through_in_order_and_end_a_text_run() -> None:
    fake = FakeService()
    kit = kit_with_weather(fake, fake.sync_client())
    marker = {"type": "tool-call"}
    assert list(kit.resolve_stream(["see $weather_nyc", marker, ".city"])) == [
        "see ",
        '{"temperature":72,"city":"NYC"}',
        marker,
        ".city",
    ]


def test_the_async_stream_gives_the_same_text() -> None:
    fake = FakeService()

    async def chunks():  # type: ignore[no-untyped-def]
        for chunk in CHUNKS:
            yield chunk

    async def main() -> str:
        kit = kit_with_weather(fake, fake.async_client())
        return "".join([piece async for piece in kit.aresolve_stream(chunks())])

    assert asyncio.run(main()) == EXPECTED


def test_text_without_a_dollar_costs_no_request() -> None:
    fake = FakeService()
    kit = kit_with_weather(fake, fake.sync_client())
    before = len(fake.requests)
    assert "".join(kit.resolve_stream(["plain ", "text"])) == "plain text"
    assert kit.resolve_text("plain") == "plain"
    assert len(fake.requests) == before
    assert kit.resolve_text("$weather_nyc.city!") == "NYC!"
