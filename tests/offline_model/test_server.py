"""The offline model without HTTP: ranking, descriptions, reduce, prompt parsing, the tool loop, knobs.

Prompts come from `extraction.texts.prompts`, so these tests also pin the contract that the offline
model understands exactly what the engine sends.
"""

from __future__ import annotations

import json
import re

import pytest

from extraction.texts.nonce import close_tag, open_tag
from extraction.texts.prompts import PromptContext, map_messages, read_grep_messages, reduce_messages
from extraction.texts.report import FinalReport, parse_final_report
from extraction.texts.tools import sub_agent_tools
from offline_model import OfflineModelConfig
from offline_model.config import parse_header
from offline_model.describe import describe
from offline_model.prompt import chunk_text, message_text, numbered_lines, section, system_prompt
from offline_model.ranking import NO_RELEVANT_DATA, extract_answer, merge_chunk_outputs, query_terms, split_units
from offline_model.responder import respond
from offline_model.server import FaultPlan
from offline_model.targeting import chunk_number, injected_error, targeted

NONCE = "0123456789abcdef"
FACT = "2024-03-07T10:15:00 ERROR payment gateway declined order ORD-77341 (code E_CARD_DECLINED)"


def log_lines(n: int = 10_000, planted_at: int | None = 6_123) -> list[str]:
    levels = ("INFO", "INFO", "INFO", "WARN", "DEBUG")
    lines = [
        f"2024-03-07T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d} {levels[i % 5]} worker-{i % 13} "
        f"processed batch {i} in {i % 97} ms for user u{i % 500}"
        for i in range(n)
    ]
    if planted_at is not None:
        lines[planted_at] = FACT
    return lines


def ctx(extract: str) -> PromptContext:
    return PromptContext(
        tool_name="shell",
        tool_args_json='{"cmd": "cat app.log"}',
        extract=extract,
        nonce=NONCE,
        doc_bytes=1000,
        doc_lines=10,
        doc_tokens=300,
    )


def map_call(extract: str, text: str) -> list[dict]:
    """A map call of the engine; index 1 of 2 is valid whether chunk indexes are 0- or 1-based."""
    return map_messages(ctx(extract), text, chunk_index=1, chunk_total=2, overlap_percent=10)


def content_of(answer_text: str) -> FinalReport:
    report = parse_final_report(answer_text, NONCE)
    assert isinstance(report, FinalReport), report
    return report


# --- ranking -------------------------------------------------------------------------------------


def test_a_planted_fact_in_ten_thousand_lines_is_the_answer() -> None:
    answer = extract_answer("\n".join(log_lines()), "Find the payment error for order ORD-77341", budget_bytes=4000)
    assert answer == FACT


def test_words_find_the_fact_without_identifiers() -> None:
    answer = extract_answer("\n".join(log_lines()), "which payments were declined by the gateway?", budget_bytes=4000)
    assert FACT in answer.splitlines()


def test_a_record_inside_a_one_megabyte_json_line_is_returned_alone() -> None:
    records = [{"id": i, "name": f"user{i}", "email": f"u{i}@example.com", "plan": "free"} for i in range(12_000)]
    records[7_777]["name"] = "Zorblax Quintavius"
    line = json.dumps(records)
    assert len(line) > 900_000 and "\n" not in line
    answer = extract_answer(line, "the record of the user named Zorblax", budget_bytes=4000)
    assert json.loads(answer) == records[7_777]


def test_split_units_cuts_long_lines_at_record_then_comma_boundaries() -> None:
    units = split_units('[{"a": 1}, {"b": 2}]\n' + ",".join(["x" * 50] * 100), long_line_chars=10)
    assert [u.text for u in units[:3]] == ['[{"a": 1}', '{"b": 2}]', "x" * 10]
    assert all(len(u.text) <= 10 for u in units) and {u.line_no for u in units} == {1, 2}


def test_no_match_says_no_relevant_data_and_describes_the_text() -> None:
    answer = extract_answer(
        "\n".join(log_lines(planted_at=None)), "database connection timeouts for ORD-1", budget_bytes=4000
    )
    first, searched, description = answer.splitlines()
    assert first == NO_RELEVANT_DATA
    assert "ord-1" in searched and "timeouts" in searched
    assert "10000 lines" in description and "log lines with levels DEBUG/INFO/WARN" in description


