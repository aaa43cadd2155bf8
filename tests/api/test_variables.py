"""Session variables over real HTTP, real Redis and both blob stores (local and S3 through moto): docs/spec/variables.md

Every stored output is a variable: named on upload or `<tool>_<n>`; `$name`, `$name.field` and
`$name.items[0].id` resolve typed when whole, interpolated inside longer strings; mistakes are 422s that
say what exists; a missing name on GET is a 404 listing the names.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from extraction.variables.prompts import FULL_HEADER, LIST_TITLE, MINIMAL_HEADER, NO_VARIABLES
from extraction.variables.resolve import DictVariableSource, interpolate
from tests.api.session_client import new_session, resolve, stored, upload
from tests.fixtures.api_server import ApiServer, assert_error

NYC = {"temperature": 72, "humidity": 45, "conditions": "sunny", "wind": {"mph": 5}}
LONDON = {"temperature": 58, "humidity": 80, "conditions": "overcast", "wind": {"mph": 12}}


@pytest.fixture()
def client(store_server: ApiServer) -> Iterator[httpx.Client]:
    with store_server.client() as c:
        yield c


def test_the_seed_conversation_compare_gets_both_weather_objects_typed(client: httpx.Client) -> None:
    session = new_session(client)
    assert stored(upload(client, session, NYC, tool="get-weather", name="weather_nyc"))["name"] == "weather_nyc"
    london = upload(client, session, LONDON, tool="get-weather", headers={"X-Variable-Name": "weather_london"})
    assert stored(london)["name"] == "weather_london"
    response = resolve(client, session, {"city1": "$weather_nyc", "city2": "$weather_london"})
    assert response.status_code == 200, response.text
    assert response.json() == {"value": {"city1": NYC, "city2": LONDON}, "warnings": []}
    said = resolve(client, session, "NYC is $weather_nyc.temperature°F vs London's $weather_london.temperature°F")
    assert said.json()["value"] == "NYC is 72°F vs London's 58°F"
    text = client.get(f"/v1/sessions/{session}/instructions").text
    assert text.startswith(FULL_HEADER + LIST_TITLE)
    assert (
        '- `$weather_nyc` (get-weather): {"temperature":72,"humidity":45,"conditions":"sunny","wind":{"mph":5}}' in text
    )
    assert "- `$weather_london` (get-weather): " in text


def test_resolution_rules_fields_indexes_interpolation_and_recursion(client: httpx.Client) -> None:
    session = new_session(client)
    orders = {"items": [{"id": "o-1", "total": 9.5}, {"id": "o-2", "total": 20}], "count": 2}
    stored(upload(client, session, orders, name="orders"))
    stored(upload(client, session, "plain text\nsecond line", name="notes", headers={"Content-Type": "text/plain"}))
    value = {
        "first": "$orders.items[0]",
        "last_id": "$orders.items[-1].id",
        "list": ["$orders.count", {"deep": "$notes"}],
        "text": "ids $orders.items[0].id and $orders.items[1].id; all: $orders.items",
        "$orders": "keys are never resolved",
    }
    body = resolve(client, session, value).json()
    assert body["value"] == {
        "first": {"id": "o-1", "total": 9.5},
        "last_id": "o-2",
        "list": [2, {"deep": "plain text\nsecond line"}],
        "text": 'ids o-1 and o-2; all: [{"id":"o-1","total":9.5},{"id":"o-2","total":20}]',
        "$orders": "keys are never resolved",
    }
    assert body["warnings"] == []


def test_unknown_words_in_text_stay_verbatim_with_a_warning(client: httpx.Client) -> None:
    session = new_session(client)
    stored(upload(client, session, {"a": 1}, name="x"))
    body = resolve(client, session, {"cmd": "cp $HOME/bin $x.a US$5"}).json()
    assert body["value"] == {"cmd": "cp $HOME/bin 1 US$5"}
    assert body["warnings"] == [
        {
            "code": "unknown_variable",
            "reference": "$HOME",
            "location": "/cmd",
            "message": "unknown variable $HOME; available variables: $x",
        }
    ]


def test_whole_reference_mistakes_are_422s_that_say_what_exists(client: httpx.Client) -> None:
    session = new_session(client)
    stored(upload(client, session, NYC, name="weather_nyc"))
    stored(upload(client, session, "just text", name="log", headers={"Content-Type": "text/plain"}))
    unknown = assert_error(resolve(client, session, "$weather_paris"), 422, "unknown_variable")
    assert unknown["details"]["available"] == ["log", "weather_nyc"]
    missing = assert_error(resolve(client, session, {"t": "$weather_nyc.temp"}), 422, "missing_field")
    assert missing["details"]["available"] == ["temperature", "humidity", "conditions", "wind"]
    assert 'has no field "temp"' in missing["message"]
    index = assert_error(resolve(client, session, "$weather_nyc.wind[3]"), 422, "missing_field")
    assert "an object" in index["message"] or "has no field" in index["message"]
    bad_path_in_text = assert_error(resolve(client, session, "it is $weather_nyc.temp now"), 422, "missing_field")
    assert bad_path_in_text["details"]["reference"] == "$weather_nyc"
    text_field = assert_error(resolve(client, session, "$log.first"), 422, "not_json")
    assert "is text, not JSON" in text_field["message"]


def test_a_value_over_the_limit_is_refused_and_the_handle_suggested(start_server) -> None:
    server = start_server(max_resolved_value_chars=60)
    with server.client() as client:
        session = new_session(client)
        big = stored(upload(client, session, {"rows": list(range(100)), "n": 1}, name="big"))
        assert resolve(client, session, "$big.n").json()["value"] == 1
        err = assert_error(resolve(client, session, "$big.rows"), 422, "value_too_large")
        assert err["details"]["handle"] == big["handle"] and f'pass the handle "{big["handle"]}"' in err["message"]
        assert err["details"]["chars"] == len(json.dumps(list(range(100)), separators=(",", ":")))
        lowered = assert_error(resolve(client, session, {"k": "$big"}, max_value_chars=10), 422, "value_too_large")
        assert lowered["details"]["limit"] == 10
        capped = assert_error(resolve(client, session, "$big.rows", max_value_chars=10_000), 422, "value_too_large")
        assert capped["details"]["limit"] == 60


def test_a_field_of_a_big_json_output_in_the_blob_store_is_found_by_streaming(start_server) -> None:
    server = start_server(inline_output_max_bytes=1024)
    items = [{"id": f"item-{i}", "payload": "x" * 200} for i in range(2000)]
    with server.client() as client:
        session = new_session(client)
        meta = stored(upload(client, session, {"items": items, "total": 2000}, name="big"))
        record = server.services.records.outputs.get_output(meta["handle"])
        assert record.inline is None and server.services.blobs.exists(record.blob_key)
        body = resolve(client, session, {"a": "$big.items[1234].id", "b": "$big.items[-1].id", "n": "$big.total"})
        assert body.json()["value"] == {"a": "item-1234", "b": "item-1999", "n": 2000}
        missing = assert_error(resolve(client, session, "$big.items[2000]"), 422, "missing_field")
        assert missing["details"]["length"] == 2000


def test_default_names_count_per_tool_and_skip_names_taken(client: httpx.Client) -> None:
    session = new_session(client)
    names = [stored(upload(client, session, f"result {i}", tool="web-search"))["name"] for i in range(2)]
    assert names == ["web_search_1", "web_search_2"]
    stored(upload(client, session, "mine", tool="web-search", name="web_search_3"))
    assert stored(upload(client, session, "next", tool="web-search"))["name"] == "web_search_4"
    assert stored(upload(client, session, "other", tool="mcp__github.search"))["name"] == "mcp_github_search_1"
    assert stored(upload(client, session, "no tool", tool=""))["name"] == "unknown_1"


def test_the_listing_is_oldest_first_with_sizes_times_source_and_preview(client: httpx.Client) -> None:
    session = new_session(client)
    stored(upload(client, session, NYC, tool="get-weather", name="weather_nyc"))
    log = "línea " * 100
    stored(upload(client, session, log, tool="logs", headers={"Content-Type": "text/plain"}))
    listed = client.get(f"/v1/sessions/{session}/variables").json()["items"]
    assert [item["name"] for item in listed] == ["weather_nyc", "logs_1"]
    nyc, logs = listed
    assert set(nyc) == {
        "name",
        "handle",
        "tool",
        "bytes",
        "tokens",
        "chars",
        "content_type",
        "created_at",
        "updated_at",
        "source",
        "preview",
    }
    assert (nyc["tool"], nyc["source"], nyc["content_type"]) == ("get-weather", "get-weather", "application/json")
    assert nyc["preview"] == json.dumps(NYC, separators=(",", ":"))
    assert logs["chars"] == len(log) and logs["bytes"] == len(log.encode()) and logs["tokens"] > 0
    assert logs["preview"].endswith("…") and len(logs["preview"]) == 101
    assert client.get(f"/v1/sessions/{session}/variables/logs_1").json() == logs


def test_get_of_a_missing_or_malformed_name(client: httpx.Client) -> None:
    session = new_session(client)
    stored(upload(client, session, "a", name="alpha"))
    missing = assert_error(client.get(f"/v1/sessions/{session}/variables/beta"), 404, "unknown_variable")
    assert missing["details"]["available"] == ["alpha"] and "$alpha" in missing["message"]
    for bad in ("1abc", "a-b", "é"):
        assert_error(client.get(f"/v1/sessions/{session}/variables/{bad}"), 422, "invalid_variable_name")
    assert_error(upload(client, session, "x", name="has space"), 422, "invalid_variable_name")


def test_the_instructions_with_no_variables_and_in_the_minimal_style(client: httpx.Client) -> None:
    session = new_session(client)
    assert client.get(f"/v1/sessions/{session}/instructions").text == FULL_HEADER + NO_VARIABLES
    stored(upload(client, session, "hello", tool="greet"))
    minimal = client.get(f"/v1/sessions/{session}/instructions", params={"style": "minimal"})
    assert minimal.headers["content-type"].startswith("text/plain")
    assert minimal.text == MINIMAL_HEADER + LIST_TITLE + "- `$greet_1` (greet): hello"


def test_streamed_text_resolves_refs_split_across_chunks_like_the_whole_text(client: httpx.Client) -> None:
    session = new_session(client)
    stored(upload(client, session, NYC, name="weather_nyc"))
    text = "Temp: $weather_nyc.temperature°F, wind $weather_nyc.wind.mph mph, home $HOME, all $weather_nyc."
    chunks = [text[i : i + 3].encode() for i in range(0, len(text), 3)]
    with client.stream("POST", f"/v1/sessions/{session}/resolve-stream", content=iter(chunks)) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
        streamed = response.read().decode()
    expected = interpolate(text, DictVariableSource({"weather_nyc": NYC}), strict=False).value
    assert streamed == expected
    assert streamed.startswith("Temp: 72°F, wind 5 mph, home $HOME, all {")


def test_a_multibyte_character_split_between_chunks_survives_the_stream(client: httpx.Client) -> None:
    session = new_session(client)
    stored(upload(client, session, {"city": "Zürich"}, name="w"))
    data = "città: $w.city ✓".encode()
    chunks = [data[i : i + 1] for i in range(len(data))]
    with client.stream("POST", f"/v1/sessions/{session}/resolve-stream", content=iter(chunks)) as response:
        assert response.read().decode() == "città: Zürich ✓"


def test_json_looking_text_that_does_not_parse_is_text(client: httpx.Client) -> None:
    session = new_session(client)
    log = "[2026-01-01] INFO start\n[2026-01-01] ERROR boom\n"
    stored(upload(client, session, log, name="log", headers={"Content-Type": "text/plain"}))
    assert resolve(client, session, "$log").json()["value"] == log
    assert_error(resolve(client, session, "$log[0]"), 422, "not_json")
    stored(upload(client, session, '{"a": [1, 2]}', name="sniffed", headers={"Content-Type": "text/plain"}))
    assert resolve(client, session, "$sniffed.a[1]").json()["value"] == 2
    stored(upload(client, session, "# {not json}", name="md", headers={"Content-Type": "text/markdown"}))
    assert_error(resolve(client, session, "$md.x"), 422, "not_json")
