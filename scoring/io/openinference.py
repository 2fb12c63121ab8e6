"""`ragslice import openinference`: OpenInference spans (an Arize Phoenix export, a spans data frame,
OTLP/JSON) -> a run of an existing suite (docs/formats.md, "OpenInference spans").

The spans file (`scoring.io.span_files`: JSON Lines, a JSON document, Parquet; OTLP spans converted
by `scoring.io.otlp`) gives each span as ``context.trace_id``, ``span_id`` (or ``context.span_id``),
``parent_id``, ``name``, ``start_time``/``end_time`` (ISO 8601, an epoch number whose magnitude tells
its unit, `epoch_time`, or a timestamp), ``status_code``/``status_message`` and ``attributes``. Every
span is normalised once (`flatten`):
nested objects and lists become dotted keys (``{"retrieval": {"documents": [{"document": {"id":
"d"}}]}}`` is ``retrieval.documents.0.document.id``), so nested and flattened exports read alike; a
key given both ways with two values is refused. One trace (all spans of a ``trace_id``) is one record:

- question: the ``metadata`` value under ``--question-key`` (an ID of the suite), else the text of
  the root span's ``input.value`` or of a RETRIEVER span's ``input.value``, compared after
  `normalise_query` (Unicode NFC, whitespace runs one space, trimmed; case kept). A trace matching no
  question is reported with its trace ID and not imported.
- retrieved: the ranking delivered to the generator: the output of the RERANKER span that ended
  last (``reranker.output_documents.{i}.document.id``), else the one RETRIEVER span's
  ``retrieval.documents.{i}.document.id``, in index order (scores are not re-sorted); a document
  without an ID is named by `context_id` of its ``content``. Two RERANKER spans that ended last
  together with different outputs, like two RETRIEVER spans, are ambiguous: the trace is refused.
- answer: the root span's answer (`scoring.io.span_outputs`: its output messages, else its JSON
  output's answer, else its ``output.value``), else that of the LLM span that ended last; cut into
  answer sentences whose citations come from ``--citation-key`` or from ``[n]`` markers (1-based
  positions in ``retrieved``), written as 0-based index citations.
- latency_ms: the root span's end minus start; cost_usd: with ``--prices``, the LLM spans' token
  counts (`token_count`: ``900.0`` is 900) times the table's prices (`read_prices`), else null.
- error: the root span's ``status_code`` ERROR makes the record failed, with the span's message.
- documents the suite does not hold are added to its documents.jsonl (the span's ``content`` as
  their text, else a text saying it is not in the spans), as every importer keeps the documents its
  runs rank: they are unjudged, and ``ragslice pool`` lists them for review.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import shutil
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..errors import Problems
from ..store.files import FOLDER_NAME, DuplicateKey, parse_json
from ..store.lines import Lines, Unreadable
from ..store.workspace import MAX_RETRIEVED, Suite, load_suite
from .answer_text import marked_sentences
from .eval_dataset import normalise_query
from .importing import (Importer, ImportResult, Refusals, RepeatSlots, Source, as_id, check_k, context_id, counted,
                        manifest, parse_file_json, print_notes, provenance, read_text, staged, write_json, write_lines,
                        delivered_cutoff)
from .span_files import flatten, is_parquet, span_items, subtree
from .span_outputs import span_answer

SOURCE_FORMAT = "openinference"
PRICE_UNIT = 1_000_000
"""Prices in a ``--prices`` table are US dollars per this many tokens."""
_TRACE_IN_BROKEN_LINE = re.compile(r'"(?:context\.)?trace_id"\s*:\s*"([^"\s]{1,128})"'
                                   r'|"traceId"\s*:\s*"([0-9a-fA-F]{32})"')
"""A trace ID in the text of a line that cannot be read: a Phoenix span's, or an OTLP span's (in hex)."""
_DOCUMENT_KEY = re.compile(r"(\d+)\.document\.(id|content|score)")
_OTLP_STATUS = ("UNSET", "OK", "ERROR")
"""OTLP's numeric status codes 0, 1, 2."""
_NOT_IN_SPANS = "Document {doc} (retrieved in OpenInference spans; its text is not in the spans)"


# --- one span ---------------------------------------------------------------------------------------


