"""The query sub-agent's tool calls, executed: Schema and Query on the sandbox, Read and Grep on the raw text.

Texts come from `extraction.texts.query` (pure); this module only feeds them the engine's values
and keeps the SQL it ran, so the job can show it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extraction.errors import InvalidInput
from extraction.texts.query import QUERY_NAME, SAMPLE_ROWS, SCHEMA_NAME, TableView, render_rows, render_schema
from infra.query.store import QueryTables

MAX_NOTE_CHARS = 400
MAX_NOTES = 20


@dataclass
class QueryToolbox:
    """A `ToolExecutor` for the query sub-agent; `on_query` sees each SQL statement before it runs."""

    tables: QueryTables
    raw: Callable[[str, dict[str, Any]], str]
    max_rows: int
    max_tokens: int
    on_query: Callable[[str], None] = lambda sql: None
    ran: list[str] = field(default_factory=list)

    def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        if name == SCHEMA_NAME:
            return self.schema()
        if name == QUERY_NAME:
            return self.query(arguments.get("sql"))
        return self.raw(name, arguments)

    def schema(self) -> str:
        views = [
            TableView(
                name=name,
                rows=self.tables.row_count(name),
                columns=self.tables.columns(name),
                nulls=self.tables.nulls(name),
                sample=self.tables.sample(name, SAMPLE_ROWS).rows,
            )
            for name in self.tables.table_names()
        ]
        return self._notes() + render_schema(views, max_tokens=self.max_tokens)

    def _notes(self) -> str:
        """How names were made where they are not the document's own (a document may be hostile: cut)."""
        notes = [(name, self.tables.note(name)) for name in self.tables.table_names()]
        lines = [f"- {name}: {note[:MAX_NOTE_CHARS]}" for name, note in notes if note][:MAX_NOTES]
        return "NOTES\n" + "\n".join(lines) + "\n\n" if lines else ""

    def query(self, sql: Any) -> str:
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidInput("Query needs `sql`: one SELECT statement")
        self.ran.append(sql)  # the sandbox refuses SQL over `query_max_sql_chars` before parsing it
        self.on_query(sql)
        rows = self.tables.query(sql, self.max_rows)
        return render_rows(rows.columns, rows.rows, more=rows.more, max_rows=self.max_rows, max_tokens=self.max_tokens)
