"""The files spans come in, for `scoring.io.openinference` (docs/formats.md, "OpenInference spans"): each
span of a file, with its place, in the one form the span reader takes.

The layout is read from the file, not from its name:

- **Parquet** (the file starts with ``PAR1``): a spans data frame written by ``to_parquet``, one span a row,
  columns as Phoenix's ``get_spans_dataframe()`` names them (``context.trace_id``, ``context.span_id``,
  ``parent_id``, ``start_time``, ..., ``attributes.llm.token_count.prompt``, or one nested ``attributes``
  column). A span's place is its row, counted from 1, given as the line.
- **JSON Lines**, when the first non-blank line is a JSON value on its own: each line a span object (a
  Phoenix export), an OTLP/JSON traces request (an OpenTelemetry Collector's file exporter, `otlp`), or
  a list of span objects.
- **One JSON document** otherwise, when the whole text is one: an OTLP/JSON request, or a list of span
  objects (``to_json(orient="records")``); each span's place is the line where its object starts.

Every line is cut by `scoring.store.lines` and every JSON text parsed by `scoring.store.files` (a key
twice in one object is refused at its line). An object that is neither a span nor an OTLP request is
refused naming what was expected.

A span object may give its fields nested or as dotted keys, in any mix: `flatten` makes one form of
both, `subtree` rebuilds the value under a prefix.
"""
from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Problems
from ..store.files import parse_json, parse_json_line
from ..store.lines import Lines, Unreadable
from . import otlp
from .importing import Refusals, parse_file_json, read_jsonl, read_text

PARQUET_MAGIC = b"PAR1"
SPAN_KEYS = ("context", "context.trace_id", "trace_id", "span_id", "context.span_id")
"""The keys (or Parquet columns) of which a span object holds at least one."""
LAYOUTS = ('an OpenInference span as Phoenix exports it (context.trace_id, context.span_id or span_id, parent_id, '
           'start_time, end_time, status_code, attributes), or an OTLP/JSON traces request ({"resourceSpans": '
           '[{"resource": ..., "scopeSpans": [{"scope": ..., "spans": [...]}]}]})')
"""What a spans file may hold, in words, for a refusal of anything else."""
PARQUET_BATCH = 4096


@dataclass
class SpanItem:
    """One span of a file (or a problem where one was expected). `value`: the span object in the
    Phoenix form (`scoring.io.otlp` converts OTLP spans to it), None when it cannot be read; `problems`:
    those found reading it, already named in the file's terms; `trace`: the trace ID it names, when
    known without reading it as a span; `otlp`: its OTLP path (``resourceSpans[0].scopeSpans[0].spans[2]``),
    which names the fields of an OTLP span (`otlp.field_name`)."""

    where: dict[str, Any]
    value: Any
    problems: Problems = field(default_factory=Problems)
    trace: str | None = None
    otlp: str | None = None

    def field_name(self, name: str | None) -> str | None:
        """A field of the span reader (``context.trace_id``, ``attributes.x``), named as the file names it."""
        return otlp.field_name(self.otlp, name) if self.otlp is not None else name


def span_items(path: Path, refusals: Refusals) -> Iterator[SpanItem]:
    """Each span of the spans file, in file order (module docstring); a problem of the whole file is
    recorded in `refusals` (fatal), one of a line is an item with its problems or a refused line."""
    if not path.is_file():
        refusals.fatal("no such file", path=str(path))
        return
    if is_parquet(path):
        yield from _parquet_items(path, refusals)
    elif _first_line_alone(path):
        for where, value in read_jsonl(path, refusals):
            yield from _items(where, value)
    else:
        text = read_text(path, refusals)
        if text is None:
            return
        if not _one_value(text):  # JSON Lines after all: each line that is not JSON is refused
            for where, value in read_jsonl(path, refusals):
                yield from _items(where, value)
            return
        if parse_file_json(text, path, refusals) is ...:  # a key twice: refused at its line
            return
        value, located = _object_lines(text)
        yield from _items({"path": str(path), "line": located.get(id(value), 1)}, value, located)