@dataclass
class _Span:
    where: dict[str, Any]
    trace: str
    id: str
    parent: str | None
    name: str
    start: datetime | None
    end: datetime | None
    status: str
    message: str | None
    attrs: dict[str, Any]

    @property
    def kind(self) -> str:
        kind = self.attrs.get("openinference.span.kind")
        return kind.upper() if isinstance(kind, str) else ""

    def text(self, key: str) -> str | None:
        value = self.attrs.get(key)
        return value if isinstance(value, str) and value.strip() else None

    def order(self) -> tuple[bool, float, int]:
        """When the span ended (a time without offset read as UTC; its line when it has no end time),
        for 'the span that ended last'."""
        end = self.end if self.end is None or self.end.tzinfo else self.end.replace(tzinfo=timezone.utc)
        return (end is not None, end.timestamp() if end else 0.0, self.where["line"])


EPOCH_UNITS = ((10 ** 11, 1), (10 ** 14, 10 ** 3), (10 ** 17, 10 ** 6), (None, 10 ** 9))
"""An epoch time's unit by its magnitude: below 10^11 seconds (10^11 s is the year 5138), below 10^14
milliseconds, below 10^17 microseconds, else nanoseconds; (bound, units per second)."""
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TIME_RULE = ("expected an ISO 8601 date and time such as 2026-12-01T09:30:00.250+00:00, or a time since "
              "1970-01-01 UTC in seconds, milliseconds, microseconds or nanoseconds (a number >= 0)")


def epoch_time(value: int | float) -> datetime:
    """A number of seconds, milliseconds, microseconds or nanoseconds since 1970-01-01 UTC, the unit told by
    its magnitude (`EPOCH_UNITS`), as a UTC time (to the microsecond)."""
    per_second = next(units for bound, units in EPOCH_UNITS if bound is None or value < bound)
    if isinstance(value, int):
        return _EPOCH + timedelta(microseconds=value * 10 ** 6 // per_second)
    return _EPOCH + timedelta(microseconds=round(value * 10 ** 6 / per_second))


def _time(flat: dict[str, Any], key: str, problems: Problems, where: dict[str, Any]) -> datetime | None:
    value = flat.get(key)
    if value is None:
        return None
    if isinstance(value, datetime):  # a Parquet timestamp, an OTLP time
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip())
        except ValueError:
            pass
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        try:
            return epoch_time(value)
        except OverflowError:
            pass
    problems.add(_TIME_RULE, key, value, **where)
    return None


def _span(where: dict[str, Any], value: Any, problems: Problems) -> _Span | None:
    """The span of one line, or None with every problem recorded."""
    if not isinstance(value, dict):
        problems.add("expected a span object", **where)
        return None
    if isinstance(value.get("attributes"), str):  # some exports keep the attributes as one JSON string
        try:
            value = {**value, "attributes": parse_json(value["attributes"], allow_nan=True)}
        except DuplicateKey as error:
            problems.add(f"not valid JSON ({error})", "attributes", value["attributes"], **where)
            return None
        except ValueError:
            problems.add("expected an object of attributes (or a JSON string of one)", "attributes",
                         value["attributes"], **where)
            return None
    flat = flatten(value, problems, where)
    trace = as_id(flat.get("context.trace_id", flat.get("trace_id")))
    span = as_id(flat.get("span_id", flat.get("context.span_id")))
    parent = flat.get("parent_id")
    if trace is None:
        problems.add("required: the trace ID, a string without whitespace", "context.trace_id",
                     flat.get("context.trace_id"), **where)
    if span is None:
        problems.add("required: the span ID, a string without whitespace", "span_id", flat.get("span_id"), **where)
    if parent is not None and (parent == "" or as_id(parent) is None):
        problems.add("expected null (the root span) or the parent span's ID", "parent_id", parent, **where)
    start, end = _time(flat, "start_time", problems, where), _time(flat, "end_time", problems, where)
    if start is not None and end is not None:
        if (start.tzinfo is None) != (end.tzinfo is None):
            problems.add("start_time and end_time must both have a UTC offset or both have none", "end_time",
                         flat.get("end_time"), **where)
        elif end < start:
            problems.add("is before start_time: the span ends before it starts", "end_time", flat.get("end_time"),
                         **where)
    status = flat.get("status_code", flat.get("status.status_code", flat.get("status.code", "UNSET")))
    if status is None:
        status = "UNSET"
    if isinstance(status, int) and not isinstance(status, bool) and 0 <= status <= 2:
        status = _OTLP_STATUS[status]
    if not isinstance(status, str) or status.upper().removeprefix("STATUS_CODE_") not in ("OK", "ERROR", "UNSET"):
        problems.add("expected OK, ERROR or UNSET", "status_code", status, **where)
        status = "UNSET"
    message = flat.get("status_message", flat.get("status.message"))
    attrs = {key[len("attributes."):]: item for key, item in flat.items() if key.startswith("attributes.")}
    if "span_kind" in flat and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = flat["span_kind"]
    if trace is None or span is None or problems:
        return None
    if not isinstance(message, str) or not message.strip():
        message = next((item for key, item in sorted(flat.items()) if key.startswith("events.")
                        and key.endswith(".attributes.exception.message") and isinstance(item, str)), None)
    return _Span(where, trace, span, parent, str(flat.get("name") or ""), start, end,
                 status.upper().removeprefix("STATUS_CODE_"), message, attrs)


