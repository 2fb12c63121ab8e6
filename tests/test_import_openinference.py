"""`ragslice import openinference`: OpenInference spans (a Phoenix export) become a run of an existing
suite, one record per trace, scored against the suite's labels."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from fixtures import REPO, import_leftovers, near, read_jsonl, sha256_of, stored_scores, write_jsonl
from scoring.cli import main
from scoring.errors import Problems
from scoring.io.openinference import flatten, subtree

OI = Path(__file__).resolve().parent / "data" / "openinference"
SPANS, PRICES = OI / "spans.jsonl", OI / "prices.json"
T1, T2, T3, T4 = (f"7c4f0b6a1e2d4c3b9a8f0e1d2c3b4a5{i}" for i in range(1, 5))


def workspace(tmp_path: Path) -> Path:
    """A copy of the fixture's workspace (suite ops: q1-q4, documents d1-d6, no run)."""
    ws = tmp_path / "ws"
    shutil.copytree(OI / "workspace", ws)
    return ws


def run_import(ws: Path, spans: Path = SPANS, *flags: str, run: str = "prod") -> int:
    return main(["import", "openinference", "--spans", str(spans), "--into", str(ws), "--suite", "ops",
                 "--run-id", run, *flags])


def spans_of(*traces: str) -> list[dict]:
    """The fixture's spans of the given traces, in file order."""
    return [s for s in read_jsonl(SPANS) if (s.get("context") or {}).get("trace_id", s.get("context.trace_id"))
            in traces]


def test_openinference_fixture_imports_refreshes_and_scores_by_hand(tmp_path, capsys):
    """tests/data/openinference/spans.jsonl, with --question-key question_id and the price table
    (gpt-4o-mini: 0.15 USD per million prompt tokens, 0.60 per million completion tokens):

    - T1 (nested attributes; q1 by metadata): the retriever returned [d6, d1, x-99, d2], the reranker
      delivered [d1, d6, d2]: that is the record's ranking. k = 4 (T2 delivered 4). Relevant {d1, d2}:
      P@4 = 2/4, R@4 = 2/2, RR = 1. Latency 10:00:00.000 -> 10:00:01.250 = 1250 ms. Cost
      (1200 * 0.15 + 80 * 0.60) / 1e6 = 228 / 1e6 USD. Sentences: "A tier-1 deploy needs two
      reviewers." [1] -> d1, which supports the expected claim tier1-reviewers (lexical overlap 1);
      "Both must be on the release rota." [2] -> d6: unlabelled, unsupported. Support 1/2, Coverage 1/1.
    - T2 (flattened; q2 by its text, spacing aside): retriever only, [d5, d3, x-42, d2], relevant
      {d3}: P@4 = 1/4, R@4 = 1, RR = 1/2. 800 ms; (900 * 0.15 + 40 * 0.60) / 1e6 = 159 / 1e6 USD.
    - T3 (q3 by a metadata JSON string): root ERROR: failed, 0 on retrieval metrics, 30000 ms, its
      LLM span has no token counts: cost null.
    - T4: metadata q-404 is no question of ops: reported, not imported. q4: no trace: missing, 0."""
    ws = workspace(tmp_path)
    assert run_import(ws, SPANS, "--question-key", "question_id", "--prices", str(PRICES)) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {ws}: run prod on suite ops, 3 of 4 traces imported (k = 4)\n")
    assert (f"note: trace {T4} ({SPANS}:11): metadata 'question_id' 'q-404' is not a question of suite 'ops': "
            "not imported") in out
    assert "note: 1 trace matched no question of suite 'ops': not imported" in out
    records = read_jsonl(ws / "runs" / "prod" / "records.jsonl")
    assert [(r["question_id"], r["retrieved"], r["x_trace_id"]) for r in records] == [
        ("q1", ["d1", "d6", "d2"], T1), ("q2", ["d5", "d3", "x-42", "d2"], T2), ("q3", ["d4", "d1"], T3)]
    assert records[0]["answer_sentences"] == [{"text": "A tier-1 deploy needs two reviewers.", "citations": [0]},
                                              {"text": "Both must be on the release rota.", "citations": [1]}]
    assert records[2]["error"] == "upstream timeout: the generator did not answer"
    docs = read_jsonl(ws / "suites" / "ops" / "documents.jsonl")
    assert [d["id"] for d in docs] == ["d1", "d2", "d3", "d4", "d5", "d6", "x-42"]  # x-99 was not delivered
    assert docs[-1] == {"id": "x-42", "text": "Release notes for version 4.2."}
    manifest = json.loads((ws / "runs" / "prod" / "manifest.json").read_text())
    assert (manifest["k"], manifest["suite_version"], manifest["corpus_version"], manifest["rubric_version"],
            manifest["model"]) == (4, "2026.11", "corpus-2026-11", "rubric-1", "gpt-4o-mini")
    assert manifest["x_provenance"] == {"source_format": "openinference", "source": str(SPANS),
                                        "sha256": sha256_of(SPANS),
                                        "inputs": [{"path": str(PRICES), "sha256": sha256_of(PRICES)}]}
    got = stored_scores(ws, tmp_path / "db.duckdb",
                        "k, status, precision, recall, rr, support, coverage, latency_ms, cost_usd")
    assert got == {
        ("prod", "q1"): (4, "ok", *near(2 / 4, 1.0, 1.0, 1 / 2, 1.0, 1250.0, 228 / 1e6)),
        ("prod", "q2"): (4, "ok", *near(1 / 4, 1.0, 1 / 2, None, None, 800.0, 159 / 1e6)),
        ("prod", "q3"): (4, "failed", *near(0.0, 0.0, 0.0, None, None, 30000.0, None)),
        ("prod", "q4"): (4, "missing", *near(0.0, 0.0, 0.0, None, None, None, None)),
    }
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        cited = con.execute("SELECT question_id, sentence, citations FROM answer_sentences ORDER BY 1, 2").fetchall()
    assert cited == [("q1", 0, ["d1"]), ("q1", 1, ["d6"]), ("q2", 0, ["d3"])]