def is_parquet(path: Path) -> bool:
    """Whether the file is a Parquet file (it starts with ``PAR1``)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC
    except OSError:
        return False


def _first_line_alone(path: Path) -> bool:
    """Whether the first non-blank line of the file is a JSON value on its own (the file is JSON Lines)."""
    for _, text in Lines(path):
        if isinstance(text, Unreadable):
            return True
        if text.strip():
            try:
                parse_json_line(text, allow_nan=True)
            except ValueError as error:  # not JSON: a document's first line; a key twice: a line to refuse
                return not isinstance(error, json.JSONDecodeError)
            return True
    return True


def _one_value(text: str) -> bool:
    """Whether the text is one JSON value (a key twice aside: `parse_file_json` names that line)."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _items(where: dict[str, Any], value: Any, located: dict[int, int] | None = None) -> Iterator[SpanItem]:
    """The spans a JSON value holds: itself (a span object), an OTLP request's, or a list's."""
    if otlp.is_request(value):
        for at, path, span, problems, trace in otlp.spans(value, where, located):
            yield SpanItem(at, span, problems, trace, path)
    elif isinstance(value, list) and all(isinstance(item, dict) for item in value):
        for item in value:
            at = {**where, "line": located[id(item)]} if located is not None and id(item) in located else where
            yield from _items(at, item, located)
    elif isinstance(value, dict) and not any(key in value for key in SPAN_KEYS):
        problems = Problems()
        keys = ", ".join(list(value)[:8]) + (", ..." if len(value) > 8 else "") if value else "none"
        problems.add(f"not a span of a known layout: expected {LAYOUTS}; the object's keys are: {keys}", **where)
        yield SpanItem(where, None, problems)
    else:
        yield SpanItem(where, value)


def _object_lines(text: str) -> tuple[Any, dict[int, int]]:
    """A JSON text (already parsed once, strictly, by `parse_file_json`) parsed again by the pure-Python
    scanner, which tells where each object starts: the value, and the line of each of its objects by
    ``id()`` (valid while the value is held). Only whole-file documents are parsed so: a JSON Lines
    file gives its lines as it is read."""
    breaks = [match.start() for match in re.finditer("\n", text)]
    starts: dict[int, int] = {}
    decoder = json.JSONDecoder()

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> Any:
        value, end = json.decoder.JSONObject(s_and_end, *args)
        starts[id(value)] = bisect.bisect_left(breaks, s_and_end[1] - 1) + 1
        return value, end

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder.decode(text), starts


# --- one span's shape ------------------------------------------------------------------------------


def flatten(value: Any, problems: Problems, where: dict[str, Any], prefix: str = "",
            out: dict[str, Any] | None = None) -> dict[str, Any]:
    """`value` as one level of dotted keys: an object's keys joined with ``.``, a list's items by
    their index; a key reached twice with different values is a problem."""
    out = {} if out is None else out
    if isinstance(value, dict) and (value or not prefix):
        for key, item in value.items():
            flatten(item, problems, where, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            flatten(item, problems, where, f"{prefix}.{index}", out)
    elif prefix in out and out[prefix] != value:
        problems.add("given twice (nested and as a dotted key) with different values", prefix, value, **where)
    else:
        out[prefix] = value
    return out


def subtree(flat: dict[str, Any], prefix: str) -> Any:
    """The value under `prefix` of a flattened object, rebuilt: objects whose keys are 0..n-1 become
    lists; a JSON string that holds an object or a list is read as that value."""
    if prefix in flat:
        value = flat[prefix]
        if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
            try:
                return parse_json(value, allow_nan=True)
            except ValueError:
                return value
        return value
    head = prefix + "."
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        if key.startswith(head):
            node, parts = tree, key[len(head):].split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    break
            else:
                node[parts[-1]] = value
    return _lists(tree) if tree else None


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    items = {key: _lists(value) for key, value in node.items()}
    if items and all(key.isdigit() for key in items) and sorted(map(int, items)) == list(range(len(items))):
        return [items[str(i)] for i in range(len(items))]
    return items


# --- Parquet ----------------------------------------------------------------------------------------


def _parquet_items(path: Path, refusals: Refusals) -> Iterator[SpanItem]:
    """One span a row of a Parquet spans frame; timestamps as datetimes, maps as objects."""
    import pyarrow.parquet as pq

    try:
        frame = pq.ParquetFile(path)
        names = frame.schema_arrow.names
    except Exception as error:  # pyarrow raises several types for a damaged file
        refusals.fatal(f"not a readable Parquet file ({error})", path=str(path))
        return
    if not any(name in names or name.split(".")[0] in names for name in SPAN_KEYS):
        refusals.fatal(f"not a spans frame of a known layout: expected {LAYOUTS}; its columns are: "
                       f"{', '.join(names[:12])}{', ...' if len(names) > 12 else ''}", path=str(path))
        return
    row = 0
    try:
        for batch in frame.iter_batches(batch_size=PARQUET_BATCH):
            for value in batch.to_pylist(maps_as_pydicts="strict"):
                row += 1
                yield SpanItem({"path": str(path), "line": row}, value)
    except (KeyError, ValueError, OSError) as error:
        refusals.fatal(f"the Parquet file cannot be read past row {row} ({error})", path=str(path), line=row + 1)