def test_absent_identifier_is_not_found_even_when_common_words_match() -> None:
    answer = extract_answer("\n".join(log_lines()), "batches processed for user u99999", budget_bytes=4000)
    assert answer.startswith(NO_RELEVANT_DATA)


def test_answers_keep_document_order_and_respect_the_budget() -> None:
    lines = [f"{i} WARN disk almost full on node-{i}" if i % 100 == 0 else f"{i} INFO ok" for i in range(5_000)]
    answer = extract_answer("\n".join(lines), "disk full warnings", budget_bytes=400).splitlines()
    assert 5 <= len(answer) < 50 and len("\n".join(answer).encode()) <= 400
    numbers = [int(line.split()[0]) for line in answer]
    assert numbers == sorted(numbers) and all(n % 100 == 0 for n in numbers)


def test_query_terms_keep_identifiers_numbers_and_quoted_phrases() -> None:
    terms = {
        t.text: t for t in query_terms('Extract all "connection reset" errors for user_id 4821 on api.example.com')
    }
    assert {"connection reset", "user_id", "4821", "api.example.com", "error"} <= set(terms)
    assert terms["connection reset"].strong and terms["4821"].strong and not terms["error"].strong
    assert not {"extract", "all", "for", "on"} & set(terms)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]', "a JSON array of objects with keys id, name"),
        ("id,name,email\n1,a,a@x\n2,b,b@x\n", "CSV rows with columns id, name, email"),
        (
            "2024-01-01 10:00:00 INFO start\n2024-01-01 10:00:05 ERROR boom\n",
            "log lines with levels INFO/ERROR, timestamps",
        ),
        ("The quick brown fox jumps over the lazy dog. The fox sleeps.", "plain text (frequent words: fox"),
    ],
)
def test_descriptions_name_the_shape_of_the_text(text: str, expected: str) -> None:
    assert expected in describe(text)


# --- reduce --------------------------------------------------------------------------------------


def test_reduce_merges_in_order_drops_empty_chunks_and_dedups_overlap() -> None:
    blocks = ["line a\nline b", f"{NO_RELEVANT_DATA}\nThe text has 3 lines", "line b\nline c", "line a"]
    assert merge_chunk_outputs(blocks, "lines", budget_bytes=1000) == "line a\nline b\nline c"


def test_reduce_of_only_empty_chunks_is_one_not_found_with_distinct_descriptions() -> None:
    blocks = [f"{NO_RELEVANT_DATA}\nlogs A", f"{NO_RELEVANT_DATA}\nlogs A", f"{NO_RELEVANT_DATA}\nlogs B"]
    assert merge_chunk_outputs(blocks, "x", budget_bytes=1000) == f"{NO_RELEVANT_DATA}\nlogs A\nlogs B"


def test_reduce_call_answers_from_the_chunk_outputs_of_the_system_prompt() -> None:
    outputs = [f"{open_tag(NONCE)}\n{FACT}\n{close_tag(NONCE)}", f"{NO_RELEVANT_DATA}\nlog lines", FACT]
    answer = respond({"messages": reduce_messages(ctx("payment errors"), outputs)}, OfflineModelConfig())
    assert answer.kind == "reduce" and content_of(answer.content).content == FACT


# --- map requests & determinism ------------------------------------------------------------------


def test_map_call_answers_inside_the_nonce_wrapper_and_ignores_the_instruction_line() -> None:
    messages = map_call("the final report wrapper instructions", "alpha\nbeta")
    assert chunk_text(message_text(messages[1])) == "alpha\nbeta"
    answer = respond({"messages": messages}, OfflineModelConfig())
    assert (
        answer.kind == "map"
        and answer.content.startswith(open_tag(NONCE))
        and answer.content.endswith(close_tag(NONCE))
    )
    assert content_of(answer.content).found is False


def test_same_request_same_answer() -> None:
    body = {"messages": map_call("payment errors ORD-77341", "\n".join(log_lines(3000, 2000)))}
    first, second = respond(body, OfflineModelConfig()), respond(json.loads(json.dumps(body)), OfflineModelConfig())
    assert first == second and content_of(first.content).content == FACT