def test_openinference_without_a_question_key_matches_by_text_and_reports_the_rest(tmp_path, capsys):
    """Every root's input.value is a question's text but T4's: without --question-key, T1-T3 match
    by text and T4 ("What is the office wifi password?") is reported by its trace ID. No price table:
    cost null."""
    ws = workspace(tmp_path)
    assert run_import(ws) == 0
    out = capsys.readouterr().out
    assert (f"note: trace {T4} ({SPANS}:11): no question has the text 'What is the office wifi password?': "
            "not imported") in out
    records = read_jsonl(ws / "runs" / "prod" / "records.jsonl")
    assert [(r["question_id"], r["cost_usd"]) for r in records] == [("q1", None), ("q2", None), ("q3", None)]


def test_nested_and_dotted_attributes_are_one_form():
    nested = {"attributes": {"retrieval": {"documents": [{"document": {"id": "d1", "score": 0.5}}]},
                             "metadata": {"question_id": "q1"}}}
    dotted = {"attributes": {"retrieval.documents.0.document.id": "d1", "retrieval.documents.0.document.score": 0.5,
                             "metadata.question_id": "q1"}}
    problems = Problems()
    assert flatten(nested, problems, {}) == flatten(dotted, problems, {}) == {
        "attributes.retrieval.documents.0.document.id": "d1", "attributes.retrieval.documents.0.document.score": 0.5,
        "attributes.metadata.question_id": "q1"}
    assert not problems
    assert subtree(flatten(nested, problems, {}), "attributes.retrieval.documents") == [
        {"document": {"id": "d1", "score": 0.5}}]
    flatten({"attributes": {"input": {"value": "a"}, "input.value": "b"}}, problems, {"path": "s", "line": 1})
    assert [str(p) for p in problems.items] == [
        "s:1: field 'attributes.input.value': 'b': given twice (nested and as a dotted key) with different values"]


