"""`ragslice import openinference` reads spans as exporters write them, and refuses what it cannot read or
tell apart, naming file and line.

Fixtures (tests/data/openinference/), written from the formats' public descriptions:
- phoenix-frame.jsonl: a frame laid out as Phoenix's ``get_spans_dataframe()`` returns it (name,
  span_kind, parent_id, start_time, end_time, status_code, status_message, events, context.span_id,
  context.trace_id, attributes.* by semantic convention), written by pandas'
  ``to_json(orient="records", lines=True)``: times in epoch milliseconds, token counts as floats.
- otlp-traces.jsonl: two OTLP/JSON ``ExportTraceServiceRequest`` lines as a collector's file exporter
  writes them (hex IDs, one in capitals; times and intValue as decimal strings; a kvlistValue; status
  codes as integers).
- json-outputs.jsonl: a LangChain RetrievalQA root whose output is ``{"query", "result"}`` JSON, and LLM
  spans whose output is a raw chat completion (``application/json``), one with output messages.
"""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from fixtures import import_leftovers, near, read_jsonl, stored_scores, write_jsonl
from scoring.cli import main
from scoring.io.openinference import epoch_time
from scoring.io.span_outputs import json_answer

OI = Path(__file__).resolve().parent / "data" / "openinference"
FRAME, OTLP, JSON_OUTPUTS, PRICES = (OI / "phoenix-frame.jsonl", OI / "otlp-traces.jsonl", OI / "json-outputs.jsonl",
                                     OI / "prices.json")
P1, P2 = "3f1e0c2a9b8d4e5f6a7b8c9d0e1f2a31", "3f1e0c2a9b8d4e5f6a7b8c9d0e1f2a32"
O1, O2 = "7a3f0e5c1b2d4e6f8091a2b3c4d5e6f1", "7a3f0e5c1b2d4e6f8091a2b3c4d5e6f2"


def workspace(tmp_path: Path) -> Path:
    """A copy of the fixture's workspace (suite ops: q1-q4, documents d1-d6, no run)."""
    ws = tmp_path / "ws"
    shutil.copytree(OI / "workspace", ws)
    return ws


def run_import(ws: Path, spans: Path, *flags: str) -> int:
    return main(["import", "openinference", "--spans", str(spans), "--into", str(ws), "--suite", "ops",
                 "--run-id", "prod", *flags])


def records(ws: Path) -> list[dict]:
    return read_jsonl(ws / "runs" / "prod" / "records.jsonl")


def refused(tmp_path: Path, capsys, spans: Path, *flags: str) -> str:
    """Import `spans`, which must be refused with nothing written: its standard error."""
    ws = workspace(tmp_path)
    before = (ws / "suites" / "ops" / "documents.jsonl").read_bytes()
    assert run_import(ws, spans, *flags) == 2
    assert not (ws / "runs").exists() and (ws / "suites" / "ops" / "documents.jsonl").read_bytes() == before
    assert import_leftovers(ws.parent) == []
    return capsys.readouterr().err


# --- Phoenix data frames -----------------------------------------------------------------------------

FRAME_SCORES = {
    ("prod", "q1"): ("ok", *near(2 / 3, 1.0, 1250.0, (1200 * 0.15 + 80 * 0.60) / 1e6)),
    ("prod", "q2"): ("ok", *near(1 / 3, 1.0, 800.0, (900 * 0.15 + 40 * 0.60) / 1e6)),
    ("prod", "q3"): ("missing", *near(0.0, 0.0, None, None)),
    ("prod", "q4"): ("missing", *near(0.0, 0.0, None, None)),
}
"""phoenix-frame.jsonl with --question-key question_id and the price table (gpt-4o-mini 0.15 / 0.60 USD
per million tokens). P1 (q1 by its metadata): the retriever delivered [d1, d6, d2], relevant {d1, d2},
k = 3: P@3 = 2/3, R@3 = 1; 10:00:00.000 -> 10:00:01.250 = 1250 ms; 1200.0 and 80.0 tokens. P2 (q2 by its
text): [d3, d5], relevant {d3}: P@3 = 1/3, R@3 = 1; 800 ms; 900.0 and 40.0 tokens."""