def test_extract_section_stops_at_the_next_header_even_in_reduce_prompts() -> None:
    prompt = system_prompt(reduce_messages(ctx("find X\nand Y"), ["OUTPUT FORMAT (required)\nquoted", "b"]))
    assert section(prompt, "WHAT TO EXTRACT") == "find X\nand Y"
    assert "quoted" in section(prompt, "CHUNK OUTPUTS")


@pytest.mark.parametrize(
    ("malformed", "check"),
    [
        ("none", lambda t: t == f"{open_tag(NONCE)}\n{FACT}\n{close_tag(NONCE)}"),
        ("no_closing_tag", lambda t: t.startswith(open_tag(NONCE)) and close_tag(NONCE) not in t),
        ("think_block", lambda t: t.startswith("<think>") and t.endswith(close_tag(NONCE))),
        ("wrong_nonce", lambda t: "-FINAL" in t and NONCE not in t),
        ("no_wrapper", lambda t: t == FACT),
        ("empty_wrapper", lambda t: t == f'<ai-agent-{NONCE}-FINAL format="text"></ai-agent-{NONCE}-FINAL>'),
    ],
)
def test_malformed_knob_shapes_the_final_answer(malformed: str, check) -> None:
    body = {"messages": map_call("ORD-77341", FACT)}
    assert check(respond(body, OfflineModelConfig(malformed=malformed)).content)


# --- one targeted fault ------------------------------------------------------------------------------
MARKER = "ZX-POISON-41"


def chunk_call(number: int, total: int = 20, text: str = FACT, extract: str = "ORD-77341") -> dict:
    return {"messages": map_messages(ctx(extract), text, chunk_index=number, chunk_total=total, overlap_percent=10)}


def reduce_call(outputs: list[str], extract: str = "ORD-77341") -> dict:
    return {"messages": reduce_messages(ctx(extract), outputs)}


def answers(body: dict, header: str) -> str:
    return respond(body, OfflineModelConfig().with_header(header)).content


def test_a_wrapper_fault_hits_only_the_named_chunk_on_every_attempt() -> None:
    knobs = "fault=no_wrapper;fault_chunks=7"
    assert answers(chunk_call(7), knobs) == FACT == answers(chunk_call(7), knobs), "the same on a retry"
    assert content_of(answers(chunk_call(6), knobs)).content == FACT
    assert content_of(answers(chunk_call(17), knobs)).content == FACT, "7 is not a prefix match"
    assert content_of(answers(reduce_call([FACT]), knobs)).content == FACT, "reduce calls are not map calls"


def test_several_chunks_and_an_empty_wrapper() -> None:
    knobs = "fault=empty_wrapper;fault_chunks=1,3"
    shapes = [content_of(answers(chunk_call(n, 4), knobs)) for n in (1, 2, 3, 4)]
    assert [report.content for report in shapes] == ["", FACT, "", FACT] and not shapes[0].found


def test_without_filters_every_call_of_the_kind_is_hit() -> None:
    assert all(content_of(answers(chunk_call(n), "fault=empty_wrapper")).content == "" for n in (1, 9, 20))
    assert content_of(answers(reduce_call([FACT]), "fault=empty_wrapper")).content == FACT
    assert answers(reduce_call([FACT]), "fault=no_wrapper;fault_on=reduce") == FACT


def test_a_marker_hits_the_calls_whose_data_holds_it_never_the_request() -> None:
    knobs = f"fault=no_wrapper;fault_on=any;fault_marker={MARKER}"
    assert answers(chunk_call(2, text=f"{FACT}\n{MARKER}"), knobs).startswith(FACT)
    assert open_tag(NONCE) in answers(chunk_call(2, extract=f"ORD-77341 {MARKER}"), knobs), "the request quotes it"
    assert NONCE not in answers(reduce_call([FACT, f"x {MARKER}"]), knobs)
    assert open_tag(NONCE) in answers(reduce_call([FACT, "y"], extract=f"x {MARKER}"), knobs)


def test_filters_must_all_hold() -> None:
    knobs = f"fault=no_wrapper;fault_chunks=2;fault_marker={MARKER}"
    assert NONCE not in answers(chunk_call(2, text=MARKER), knobs)
    assert open_tag(NONCE) in answers(chunk_call(2), knobs) and open_tag(NONCE) in answers(
        chunk_call(3, text=MARKER), knobs
    )