def _write(tmp_path: Path, spans: list[dict]) -> Path:
    return write_jsonl(tmp_path / "spans.jsonl", spans)


def _edit(spans: list[dict], span_id: str, **attributes) -> list[dict]:
    """The spans with `attributes` set on span `span_id` (dotted keys, beside its own)."""
    out = json.loads(json.dumps(spans))
    for span in out:
        if span.get("span_id", (span.get("context") or {}).get("span_id")) == span_id:
            for key, value in attributes.items():
                if key.startswith("attributes."):
                    span.setdefault("attributes", {})[key[len("attributes."):]] = value
                else:
                    span[key] = value
    return out


@pytest.mark.parametrize("change, where, message", [
    (lambda s: _edit(s, "b201", **{"attributes.retrieval.documents.2.document.id": "x 42"}), 6,
     "field 'attributes.retrieval.documents.2.document.id': 'x 42': a document ID is a string of 1-128 characters"),
    (lambda s: _edit(s, "b200", end_time="2026-11-30T10:04:59.000Z"), 5,
     "field 'end_time': '2026-11-30T10:04:59.000Z' is before start_time: the span ends before it starts"),
    (lambda s: _edit(s, "b202", **{"attributes.output.value": "It opens on Monday [5]."}), 7,
     "citation marker [5] in the answer: markers are 1-based positions in the delivered ranking of 4 documents"),
    (lambda s: _edit(s, "b201", parent_id=None), 6, "a second root span (parent_id null); the first is at line 5"),
    (lambda s: _edit(s, "b201", **{"attributes.retrieval.documents.5.document.id": "d1"}), 6,
     "document indexes must be 0 to n-1; index 4 is missing"),
    (lambda s: _edit(s, "b202", **{"attributes.llm.token_count.prompt": -3}), 7,
     "field 'attributes.llm.token_count.prompt': -3: a token count is a whole number >= 0"),
    (lambda s: _edit(s, "b201", **{"context.trace_id": None}), 6, "field 'context.trace_id': None: required"),
])
def test_openinference_unusable_span_is_refused_with_its_line_and_nothing_written(tmp_path, capsys, change, where,
                                                                                   message):
    ws = workspace(tmp_path)
    before = (ws / "suites" / "ops" / "documents.jsonl").read_bytes()
    spans = _write(tmp_path, change(spans_of(T1, T2)))
    assert run_import(ws, spans, "--prices", str(PRICES)) == 2
    err = capsys.readouterr().err
    assert f"{spans}:{where}: " in err and message in err, err
    assert not (ws / "runs").exists() and (ws / "suites" / "ops" / "documents.jsonl").read_bytes() == before
    assert import_leftovers(tmp_path) == []


def test_openinference_line_that_is_not_json_is_refused_with_its_line_number(tmp_path, capsys):
    ws = workspace(tmp_path)
    lines = SPANS.read_text().splitlines()
    lines[5] = lines[5][:40]  # line 6 (T2's retriever) cut short
    spans = tmp_path / "spans.jsonl"
    spans.write_text("\n".join(lines) + "\n")
    assert run_import(ws, spans) == 2
    assert f"{spans}:6: not valid JSON" in capsys.readouterr().err
    assert not (ws / "runs").exists()


def test_openinference_skip_bad_lists_the_line_and_leaves_its_whole_trace_out(tmp_path, capsys):
    """Line 6 (T2's retriever) is cut short: with --skip-bad it is listed, and T2, whose ID the cut
    line still shows, is left out whole (its root and LLM span would import a trace without its
    ranking). T1 and T3 import; q2 is missing. k = 3 (T1's reranker output)."""
    ws = workspace(tmp_path)
    lines = SPANS.read_text().splitlines()
    lines[5] = lines[5][:100]
    assert T2 in lines[5]
    spans = tmp_path / "spans.jsonl"
    spans.write_text("\n".join(lines) + "\n")
    assert run_import(ws, spans, "--question-key", "question_id", "--skip-bad") == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"skipped {spans}:6: not valid JSON (Invalid control character at)",
        "skipped 1 line (--skip-bad): not imported",
    ]
    assert "2 of 4 traces imported (k = 3)" in captured.out
    assert f"note: trace {T2} ({spans}:5): not imported: a line of it is refused (--skip-bad)" in captured.out
    got = stored_scores(ws, tmp_path / "db.duckdb", "status, precision")
    assert got == {("prod", "q1"): ("ok", *near(2 / 3)), ("prod", "q2"): ("missing", 0.0),
                   ("prod", "q3"): ("failed", 0.0), ("prod", "q4"): ("missing", 0.0)}