def _frame_scores(ws: Path, tmp_path: Path) -> dict:
    return stored_scores(ws, tmp_path / "db.duckdb", "status, precision, recall, latency_ms, cost_usd")


def test_a_phoenix_frame_exported_by_pandas_imports_with_float_counts_and_epoch_milliseconds(tmp_path, capsys):
    """pandas writes the frame's token counts as 1200.0 (non-LLM rows are NaN, so the column is float)
    and its times as epoch milliseconds: whole-number floats are whole numbers, epoch numbers are times."""
    assert '"attributes.llm.token_count.prompt":1200.0' in FRAME.read_text() and '"start_time":1796032800000' in \
        FRAME.read_text()
    ws = workspace(tmp_path)
    assert run_import(ws, FRAME, "--question-key", "question_id", "--prices", str(PRICES)) == 0
    assert "2 of 2 traces imported (k = 3)" in capsys.readouterr().out
    got = records(ws)
    assert [(r["question_id"], r["retrieved"], r["x_trace_id"]) for r in got] == [
        ("q1", ["d1", "d6", "d2"], P1), ("q2", ["d3", "d5"], P2)]
    assert got[0]["answer_sentences"] == [{"text": "A tier-1 deploy needs two reviewers.", "citations": [0]},
                                          {"text": "They come from the release rota.", "citations": [2]}]
    assert _frame_scores(ws, tmp_path) == FRAME_SCORES


def test_the_frame_as_one_json_list_imports_alike(tmp_path, capsys):
    """``to_json(orient="records")`` without ``lines``: one JSON list of the same rows."""
    rows = [json.loads(line) for line in FRAME.read_text().splitlines()]
    for name, text in (("one-line.json", json.dumps(rows)), ("indented.json", json.dumps(rows, indent=1))):
        spans = tmp_path / name
        spans.write_text(text)
        ws = workspace(tmp_path / name.split(".")[0])
        assert run_import(ws, spans, "--question-key", "question_id") == 0
        assert [(r["question_id"], r["retrieved"], r["latency_ms"]) for r in records(ws)] == [
            ("q1", ["d1", "d6", "d2"], 1250.0), ("q2", ["d3", "d5"], 800.0)]


def _nested(flat: dict) -> dict:
    """A frame row's ``attributes.*`` columns as one nested ``attributes`` object (dots as levels)."""
    out: dict = {}
    for key, value in flat.items():
        node = out
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


@pytest.mark.parametrize("layout", ["flat columns", "nested attributes"])
def test_the_same_frame_written_to_parquet_imports_alike(tmp_path, capsys, layout):
    """The frame read back by pandas (times become timestamps) and written with ``to_parquet``: as
    Phoenix's columns, or with one nested ``attributes`` column; both import as the JSON Lines do."""
    frame = pd.read_json(FRAME, lines=True, dtype={"parent_id": "object"})
    assert str(frame["start_time"].dtype).startswith("datetime64")
    if layout == "nested attributes":
        columns = [c for c in frame.columns if c.startswith("attributes.")]
        frame["attributes"] = [_nested({c[len("attributes."):]: row[c] for c in columns if row[c] is not None
                                        and row[c] == row[c]}) for _, row in frame.iterrows()]
        frame = frame.drop(columns=columns)
    parquet = tmp_path / "spans.parquet"
    frame.to_parquet(parquet)
    ws = workspace(tmp_path)
    assert run_import(ws, parquet, "--question-key", "question_id", "--prices", str(PRICES)) == 0
    assert [(r["question_id"], r["retrieved"], r["answer"]) for r in records(ws)] == [
        ("q1", ["d1", "d6", "d2"], "A tier-1 deploy needs two reviewers [1]. They come from the release rota [3]."),
        ("q2", ["d3", "d5"], "It opens on Monday at 09:00 UTC [1].")]
    assert _frame_scores(ws, tmp_path) == FRAME_SCORES


