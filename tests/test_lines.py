"""One line rule for every JSON Lines and TSV input (`scoring.store.lines`) and one JSON parse
(`scoring.store.files`): a line ends at a line feed only, LF and CRLF alike; an importer accepts a
byte-order mark; an object holding a key twice is refused, at its file and line, by every importer."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scoring.cli import main
from scoring.store.lines import Lines, Unreadable, split_lines
from scoring.store.refresh import refresh

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
EXAMPLES = TESTS.parent / "data" / "examples"
TWICE = "not valid JSON (a key appears twice in one object: {key!r})"


# --- the reader ------------------------------------------------------------------------------------


def test_a_line_ends_at_a_line_feed_only(tmp_path):
    """U+2028, U+2029, U+0085, form feed, vertical tab and a lone CR stay inside their line; CRLF and
    LF end one; a BOM is not part of line 1; blank lines are numbered; a last line needs no LF."""
    path = tmp_path / "f.txt"
    path.write_bytes("\ufeffa\u2028b\u2029c\r\n".encode() + "d\x85e\x0cf\x0bg\rh\n\nlast".encode())
    lines = Lines(path)
    assert list(lines) == [(1, "a\u2028b\u2029c"), (2, "d\x85e\x0cf\x0bg\rh"), (3, ""), (4, "last")]
    assert lines.bom
    assert list(Lines(path, keep_ends=True)) == [(1, "a\u2028b\u2029c\r\n"), (2, "d\x85e\x0cf\x0bg\rh\n"), (3, "\n"),
                                                 (4, "last")]
    assert split_lines(path.read_bytes().decode("utf-8-sig")) == [text for _, text in Lines(path)]


def test_a_line_that_is_not_text_costs_only_its_line(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"ok\nc\xffd\n" + b"x" * 12 + b"\r\nafter\n")
    assert list(Lines(path, max_bytes=10)) == [
        (1, "ok"), (2, Unreadable("c\ufffdd", byte=1)), (3, Unreadable("x" * 12, too_long=True)), (4, "after")]
    assert not Lines(path).bom


def test_the_set_based_suite_reader_splits_where_python_does(tmp_path):
    """`suite_bulk.LINES` numbers a file's lines as `Lines` does (a U+2028 inside a string)."""
    import duckdb

    from scoring.store.suite_bulk import LINES

    path = tmp_path / "f.jsonl"
    path.write_bytes('{"a": "x\u2028y"}\r\n{"b": "\x85"}\n'.encode())
    rows = duckdb.connect().execute(LINES, [str(path)]).fetchall()
    python = [(number, text.removesuffix("\n")) for number, text in Lines(path, keep_ends=True)]
    assert [(line, raw) for line, raw in rows if raw] == python == [(1, '{"a": "x\u2028y"}\r'), (2, '{"b": "\x85"}')]


# --- Ragas to_jsonl with line separators inside strings ---------------------------------------------


def _ragas_line(sample: dict) -> str:
    return json.dumps(sample, ensure_ascii=False)  # as Ragas' to_jsonl writes: U+2028 and U+0085 stay raw


def test_a_ragas_file_with_unicode_line_separators_inside_strings_imports(tmp_path, capsys):
    """Raw U+2028, U+2029 and U+0085 inside strings, and a lone CR between tokens, end no line: the two
    samples import with their texts intact, the bad third line is refused at line 3, and the
    workspace refreshes."""
    first = {"user_input": "Who owns\u2028the alert?", "retrieved_contexts": ["Aurora\u2029owns it.", "Other\x85text."],
             "reference_contexts": ["Aurora\u2029owns it."], "response": "Aurora\u2028does."}
    second = {"user_input": "When\x85is it paged?", "retrieved_contexts": ["At night."], "response": "Night."}
    samples = tmp_path / "samples.jsonl"
    samples.write_text(_ragas_line(first) + "\n" + _ragas_line(second).replace(', "response"', ',\r"response"')
                       + '\n{"user_input": 3}\n', encoding="utf-8")
    ws = tmp_path / "ws"
    assert main(["import", "ragas", str(samples), "--out", str(ws), "--skip-bad"]) == 0
    out, err = capsys.readouterr()
    assert f"wrote {ws}: suite ragas, run samples, 2 questions, k = 2" in out
    assert err.startswith(f"skipped {samples}:3: ")
    questions = [json.loads(line) for _, line in Lines(ws / "suites" / "ragas" / "questions.jsonl")]
    assert [q["text"] for q in questions] == ["Who owns\u2028the alert?", "When\x85is it paged?"]
    refresh(ws, tmp_path / "db.duckdb")