def test_openinference_skip_bad_leaves_out_the_trace_of_a_refused_span(tmp_path, capsys):
    ws = workspace(tmp_path)
    given = spans_of(T1, T2)
    given[2]["attributes"]["reranker"]["output_documents"][1]["document"]["id"] = "bad id"
    spans = _write(tmp_path, given)
    assert run_import(ws, spans, "--skip-bad") == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"skipped {spans}:3: field 'attributes.reranker.output_documents.1.document.id': "
                             f"'bad id': a document ID is")
    assert err[0].endswith(f"(trace {T1} is not imported)") and err[1] == "skipped 1 line (--skip-bad): not imported"
    assert [r["question_id"] for r in read_jsonl(ws / "runs" / "prod" / "records.jsonl")] == ["q2"]


def test_openinference_two_traces_of_one_question_are_refused(tmp_path, capsys):
    ws = workspace(tmp_path)
    again = [json.loads(json.dumps(s).replace(T2, T4)) for s in spans_of(T2)]
    spans = _write(tmp_path, spans_of(T2) + again)
    assert run_import(ws, spans) == 2
    assert (f"{spans}:4: field 'context.trace_id': '{T4}': question 'q2' is already answered by trace {T2} (line 1)"
            in capsys.readouterr().err)


def test_openinference_citation_key_gives_the_sentences(tmp_path, capsys):
    """T2's root declares its sentences under app.citations: the first cites d3 by ID and by its slot
    (index 1), which is one citation; the second the delivered slot 0 (d5) by index; the markers of
    the text are not read. A list of IDs is what the whole answer cites."""
    ws = workspace(tmp_path)
    sentences = [{"text": "The window opens on Monday.", "citations": ["d3", 1]},
                 {"text": "No release during the freeze.", "citations": [0]}]
    spans = _write(tmp_path, _edit(spans_of(T2), "b200", **{"attributes.app.citations": json.dumps(sentences)}))
    assert run_import(ws, spans, "--citation-key", "app.citations") == 0
    assert read_jsonl(ws / "runs" / "prod" / "records.jsonl")[0]["answer_sentences"] == [
        {"text": "The window opens on Monday.", "citations": ["d3"]},  # index 1 is d3's slot: one citation
        {"text": "No release during the freeze.", "citations": [0]}]
    ws2 = workspace(tmp_path / "ids")
    spans = _write(tmp_path, _edit(spans_of(T2), "b202", **{"attributes.app.citations": ["d3"]}))
    assert run_import(ws2, spans, "--citation-key", "app.citations") == 0
    assert read_jsonl(ws2 / "runs" / "prod" / "records.jsonl")[0]["answer_sentences"] == [
        {"text": "The release window opens on Monday [2].", "citations": ["d3"]}]