def test_a_parquet_row_that_breaks_a_rule_is_refused_at_its_row(tmp_path, capsys):
    frame = pd.read_json(FRAME, lines=True, dtype={"parent_id": "object"})
    frame.loc[2, "attributes.llm.token_count.prompt"] = 1200.5
    parquet = tmp_path / "spans.parquet"
    frame.to_parquet(parquet)
    err = refused(tmp_path, capsys, parquet, "--prices", str(PRICES))
    assert (f"{parquet}:3: field 'attributes.llm.token_count.prompt': 1200.5: a token count is a whole number >= 0 "
            f"(trace {P1} is not imported)") in err


@pytest.mark.parametrize("value, expected", [
    (1796032800, "2026-11-30T10:00:00+00:00"),  # seconds
    (1796032800.25, "2026-11-30T10:00:00.250000+00:00"),
    (1796032800250, "2026-11-30T10:00:00.250000+00:00"),  # milliseconds
    (1796032800250123, "2026-11-30T10:00:00.250123+00:00"),  # microseconds
    (1796032800250123456, "2026-11-30T10:00:00.250123+00:00"),  # nanoseconds
    (0, "1970-01-01T00:00:00+00:00"),
    (99_999_999_999, "5138-11-16T09:46:39+00:00"),  # the last second read as seconds
    (100_000_000_000, "1973-03-03T09:46:40+00:00"),  # the first millisecond read as milliseconds
])
def test_an_epoch_time_s_unit_is_told_by_its_magnitude(value, expected):
    assert epoch_time(value).isoformat() == expected
    assert epoch_time(value).tzinfo == timezone.utc


def test_epoch_times_and_iso_times_read_the_same_instant():
    assert epoch_time(1796032800250) == datetime.fromisoformat("2026-11-30T10:00:00.250+00:00")


def test_an_epoch_time_that_is_no_time_is_refused(tmp_path, capsys):
    given = [json.loads(line) for line in FRAME.read_text().splitlines()]
    given[0]["end_time"] = -5
    spans = write_jsonl(tmp_path / "spans.jsonl", given)
    err = refused(tmp_path, capsys, spans)
    assert (f"{spans}:1: field 'end_time': -5: expected an ISO 8601 date and time such as "
            "2026-12-01T09:30:00.250+00:00, or a time since 1970-01-01 UTC in seconds, milliseconds, microseconds "
            "or nanoseconds (a number >= 0)") in err


# --- OTLP/JSON ---------------------------------------------------------------------------------------

OTLP_SCORES = {
    ("prod", "q1"): ("ok", *near(1.0, 1.0, 1.0, 1500.0, (1200 * 0.15 + 80 * 0.60) / 1e6)),
    ("prod", "q2"): ("missing", *near(0.0, 0.0, 0.0, None, None)),
    ("prod", "q3"): ("failed", *near(0.0, 0.0, 0.0, 30000.0, None)),
    ("prod", "q4"): ("missing", *near(0.0, 0.0, 0.0, None, None)),
}
"""otlp-traces.jsonl with --question-key question_id and the price table. O1 (q1 by its metadata, a JSON
string; its spans on both lines): the retriever delivered [d2, d1], relevant {d1, d2}, k = 2: P@2 = 1,
R@2 = 1, RR = 1; 1.5 s in nanoseconds; tokens "1200" and "80" (intValue strings). O2 (q3 by a kvlistValue
metadata): status code 2: failed with its message, 30 s, no token counts: cost null."""


def _otlp_scores(ws: Path, tmp_path: Path) -> dict:
    return stored_scores(ws, tmp_path / "db.duckdb", "status, precision, recall, rr, latency_ms, cost_usd")


