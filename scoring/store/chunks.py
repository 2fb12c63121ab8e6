"""Chunk maps: which document (and which version of it) each retrieved or cited chunk stands for.

Real retrievers return chunks; reviewers label documents. A suite may carry `chunks.jsonl` and a
run its own (when its splitting differs), one chunk a line: `id`, `doc`, `doc_version`, optional
`text`, `start`, `end` (docs/formats.md). The scoring rule (declared in docs/formats.md and the
registry's help, applied in SQL by `scoring.store.refresh` (rankings) and `scoring.store.records` /
`scoring.store.bulk` (citations), and in plain Python by
`scoring.metrics.reference.map_chunks`):

- a retrieved chunk stands for its document; the document counts once, at the rank of its first
  chunk; ranks are slots, so P@k keeps k as its denominator and a later chunk of a counted
  document fills a slot without counting again;
- the visible context is the documents with a chunk (or themselves) in the first k slots;
- a citation may name a chunk or a document; a claim is judged on the set of documents it cites;
- in a passage-level suite (`unit: chunk`) labels name the suite's chunks, and rankings and
  citations are matched exactly, chunk by chunk.

This module writes chunk maps into the `chunks` table and states, once, how SQL finds a chunk.
"""
from __future__ import annotations

from operator import attrgetter

import duckdb
import pyarrow as pa

from .workspace import Chunk

_FIELDS = {
    "chunk_id": ("id", pa.string()), "doc_id": ("doc", pa.string()), "doc_version": ("doc_version", pa.string()),
    "text": ("text", pa.string()), "start_offset": ("start", pa.int64()), "end_offset": ("end", pa.int64()),
    "line": ("line", pa.int64()),
}
"""Column of `chunks` (besides `suite` and `run_id`) -> (attribute of `Chunk`, Arrow type)."""


def chunk_joins(row: str, item: str) -> str:
    """SQL joining the chunk map that applies to `row` (a relation alias with `run_id`, `suite` and
    `chunk_map`: 'run', 'suite' or NULL) to the ID column `item`: `rc` is a chunk of the run's own
    map, `sc` of the suite's; at most one of them matches, neither when the ID is no chunk."""
    return f"""
        LEFT JOIN chunks rc ON {row}.chunk_map = 'run' AND rc.run_id = {row}.run_id AND rc.chunk_id = {item}
        LEFT JOIN chunks sc ON {row}.chunk_map = 'suite' AND sc.run_id IS NULL AND sc.suite = {row}.suite
                           AND sc.chunk_id = {item}"""

def unit_sql(unit: str, item: str) -> str:
    """SQL for what labels match an ID `item` on, after `chunk_joins`: in a passage-level suite
    (`unit` = 'chunk') the ID as recorded, else the document a chunk stands for (or the ID itself)."""
    return f"CASE WHEN {unit} = 'chunk' THEN {item} ELSE coalesce(rc.doc_id, sc.doc_id, {item}) END"

def write_chunks(con: duckdb.DuckDBPyConnection, suite: str, run_id: str | None, chunks: dict[str, Chunk]) -> None:
    """Insert a chunk map into `chunks`: the suite's (`run_id` None) or one run's own."""
    if not chunks:
        return
    table = pa.table({column: pa.array(list(map(attrgetter(name), chunks.values())), kind)
                      for column, (name, kind) in _FIELDS.items()})
    con.register("_incoming_chunks", table)
    try:
        con.execute("INSERT INTO chunks BY NAME SELECT ?::VARCHAR AS suite, ?::VARCHAR AS run_id, * "
                    "FROM _incoming_chunks", [suite, run_id])
    finally:
        con.unregister("_incoming_chunks")