# --- the price table ---------------------------------------------------------------------------------


def read_prices(path: Path, refusals: Refusals) -> dict[str, tuple[float, float]]:
    """``{"<llm.model_name>": {"prompt": P, "completion": C}, ...}``: US dollars per `PRICE_UNIT`
    tokens; a model is matched to an LLM span's ``llm.model_name`` exactly."""
    text = read_text(path, refusals)
    if text is None:
        return {}
    table = parse_file_json(text, path, refusals)
    if table is ...:
        return {}
    rule = ('a price table is {"<llm.model_name>": {"prompt": USD per million tokens, "completion": USD per '
            'million tokens}, ...}')
    if not isinstance(table, dict) or not table:
        refusals.fatal(rule, path=str(path))
        return {}
    prices = {}
    for model, entry in table.items():
        values = [entry.get(key) if isinstance(entry, dict) else None for key in ("prompt", "completion")]
        if not isinstance(entry, dict) or set(entry) != {"prompt", "completion"} or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                for v in values):
            refusals.fatal(rule + " (numbers >= 0)", model, entry, path=str(path))
            continue
        prices[model] = (float(values[0]), float(values[1]))
    return prices


# --- one trace ----------------------------------------------------------------------------------------


@dataclass
class _Trace:
    id: str
    spans: list[_Span] = field(default_factory=list)

    @property
    def first(self) -> dict[str, Any]:
        return self.spans[0].where


@dataclass
class _Record:
    trace: str
    where: dict[str, Any]
    question: str
    retrieved: list[str]
    contents: dict[str, str]
    answer: str | None
    sentences: list[dict[str, Any]] | None
    latency_ms: float | None
    cost_usd: float | None
    error: str | None
    models: set[str]
    priced: bool
    cited: bool