def test_otlp_json_lines_of_a_collector_file_exporter_import(tmp_path, capsys):
    ws = workspace(tmp_path)
    assert run_import(ws, OTLP, "--question-key", "question_id", "--prices", str(PRICES)) == 0
    assert "2 of 2 traces imported (k = 2)" in capsys.readouterr().out
    got = records(ws)
    assert [(r["question_id"], r["retrieved"], r["x_trace_id"], r["error"]) for r in got] == [
        ("q1", ["d2", "d1"], O1, None), ("q3", ["d4", "d1"], O2, "upstream timeout: the generator did not answer")]
    assert got[0]["answer_sentences"] == [{"text": "A tier-1 deploy needs two reviewers.", "citations": [1]},
                                          {"text": "They come from the release rota.", "citations": [0]}]
    manifest = json.loads((ws / "runs" / "prod" / "manifest.json").read_text())
    assert (manifest["k"], manifest["model"]) == (2, "gpt-4o-mini")
    assert _otlp_scores(ws, tmp_path) == OTLP_SCORES


def _one_document(tmp_path: Path) -> Path:
    """otlp-traces.jsonl as one OTLP/JSON document, indented (an OTLP/JSON dump)."""
    requests = [json.loads(line) for line in OTLP.read_text().splitlines()]
    document = {"resourceSpans": [r for request in requests for r in request["resourceSpans"]]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def _line_of_span(path: Path, span_id: str) -> int:
    """The line where the object of span `span_id` starts (its "traceId" comes first, after its brace)."""
    lines = path.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if f'"spanId": "{span_id}"' in line) - 2


def test_one_otlp_json_document_imports_and_a_bad_span_is_refused_at_its_own_line(tmp_path, capsys):
    document = _one_document(tmp_path)
    ws = workspace(tmp_path)
    assert run_import(ws, document, "--question-key", "question_id", "--prices", str(PRICES)) == 0
    assert [r["question_id"] for r in records(ws)] == ["q1", "q3"]
    assert _otlp_scores(ws, tmp_path) == OTLP_SCORES
    broken = tmp_path / "broken" / "trace.json"
    broken.parent.mkdir()
    broken.write_text(document.read_text().replace('"intValue": "1200"', '"intValue": "12.5"'))
    err = refused(tmp_path / "broken", capsys, broken)
    line = _line_of_span(broken, "1B2C3D4E5F607183")
    assert (f"{broken}:{line}: field 'resourceSpans[1].scopeSpans[0].spans[0].attributes[3].value.intValue': "
            f"'12.5': expected a whole number") in err
    assert f"(trace {O1} is not imported)" in err


@pytest.mark.parametrize("edit, field, message", [
    (lambda s: s.replace('"7A3F0E5C1B2D4E6F8091A2B3C4D5E6F1"', '"ej8OXBstTm+AkaKzxNXm8Q=="', 1),
     "resourceSpans[0].scopeSpans[0].spans[0].traceId",
     "expected 32 hex digits, not all zero (OTLP/JSON writes IDs in hex, not base64)"),
    (lambda s: s.replace('"status":{}', '"status":{"code":7}', 1),
     "resourceSpans[0].scopeSpans[0].spans[0].status.code", "expected OK, ERROR or UNSET"),
    (lambda s: s.replace('{"key":"input.mime_type"', '{"key":"input.value","value":{"stringValue":"x"}},'
                                                     '{"key":"input.mime_type"', 1),
     "resourceSpans[0].scopeSpans[0].spans[0].attributes[2].key",
     "this key is given twice in one list of attributes"),
    (lambda s: s.replace('"startTimeUnixNano":"1796032800000000000"', '"startTimeUnixNano":"2026-11-30"', 1),
     "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano", "expected nanoseconds since 1970-01-01 UTC"),
])
def test_an_otlp_span_that_breaks_a_rule_is_refused_with_its_line_and_path(tmp_path, capsys, edit, field, message):
    spans = tmp_path / "spans.jsonl"
    spans.write_text(edit(OTLP.read_text()))
    err = refused(tmp_path, capsys, spans)
    assert f"{spans}:1: field '{field}'" in err and message in err, err
    assert (f"(trace {O1} is not imported)" in err) == (not field.endswith("traceId"))  # a bad ID names no trace