def test_eval_dataset_json_lines_with_a_line_separator_inside_a_string_imports(tmp_path, capsys):
    data = tmp_path / "eval.jsonl"
    data.write_text(json.dumps({"query": "a\u2028b", "relevant_docs": ["d1"]}, ensure_ascii=False) + "\n"
                    + json.dumps({"query": "c\u2029d", "relevant_docs": ["d2"]}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    assert main(["import", "eval-dataset", str(data), "--out", str(tmp_path / "ws")]) == 0
    assert ", 2 questions, " in capsys.readouterr().out


# --- a key twice is refused by every importer, at its file and line ---------------------------------


def _twice(line: str, key: str) -> str:
    """The JSON object line `line` with `key` given a second time, last."""
    body = line.rstrip("\r\n")
    assert body.endswith("}") and f'"{key}"' in body
    return body[:-1] + f', "{key}": "again"}}'


def _with_twice(source: Path, target: Path, number: int, key: str) -> Path:
    lines = source.read_text(encoding="utf-8").split("\n")
    lines[number - 1] = _twice(lines[number - 1], key)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines), encoding="utf-8")
    return target


def _ragas(tmp: Path) -> tuple[list[str], Path, int, str]:
    path = tmp / "samples.jsonl"
    path.write_text('{"user_input": "q1", "retrieved_context_ids": ["a"], "response": "r"}\n'
                    '{"user_input": "q2", "retrieved_context_ids": ["b"], "response": "ERROR"}\n', encoding="utf-8")
    _with_twice(path, path, 2, "response")
    return ["ragas", str(path), "--out", str(tmp / "ws")], path, 2, "response"


def _ragas_list(tmp: Path) -> tuple[list[str], Path, int, str]:
    path = tmp / "samples.json"
    path.write_text('[\n  {"user_input": "q1", "retrieved_context_ids": ["a"]},\n'
                    '  {"user_input": "q2", "retrieved_context_ids": ["b"], "user_input": "q3"}\n]\n',
                    encoding="utf-8")
    return ["ragas", str(path), "--out", str(tmp / "ws")], path, 3, "user_input"


def _eval_dataset(tmp: Path) -> tuple[list[str], Path, int, str]:
    path = tmp / "eval.json"
    path.write_text('[\n  {"query": "q1", "relevant_docs": ["d1"]},\n  {"query": "q2", "relevant_docs": ["d2"], '
                    '"relevant_docs": []}\n]\n', encoding="utf-8")
    return ["eval-dataset", str(path), "--out", str(tmp / "ws")], path, 3, "relevant_docs"


def _eval_corpus(tmp: Path) -> tuple[list[str], Path, int, str]:
    corpus = _with_twice(EXAMPLES / "eval-dataset" / "corpus.jsonl", tmp / "corpus.jsonl", 2, "text")
    return (["eval-dataset", str(EXAMPLES / "eval-dataset" / "eval_dataset.json"), "--corpus", str(corpus),
             "--out", str(tmp / "ws")], corpus, 2, "text")


def _beir(tmp: Path, name: str, number: int, key: str) -> tuple[list[str], Path, int, str]:
    folder = tmp / "mini"
    shutil.copytree(DATA / "beir" / "mini", folder)
    path = _with_twice(folder / name, folder / name, number, key)
    return ["beir", str(folder), "--run", str(DATA / "beir" / "bm25.trec"), "--out", str(tmp / "ws")], path, number, key


def _trec_rag(tmp: Path, which: str) -> tuple[list[str], Path, int, str]:
    topics, run = DATA / "trec_rag" / "topics.rag25.jsonl", DATA / "trec_rag" / "team-x-run25.jsonl"
    if which == "topics":
        path = topics = _with_twice(topics, tmp / topics.name, 2, "title")
        number, key = 2, "title"
    else:
        path = run = _with_twice(run, tmp / run.name, 3, "answer")
        number, key = 3, "answer"
    return ["trec-rag", "--topics", str(topics), "--run", str(run), "--out", str(tmp / "ws")], path, number, key


def _openinference(tmp: Path, which: str) -> tuple[list[str], Path, int, str]:
    ws = tmp / "ws"
    shutil.copytree(DATA / "openinference" / "workspace", ws)
    spans, prices = DATA / "openinference" / "spans.jsonl", None
    if which == "spans":  # a failed span that would import as a success if the last status won
        path = spans = _with_twice(spans, tmp / "spans.jsonl", 1, "status_code")
        number, key = 1, "status_code"
    else:
        path = prices = tmp / "prices.json"
        prices.write_text('{\n  "m": {"prompt": 1, "completion": 2},\n  "m": {"prompt": 0, "completion": 0}\n}\n',
                          encoding="utf-8")
        number, key = 1, "m"
    flags = ["--prices", str(prices)] if prices else []
    return (["openinference", "--spans", str(spans), "--into", str(ws), "--suite", "ops", "--run-id", "new",
             "--question-key", "question_id", *flags], path, number, key)


def _ragchecker(tmp: Path) -> tuple[list[str], Path, int, str]:
    path = tmp / "inputs.json"
    entry = '{"query_id": "a", "query": "Q?", "gt_answer": "A.", "response": "R.", "retrieved_context": []'
    path.write_text('{"results": [\n  ' + entry + '},\n  ' + entry + ', "response": "S."}\n]}\n', encoding="utf-8")
    return ["ragchecker", str(path), "--out", str(tmp / "ws")], path, 3, "response"