def test_read_grep_turns_are_never_targeted() -> None:
    body = {"messages": read_grep_messages(ctx("x"), handle_filename="h", root="/r"), "tools": sub_agent_tools()}
    assert not targeted(body, OfflineModelConfig(fault="500", fault_on="any"))


def test_error_faults_are_injected_by_the_server_for_targeted_calls_only() -> None:
    knobs = OfflineModelConfig(fault="500", fault_chunks=("4",))
    assert injected_error(chunk_call(4), knobs) == "500" and injected_error(chunk_call(5), knobs) is None
    assert injected_error(chunk_call(4), OfflineModelConfig(fault="no_wrapper", fault_chunks=("4",))) is None
    assert chunk_number(chunk_call(12, 57)) == 12 and chunk_number(reduce_call(["a"])) is None


@pytest.mark.parametrize("header", ["fault=explode", "fault_on=agent", "fault_chunks=0", "fault_chunks=two"])
def test_bad_fault_knobs_are_refused(header: str) -> None:
    with pytest.raises(ValueError):
        OfflineModelConfig().with_header(header)


def test_a_request_without_toolout_prompts_gets_an_explanation() -> None:
    answer = respond({"messages": [{"role": "user", "content": "hi"}]}, OfflineModelConfig())
    assert answer.kind == "unrecognized" and "no WHAT TO EXTRACT" in answer.content and "no LLM" in answer.content


# --- the read-grep tool loop ---------------------------------------------------------------------

HANDLE = "5f0c7a3e-9b1d-4c2e-8f00-123456789abc"


def run_tool(lines: list[str], name: str, args: dict) -> str:
    """A stand-in for the Read/Grep executors: `N: text` lines, 1-based offsets."""
    if name == "Grep":
        rx = re.compile(args["pattern"], re.IGNORECASE if args.get("ignore_case") else 0)
        hits = [f"{i}: {line}" for i, line in enumerate(lines, 1) if rx.search(line)]
        return "\n".join(hits[: args.get("max_matches", 50)]) or "No matches."
    start, limit = args.get("offset", 1), args.get("limit", 100)
    return "\n".join(f"{i}: {lines[i - 1]}" for i in range(start, min(len(lines), start + limit - 1) + 1))


def agent_turns(lines: list[str], extract: str, max_turns: int = 5) -> list:
    """Play the conversation the way the engine's loop does; returns every answer."""
    messages, answers = read_grep_messages(ctx(extract), handle_filename=HANDLE, root="/tmp/s"), []
    for _ in range(max_turns):
        answer = respond({"messages": messages, "tools": sub_agent_tools()}, OfflineModelConfig())
        answers.append(answer)
        if not answer.tool_calls:
            return answers
        messages = (
            messages
            + [{"role": "assistant", "content": None, "tool_calls": answer.tool_calls}]
            + [
                {
                    "role": "tool",
                    "tool_call_id": c["id"],
                    "content": run_tool(lines, c["function"]["name"], json.loads(c["function"]["arguments"])),
                }
                for c in answer.tool_calls
            ]
        )
    raise AssertionError("the offline model never answered")


def test_read_grep_flow_greps_then_reads_around_the_best_hit_then_answers() -> None:
    lines = log_lines(2_000, planted_at=1_500)
    grep, read, final = agent_turns(lines, "Why was order ORD-77341 declined?")
    grep_args = json.loads(grep.tool_calls[0]["function"]["arguments"])
    assert grep.kind == "tool-call" and grep.tool_calls[0]["function"]["name"] == "Grep"
    assert grep_args["handle"] == HANDLE and grep_args["regex"] is True and grep_args["ignore_case"] is True
    assert re.search(grep_args["pattern"], FACT, re.IGNORECASE)
    read_args = json.loads(read.tool_calls[0]["function"]["arguments"])
    assert (
        read.tool_calls[0]["function"]["name"] == "Read"
        and read_args["offset"] <= 1_501 < read_args["offset"] + read_args["limit"]
    )
    assert final.kind == "read-grep" and content_of(final.content).content == FACT


