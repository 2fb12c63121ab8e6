"""OTLP/JSON traces -> spans in the form `scoring.io.openinference` reads (docs/formats.md, "OpenInference
spans", "OTLP/JSON").

An OpenTelemetry Collector's file exporter writes one ``ExportTraceServiceRequest`` a line, and an
OTLP/JSON dump is one such object: ``{"resourceSpans": [{"resource": {...}, "scopeSpans": [{"scope":
{...}, "spans": [...]}]}]}``, by the protobuf JSON mapping with OTLP's deviations (the OTLP
specification, "JSON Protobuf Encoding"):

- ``traceId``, ``spanId``, ``parentSpanId``: case-insensitive hex (32, 16 and 16 digits; an empty or
  absent ``parentSpanId`` is a root), read in lower case, as Phoenix shows them;
- ``startTimeUnixNano``, ``endTimeUnixNano``: 64-bit integers, as decimal strings or numbers (0 or absent:
  unknown);
- ``attributes``: ``[{"key": ..., "value": AnyValue}]``, an AnyValue one of ``stringValue``,
  ``boolValue``, ``intValue`` (a decimal string or a number), ``doubleValue`` (a number, or ``"NaN"``,
  ``"Infinity"``, ``"-Infinity"``), ``bytesValue`` (kept as its base64 text), ``arrayValue`` ``{"values":
  [AnyValue]}``, ``kvlistValue`` ``{"values": [{"key", "value"}]}``; an empty AnyValue is null. A key
  given twice in one list is refused, as a JSON key twice is;
- ``status``: ``{"code": 0 | 1 | 2 (or STATUS_CODE_UNSET, _OK, _ERROR), "message": ...}``;
- ``events``: ``[{"name", "timeUnixNano", "attributes"}]`` (the exception message of a failed span);
- every other field (``kind``, ``links``, ``resource``, ``scope``, ``traceState``, ...) is ignored, as the
  specification asks of unknown fields.

`spans` yields each span as ``{"name", "context": {"trace_id", "span_id"}, "parent_id", "start_time",
"end_time", "status_code", "status_message", "attributes": {key: value}, "events"}`` (times as UTC
datetimes), with the OTLP path of the span (``resourceSpans[0].scopeSpans[1].spans[2]``) and the
problems found converting it, whose fields are OTLP's own paths; `field_name` names in OTLP's terms
the fields of the problems the span reader finds in the converted span (``startTimeUnixNano`` for
``start_time``).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import Problems

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_HEX = {32: re.compile(r"[0-9a-fA-F]{32}"), 16: re.compile(r"[0-9a-fA-F]{16}")}
_INTEGER = re.compile(r"-?[0-9]+")
_DOUBLE_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_ANY_VALUE_KEYS = ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue")
MAX_DEPTH = 32
"""Nested arrayValue / kvlistValue deeper than this are refused (a JSON parser's recursion aside)."""

OTLP_NAMES = {"context.trace_id": "traceId", "span_id": "spanId", "parent_id": "parentSpanId",
              "start_time": "startTimeUnixNano", "end_time": "endTimeUnixNano", "status_code": "status.code",
              "status_message": "status.message"}
"""The span reader's field names -> OTLP's, for the problems it finds in a converted span."""


def is_request(value: Any) -> bool:
    """Whether a JSON value is an OTLP/JSON traces request (it holds ``resourceSpans``)."""
    return isinstance(value, dict) and "resourceSpans" in value


def field_name(path: str, field: str | None) -> str:
    """The field `field` of the span reader, named in the OTLP span at `path`."""
    if not field:
        return path
    return f"{path}.{OTLP_NAMES.get(field, field)}"


def spans(request: dict[str, Any], where: dict[str, Any], located: dict[int, int] | None = None
          ) -> Iterator[tuple[dict[str, Any], str, dict[str, Any] | None, Problems, str | None]]:
    """(where, OTLP path, the span in the span reader's form or None, its problems, the trace ID it names)
    for each span of `request` (the trace ID also of a span that cannot be read, when its ``traceId`` is
    hex, so that its trace is left out whole); a problem of the request's structure comes as an item
    without a span or a trace. `located`: the
    line of each object of a whole-file document, by ``id()``, so that an item's `where` names its
    own line (else every item is at `where`)."""
    def place(node: Any) -> dict[str, Any]:
        if located is not None and id(node) in located:
            return {**where, "line": located[id(node)]}
        return where

    def problem(rule: str, field: str, value: Any = ..., node: Any = None):
        problems = Problems()
        at = place(node)
        problems.add(rule, field, value, **at)
        return at, field, None, problems, None

    resource_spans = request["resourceSpans"]
    if not isinstance(resource_spans, list):
        yield problem("expected a list of resource spans (OTLP/JSON)", "resourceSpans", resource_spans, request)
        return
    for r, resource in enumerate(resource_spans):
        rpath = f"resourceSpans[{r}]"
        if not isinstance(resource, dict):
            yield problem('expected an object {"resource": ..., "scopeSpans": [...]}', rpath, resource, resource)
            continue
        if "scopeSpans" not in resource and "instrumentationLibrarySpans" in resource:
            yield problem("instrumentationLibrarySpans is OTLP before version 0.15 (2022): export with a current "
                          "collector or SDK, which writes scopeSpans", f"{rpath}.instrumentationLibrarySpans",
                          node=resource)
            continue
        scope_spans = resource.get("scopeSpans", [])
        if not isinstance(scope_spans, list):
            yield problem("expected a list of scope spans", f"{rpath}.scopeSpans", scope_spans, resource)
            continue
        for s, scope in enumerate(scope_spans):
            spath = f"{rpath}.scopeSpans[{s}]"
            if not isinstance(scope, dict) or not isinstance(scope.get("spans", []), list):
                yield problem('expected an object {"scope": ..., "spans": [...]}', spath, scope, scope)
                continue
            for n, span in enumerate(scope.get("spans", [])):
                path, at, problems = f"{spath}.spans[{n}]", place(span), Problems()
                yield at, path, _span(span, path, problems, at), problems, _trace_of(span)


def _trace_of(span: Any) -> str | None:
    value = span.get("traceId") if isinstance(span, dict) else None
    return value.lower() if isinstance(value, str) and _HEX[32].fullmatch(value) else None


def _span(span: Any, path: str, problems: Problems, where: dict[str, Any]) -> dict[str, Any] | None:
    """One OTLP span in the span reader's form, or None with its problems added."""
    if not isinstance(span, dict):
        problems.add("expected a span object", path, span, **where)
        return None
    before = len(problems.items)
    trace = _hex(span.get("traceId"), 32, f"{path}.traceId", problems, where, required=True)
    span_id = _hex(span.get("spanId"), 16, f"{path}.spanId", problems, where, required=True)
    parent = _hex(span.get("parentSpanId"), 16, f"{path}.parentSpanId", problems, where, required=False)
    start = _nanos(span.get("startTimeUnixNano"), f"{path}.startTimeUnixNano", problems, where)
    end = _nanos(span.get("endTimeUnixNano"), f"{path}.endTimeUnixNano", problems, where)
    attributes = _key_values(span.get("attributes", []), f"{path}.attributes", problems, where, 0)
    status = span.get("status") or {}
    if not isinstance(status, dict):
        problems.add('expected an object {"code": 0 | 1 | 2, "message": ...}', f"{path}.status", status, **where)
        status = {}
    code = status.get("code", 0)
    if isinstance(code, str) and _INTEGER.fullmatch(code):
        code = int(code)
    message = status.get("message")
    events = []
    raw_events = span.get("events", [])
    if not isinstance(raw_events, list):
        problems.add("expected a list of events", f"{path}.events", raw_events, **where)
        raw_events = []
    for e, event in enumerate(raw_events):
        if not isinstance(event, dict):
            problems.add("expected an event object", f"{path}.events[{e}]", event, **where)
            continue
        events.append({"name": event.get("name"),
                       "attributes": _key_values(event.get("attributes", []), f"{path}.events[{e}].attributes",
                                                 problems, where, 0)})
    if len(problems.items) > before:
        return None
    return {"name": span.get("name") or "", "context": {"trace_id": trace, "span_id": span_id}, "parent_id": parent,
            "start_time": start, "end_time": end, "status_code": code, "status_message": message,
            "attributes": attributes, "events": events}


def _hex(value: Any, digits: int, field: str, problems: Problems, where: dict[str, Any], *,
         required: bool) -> str | None:
    if value is None or value == "":
        if required:
            problems.add(f"required: {digits} hex digits", field, value, **where)
        return None
    if not isinstance(value, str) or not _HEX[digits].fullmatch(value) or not value.strip("0"):
        problems.add(f"expected {digits} hex digits, not all zero (OTLP/JSON writes IDs in hex, not base64)", field,
                     value, **where)
        return None
    return value.lower()


def _nanos(value: Any, field: str, problems: Problems, where: dict[str, Any]) -> datetime | None:
    """A time in nanoseconds since 1970-01-01 UTC (a decimal string or a whole number); 0 or absent: None."""
    if value is None:
        return None
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        problems.add("expected nanoseconds since 1970-01-01 UTC: a whole number >= 0, as a decimal string or a "
                     "number", field, value, **where)
        return None
    if value == 0:
        return None
    return EPOCH + timedelta(microseconds=value // 1000)


def _key_values(value: Any, field: str, problems: Problems, where: dict[str, Any], depth: int) -> dict[str, Any]:
    """``[{"key", "value"}]`` as a dict; a key twice is a problem."""
    if not isinstance(value, list):
        problems.add('expected a list of {"key": ..., "value": {...}}', field, value, **where)
        return {}
    out: dict[str, Any] = {}
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str) or not item["key"]:
            problems.add('expected {"key": a non-empty string, "value": {...}}', f"{field}[{index}]", item, **where)
            continue
        key = item["key"]
        if key in out:
            problems.add("this key is given twice in one list of attributes (readers disagree on which value "
                         "wins)", f"{field}[{index}].key", key, **where)
            continue
        out[key] = _any_value(item.get("value"), f"{field}[{index}].value", problems, where, depth)
    return out


def _any_value(value: Any, field: str, problems: Problems, where: dict[str, Any], depth: int) -> Any:
    """An AnyValue as a JSON value (lists for arrayValue, objects for kvlistValue)."""
    if value is None or value == {}:
        return None
    given = [key for key in _ANY_VALUE_KEYS if isinstance(value, dict) and key in value]
    if not isinstance(value, dict) or len(given) != 1:
        problems.add(f"expected an AnyValue: an object holding one of {', '.join(_ANY_VALUE_KEYS)}", field, value,
                     **where)
        return None
    key = given[0]
    item, at = value[key], f"{field}.{key}"
    if depth >= MAX_DEPTH and key in ("arrayValue", "kvlistValue"):
        problems.add(f"nested more than {MAX_DEPTH} levels deep", at, **where)
        return None
    if key in ("stringValue", "bytesValue"):
        if isinstance(item, str):
            return item
    elif key == "boolValue":
        if isinstance(item, bool):
            return item
    elif key == "intValue":
        if isinstance(item, str) and _INTEGER.fullmatch(item):
            return int(item)
        if isinstance(item, int) and not isinstance(item, bool):
            return item
    elif key == "doubleValue":
        if isinstance(item, str) and item in _DOUBLE_WORDS:
            return _DOUBLE_WORDS[item]
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            return float(item)
        if isinstance(item, str):
            try:
                return float(item)
            except ValueError:
                pass
    elif key == "arrayValue":
        values = item.get("values", []) if isinstance(item, dict) else None
        if isinstance(values, list):
            return [_any_value(v, f"{at}.values[{i}]", problems, where, depth + 1) for i, v in enumerate(values)]
    elif key == "kvlistValue":
        values = item.get("values", []) if isinstance(item, dict) else None
        if isinstance(values, list):
            return _key_values(values, f"{at}.values", problems, where, depth + 1)
    problems.add(_ANY_RULES[key], at, item, **where)
    return None


_ANY_RULES = {
    "stringValue": "expected a string",
    "bytesValue": "expected a base64 string",
    "boolValue": "expected true or false",
    "intValue": "expected a whole number (a decimal string, as the protobuf JSON mapping writes 64-bit integers, "
                "or a number)",
    "doubleValue": 'expected a number (or "NaN", "Infinity", "-Infinity")',
    "arrayValue": 'expected {"values": [AnyValue, ...]}',
    "kvlistValue": 'expected {"values": [{"key": ..., "value": AnyValue}, ...]}',
}