def test_an_unknown_layout_is_refused_naming_what_was_expected(tmp_path, capsys):
    """An object that is neither a span nor an OTLP request (here a Jaeger JSON export) is not a span
    with its trace ID missing: the refusal says which layouts the import reads."""
    spans = write_jsonl(tmp_path / "spans.jsonl", [{"data": [{"traceID": O1, "spans": []}]}])
    err = refused(tmp_path, capsys, spans)
    assert (f"{spans}:1: not a span of a known layout: expected an OpenInference span as Phoenix exports it "
            "(context.trace_id, context.span_id or span_id, parent_id, start_time, end_time, status_code, "
            'attributes), or an OTLP/JSON traces request ({"resourceSpans": [{"resource": ..., "scopeSpans": '
            '[{"scope": ..., "spans": [...]}]}]}); the object\'s keys are: data') in err
    assert "required" not in err


# --- JSON outputs --------------------------------------------------------------------------------------


def test_json_outputs_become_the_answer_text_they_hold(tmp_path, capsys):
    """J1: the RetrievalQA root's output {"query", "result"} (application/json) gives "result". J2: the
    LLM span's output messages give the answer (its output is the raw completion). J3: the raw chat
    completion alone gives choices[0].message.content. The [n] markers are read in those texts."""
    ws = workspace(tmp_path)
    assert run_import(ws, JSON_OUTPUTS, "--question-key", "question_id") == 0
    got = {r["question_id"]: (r["answer"], r["answer_sentences"]) for r in records(ws)}
    assert got == {
        "q1": ("A tier-1 deploy needs two reviewers [1]. They come from the weekly release rota [2].",
               [{"text": "A tier-1 deploy needs two reviewers.", "citations": [0]},
                {"text": "They come from the weekly release rota.", "citations": [1]}]),
        "q2": ("The release window opens on Monday [1].",
               [{"text": "The release window opens on Monday.", "citations": [0]}]),
        "q4": ("The Aurora team owns the pager [1].", [{"text": "The Aurora team owns the pager.", "citations": [0]}]),
    }


def test_a_json_output_without_an_answer_is_refused(tmp_path, capsys):
    given = read_jsonl(JSON_OUTPUTS)[:3]
    given[0]["attributes"]["output"]["value"] = json.dumps({"query": "Who approves a tier-1 deploy?", "docs": []})
    spans = write_jsonl(tmp_path / "spans.jsonl", given)
    err = refused(tmp_path, capsys, spans, "--question-key", "question_id")
    assert (f"{spans}:1: field 'attributes.output.value': the JSON output holds no answer text under any of "
            "result, answer, output, response, text, content, message, parts, choices, candidates") in err
    given[0]["attributes"]["output"]["value"] = "{not json"
    spans = write_jsonl(tmp_path / "again" / "spans.jsonl", given)
    err = refused(tmp_path / "again", capsys, spans, "--question-key", "question_id")
    assert "output.mime_type is application/json, but output.value is not valid JSON" in err


