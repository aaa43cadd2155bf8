"""The server's adapters of the pure protocols answer exactly what the pure in-memory twins answer (no server).

`SessionVariables` against `DictVariableSource` (values, errors, warnings), `SessionBuffers` against
`MemoryBufferStore` (every buffer_ops text), with contents inline in their records and in blobs.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from extraction.buffers.ops import execute_buffer_op
from extraction.buffers.store import MemoryBufferStore
from extraction.documents.lines import build_line_index
from extraction.documents.stats import measure
from extraction.variables.errors import VariableError
from extraction.variables.resolve import DictVariableSource, resolve
from infra.blobstore import MemoryBlobStore
from infra.outputs.buffers import SessionBuffers
from infra.outputs.content import iter_content
from infra.outputs.grep_engine import compile_matcher
from infra.outputs.storing import Target, UploadMeta, WriteOptions, store_output
from infra.outputs.variables import SessionVariables
from infra.outputs.versions import BytesSource
from infra.stores.records import SessionRecord, Space, memory_record_stores

LOG = "".join(f"{i:03d} {'ERROR' if i % 17 == 0 else 'INFO'} naïve café ✓ item {i}\n" for i in range(1, 301))
DOC = {"items": [{"id": f"o-{i}", "total": i * 1.5} for i in range(30)], "count": 30, "meta": {"source": "api"}}


class Session:
    """One session on the in-memory stores, written through the service's one storing path."""

    def __init__(self, inline_max: int) -> None:
        self.records, self.blobs = memory_record_stores(session_ttl_seconds=600), MemoryBlobStore()
        self.session: SessionRecord = self.records.sessions.create_session()
        self.options = WriteOptions(inline_max_bytes=inline_max, block_size=97)  # small blocks: every split

    def put(self, name: str, content: str, content_type: str = "text/plain") -> None:
        data = content.encode()
        store_output(
            self.blobs,
            self.records,
            self.session,
            UploadMeta("tool", "{}", content_type),
            measure([data]),
            build_line_index([data]),
            lambda key: self.blobs.put_bytes(key, data),
            target=Target(Space.VARIABLE, name),
            options=self.options,
            source=BytesSource(data),
        )

    def variables(self) -> SessionVariables:
        return SessionVariables(self.records, self.blobs, self.session, block_size=97)

    def buffers(self) -> SessionBuffers:
        return SessionBuffers(self.records, self.blobs, self.session, options=self.options)


@pytest.fixture(params=[1 << 20, 0], ids=["inline", "blob"])
def inline_max(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def outcome(value: Any, source: Any) -> Any:
    try:
        resolved = resolve(value, source, max_value_chars=400)
        return resolved.value, [w.model_dump() for w in resolved.warnings]
    except VariableError as err:
        return type(err).__name__, err.message, err.details


REFS = [
    "$doc",
    "$doc.items[3]",
    "$doc.items[-1].id",
    "$doc.items[30]",
    "$doc.count.x",
    "$doc.meta.nope",
    "$log",
    "$log.x",
    "$nope",
    "total $doc.count, $HOME, $doc.items[0].id and $log",
    {"deep": ["$doc.meta", "$doc.items[2].total"]},
]


@pytest.mark.parametrize("value", REFS, ids=[str(v)[:40] for v in REFS])
def test_session_variables_answer_what_the_dict_source_answers(inline_max: int, value: Any) -> None:
    session = Session(inline_max)
    session.put("doc", json.dumps(DOC, indent=2), "application/json")
    session.put("log", LOG)
    variables = session.variables()
    expected = outcome(value, DictVariableSource({"doc": DOC, "log": LOG}, handles=variables.handles))
    assert outcome(value, variables) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "ü", "0"]), inner, max_size=3)
    ),
    max_leaves=15,
)
refs = st.builds(
    lambda keys: "$v" + "".join(f".{k}" if isinstance(k, str) else f"[{k}]" for k in keys),
    st.lists(st.one_of(st.integers(-4, 4), st.sampled_from(["a", "b", "ü"])), max_size=3),
)


@settings(max_examples=120, deadline=None)
@given(value=json_values, ref=refs, as_type=st.sampled_from(["application/json", "text/plain"]))
def test_any_json_value_and_reference_resolve_as_in_memory(value: Any, ref: str, as_type: str) -> None:
    assume(not isinstance(value, str))  # the dict source reads a top-level str as text, the server as a JSON string
    session = Session(0)
    text = json.dumps(value, ensure_ascii=False)
    session.put("v", text, as_type)
    sniffed_as_json = as_type == "application/json" or text.lstrip()[:1] in ("{", "[")
    expected_value = value if sniffed_as_json else text
    variables = session.variables()
    expected = outcome(ref, DictVariableSource({"v": expected_value}, handles=variables.handles))
    assert outcome(ref, variables) == expected


OPS: list[dict[str, Any]] = [
    {"operation": "list"},
    {"operation": "peek", "target": "log"},
    {"operation": "peek", "target": "log", "offset": 1234, "max_chars": 300},
    {"operation": "read", "target": "log", "start_line": 250, "end_line": 320},
    {"operation": "read", "target": "log", "offset": 9000, "length": 500},
    {"operation": "read", "target": "log"},
    {"operation": "read", "target": "log", "start_line": 1, "end_line": 5000},
    {"operation": "search", "target": "ERROR", "context": 1},
    {"operation": "search", "target": "caf[eé] ✓ item 2\\d\\b", "regex": True, "scope": "log"},
    {"operation": "search", "target": "o-2", "scope": "doc", "ignore_case": True, "max_matches": 3},
    {"operation": "search", "target": "(?<=x)", "regex": True},
    {"operation": "info", "target": "nope"},
    {"operation": "export", "target": "log", "destination": "out/log.txt"},
    {"operation": "export", "target": "log", "destination": "out/log.txt", "write_mode": "new"},
    {"operation": "export", "target": "doc", "destination": "out/log.txt"},
]


def test_session_buffers_answer_every_operation_as_the_memory_store_does(inline_max: int) -> None:
    memory, session = MemoryBufferStore(), Session(inline_max)
    doc = json.dumps(DOC, indent=2)
    for name, content, kind in (("log", LOG, "text/plain"), ("doc", doc, "application/json")):
        memory.write(name, content, content_type=kind)
        session.put(name, content, kind)
    server = session.buffers()
    today = dt.date(2026, 1, 1)
    for args in OPS:
        expected = execute_buffer_op(args, memory, compile_pattern=compile_matcher, today=today)
        assert execute_buffer_op(args, server, compile_pattern=compile_matcher, today=today) == expected, args
    files = {path: b"".join(iter_content(session.blobs, r)).decode() for path, r in _files(session).items()}
    assert files == memory.files


def _files(session: Session) -> dict[str, Any]:
    handles = session.records.names.aliases(session.session.id, Space.FILE)
    return {path: session.records.outputs.get_output(handle) for path, handle in handles.items()}


def test_info_shows_the_stored_metadata(inline_max: int) -> None:
    session = Session(inline_max)
    session.put("log", LOG)
    info = session.buffers().info("log")
    assert info is not None
    assert (info.chars, info.bytes, info.lines, info.source) == (len(LOG), len(LOG.encode()), 300, "tool")
    assert info.handle == session.records.names.alias(session.session.id, Space.VARIABLE, "log")