TWICE_CASES = {
    "ragas JSON Lines": _ragas,
    "ragas JSON list": _ragas_list,
    "eval-dataset list": _eval_dataset,
    "eval-dataset corpus": _eval_corpus,
    "beir corpus": lambda tmp: _beir(tmp, "corpus.jsonl", 2, "text"),
    "beir queries": lambda tmp: _beir(tmp, "queries.jsonl", 1, "text"),
    "trec-rag topics": lambda tmp: _trec_rag(tmp, "topics"),
    "trec-rag run": lambda tmp: _trec_rag(tmp, "run"),
    "openinference spans": lambda tmp: _openinference(tmp, "spans"),
    "openinference prices": lambda tmp: _openinference(tmp, "prices"),
    "ragchecker": _ragchecker,
}


@pytest.mark.parametrize("case", TWICE_CASES)
def test_every_importer_refuses_a_key_twice_at_its_file_and_line(tmp_path, capsys, case):
    """Parsers disagree on which of two values wins (Python keeps the last: a failed span would import
    as a success), so an object holding a key twice is refused, naming file, line and key, and
    nothing is written."""
    args, path, line, key = TWICE_CASES[case](tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["import", *args]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{line}: {TWICE.format(key=key)}" in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


# --- CRLF and a byte-order mark are accepted by every importer ---------------------------------------


IMPORTS = {
    "trec": (EXAMPLES / "trec" / "scifact-mini",
             ["trec", "--qrels", "{in}/qrels.txt", "--run", "{in}/bm25.run", "--run", "{in}/dense.run"]),
    "ragas": (DATA / "ragas", ["ragas", "{in}/text-only.jsonl"]),
    "beir": (EXAMPLES / "beir", ["beir", "{in}/scifact-mini", "--run", "{in}/runs/bm25.trec"]),
    "eval-dataset": (EXAMPLES / "eval-dataset", ["eval-dataset", "{in}/eval_dataset.json", "--run",
                                                 "{in}/fixed_500.json", "--corpus", "{in}/corpus.jsonl"]),
    "trec-rag 2024": (EXAMPLES / "trec-rag", ["trec-rag", "--topics", "{in}/topics.rag24.tsv", "--run",
                                              "{in}/bm25-rag.jsonl", "--qrels", "{in}/qrels.rag24.txt"]),
    "trec-rag 2025": (EXAMPLES / "trec-rag", ["trec-rag", "--topics", "{in}/topics.rag25.jsonl", "--run",
                                              "{in}/team-x-run25.jsonl", "--qrels", "{in}/qrels.rag25.txt"]),
    "ragchecker": (EXAMPLES / "ragchecker", ["ragchecker", "{in}/checking_inputs.json"]),
}


def _crlf_with_bom(source: Path, target: Path) -> None:
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        if path.is_file():
            path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))


def _written(ws: Path) -> dict[str, bytes]:
    """The files an import wrote, but the manifests and suite.json (they name the files read)."""
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*"))
            if p.is_file() and p.name not in ("manifest.json", "suite.json")}


@pytest.mark.parametrize("source", IMPORTS)
def test_every_importer_reads_crlf_files_with_a_byte_order_mark_as_their_lf_twins(tmp_path, capsys, source):
    folder, args = IMPORTS[source]
    written = []
    for name, prepare in (("lf", shutil.copytree), ("crlf", _crlf_with_bom)):
        prepare(folder, tmp_path / name)
        ws = tmp_path / f"ws-{name}"
        assert main(["import", *[a.replace("{in}", str(tmp_path / name)) for a in args], "--out", str(ws)]) == 0
        written.append(_written(ws))
    capsys.readouterr()
    assert written[0] == written[1] and written[0]


def test_openinference_reads_crlf_spans_with_a_byte_order_mark(tmp_path, capsys):
    spans = tmp_path / "spans.jsonl"
    spans.write_bytes(b"\xef\xbb\xbf" + (DATA / "openinference" / "spans.jsonl").read_bytes().replace(b"\n", b"\r\n"))
    written = []
    for name, given in (("lf", DATA / "openinference" / "spans.jsonl"), ("crlf", spans)):
        ws = tmp_path / name
        shutil.copytree(DATA / "openinference" / "workspace", ws)
        assert main(["import", "openinference", "--spans", str(given), "--into", str(ws), "--suite", "ops",
                     "--run-id", "prod", "--question-key", "question_id"]) == 0
        written.append(_written(ws))
    capsys.readouterr()
    assert written[0] == written[1]


def test_refresh_reads_crlf_workspace_files(tmp_path):
    """A workspace whose JSON Lines files end their lines with CRLF refreshes (a byte-order mark stays
    refused there: docs/formats.md)."""
    ws = tmp_path / "ws"
    shutil.copytree(TESTS.parent / "data" / "seed-lab", ws)
    for path in ws.rglob("*.jsonl"):
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    refresh(ws, tmp_path / "db.duckdb")