def test_read_grep_without_a_match_reads_the_head_and_describes_the_file() -> None:
    _grep, read, final = agent_turns(log_lines(500, planted_at=None), "invoice INV-0042 totals")
    assert json.loads(read.tool_calls[0]["function"]["arguments"])["offset"] == 1
    report = content_of(final.content)
    assert not report.found and "Grep" in report.content and "log lines" in report.content


def test_tool_call_ids_are_deterministic() -> None:
    body = {
        "messages": read_grep_messages(ctx("ORD-77341"), handle_filename=HANDLE, root="/r"),
        "tools": sub_agent_tools(),
    }
    assert respond(body, OfflineModelConfig()).tool_calls == respond(body, OfflineModelConfig()).tool_calls


@pytest.mark.parametrize("raw", ["12: text", "12:text", "    12\ttext", "L12: text", f"{HANDLE}:12:text", "12→text"])
def test_numbered_tool_result_lines_are_understood(raw: str) -> None:
    assert [(n.number, n.text, n.hit) for n in numbered_lines(raw, HANDLE)] == [(12, "text", True)]


def test_grep_context_lines_and_notes_are_told_apart_from_hits() -> None:
    result = "    11-\tbefore\n    12\thit\n--\n3 matching line(s) for 'x' in 9 lines."
    assert [(n.number, n.hit) for n in numbered_lines(result)] == [(11, False), (12, True)]


# --- knobs & faults ------------------------------------------------------------------------------


def test_header_overrides_env_defaults() -> None:
    base = OfflineModelConfig.from_env({"TOOLOUT_OFFLINE_LATENCY_MS": "25", "TOOLOUT_OFFLINE_MALFORMED": "no_wrapper"})
    knobs = base.with_header("error_rate=0.5; error_kinds=429,timeout ;malformed=think_block")
    assert (knobs.latency_ms, knobs.error_rate, knobs.error_kinds, knobs.malformed) == (
        25.0,
        0.5,
        ("429", "timeout"),
        "think_block",
    )
    assert parse_header("") == {}


@pytest.mark.parametrize(
    "header", ["bogus=1", "error_rate=2", "error_kinds=418", "malformed=sloppy", "latency_ms", "answer_bytes=x"]
)
def test_bad_knobs_are_refused_with_a_reason(header: str) -> None:
    with pytest.raises(ValueError):
        OfflineModelConfig().with_header(header)


def test_fault_plan_is_deterministic_and_lets_retries_recover() -> None:
    knobs = OfflineModelConfig(error_rate=0.5, error_kinds=("429", "500"), seed=7)
    first, again = FaultPlan(), FaultPlan()
    outcomes = [first.decide(knobs, f"req{i}") for i in range(400)]
    assert outcomes == [again.decide(knobs, f"req{i}") for i in range(400)]
    assert 150 < sum(o is not None for o in outcomes) < 250 and {"429", "500"} <= set(outcomes)
    fail_once, plan = OfflineModelConfig(fail_first=1, error_kinds=("500",)), FaultPlan()
    assert [plan.decide(fail_once, "r") for _ in range(3)] == ["500", None, None]


def test_max_faults_caps_how_often_one_request_fails_however_the_rate_falls() -> None:
    always, capped, plan = (
        OfflineModelConfig(error_rate=1.0),
        OfflineModelConfig(error_rate=1.0, max_faults=2),
        FaultPlan(),
    )
    assert [plan.decide(always, "uncapped") for _ in range(4)].count(None) == 0
    assert [plan.decide(capped, "capped") is None for _ in range(4)] == [False, False, True, True]
    with pytest.raises(ValueError, match="max_faults"):
        OfflineModelConfig().with_header("max_faults=-1")


def test_answers_shrink_to_max_tokens() -> None:
    lines = [f"{i} WARN disk almost full" for i in range(2_000)]
    body = {"messages": map_call("disk warnings", "\n".join(lines))}
    small = respond(body | {"max_tokens": 200}, OfflineModelConfig()).content
    assert len(small.encode()) < 200 * 3 + 100 < len(respond(body, OfflineModelConfig()).content.encode())


def test_idle_connections_outlive_the_clients_reuse_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn's default (5 s) equals the clients' keep-alive expiry: a call sent as the server closes is reset."""
    import uvicorn

    from offline_model import server

    served: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.update(options))
    server.serve(port=1)
    assert served["timeout_keep_alive"] == server.KEEP_ALIVE_SECONDS > 5
