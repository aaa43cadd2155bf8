"""The query sub-agent's side of the conversation, played without a model: Schema, one SELECT, answer.

What a careful model does with SQL over a structured output, as a pure function of the
conversation:

1. no tool result yet → `Schema`;
2. after the schema → one `Query` on the table the request names (`event` or `events`: the biggest such),
   else on the biggest table:
   * a "how many / count / total / sum" request → `SELECT COUNT(*)` (and `SUM(col)` for every
     numeric column the request names), filtered by the request's words that look like values:
     `col ILIKE 'value'` on a text column the request names, else `ILIKE '%value%'` on every column;
   * otherwise → the rows whose columns contain the request's rarest word (`ILIKE '%word%'`);
   when that query finds no row and another word is left, the next rarest word is tried;
3. the answer: the rows of the last query (or NO RELEVANT DATA FOUND and the tables seen).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from offline_model.agent import AgentStep
from offline_model.describe import NO_RELEVANT_DATA
from offline_model.prompt import message_text
from offline_model.ranking import Term, query_terms

MAX_LOOKUP_ROWS = 20
_TABLE = re.compile(r"^TABLE (\"(?:[^\"]|\"\")+\"|\S+) \((\d+) rows\)$", re.M)
_COLUMN = re.compile(r"^  (\S+) (.+?)(?: \([\d,]+ NULL\))?$")
_AGGREGATE = re.compile(r"\b(how many|count|number of|total|sum|average|avg)\b", re.I)
_NUMERIC = ("INT", "DOUBLE", "DECIMAL", "FLOAT", "REAL", "HUGEINT", "BIGINT")
_SQL_WORDS = {"order", "orders", "id", "ids", "value", "values", "status", "give", "their", "total", "many", "count"}


@dataclass(frozen=True)
class Table:
    name: str
    rows: int
    columns: list[tuple[str, str]]


def offers_query(tools: list[dict[str, Any]] | None) -> bool:
    names = {(t.get("function") or {}).get("name") for t in tools or [] if isinstance(t, dict)}
    return {"Schema", "Query"} <= names


def next_step(messages: list[dict[str, Any]], extract: str) -> AgentStep:
    """Schema, then Query (a next word when one found nothing), then the answer."""
    results = [message_text(m) for m in messages if m.get("role") == "tool"]
    if not results:
        return AgentStep("Schema", {})
    tables = parse_schema(results[0])
    if not tables:
        return AgentStep(answer=f"{NO_RELEVANT_DATA}\nThe output loaded as no table: {results[0][:300]}")
    queries = _queries(extract, tables)
    done = len(results) - 1
    if done < len(queries) and (done == 0 or _empty(results[-1])):
        return AgentStep("Query", {"sql": queries[done]})
    return AgentStep(answer=_answer(results, tables))


def parse_schema(text: str) -> list[Table]:
    """The tables a Schema result lists, with their columns."""
    tables = []
    for match in _TABLE.finditer(text):
        block = text[match.end() :].split("\nSAMPLE ROWS", 1)[0]
        columns = [(m.group(1), m.group(2)) for line in block.splitlines() if (m := _COLUMN.match(line))]
        tables.append(Table(match.group(1), int(match.group(2)), columns))
    return tables


def _queries(extract: str, tables: list[Table]) -> list[str]:
    table = _named_table(extract, tables)
    names = {c.lower() for t in tables for c, _ in t.columns} | {n for t in tables for n in _table_words(t)}
    words = [w for w in rarest_words(query_terms(extract)) if w.lower() not in names]  # a name is no value
    if _AGGREGATE.search(extract):
        return [aggregate_sql(table, extract, words)]
    return [lookup_sql(table, word) for word in words[:3]] or [f"SELECT * FROM {table.name} LIMIT {MAX_LOOKUP_ROWS}"]


def _named_table(extract: str, tables: list[Table]) -> Table:
    """The biggest table the request names (`event` names `events`), else the biggest table."""
    said = set(re.findall(r"\w+", extract.lower()))
    named = [t for t in tables if said & _table_words(t)]
    return max(named or tables, key=lambda t: t.rows)


def _table_words(table: Table) -> set[str]:
    name = table.name.strip('"').lower()
    return {name, name.removesuffix("s")}


def rarest_words(terms: list[Term]) -> list[str]:
    """Identifiers and values first (the longest first), then the longest plain words, as the request wrote them."""
    strong = sorted(
        (t.surface or t.text for t in terms if t.strong), key=lambda w: (_has_digit(w), len(w)), reverse=True
    )
    plain = sorted((t.surface for t in terms if not t.strong and len(t.surface) >= 4), key=len, reverse=True)
    return [w for w in [*strong, *plain] if w not in _SQL_WORDS]


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def lookup_sql(table: Table, word: str) -> str:
    return f"SELECT * FROM {table.name} WHERE {_anywhere(table, word)} LIMIT {MAX_LOOKUP_ROWS}"


def aggregate_sql(table: Table, extract: str, words: list[str]) -> str:
    named = [(c, t) for c, t in table.columns if re.search(rf"\b{re.escape(c)}\b", extract, re.I)]
    sums = [f'SUM("{c}") AS "sum_{c}"' for c, t in named if t.upper().startswith(_NUMERIC)]
    text_columns = [c for c, t in named if t.upper() == "VARCHAR"]
    values = words[:1]
    where = " AND ".join(_equals(text_columns, v) if text_columns else _anywhere(table, v) for v in values)
    select = ", ".join(["COUNT(*) AS count", *sums])
    return f"SELECT {select} FROM {table.name}" + (f" WHERE {where}" if where else "")


def _equals(columns: list[str], value: str) -> str:
    return "(" + " OR ".join(f"\"{c}\" ILIKE '{_quote(value)}'" for c in columns) + ")"


def _anywhere(table: Table, word: str) -> str:
    like = f"'%{_quote(word)}%'"
    return "(" + " OR ".join(f'CAST("{c}" AS VARCHAR) ILIKE {like}' for c, _ in table.columns) + ")"


def _quote(text: str) -> str:
    return text.replace("'", "''")


def _empty(result: str) -> bool:
    return result.strip() == "0 rows." or result.startswith("Error:")


def _answer(results: list[str], tables: list[Table]) -> str:
    last = results[-1]
    if len(results) < 2 or _empty(last):
        seen = ", ".join(f"{t.name} ({t.rows} rows: {', '.join(c for c, _ in t.columns[:8])})" for t in tables)
        return f"{NO_RELEVANT_DATA}\nNo row matched the request. The tables hold: {seen}"
    return last