@pytest.mark.parametrize("setup, flags, message", [
    (lambda ws: (ws / "runs" / "prod").mkdir(parents=True), [],
     "field '--run-id': 'prod': the workspace already has a run of this ID"),
    (lambda ws: None, ["--suite", "nope"], "field '--suite': 'nope': not a suite of the workspace (suites: ops)"),
    (lambda ws: shutil.rmtree(ws / "suites"), [], "field '--into'"),
    (lambda ws: None, ["--k", "0"], "field '--k': 0: the context cutoff k is a whole number from 1 to 100"),
])
def test_openinference_needs_an_existing_suite_and_a_new_run_id(tmp_path, capsys, setup, flags, message):
    ws = workspace(tmp_path)
    setup(ws)
    argv = ["import", "openinference", "--spans", str(SPANS), "--into", str(ws), "--suite", "ops", "--run-id",
            "prod", *flags]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_openinference_bad_price_table_is_refused(tmp_path, capsys):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"prompt": "0.15", "completion": 0.6}}))
    assert run_import(workspace(tmp_path), SPANS, "--prices", str(prices)) == 2
    assert f"{prices}: field 'gpt-4o-mini'" in capsys.readouterr().err


def test_openinference_example_imports_and_scores(tmp_path, capsys):
    """data/examples/openinference (Phoenix dataframe style: attributes as top-level dotted keys, metadata
    a JSON string). k = 3. q-0001: the reranker delivered [rb-5, rb-1, rb-4], relevant {rb-1}: P@3 = 1/3,
    R@3 = 1, RR = 1/2; 940 ms. q-0002: the retriever delivered [rb-2, chat-2026-11-24, rb-5], relevant
    {rb-2, rb-3}: P@3 = 1/3, R@3 = 1/2, RR = 1; 1210 ms. Costs at 0.15 / 0.60 USD per million tokens."""
    example = REPO / "data" / "examples" / "openinference"
    ws = tmp_path / "ws"
    shutil.copytree(example / "workspace", ws)
    assert main(["import", "openinference", "--spans", str(example / "spans.jsonl"), "--into", str(ws),
                 "--suite", "runbooks", "--run-id", "prod-2026-11", "--question-key", "question_id",
                 "--prices", str(example / "prices.json")]) == 0
    got = stored_scores(ws, tmp_path / "db.duckdb", "status, precision, recall, rr, latency_ms, cost_usd")
    assert got == {
        ("prod-2026-11", "q-0001"): ("ok", *near(1 / 3, 1.0, 1 / 2, 940.0, (1500 * 0.15 + 60 * 0.60) / 1e6)),
        ("prod-2026-11", "q-0002"): ("ok", *near(1 / 3, 1 / 2, 1.0, 1210.0, (1300 * 0.15 + 90 * 0.60) / 1e6)),
    }


def test_openinference_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["import", "openinference", "--help"])
    out = capsys.readouterr().out
    assert "example:\n  ragslice import openinference --spans " in out and "--skip-bad" in out


def test_answer_text_is_cut_into_sentences_with_their_markers():
    """Cut after . ! ? (and the markers right after them) before whitespace, and at line breaks; a
    piece that is only markers gives them to the sentence before it; markers are removed from the
    text, each number once."""
    from scoring.io.answer_text import Sentence, marked_sentences, split_sentences

    text = "Deploys need two reviewers [1]. The window opens Monday.[2][3] See [1, 3]!\n- the rota [4]\n[2]"
    assert marked_sentences(text) == [Sentence("Deploys need two reviewers.", (1,)),
                                      Sentence("The window opens Monday.", (2, 3)), Sentence("See!", (1, 3)),
                                      Sentence("- the rota", (4, 2))]
    assert split_sentences("Version 3.5 is out.  It is   fast") == ["Version 3.5 is out.", "It is fast"]


def test_openinference_attributes_given_as_a_json_string_are_read(tmp_path, capsys):
    """Some exports keep a span's attributes as one JSON string: T2 written so imports as before
    (retrieved [d5, d3, x-42, d2], 800 ms)."""
    given = spans_of(T2)
    for span in given:
        span["attributes"] = json.dumps(span["attributes"])
    ws = workspace(tmp_path)
    assert run_import(ws, _write(tmp_path, given)) == 0
    record = read_jsonl(ws / "runs" / "prod" / "records.jsonl")[0]
    assert (record["question_id"], record["retrieved"], record["latency_ms"]) == (
        "q2", ["d5", "d3", "x-42", "d2"], 800.0)
