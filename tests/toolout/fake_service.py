"""A small in-memory fake of toolout's REST API for client-side tests: the variables contract
(docs/spec/variables.md, directives.md, buffer-ops.md) plus the upload, Read/Grep and extraction calls the toolkit uses.

It is an `httpx.MockTransport` handler, so the sync and async SDK clients talk to it through their
real transports, and it needs no server packages (it runs on the light install). Its behaviour is
built from the same pure code the real server uses (`extraction.variables.resolve`, `.buffer_ops`,
`.buffer_store`, `.directives`, `.manifest`, `.oversize`, `.variable_prompts`), so what it answers
is what the contract says; only storage (dicts) and jobs (finished at once, truncate-style) are
simplified. `requests` records every request for assertions about the wire format.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from extraction.buffers.ops import execute_buffer_op
from extraction.buffers.store import JSON, TEXT, MemoryBufferStore
from extraction.directives.manifest import tool_manifest
from extraction.directives.specs import (
    DestinationKind,
    RoutingSpec,
    WriteMode,
    make_route,
    tool_routes_from_mapping,
)
from extraction.directives.syntax import parse_directives
from extraction.documents.line_matchers import LiteralMatcher
from extraction.documents.stats import measure
from extraction.errors import InvalidInput, NotFound
from extraction.texts.oversize import is_oversized, too_large_message
from extraction.texts.results import abstract_text, unknown_handle_text
from extraction.variables.errors import VariableError, unknown_variable
from extraction.variables.names import next_default_name
from extraction.variables.prompts import VariableLine, instructions, preview
from extraction.variables.resolve import DictVariableSource, interpolate, resolve

TODAY = dt.date(2026, 11, 23)
Handler = Callable[..., httpx.Response]


@dataclass
class StoredOutput:
    text: str
    tool: str
    content_type: str


@dataclass
class FakeService:
    """The service's state for one test; `transport()` gives the httpx transport to build clients on."""

    max_bytes: int = 12_000
    budget_tokens: int = 8_000
    sessions: set[str] = field(default_factory=set)
    buffers: dict[str, MemoryBufferStore] = field(default_factory=dict)
    outputs: dict[str, StoredOutput] = field(default_factory=dict)
    lines: MemoryBufferStore = field(default_factory=MemoryBufferStore)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    finish_jobs: bool = True
    requests: list[httpx.Request] = field(default_factory=list)
    ids: Iterator[int] = field(default_factory=itertools.count)

    def new_id(self) -> str:
        """Deterministic ids (UUID-shaped), so the sync and async runs of a scenario compare equal."""
        return str(uuid.UUID(int=next(self.ids) + 1))

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def sync_client(self) -> Any:
        from toolout.client import ToolOutClient

        return ToolOutClient("http://fake", http=httpx.Client(base_url="http://fake", transport=self.transport()))

    def async_client(self) -> Any:
        from toolout.client import AsyncToolOutClient

        http = httpx.AsyncClient(base_url="http://fake", transport=self.transport())
        return AsyncToolOutClient("http://fake", http=http)

    # --- dispatch ---------------------------------------------------------------------------------
    def handle(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        for method, pattern, handler in self._routes():
            match = re.fullmatch(pattern, request.url.path)
            if match and request.method == method:
                try:
                    return handler(request, *match.groups())
                except (InvalidInput, NotFound) as err:
                    return error(404 if isinstance(err, NotFound) else 422, err.code, err.message, err.details)
        return error(404, "not_found", f"no route {request.method} {request.url.path}")

    def _routes(self) -> list[tuple[str, str, Handler]]:
        s = r"/v1/sessions/([^/]+)"
        return [
            ("POST", r"/v1/sessions", self.create_session),
            ("DELETE", s, self.delete_session),
            ("POST", s + "/outputs", self.upload),
            ("GET", s + "/variables", self.list_variables),
            ("GET", s + r"/variables/([^/]+)", self.get_variable),
            ("POST", s + "/resolve", self.resolve),
            ("POST", s + "/resolve-stream", self.resolve_stream),
            ("GET", s + "/instructions", self.instructions),
            ("GET", s + "/files", self.list_files),
            ("POST", s + "/buffer_ops", self.buffer_ops),
            ("GET", s + r"/variables/([^/]+)/peek", self.peek),
            ("GET", s + r"/variables/([^/]+)/read", self.read_variable),
            ("GET", s + "/search", self.search),
            ("POST", s + r"/variables/([^/]+)/export", self.export),
            ("POST", r"/v1/routing/parse", self.parse_routing),
            ("GET", r"/v1/outputs/([^/]+)", self.output_meta),
            ("GET", r"/v1/outputs/([^/]+)/content", self.content),
            ("GET", r"/v1/outputs/([^/]+)/lines", self.read_lines),
            ("GET", r"/v1/outputs/([^/]+)/grep", self.grep),
            ("POST", r"/v1/extractions", self.submit),
            ("GET", r"/v1/extractions/([^/]+)", self.job),
            ("POST", r"/v1/extractions/([^/]+)/cancel", self.cancel),
        ]

    # --- sessions and uploads ---------------------------------------------------------------------
    def create_session(self, request: httpx.Request) -> httpx.Response:
        session = self.new_id()
        self.sessions.add(session)
        self.buffers[session] = MemoryBufferStore(clock=lambda: dt.datetime(2026, 11, 23, tzinfo=dt.UTC))
        return httpx.Response(201, json={"id": session})

    def delete_session(self, request: httpx.Request, session: str) -> httpx.Response:
        self.sessions.discard(session)
        self.buffers.pop(session, None)
        return httpx.Response(204)

    def store_of(self, session: str) -> MemoryBufferStore:
        if session not in self.buffers:
            raise NotFound(f"no session {session}")
        return self.buffers[session]

    def upload(self, request: httpx.Request, session: str) -> httpx.Response:
        store = self.store_of(session)
        params, headers = request.url.params, request.headers
        tool = headers.get("X-Tool-Name", "unknown")
        content_type = headers.get("Content-Type", "text/plain")
        text = request.content.decode("utf-8")
        stats = measure([request.content]).stats
        route = make_route(
            headers.get("X-Output") or params.get("output") or "inline",
            headers.get("X-Write-Mode") or params.get("write_mode"),
        )
        kind = JSON if content_type.startswith("application/json") else TEXT
        if route.output.kind is DestinationKind.DISCARD:
            return httpx.Response(201, json=routed(route.output, None, None, None, text, stats.bytes, tool))
        handle = self.new_id()
        self.outputs[handle] = StoredOutput(text, tool, kind)
        self.lines.write(line_key(handle), text)
        if route.output.kind is DestinationKind.VARIABLE:
            mode = route.effective_write_mode or WriteMode.APPEND
            info = store.write(
                route.output.target or "", text, mode=mode, content_type=kind, source=tool, handle=handle
            )
            return httpx.Response(
                201, json=routed(f"variable:{info.name}", info.name, None, handle, text, stats.bytes, tool)
            )
        if route.output.kind is DestinationKind.FILE:
            path = (route.output.target or "").replace("{today}", TODAY.isoformat())
            store.files[path] = text
            return httpx.Response(201, json=routed(f"file:{path}", None, path, handle, text, stats.bytes, tool))
        oversized = is_oversized(stats, max_bytes=self.max_bytes, budget_tokens=self.budget_tokens)
        if params.get("store") == "if_oversized" and not oversized:
            return httpx.Response(200, json={**stats.model_dump(), "content": text, "name": None})
        name = headers.get("X-Variable-Name") or params.get("name") or next_default_name(tool, names(store))
        store.write(name, text, content_type=kind, source=tool, handle=handle)
        body = {
            **stats.model_dump(),
            "handle": handle,
            "session_id": session,
            "oversized": oversized,
            "message": too_large_message(stats, handle) if oversized else None,
            "name": name,
        }
        return httpx.Response(201, json=body)

    # --- variables --------------------------------------------------------------------------------
    def source(self, session: str) -> DictVariableSource:
        store = self.store_of(session)
        values, handles = {}, {}
        for info in store.buffers():
            raw = store.text(info.name)
            values[info.name] = json.loads(raw) if info.content_type == JSON else raw
            if info.handle:
                handles[info.name] = info.handle
        return DictVariableSource(values, handles=handles)

    def view(self, session: str, name: str) -> dict[str, Any]:
        store = self.store_of(session)
        info = store.info(name)
        if info is None:
            raise unknown_variable(name, names(store))
        value = self.source(session).values[name]
        return {
            "name": info.name,
            "handle": info.handle,
            "tool": info.source,
            "bytes": info.bytes,
            "tokens": info.bytes // 4,
            "chars": info.chars,
            "content_type": info.content_type,
            "created_at": info.created_at.isoformat(),
            "updated_at": info.updated_at.isoformat(),
            "source": info.source,
            "preview": preview(value),
        }

    def list_variables(self, request: httpx.Request, session: str) -> httpx.Response:
        store = self.store_of(session)
        return httpx.Response(200, json={"items": [self.view(session, n) for n in names(store)]})

    def get_variable(self, request: httpx.Request, session: str, name: str) -> httpx.Response:
        return httpx.Response(200, json=self.view(session, name))

    def resolve(self, request: httpx.Request, session: str) -> httpx.Response:
        body = json.loads(request.content)
        try:
            resolved = resolve(body["value"], self.source(session), max_value_chars=body.get("max_value_chars"))
        except VariableError as err:
            return error(422, err.code, err.message, err.details)
        return httpx.Response(200, json=resolved.model_dump(mode="json"))

    def resolve_stream(self, request: httpx.Request, session: str) -> httpx.Response:
        text = interpolate(request.content.decode("utf-8"), self.source(session), strict=False).value
        return httpx.Response(200, text=text, headers={"Content-Type": "text/plain; charset=utf-8"})

    def instructions(self, request: httpx.Request, session: str) -> httpx.Response:
        style = request.url.params.get("style", "full")
        views = [self.view(session, n) for n in names(self.store_of(session))]
        lines = [VariableLine(name=v["name"], tool=v["tool"] or "input", preview=v["preview"]) for v in views]
        return httpx.Response(200, text=instructions(lines, style))  # type: ignore[arg-type]

    def list_files(self, request: httpx.Request, session: str) -> httpx.Response:
        files = self.store_of(session).files
        items = [{"path": p, "bytes": len(t.encode()), "chars": len(t), "content_type": TEXT} for p, t in files.items()]
        return httpx.Response(200, json={"items": items})

    def buffer_ops(self, request: httpx.Request, session: str) -> httpx.Response:
        try:
            args = json.loads(request.content)
        except ValueError:
            return error(422, "validation_error", "the body must be a JSON object")
        if not isinstance(args, dict):
            return error(422, "validation_error", "the body must be a JSON object")
        text = execute_buffer_op(args, self.store_of(session), today=TODAY)
        headers = {"X-Tool-Error": "true"} if text.startswith("Error: ") else {}
        return httpx.Response(200, text=text, headers=headers)

    def peek(self, request: httpx.Request, session: str, name: str) -> httpx.Response:
        params = request.url.params
        offset, max_chars = int(params.get("offset", 0)), int(params.get("max_chars", 1000))
        view = self.view(session, name)  # 404 for an unknown name
        text = self.store_of(session).read_chars(name, offset, max_chars)
        body = {"name": name, "offset": offset, "text": text, "total_chars": view["chars"]}
        return httpx.Response(200, json={**body, "next_offset": offset + len(text)})

    def read_variable(self, request: httpx.Request, session: str, name: str) -> httpx.Response:
        params = request.url.params
        start, end = int(params.get("start_line", 1)), int(params.get("end_line", 1))
        read = self.store_of(session).read_lines(name, start, end - start + 1, max_line_chars=2000)
        return httpx.Response(200, json={**read.model_dump(), "name": name, "rendered": read.render()})

    def search(self, request: httpx.Request, session: str) -> httpx.Response:
        args: dict[str, Any] = {"operation": "search", **dict(request.url.params.items())}
        for key in ("regex", "ignore_case"):
            if key in args:
                args[key] = args[key] == "true"
        if "context" in args:
            args["context"] = int(args["context"])
        rendered = execute_buffer_op(args, self.store_of(session), today=TODAY)
        return httpx.Response(200, json={"target": args["target"], "scope": args.get("scope"), "rendered": rendered})

    def export(self, request: httpx.Request, session: str, name: str) -> httpx.Response:
        body = json.loads(request.content)
        rendered = execute_buffer_op(
            {"operation": "export", "target": name, **body}, self.store_of(session), today=TODAY
        )
        path = body["destination"].replace("{today}", TODAY.isoformat())
        return httpx.Response(
            200, json={"name": name, "path": path, "write_mode": body.get("write_mode"), "rendered": rendered}
        )

    def parse_routing(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "tools" in body:
            spec = RoutingSpec(tools=tool_routes_from_mapping(body["tools"]))
        else:
            spec = parse_directives(body["text"])
        return httpx.Response(200, json=spec.model_dump(mode="json"))

    # --- outputs and extraction jobs --------------------------------------------------------------
    def output_meta(self, request: httpx.Request, handle: str) -> httpx.Response:
        if handle not in self.outputs:
            return error(404, "not_found", f"no output {handle}")
        stored = self.outputs[handle]
        meta = {"handle": handle, "bytes": len(stored.text.encode()), "tool_name": stored.tool}
        return httpx.Response(200, json=meta | {"content_type": stored.content_type})

    def content(self, request: httpx.Request, handle: str) -> httpx.Response:
        """The bytes, or one `bytes=a-b` / `bytes=a-` range of them (206), as the real endpoint serves them."""
        if handle not in self.outputs:
            return error(404, "not_found", f"no output {handle}")
        data = self.outputs[handle].text.encode()
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", request.headers.get("Range", ""))
        if match is None:
            return httpx.Response(200, content=data)
        start, end = int(match[1]), int(match[2]) + 1 if match[2] else len(data)
        if start >= len(data):
            return error(416, "range_not_satisfiable", f"range starts past the {len(data)}-byte output")
        return httpx.Response(206, content=data[start:end])

    def read_lines(self, request: httpx.Request, handle: str) -> httpx.Response:
        if handle not in self.outputs:
            return error(404, "not_found", f"no output {handle}")
        offset, limit = int(request.url.params.get("offset", 1)), int(request.url.params.get("limit", 2000))
        return httpx.Response(
            200, text=self.lines.read_lines(line_key(handle), offset, limit, max_line_chars=2000).render()
        )

    def grep(self, request: httpx.Request, handle: str) -> httpx.Response:
        if handle not in self.outputs:
            return error(404, "not_found", f"no output {handle}")
        params = request.url.params
        matcher = LiteralMatcher(params["pattern"], ignore_case=params.get("ignore_case") == "true")
        found = self.lines.grep(
            line_key(handle),
            matcher,
            context=int(params.get("before", 0)),
            max_matches=int(params.get("max_matches", 100)),
            max_line_chars=2000,
        )
        return httpx.Response(200, text=found.render())

    def submit(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        handle = body["handle"]
        if handle not in self.outputs:
            return error(404, "not_found", "unknown handle", {"tool_result": unknown_handle_text(handle)})
        stored = self.outputs[handle]
        job_id = self.new_id()
        abstract = f"{body['extract']}: {stored.text[:200]}"
        result = abstract_text(stored.tool, handle, "truncate", abstract)
        status, text = ("succeeded", result) if self.finish_jobs else ("running", None)
        self.jobs[job_id] = {"id": job_id, "status": status, "result": text, "extract": body["extract"]}
        return httpx.Response(202, json={**self.jobs[job_id], "status": "queued", "result": None})

    def job(self, request: httpx.Request, job_id: str) -> httpx.Response:
        return httpx.Response(200, json=self.jobs[job_id])

    def cancel(self, request: httpx.Request, job_id: str) -> httpx.Response:
        self.jobs[job_id]["status"] = "canceled"
        return httpx.Response(200, json=self.jobs[job_id])

    # --- for assertions ---------------------------------------------------------------------------
    def paths(self, method: str | None = None) -> list[str]:
        return [r.url.path for r in self.requests if method is None or r.method == method]

    def variable_value(self, session: str, name: str) -> Any:
        return self.source(session).values[name]


def names(store: MemoryBufferStore) -> list[str]:
    return [info.name for info in store.buffers()]


def line_key(handle: str) -> str:
    return "h_" + handle.replace("-", "_")


def routed(
    destination: Any, name: str | None, path: str | None, handle: str | None, text: str, size: int, tool: str
) -> dict[str, Any]:
    return {
        "routed": True,
        "destination": str(destination),
        "name": name,
        "path": path,
        "handle": handle,
        "chars": len(text),
        "bytes": size,
        "manifest": tool_manifest(tool, str(destination), len(text)),
    }


def error(status: int, code: str, message: str, details: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message, "details": details or {}}})
