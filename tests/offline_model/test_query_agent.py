"""The offline model's sub-agents: the query agent's SQL, and read-grep narrowing a flooded Grep."""

from __future__ import annotations

import json
from typing import Any

from extraction.texts.prompts import PromptContext, read_grep_messages
from extraction.texts.query import query_agent_tools, query_messages
from extraction.texts.tools import sub_agent_tools
from offline_model import OfflineModelConfig
from offline_model.query_agent import Table, aggregate_sql, lookup_sql, next_step, parse_schema
from offline_model.responder import respond

SCHEMA = """TABLE records (3 rows)
COLUMNS
  id VARCHAR
  status VARCHAR
  total_cents BIGINT
  customer STRUCT(name VARCHAR)
SAMPLE ROWS
id | status | total_cents | customer
ORD-1 | paid | 100 | {"name":"a"}"""
NONCE = "abcdef0123456789"


def system(extract: str, handle: str, *, query: bool = False) -> str:
    ctx = PromptContext(
        tool_name="t", tool_args_json="{}", extract=extract, nonce=NONCE, doc_bytes=1, doc_lines=1, doc_tokens=1
    )
    if query:
        return query_messages(ctx, handle_filename=handle, tables=[("records", 3)], max_rows=50)[0]["content"]
    return read_grep_messages(ctx, handle_filename=handle, root="sessions/s")[0]["content"]


def test_schema_is_parsed_and_counts_become_count_and_sum() -> None:
    (table,) = parse_schema(SCHEMA)
    assert table == Table(
        "records",
        3,
        [("id", "VARCHAR"), ("status", "VARCHAR"), ("total_cents", "BIGINT"), ("customer", "STRUCT(name VARCHAR)")],
    )
    sql = aggregate_sql(table, "How many orders have status payment_failed and their total_cents?", ["payment_failed"])
    assert sql == (
        'SELECT COUNT(*) AS count, SUM("total_cents") AS "sum_total_cents" FROM records '
        "WHERE (\"status\" ILIKE 'payment_failed')"
    )
    assert "CAST(\"customer\" AS VARCHAR) ILIKE '%o''brien%'" in lookup_sql(table, "o'brien")


def turn(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> tuple[str | None, dict[str, Any] | None, str | None]:
    got = respond({"messages": messages, "tools": tools}, OfflineModelConfig())
    if got.tool_calls:
        call = got.tool_calls[0]["function"]
        return call["name"], json.loads(call["arguments"]), None
    return None, None, got.content


def test_a_grep_stopped_at_max_matches_is_narrowed_to_the_rarest_word() -> None:
    handle = "f" * 8
    lines = [f"+    def handler_{i}(self): return self.dispatch({i})" for i in range(400)]
    lines[300] = "+    def handler_refund(self): return self.retry_backoff(7)"
    extract = "which handler changed its retry_backoff"
    messages: list[dict[str, Any]] = [{"role": "system", "content": system(extract, handle)}]
    text = "\n".join(lines) + "\n"
    calls = []
    for _ in range(5):
        name, args, answer = turn(messages, sub_agent_tools())
        if name is None:
            break
        calls.append((name, args))
        result = _run(name, args, text, handle)
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": str(len(calls)),
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": str(len(calls)), "content": result},
        ]
    assert [c[0] for c in calls] == ["Grep", "Grep", "Read"]
    assert calls[1][1]["pattern"] == "retry_backoff"
    assert "handler_refund" in (answer or "")


def _run(name: str, args: dict[str, Any], text: str, handle: str) -> str:
    from extraction.documents.grep import grep_lines
    from extraction.documents.lines import build_line_index, read_lines
    from infra.outputs.content import BytesReader
    from infra.outputs.grep_engine import compile_matcher

    data = text.encode()
    reader, index = BytesReader(data), build_line_index([data])
    if name == "Grep":
        matcher = compile_matcher(
            args["pattern"], regex=args.get("regex", False), ignore_case=args.get("ignore_case", False)
        )
        return grep_lines(reader, handle, matcher, max_matches=args.get("max_matches", 100), index=index).render()
    return read_lines(reader, handle, index, offset=args["offset"], limit=args["limit"]).render()


def test_the_query_agent_asks_for_the_schema_then_queries_then_answers() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system("Find the order ORD-77731", "h", query=True)}
    ]
    assert turn(messages, query_agent_tools())[:2] == ("Schema", {})
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "Schema", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "1", "content": SCHEMA},
    ]
    name, args, _ = turn(messages, query_agent_tools())
    assert name == "Query" and "ILIKE '%ord-77731%'" in args["sql"]
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "2", "type": "function", "function": {"name": "Query", "arguments": json.dumps(args)}}
            ],
        },
        {"role": "tool", "tool_call_id": "2", "content": "id | status\nORD-77731 | payment_failed\n(1 row)"},
    ]
    _, _, answer = turn(messages, query_agent_tools())
    assert "ORD-77731 | payment_failed" in answer and "abcdef0123456789-FINAL" in answer


KEYED_SCHEMA = """TABLE events (2 rows)
COLUMNS
  key VARCHAR
  name VARCHAR (1 NULL)
SAMPLE ROWS
key | name
TABLE performances (5 rows)
COLUMNS
  key VARCHAR
  eventId BIGINT
SAMPLE ROWS
key | eventId"""


def test_the_table_the_request_names_is_queried_and_its_name_is_no_value() -> None:
    events, performances = parse_schema(KEYED_SCHEMA)
    assert events.columns == [("key", "VARCHAR"), ("name", "VARCHAR")]
    messages = [{"role": "tool", "content": KEYED_SCHEMA}]
    lookup = next_step(messages, "the name of the event with id 138586341")
    assert lookup.name == "Query" and lookup.arguments is not None
    assert lookup.arguments["sql"].startswith("SELECT * FROM events WHERE") and "138586341" in lookup.arguments["sql"]
    count = next_step(messages, "how many performances are there?")
    assert count.arguments == {"sql": f"SELECT COUNT(*) AS count FROM {performances.name}"}