@pytest.mark.parametrize("value, answer", [
    ({"query": "q", "result": "R."}, "R."),
    ({"input": "q", "context": [], "answer": "A."}, "A."),
    ({"output": "O."}, "O."),
    ({"choices": [{"message": {"role": "assistant", "content": "C."}}, {"message": {"content": "no"}}]}, "C."),
    ({"choices": [{"text": "T."}]}, "T."),
    ({"content": [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}], "role": "assistant"},
     "One.\nTwo."),
    ({"candidates": [{"content": {"parts": [{"text": "G."}]}}]}, "G."),
    ({"output": [{"type": "message", "content": [{"type": "output_text", "text": "Resp."}]}]}, "Resp."),
    ("Plain.", "Plain."),
    ({"docs": [1, 2]}, None),
])
def test_the_answer_of_a_json_output_is_found_under_the_documented_keys(value, answer):
    assert json_answer(value) == answer


# --- smaller ---------------------------------------------------------------------------------------------


def _spans_t1() -> list[dict]:
    return [s for s in read_jsonl(OI / "spans.jsonl") if (s.get("context") or {}).get("trace_id", "").endswith("51")]


def test_two_rerankers_ending_at_the_same_time_with_different_outputs_are_refused_as_ambiguous(tmp_path, capsys):
    """T1's reranker (line 3) delivered [d1, d6, d2]; a second RERANKER span ends at the same time with
    [d2, d1]: which ranking the generator received is ambiguous, as with two RETRIEVER spans."""
    given = _spans_t1()
    second = json.loads(json.dumps(given[2]))
    second["context"]["span_id"] = "a104"
    second["attributes"]["reranker"]["output_documents"] = [{"document": {"id": "d2"}}, {"document": {"id": "d1"}}]
    spans = write_jsonl(tmp_path / "spans.jsonl", given + [second])
    err = refused(tmp_path, capsys, spans)
    assert (f"{spans}:5: field 'attributes.openinference.span.kind': 'RERANKER': RERANKER spans a102 (line 3) and "
            "a104 ended at the same time, with different outputs: which ranking the generator received is "
            "ambiguous (trace 7c4f0b6a1e2d4c3b9a8f0e1d2c3b4a51 is not imported)") in err
    second["attributes"]["reranker"]["output_documents"] = given[2]["attributes"]["reranker"]["output_documents"]
    spans = write_jsonl(tmp_path / "same" / "spans.jsonl", given + [second])
    ws = workspace(tmp_path / "same")
    assert run_import(ws, spans) == 0  # the same output twice: no ambiguity
    assert records(ws)[0]["retrieved"] == ["d1", "d6", "d2"]


def test_a_span_whose_status_code_is_given_twice_is_refused_at_its_line(tmp_path, capsys):
    """T3's root says ERROR, then OK: a reader keeping the last value would import a failure as a success."""
    lines = (OI / "spans.jsonl").read_text().splitlines()
    assert '"status_code": "ERROR"' in lines[7]
    lines[7] = lines[7][:-1] + ', "status_code": "OK"}'
    spans = tmp_path / "spans.jsonl"
    spans.write_text("\n".join(lines) + "\n")
    err = refused(tmp_path, capsys, spans, "--question-key", "question_id")
    assert f"{spans}:8: not valid JSON (a key appears twice in one object: 'status_code')" in err


def test_a_document_id_holding_an_invisible_character_is_imported_with_a_note(tmp_path, capsys):
    """d1 followed by U+200B ZERO WIDTH SPACE is another ID than d1 (trec_eval reads it so too): imported
    as given, as a document the suite lacks, and noted with its file and line."""
    given = _spans_t1()
    given[2]["attributes"]["reranker"]["output_documents"][0]["document"]["id"] = "d1\u200b"
    spans = write_jsonl(tmp_path / "spans.jsonl", given)
    ws = workspace(tmp_path)
    assert run_import(ws, spans) == 0
    out = capsys.readouterr().out
    assert (f"note: {spans}:3: field 'attributes.reranker.output_documents.0.document.id': 'd1\\u200b': holds "
            "U+200B ZERO WIDTH SPACE, an invisible format character: imported as given, an ID apart from 'd1'\n"
            in out)
    assert records(ws)[0]["retrieved"] == ["d1\u200b", "d6", "d2"]