def _ranking(span: _Span, prefix: str, refusals: Refusals, tid: str) -> tuple[list[str], dict[str, str]] | None:
    """The documents under `prefix` (``retrieval.documents``) in index order, and their contents."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in span.attrs.items():
        if key.startswith(prefix + "."):
            match = _DOCUMENT_KEY.fullmatch(key[len(prefix) + 1:])
            if match:
                found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    if sorted(found) != list(range(len(found))):
        gap = next(i for i in range(len(found) + 1) if i not in found)
        refusals.refuse(f"document indexes must be 0 to n-1; index {gap} is missing", f"attributes.{prefix}",
                        sorted(found), **span.where)
        return None
    docs, contents = [], {}
    for index in range(len(found)):
        doc = found[index]
        content = doc.get("content") if isinstance(doc.get("content"), str) and doc["content"].strip() else None
        if doc.get("id") is not None:
            name = as_id(doc["id"])
            if name is None:
                refusals.refuse(_rule("a document ID is a string of 1-128 characters with no whitespace or control "
                                      "characters, or a whole number", tid),
                                f"attributes.{prefix}.{index}.document.id", doc["id"], **span.where)
                return None
            refusals.check_id(name, f"attributes.{prefix}.{index}.document.id", **span.where)
        elif content is not None:
            name = context_id(content)
        else:
            refusals.refuse(_rule("a document needs an id or a content", tid), f"attributes.{prefix}.{index}.document",
                            **span.where)
            return None
        docs.append(name)
        if content is not None:
            contents.setdefault(name, content)
    return docs, contents


def _rule(rule: str, trace: str) -> str:
    return f"{rule} (trace {trace} is not imported)"


def _citations(value: Any, answer: str, delivered: list[str], refusals: Refusals, where: dict[str, Any], key: str,
               tid: str) -> list[dict[str, Any]] | None:
    """Answer sentences from the ``--citation-key`` attribute: a list of ``{"text", "citations"}``, or
    a list of IDs / 0-based indexes into `delivered` that the whole answer cites (one sentence)."""
    n = len(delivered)
    rule = ('expected a list of {"text", "citations"} sentences, or a list of document IDs or 0-based indexes into '
            'the delivered ranking')
    if not isinstance(value, list):
        refusals.refuse(_rule(rule, tid), f"attributes.{key}", value, **where)
        return None
    if all(not isinstance(item, dict) for item in value):
        value = [{"text": " ".join(answer.split()), "citations": value}]
    out = []
    for position, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip() \
                or not isinstance(item.get("citations", []), list):
            refusals.refuse(_rule(rule, tid), f"attributes.{key}.{position}", item, **where)
            return None
        cites, named = [], set()
        for index, cite in enumerate(item.get("citations", [])):
            if isinstance(cite, int) and not isinstance(cite, bool):
                if not 0 <= cite < n:
                    refusals.refuse(_rule(f"an index citation is 0-based into the delivered ranking of {n} "
                                          "documents", tid), f"attributes.{key}.{position}.citations.{index}", cite,
                                    **where)
                    return None
            elif as_id(cite) is None:
                refusals.refuse(_rule("a citation is a document ID or a 0-based index", tid),
                                f"attributes.{key}.{position}.citations.{index}", cite, **where)
                return None
            doc = delivered[cite] if isinstance(cite, int) else str(cite)
            if doc not in named:  # an ID and the index of its slot are one citation
                named.add(doc)
                cites.append(cite)
        out.append({"text": " ".join(item["text"].split()), "citations": cites})
    return out


def _record(trace: _Trace, question: str, suite: Suite, refusals: Refusals,
            prices: dict[str, tuple[float, float]] | None, citation_key: str | None) -> _Record | None:
    tid = trace.id
    root = next(s for s in trace.spans if s.parent is None)
    rerankers = sorted((s for s in trace.spans if s.kind == "RERANKER"), key=_Span.order)
    retrievers = [s for s in trace.spans if s.kind == "RETRIEVER"]
    ranking: tuple[list[str], dict[str, str]] | None = ([], {})
    if rerankers:
        last = rerankers[-1]
        ranking = _ranking(last, "reranker.output_documents", refusals, tid)
        for other in (s for s in rerankers[:-1] if s.order()[:2] == last.order()[:2]):
            theirs = _ranking(other, "reranker.output_documents", refusals, tid)
            if theirs is None or ranking is None:
                return None
            if theirs[0] != ranking[0]:
                when = "ended at the same time" if last.end is not None else "have no end time"
                refusals.refuse(_rule(f"RERANKER spans {other.id} (line {other.where['line']}) and {last.id} {when}, "
                                      "with different outputs: which ranking the generator received is ambiguous",
                                      tid), "attributes.openinference.span.kind", "RERANKER", **last.where)
                return None
    elif len(retrievers) > 1:
        refusals.refuse(_rule(f"{len(retrievers)} RETRIEVER spans and no RERANKER span: which ranking the generator "
                              "received is ambiguous", tid), "attributes.openinference.span.kind", "RETRIEVER",
                        **retrievers[1].where)
        return None
    elif retrievers:
        ranking = _ranking(retrievers[0], "retrieval.documents", refusals, tid)
    if ranking is None:
        return None
    retrieved, contents = ranking
    if suite.unit == "chunk" and len(set(retrieved)) < len(retrieved):
        refusals.refuse(_rule(f"a document is delivered twice; suite {suite.name!r} is passage-level, so a run "
                              "cannot keep the repeat's slot as a chunk", tid), "attributes", **root.where)
        return None
    llms = sorted((s for s in trace.spans if s.kind == "LLM"), key=_Span.order)
    latency = (root.end - root.start).total_seconds() * 1000 if root.start and root.end else None
    models = {s.attrs["llm.model_name"] for s in llms if isinstance(s.attrs.get("llm.model_name"), str)}
    cost, priced = _cost(llms, prices, refusals, tid)
    if priced is None:
        return None
    if root.status == "ERROR":
        message = root.message or "the root span's status is ERROR (no message)"
        return _Record(tid, root.where, question, retrieved, contents, None, None, latency, cost, message, models,
                       priced, False)
    answers = {id(span): span_answer(span.attrs) for span in [root, *llms]}
    source = root if answers[id(root)] else next((s for s in reversed(llms) if answers[id(s)]), None)
    if source is None:
        refusals.refuse(_rule("no answer: neither the root span nor an LLM span has an output.value (or "
                              "llm.output_messages)", tid), "attributes.output.value", **root.where)
        return None
    given = answers[id(source)]
    if given.text is None:
        refusals.refuse(_rule(given.problem or "no answer", tid), given.field, **source.where)
        return None
    answer, answer_field = given.text, given.field
    sentences = None
    if citation_key is not None:
        for span in (source, root):
            value = subtree(span.attrs, citation_key)
            if value is not None:
                sentences = _citations(value, answer, retrieved[:MAX_RETRIEVED], refusals, span.where,
                                       citation_key, tid)
                if sentences is None:
                    return None
                break
    if sentences is None:
        sentences = []
        for sentence in marked_sentences(answer):
            wrong = [m for m in sentence.markers if not 1 <= m <= min(len(retrieved), MAX_RETRIEVED)]
            if wrong:
                refusals.refuse(_rule(f"citation marker [{wrong[0]}] in the answer: markers are 1-based positions in "
                                      f"the delivered ranking of {len(retrieved)} documents", tid),
                                answer_field, **source.where)
                return None
            sentences.append({"text": sentence.text, "citations": [m - 1 for m in sentence.markers]})
    if not sentences:
        refusals.refuse(_rule("the answer (output.value) has no sentence", tid), answer_field, **source.where)
        return None
    if len(sentences) > suite.max_claims:
        refusals.refuse(_rule(f"the answer has {len(sentences)} sentences; suite {suite.name!r} allows at most "
                              f"{suite.max_claims} claims (max_claims)", tid), answer_field, **source.where)
        return None
    cited = any(s["citations"] for s in sentences)
    return _Record(tid, root.where, question, retrieved, contents, answer, sentences, latency, cost, None, models,
                   priced, cited)


def token_count(value: Any) -> Any:
    """A token count as a data frame gives it: a float that is a whole number (``900.0``: pandas keeps a
    column holding a missing value as floats) is that whole number, NaN (pandas' missing value) is
    null; anything else is returned as it is, for the caller's rule."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return int(value)
    return value


def _cost(llms: list[_Span], prices: dict[str, tuple[float, float]] | None, refusals: Refusals,
          tid: str) -> tuple[float | None, bool | None]:
    """(cost in USD or None, whether every LLM span was priced); (None, None) when a count is refused."""
    if prices is None or not llms:
        return None, False
    total, priced = 0.0, True
    for span in llms:
        counts = []
        for key in ("llm.token_count.prompt", "llm.token_count.completion"):
            value = token_count(span.attrs.get(key))
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                refusals.refuse(_rule("a token count is a whole number >= 0", tid), f"attributes.{key}", value,
                                **span.where)
                return None, None
            counts.append(value)
        price = prices.get(span.attrs.get("llm.model_name"))
        if price is None or None in counts:
            priced = False
            continue
        total += (counts[0] * price[0] + counts[1] * price[1]) / PRICE_UNIT
    return (total, True) if priced else (None, False)


# --- the import ----------------------------------------------------------------------------------------


def _metadata(span: _Span) -> dict[str, Any]:
    value = subtree(span.attrs, "metadata")
    return value if isinstance(value, dict) else {}


def _match(trace: _Trace, suite: Suite, by_text: dict[str, str], question_key: str | None) -> tuple[str | None, str]:
    """(question ID or None, what was tried, in words)."""
    root = next(s for s in trace.spans if s.parent is None)
    ordered = [root] + [s for s in trace.spans if s is not root]
    tried = []
    if question_key is not None:
        for span in ordered:
            value = _metadata(span).get(question_key)
            if value is not None:
                qid = as_id(value)
                if qid is not None and qid in suite.questions:
                    return qid, ""
                return None, f"metadata {question_key!r} {value!r} is not a question of suite {suite.name!r}"
        else:
            tried.append(f"no metadata {question_key!r}")
    texts = [root.text("input.value")] + [s.text("input.value") for s in trace.spans if s.kind == "RETRIEVER"]
    for text in texts:
        if text is not None and normalise_query(text) in by_text:
            return by_text[normalise_query(text)], ""
    shown = next((t for t in texts if t is not None), None)
    tried.append("no question has the text " + (repr(shown[:80]) if shown else "(no input.value)"))
    return None, "; ".join(tried)


def import_openinference(spans: str | Path, into: Path, *, suite: str, run: str, question_key: str | None = None,
                         citation_key: str | None = None, prices: str | Path | None = None, k: int | None = None,
                         skip_bad: bool = False) -> ImportResult:
    """Add run `run` to suite `suite` of the existing workspace `into`, one record per trace of the
    spans file (module docstring). Nothing is written when a line is refused (``skip_bad``: its trace
    is left out and listed). An existing run of that ID is never replaced."""
    refusals = Refusals(skip_bad)
    check_k(k, refusals)
    path, root = Path(spans), Path(into)
    if not (root / "suites").is_dir():
        refusals.fatal("not a workspace (no suites/ folder): openinference adds a run to an existing workspace",
                       "--into", str(root))
    elif not (root / "suites" / suite).is_dir():
        have = ", ".join(sorted(p.name for p in (root / "suites").iterdir() if p.is_dir())) or "none"
        refusals.fatal(f"not a suite of the workspace (suites: {have})", "--suite", suite)
    if not FOLDER_NAME.fullmatch(run):
        refusals.fatal("a run ID is a folder name: 1-64 of letters, digits, '.', '_', '-'", "--run-id", run)
    elif (root / "runs" / run).exists():
        refusals.fatal("the workspace already has a run of this ID; choose another --run-id (an import never "
                       "replaces a run)", "--run-id", run)
    price_table = read_prices(Path(prices), refusals) if prices is not None else None
    refusals.check()
    problems = Problems()
    the_suite = load_suite(root / "suites" / suite, problems)
    if problems or the_suite is None:
        refusals.fatal_problems.extend(problems.items)
        if the_suite is None and not problems:
            refusals.fatal("the suite cannot be read", path=str(root / "suites" / suite))
        refusals.check()
    assert the_suite is not None
    every, dropped = _read_spans(path, refusals)
    traces = {tid: trace for tid, trace in every.items() if tid not in dropped}
    by_text = {normalise_query(q.text): q.id for q in the_suite.questions.values()}
    records: list[_Record] = []
    notes: list[str] = []
    unmatched: list[str] = []
    answered: dict[str, _Record] = {}
    for trace in traces.values():
        roots = [s for s in trace.spans if s.parent is None]
        ids = {s.id for s in trace.spans}
        if len(roots) != 1:
            rule = "no span of the trace is its root (parent_id null): the trace is incomplete" if not roots else \
                f"a second root span (parent_id null); the first is at line {roots[0].where['line']}"
            refusals.refuse(_rule(rule, trace.id), "parent_id", **(roots[1].where if roots else trace.first))
            continue
        orphan = next((s for s in trace.spans if s.parent is not None and s.parent not in ids), None)
        if orphan is not None:
            refusals.refuse(_rule("the parent span is not in the file: the trace is incomplete", trace.id),
                            "parent_id", orphan.parent, **orphan.where)
            continue
        qid, tried = _match(trace, the_suite, by_text, question_key)
        if qid is None:
            unmatched.append(f"trace {trace.id} ({path}:{roots[0].where['line']}): {tried}: not imported")
            continue
        record = _record(trace, qid, the_suite, refusals, price_table, citation_key)
        if record is None:
            continue
        if qid in answered:
            first = answered[qid]
            refusals.refuse(_rule(f"question {qid!r} is already answered by trace {first.trace} (line "
                                  f"{first.where['line']}); a run has one record per question", trace.id),
                            "context.trace_id", trace.id, **record.where)
            continue
        answered[qid] = record
        records.append(record)
    if not records and not refusals.fatal_problems:
        refusals.fatal("no trace is left to import" + (f" ({counted(len(unmatched), 'trace')} matched no question "
                                                       f"of suite {suite!r})" if unmatched else ""), path=str(path))
    delivered = max((len(r.retrieved) for r in records), default=0)
    if records:
        widest = next(r for r in records if len(r.retrieved) == delivered)
        k = delivered_cutoff(k, delivered, refusals, noun="documents", field="retrieved", widest=widest.where,
                             path=path, none_delivered="no trace delivered a document to the generator, so the "
                             "spans do not say how many the answer stage received")
    refusals.check()
    notes += [f"trace {tid} ({path}:{every[tid].first['line']}): not imported: a line of it is refused (--skip-bad)"
              for tid in every if tid in dropped]
    notes += unmatched
    if unmatched:
        notes.append(f"{counted(len(unmatched), 'trace')} matched no question of suite {suite!r}: not imported")
    added = _write(path, root, the_suite, run, k, records, delivered, price_table is not None, prices)
    if added:
        notes.append(f"{counted(len(added), 'document')} the traces delivered {'is' if len(added) == 1 else 'are'} "
                     f"not in suite {suite!r} (e.g. {added[0]}): added to its documents.jsonl, unjudged (not "
                     "relevant until reviewed; `ragslice pool` lists them)")
    failed = sum(1 for r in records if r.error is not None)
    if failed:
        notes.append(f"{counted(failed, 'trace')} with status ERROR: imported as failed records")
    uncited = sum(1 for r in records if r.error is None and not r.cited)
    if uncited:
        also = f", no {citation_key!r} attribute" if citation_key else ""
        notes.append(f"{counted(uncited, 'answer')} cite nothing (no [n] marker{also}): their sentences support no "
                     "claim")
    if price_table is not None:
        unpriced = sum(1 for r in records if not r.priced)
        if unpriced:
            notes.append(f"{counted(unpriced, 'trace')} without a price: no LLM span, or an LLM span whose "
                         "llm.model_name is not in the price table or which has no token counts: cost null")
    missing = len(the_suite.questions) - len(records)
    if missing:
        notes.append(f"{missing} of {counted(len(the_suite.questions), 'question')} of suite {suite!r} have no trace: "
                     "scored as missing (0, in every denominator)")
    return ImportResult(suite, [run], refusals, notes,
                        counts={"questions": len(records), "documents": len(added), "unmatched": len(unmatched),
                                "traces": len(set(every) | dropped),
                                f"k:{run}": k})


def _read_spans(path: Path, refusals: Refusals) -> tuple[dict[str, _Trace], set[str]]:
    """The traces of the spans file (`scoring.io.span_files`: Phoenix JSON Lines, OTLP/JSON, a Parquet
    frame), in the order of their first span, and the IDs of those with a refused span, to be left out
    whole (a line that is not JSON takes down the traces its text names)."""
    traces: dict[str, _Trace] = {}
    dropped: set[str] = set()
    seen: dict[tuple[str, str], int] = {}
    for item in span_items(path, refusals):
        problems, span = item.problems, None
        if item.value is not None:
            found = Problems()
            span = _span(item.where, item.value, found)
            problems.items.extend(replace(p, field=item.field_name(p.field)) for p in found.items)
        if span is None:
            value = item.value
            trace = item.trace or as_id(value.get("context", {}).get("trace_id") if isinstance(value, dict) and
                                        isinstance(value.get("context"), dict) else
                                        value.get("context.trace_id") if isinstance(value, dict) else None)
            rule_suffix = f" (trace {trace} is not imported)" if trace else ""
            for problem in problems.items:
                refusals.refuse(problem.rule + rule_suffix, problem.field,
                                problem.value if problem.has_value else ..., path=problem.path, line=problem.line)
            if trace:
                dropped.add(trace)
            continue
        key = (span.trace, span.id)
        if key in seen:
            refusals.refuse(_rule(f"span {span.id} of this trace is already at line {seen[key]}", span.trace),
                            item.field_name("span_id"), span.id, **item.where)
            dropped.add(span.trace)
            continue
        seen[key] = item.where["line"]
        traces.setdefault(span.trace, _Trace(span.trace)).spans.append(span)
    if not is_parquet(path):
        _drop_broken(path, [p for p in refusals.lines if p.path == str(path)], dropped)
    if not traces and not refusals.lines and not refusals.fatal_problems:
        refusals.fatal("the file holds no spans", path=str(path))
    return traces, dropped


def _drop_broken(path: Path, problems: list[Any], dropped: set[str]) -> None:
    """Traces named by the text of refused lines (lines that are not JSON or not UTF-8 included): they
    are left out too."""
    lines = {p.line for p in problems if p.line}
    if not lines:
        return
    for number, text in Lines(path):
        if number in lines:
            for match in _TRACE_IN_BROKEN_LINE.finditer(text.text if isinstance(text, Unreadable) else text):
                dropped.add(match.group(1) or match.group(2).lower())


def _run_chunks(suite: Suite, slots: RepeatSlots) -> list[dict[str, Any]]:
    """The run's chunk map when a trace delivered a document twice: the suite's own chunks (a run's map
    replaces the suite's) and one chunk per repeat, standing for the repeated document (or for the
    document of the repeated chunk)."""
    own = [{"id": c.id, "doc": c.doc, "doc_version": c.doc_version,
            **{key: getattr(c, key) for key in ("text", "start", "end") if getattr(c, key) is not None}}
           for c in suite.chunks.values()]
    repeats = []
    for (doc, _), chunk in slots.chunks.items():
        if doc in suite.chunks:
            doc, version = suite.chunks[doc].doc, suite.chunks[doc].doc_version
        else:
            version = suite.doc_version(doc) if doc in suite.documents else suite.corpus_version
        repeats.append({"id": chunk, "doc": doc, "doc_version": version})
    return own + repeats


def _write(path: Path, root: Path, suite: Suite, run: str, k: int, records: list[_Record], delivered: int,
           priced: bool, prices: str | Path | None) -> list[str]:
    """Write the run (and the suite's added documents); the IDs of the documents added."""
    known = set(suite.documents) | set(suite.chunks)
    added: dict[str, str] = {}
    for record in records:
        for doc in record.retrieved:
            if doc not in known and doc not in added:
                added[doc] = record.contents.get(doc) or _NOT_IN_SPANS.format(doc=doc)
    slots = RepeatSlots(known | set(added))
    lines = []
    for record in records:
        line: dict[str, Any] = {"question_id": record.question,
                                "retrieved": slots.ranking(record.retrieved[:MAX_RETRIEVED]), "answer": record.answer}
        if record.sentences is not None:
            line["answer_sentences"] = record.sentences
        else:
            line["claims"] = []
        line |= {"latency_ms": record.latency_ms, "cost_usd": record.cost_usd, "error": record.error,
                 "x_trace_id": record.trace}
        lines.append(line)
    inputs = [Source.of(prices)] if prices is not None else []
    models = sorted({m for r in records for m in r.models})
    notes = (f"Imported from OpenInference spans {path.name}: one record per trace; k = {k}, the most documents a "
             f"trace delivered to the generator is {delivered}." + (" Costs from the price table." if priced else ""))
    with staged(root) as temp:
        run_dir = temp / "runs" / run
        meta = manifest(run, suite.name, suite.version, f"OpenInference spans {path.name}", k,
                        provenance(SOURCE_FORMAT, Source.of(path), inputs), notes)
        meta |= {"corpus_version": suite.corpus_version, "rubric_version": suite.rubric_version,
                 "model": ", ".join(models) or "unknown"}
        write_json(run_dir / "manifest.json", meta)
        write_lines(run_dir / "records.jsonl", lines)
        if slots.chunks:
            write_lines(run_dir / "chunks.jsonl", _run_chunks(suite, slots))
        if added:
            source, target = suite.folder, temp / "suites" / suite.name
            target.mkdir(parents=True)
            for name in ("suite.json", "questions.jsonl", "chunks.jsonl"):
                if (source / name).exists():
                    shutil.copy2(source / name, target / name)
            body = (source / "documents.jsonl").read_bytes()
            if body and not body.endswith(b"\n"):
                body += b"\n"
            (target / "documents.jsonl").write_bytes(body + "".join(
                json.dumps({"id": doc, "text": text}, ensure_ascii=False) + "\n" for doc, text in added.items()
            ).encode("utf-8"))
    return list(added)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spans", required=True, help="the spans: Phoenix JSON Lines, one span a line (nested or "
                        "dotted attributes), a Phoenix spans data frame (pandas JSON or Parquet), or OTLP/JSON (a "
                        "collector's file exporter lines, or one document)")
    parser.add_argument("--into", required=True, help="the existing workspace the run is added to")
    parser.add_argument("--suite", required=True, help="the suite of that workspace the traces answered")
    parser.add_argument("--run-id", required=True, help="the new run's ID (an existing run is never replaced)")
    parser.add_argument("--question-key", help="the key of the trace's `metadata` attribute holding the suite's "
                        "question ID (default, and for traces without it: match the question's text)")
    parser.add_argument("--citation-key", help="an attribute holding the answer's citations: a list of {\"text\", "
                        "\"citations\"} sentences or of document IDs / 0-based indexes (default, and for traces "
                        "without it: [n] markers in the answer, 1-based positions in the delivered ranking)")
    parser.add_argument("--prices", help="JSON {\"<llm.model_name>\": {\"prompt\": USD, \"completion\": USD}} per "
                        "million tokens: cost_usd from the LLM spans' token counts (default: cost null)")
    parser.add_argument("--k", type=int, help="context cutoff (default: the most documents any trace delivered)")


def _run(args: argparse.Namespace) -> int:
    result = import_openinference(args.spans, Path(args.into), suite=args.suite, run=args.run_id,
                                  question_key=args.question_key, citation_key=args.citation_key,
                                  prices=args.prices, k=args.k, skip_bad=args.skip_bad)
    result.refusals.report()
    print(f"wrote {args.into}: run {args.run_id} on suite {result.suite}, "
          f"{result.counts['questions']} of {result.counts['traces']} traces imported "
          f"(k = {result.counts['k:' + args.run_id]})")
    print_notes(result)
    return 0


IMPORTER = Importer(
    "openinference", "OpenInference spans (an Arize Phoenix export, a spans data frame, or OTLP/JSON) to a run of "
    "an existing suite: per "
    "trace, the ranking delivered to the generator, the answer as sentences with citations, latency, cost and errors",
    ("ragslice import openinference --spans spans.jsonl --into ws/ --suite ops --run-id prod-2026-11 "
     "--question-key question_id",
     "ragslice import openinference --spans spans.jsonl --into ws/ --suite ops --run-id prod-2026-11 "
     "--prices prices.json --citation-key app.citations"),
    _arguments, _run)
