"""`ragslice import`: TREC files and Ragas samples become workspaces that refresh and score."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from scoring.cli import main
from scoring.io.importers import context_id, normalise_context
from scoring.store.refresh import refresh

TREC = Path(__file__).resolve().parent / "data" / "trec_eval"  # trec_eval's test files, see its README.md


def trec_eval_values(path: Path) -> dict[tuple[str, str], float]:
    out = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split()
        out[(measure, qid)] = float(value) if "." in value else value
    return out


def test_trec_import_scores_like_trec_eval_at_the_imported_cutoff(tmp_path, capsys):
    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    assert main(["import", "trec", "--qrels", str(TREC / "qrels.test"), "--run", str(TREC / "results.test"),
                 "--out", str(ws)]) == 0
    assert "runs STANDARD" in capsys.readouterr().out
    refresh(ws, db)
    expected = trec_eval_values(TREC / "out.test.aq")
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT question_id, k, precision, recall, ndcg, ap FROM question_scores").fetchall()
        n_docs = con.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert len(rows) == 3
    for qid, k, p, r, ndcg, ap in rows:
        assert k == 10
        assert round(p, 4) == expected[("P_10", qid)]
        assert round(r, 4) == expected[("recall_10", qid)]
        assert round(ndcg, 4) == expected[("ndcg_cut_10", qid)]
        assert round(ap, 4) == expected[("map_cut_10", qid)]
    assert n_docs >= 3000  # every judged docno plus every retrieved one


def test_a_retrieval_only_suite_asks_for_no_answer(tmp_path, capsys):
    """TREC files hold no expected claims: no question asks for an answer, so Support, Coverage,
    Abstention and FalseAbstention are n/a on every topic, the one judged only at grade 0 included
    (they once read as a false abstention on every topic and a correct abstention on that one)."""
    qrels, run, ws = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "ws"
    qrels.write_text("1 0 d1 1\n2 0 d2 0\n")
    run.write_text("1 Q0 d1 1 2.0 sys\n2 Q0 d2 1 1.0 sys\n")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(ws)]) == 0
    capsys.readouterr()
    refresh(ws, tmp_path / "db.duckdb")
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT question_id, answerable, recall, support, coverage, abstention_correct, "
                           "false_abstention FROM question_scores ORDER BY question_id").fetchall()
    assert rows == [("1", True, 1.0, None, None, None, None), ("2", False, None, None, None, None, None)]


def test_trec_import_skips_comment_and_blank_lines_of_the_qrels(tmp_path, capsys):
    """Comment and blank lines are not judgments (they once reached the import as NULL topics)."""
    qrels, run, ws = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "ws"
    qrels.write_text("# judged by hand\n1 0 d1 1\n\n1 0 d2 0\n2 0 d3 2\n")
    run.write_text("1 Q0 d2 1 2.0 sys\n1 Q0 d1 2 1.0 sys\n2 Q0 d3 1 1.0 sys\n")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(ws)]) == 0
    capsys.readouterr()
    refresh(ws, tmp_path / "db.duckdb")
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        labels = con.execute("SELECT question_id, doc_id, grade FROM labels ORDER BY ALL").fetchall()
        rr = dict(con.execute("SELECT question_id, rr FROM question_scores").fetchall())
    assert labels == [("1", "d1", 1), ("1", "d2", 0), ("2", "d3", 2)]
    assert rr == {"1": 0.5, "2": 1.0}  # d1 (the relevant one) at rank 2; d3 at rank 1


# --- Ragas ---------------------------------------------------------------------------------------

RAGAS = Path(__file__).resolve().parent / "data" / "ragas"
SCORES = "question_id, k, precision, recall, rr"


def write_samples(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def import_ragas(samples: Path, ws: Path, *extra: str) -> int:
    return main(["import", "ragas", str(samples), "--out", str(ws), *extra])


def scored(ws: Path, db: Path, columns: str = SCORES) -> list[tuple]:
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT {columns} FROM question_scores ORDER BY question_id").fetchall()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_ragas_text_only_samples_score_by_normalised_text_at_the_delivered_k(tmp_path, capsys):
    """Ragas' own `to_jsonl` output (contexts as text, no IDs) imports, refreshes and scores.

    k = 2: the most contexts a sample delivered. Contexts equal after normalisation (case, whitespace)
    are one document: N (planning note), A (Aurora), S (switch back), T (smoke tests, never retrieved).
    q1 ranks [N, A], relevant {A}: P@2 = 1/2, R@2 = 1/1, RR = 1/2.
    q2 ranks [S],    relevant {S, T}: P@2 = 1/2 (k stays the denominator), R@2 = 1/2, RR = 1/1.
    q3 ranks [N, S], relevant {A}: 0 hits, P = R = RR = 0."""
    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    assert import_ragas(RAGAS / "text-only.jsonl", ws) == 0
    assert "run text-only" in capsys.readouterr().out
    # `ragslice refresh` through the command line, then the stored scores.
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute(f"SELECT {SCORES} FROM question_scores ORDER BY question_id").fetchall()
        docs = dict(con.execute("SELECT doc_id, text FROM documents").fetchall())
    assert got == [("q-00001", 2, 0.5, 1.0, 0.5), ("q-00002", 2, 0.5, 0.5, 1.0), ("q-00003", 2, 0.0, 0.0, 0.0)]
    assert sorted(docs.values()) == ["Aurora owns the latency alert.", "Run the smoke tests after a rollback.",
                                     "Switch traffic back to the previous version.", "The planning note from March."]
    questions = read_jsonl(ws / "suites" / "ragas" / "questions.jsonl")
    records = read_jsonl(ws / "runs" / "text-only" / "records.jsonl")
    aurora = next(d for d, t in docs.items() if t.startswith("Aurora"))
    assert questions[0]["relevant"] == [aurora] and records[0]["retrieved"][1] == aurora
    assert all(q["support"] == {} for q in questions)
    assert [r["answer"] for r in records] == ["The Aurora team owns it.", "Switch traffic back.", "Nobody knows."]
    assert all(r["claims"] == [] for r in records)


def test_ragas_text_only_import_writes_rankings_and_relevance(tmp_path, capsys):
    """Contexts without IDs once imported as questions with no relevant document and empty
    rankings (and an empty documents.jsonl that refresh refused)."""
    ws = tmp_path / "ws"
    assert import_ragas(RAGAS / "text-only.jsonl", ws) == 0
    questions = read_jsonl(ws / "suites" / "ragas" / "questions.jsonl")
    records = read_jsonl(ws / "runs" / "text-only" / "records.jsonl")
    assert [len(q["relevant"]) for q in questions] == [1, 2, 1]
    assert [len(r["retrieved"]) for r in records] == [2, 1, 2]
    assert len(read_jsonl(ws / "suites" / "ragas" / "documents.jsonl")) == 4


def test_ragas_reference_contexts_without_ids_match_the_retrieved_contexts_by_text(tmp_path, capsys):
    """Relevance from `reference_contexts` (no `reference_context_ids`): matched by normalised text
    to a context known by ID. The question is answerable (it once became unanswerable and scored a
    correct abstention); ranks [c7, c2], relevant {c2}: P@2 = 1/2, R@2 = 1, RR = 1/2."""
    samples = write_samples(tmp_path / "s.jsonl", [
        {"user_input": "Who owns the alert?", "retrieved_context_ids": ["c7", "c2"],
         "retrieved_contexts": ["Old note.", "Aurora owns the alert."],
         "reference_contexts": ["aurora owns  the alert."], "response": "Aurora."},
    ])
    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    assert import_ragas(samples, ws) == 0
    assert read_jsonl(ws / "suites" / "ragas" / "questions.jsonl")[0]["relevant"] == ["c2"]
    got = scored(ws, db, SCORES + ", answerable, abstention_correct")
    assert got == [("q-00001", 2, 0.5, 1.0, 0.5, True, None)]


def test_ragas_id_samples_keep_context_text_and_add_unretrieved_references(tmp_path, capsys):
    """ID-based samples: k = 2 (the most contexts delivered). q1 ranks [c7, c2], relevant {c2}:
    P@2 = 1/2, R@2 = 1, RR = 1/2. q2 ranks [c3], relevant {c3, c4}: P@2 = 1/2, R@2 = 1/2, RR = 1.
    c4 (never retrieved) is a document of the suite, marked as having no text."""
    samples = write_samples(tmp_path / "eval-2026.jsonl", [
        {"user_input": "Who owns the alert?", "retrieved_context_ids": ["c7", "c2"],
         "reference_context_ids": ["c2"], "response": "The Aurora team.",
         "retrieved_contexts": ["Old planning note.", "Aurora owns the alert."]},
        {"user_input": "What are the two rollback actions?", "retrieved_context_ids": ["c3"],
         "reference_context_ids": ["c3", "c4"], "response": "Switch traffic back."},
    ])
    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    assert import_ragas(samples, ws) == 0
    assert "run eval-2026" in capsys.readouterr().out
    got = scored(ws, db, SCORES + ", support, coverage")
    assert got == [("q-00001", 2, 0.5, 1.0, 0.5, None, None), ("q-00002", 2, 0.5, 0.5, 1.0, None, None)]
    with duckdb.connect(str(db), read_only=True) as con:
        texts = dict(con.execute("SELECT doc_id, text FROM documents").fetchall())
    assert texts["c2"] == "Aurora owns the alert."
    assert texts["c4"] == "Ragas context c4 (text not in the Ragas samples)"


def test_ragas_k_is_the_number_of_contexts_delivered_not_a_fixed_ten(tmp_path, capsys):
    """2 contexts delivered, 1 relevant: P@k = 1/2 at k = 2 (a fixed k = 10 made it 1/10)."""
    samples = write_samples(tmp_path / "s.jsonl", [
        {"user_input": "q", "retrieved_context_ids": ["a", "b"], "reference_context_ids": ["a"], "response": "r"},
        {"user_input": "q2", "retrieved_context_ids": ["b"], "reference_context_ids": ["b"], "response": "r"},
    ])
    ws = tmp_path / "ws"
    assert import_ragas(samples, ws) == 0
    assert json.loads((ws / "runs" / "s" / "manifest.json").read_text())["k"] == 2
    # q1: a at rank 1 of 2 slots; q2: b at rank 1, one slot delivered of k = 2.
    assert scored(ws, tmp_path / "db.duckdb") == [("q-00001", 2, 0.5, 1.0, 1.0), ("q-00002", 2, 0.5, 1.0, 1.0)]


def test_ragas_k_flag_sets_the_cutoff(tmp_path, capsys):
    """--k 5: the same two delivered contexts, one relevant at rank 2: P@5 = 1/5, R@5 = 1, RR = 1/2."""
    samples = write_samples(tmp_path / "s.jsonl", [
        {"user_input": "q", "retrieved_context_ids": ["b", "a"], "reference_context_ids": ["a"], "response": "r"},
    ])
    ws = tmp_path / "ws"
    assert import_ragas(samples, ws, "--k", "5") == 0
    assert scored(ws, tmp_path / "db.duckdb") == [("q-00001", 5, 0.2, 1.0, 0.5)]


@pytest.mark.parametrize("k", ["0", "101"])
def test_ragas_k_flag_out_of_range_is_refused(tmp_path, capsys, k):
    samples = write_samples(tmp_path / "s.jsonl", [{"user_input": "q", "retrieved_context_ids": ["a"]}])
    assert import_ragas(samples, tmp_path / "ws", "--k", k) == 2
    assert "field '--k'" in capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


def test_ragas_more_contexts_than_the_largest_cutoff_needs_the_k_flag(tmp_path, capsys):
    ids = [f"c{i}" for i in range(101)]
    samples = write_samples(tmp_path / "s.jsonl", [
        {"user_input": "q", "retrieved_context_ids": ["c0"]},
        {"user_input": "q2", "retrieved_context_ids": ids, "reference_context_ids": ["c100"]},
    ])
    assert import_ragas(samples, tmp_path / "ws") == 2
    err = capsys.readouterr().err
    assert f"{samples}:2: field 'retrieved_context_ids'" in err and "--k" in err
    assert not (tmp_path / "ws").exists()
    # With --k 100 the 101st context is recorded but outside the cutoff: R@100 = 0.
    assert import_ragas(samples, tmp_path / "ws", "--k", "100") == 0
    assert scored(tmp_path / "ws", tmp_path / "db.duckdb", "question_id, k, recall")[1] == ("q-00002", 100, 0.0)


def test_ragas_duplicate_context_keeps_its_slot(tmp_path, capsys):
    """A context delivered twice fills two slots and counts once (docs/formats.md "Chunks"): ranks
    [c7, c7, c3], relevant {c3}: c3 is at slot 3, so RR = 1/3 and P@3 = 1/3 (collapsing the repeat
    once moved c3 to rank 2: RR = 1/2)."""
    samples = write_samples(tmp_path / "s.jsonl", [
        {"user_input": "Which runbook?", "retrieved_context_ids": ["c7", "c7", "c3"],
         "retrieved_contexts": ["Old note.", "Old note.", "The rollback runbook."],
         "reference_context_ids": ["c3"], "response": "The rollback runbook."},
    ])
    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    assert import_ragas(samples, ws) == 0
    run = ws / "runs" / "s"
    assert read_jsonl(run / "records.jsonl")[0]["retrieved"] == ["c7", "c7#2", "c3"]
    assert read_jsonl(run / "chunks.jsonl") == [
        {"id": "c7#2", "doc": "c7", "doc_version": "ragas-s.jsonl", "text": "Old note."}]
    got = scored(ws, db, SCORES + ", n_hits")
    assert got == [("q-00001", 3, pytest.approx(1 / 3), 1.0, pytest.approx(1 / 3), 1)]
    with duckdb.connect(str(db), read_only=True) as con:
        slots = con.execute("SELECT rank, doc_id, chunk_id, counted FROM retrieved ORDER BY rank").fetchall()
    assert slots == [(1, "c7", None, True), (2, "c7", "c7#2", False), (3, "c3", None, True)]


def test_ragas_duplicate_text_context_keeps_its_slot(tmp_path, capsys):
    """Two contexts equal after normalisation are one document delivered twice: ranks [X, X, Y],
    relevant {Y}: RR = 1/3."""
    samples = write_samples(tmp_path / "s.jsonl", [
        {"user_input": "q", "retrieved_contexts": ["Same text.", "same  TEXT.", "Other text."],
         "reference_contexts": ["Other text."], "response": "r"},
    ])
    ws = tmp_path / "ws"
    assert import_ragas(samples, ws) == 0
    retrieved = read_jsonl(ws / "runs" / "s" / "records.jsonl")[0]["retrieved"]
    assert len(retrieved) == 3 and retrieved[1] == retrieved[0] + "#2"
    assert scored(ws, tmp_path / "db.duckdb") == [("q-00001", 3, pytest.approx(1 / 3), 1.0, pytest.approx(1 / 3))]


def test_ragas_text_context_id_is_the_documented_hash_of_the_normalised_text():
    """docs/formats.md: ctx- + the first 16 hex digits of SHA-256 of NFC, whitespace-collapsed,
    stripped, casefolded text ("e" + combining acute is NFC "\u00e9")."""
    expected = "ctx-" + hashlib.sha256("caf\u00e9 owns the alert.".encode()).hexdigest()[:16]
    assert context_id("  Cafe\u0301 OWNS\tthe\n alert. ") == expected
    assert normalise_context("  Cafe\u0301 OWNS\tthe\n alert. ") == "caf\u00e9 owns the alert."


def test_ragas_whole_number_context_ids_are_ids_as_ragas_compares_them(tmp_path, capsys):
    """Ragas types context IDs as strings or integers and compares them as strings: 3 is "3"."""
    samples = write_samples(tmp_path / "s.jsonl", [
        {"user_input": "q", "retrieved_context_ids": [4, 3], "reference_context_ids": ["3"], "response": "r"},
    ])
    ws = tmp_path / "ws"
    assert import_ragas(samples, ws) == 0
    assert read_jsonl(ws / "runs" / "s" / "records.jsonl")[0]["retrieved"] == ["4", "3"]
    assert scored(ws, tmp_path / "db.duckdb") == [("q-00001", 2, 0.5, 1.0, 0.5)]


SAMPLE = {"user_input": "Who owns the alert?", "retrieved_context_ids": ["c1", "c2"],
          "reference_context_ids": ["c1"], "response": "Aurora."}


@pytest.mark.parametrize("layout", ["jsonl", "json-list", "samples-object", "pretty-object"])
def test_ragas_one_sample_file_is_read(tmp_path, capsys, layout):
    """One sample: a one-line JSONL file (once refused), a JSON list of one, `{"samples": [...]}`,
    or one pretty-printed object. Ranks [c1, c2], relevant {c1}: P@2 = 1/2, R@2 = 1, RR = 1."""
    text = {"jsonl": json.dumps(SAMPLE) + "\n", "json-list": json.dumps([SAMPLE], indent=2),
            "samples-object": json.dumps({"samples": [SAMPLE]}), "pretty-object": json.dumps(SAMPLE, indent=2)}[layout]
    samples = tmp_path / "one.json"
    samples.write_text(text)
    ws = tmp_path / "ws"
    assert import_ragas(samples, ws) == 0
    assert scored(ws, tmp_path / "db.duckdb") == [("q-00001", 2, 0.5, 1.0, 1.0)]


def test_ragas_sample_id_field_names_the_question(tmp_path, capsys):
    samples = write_samples(tmp_path / "s.jsonl", [{**SAMPLE, "id": "alert-owner"}, SAMPLE])
    ws = tmp_path / "ws"
    assert import_ragas(samples, ws) == 0
    assert [q["id"] for q in read_jsonl(ws / "suites" / "ragas" / "questions.jsonl")] == ["alert-owner", "q-00002"]


def test_ragas_answer_metrics_are_na_never_a_false_abstention(tmp_path, capsys):
    """Ragas samples carry no claims: the suite has no expected claims, so every answer metric is
    n/a; an answered sample was once scored a false abstention."""
    ws = tmp_path / "ws"
    assert import_ragas(RAGAS / "text-only.jsonl", ws) == 0
    got = scored(ws, tmp_path / "db.duckdb", "support, coverage, abstention_correct, false_abstention")
    assert got == [(None, None, None, None)] * 3


def test_ragas_import_writes_no_expected_claims_and_no_claims(tmp_path, capsys):
    """What the answer metrics read: no expected claim in the suite, no claim in any record, the
    response kept as the answer."""
    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    assert import_ragas(RAGAS / "text-only.jsonl", ws) == 0
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM expected_claims").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM claims").fetchone()[0] == 0
        assert con.execute("SELECT sum(n_claims), sum(n_expected) FROM question_scores").fetchone() == (0, 0)
        answers = con.execute("SELECT answer FROM records ORDER BY question_id").fetchall()
    assert answers == [("The Aurora team owns it.",), ("Switch traffic back.",), ("Nobody knows.",)]


GOOD = {"user_input": "ok", "retrieved_context_ids": ["a"], "reference_context_ids": ["a"], "response": "r"}


@pytest.mark.parametrize("bad, where", [
    ({"retrieved_context_ids": ["a"]}, "field 'user_input': required field is missing"),
    ({"user_input": "", "retrieved_context_ids": ["a"]}, "field 'user_input'"),
    ({"user_input": [{"content": "hi", "type": "human"}]}, "field 'user_input': a multi-turn sample"),
    ({"user_input": "q", "retrieved_contexts": [1, 2]}, "field 'retrieved_contexts[0]'"),
    ({"user_input": "q", "retrieved_contexts": "one context"}, "field 'retrieved_contexts'"),
    ({"user_input": "q", "retrieved_contexts": ["a", " "]}, "field 'retrieved_contexts[1]'"),
    ({"user_input": "q", "retrieved_context_ids": ["a", "b"], "retrieved_contexts": ["A."]},
     "field 'retrieved_context_ids': lists 2 IDs but 'retrieved_contexts' lists 1"),
    ({"user_input": "q", "retrieved_context_ids": ["a"], "reference_context_ids": [1.5]},
     "field 'reference_context_ids[0]'"),
    ({"user_input": "q", "retrieved_context_ids": ["a"], "reference_context_ids": [None]},
     "field 'reference_context_ids[0]'"),
    ({"user_input": "q", "retrieved_context_ids": ["a"], "reference_context_ids": "a"},
     "field 'reference_context_ids'"),
    ({"user_input": "q", "retrieved_context_ids": ["has space"]}, "field 'retrieved_context_ids[0]'"),
    ({"user_input": "q", "retrieved_context_ids": ["a"], "response": 3}, "field 'response'"),
    ({"user_input": "q", "retrieved_contexts": ["A."], "reference_context_ids": ["a"]},
     "field 'reference_context_ids'"),
    ({"user_input": "q", "retrieved_context_ids": ["a"], "reference_contexts": ["A."]}, "field 'reference_contexts'"),
    ({"user_input": "q", "retrieved_context_ids": ["a"], "retrieved_contexts": ["Another text."]},
     "field 'retrieved_context_ids[0]'"),
    ({**GOOD, "id": "q-00001"}, "field 'id'"),
    ([1, 2], "expected a Ragas sample object"),
])
def test_ragas_unusable_sample_is_refused_with_its_line_and_nothing_written(tmp_path, capsys, bad, where):
    samples = tmp_path / "bad.jsonl"
    first = {**GOOD, "retrieved_contexts": ["Text of a."]}
    samples.write_text(json.dumps(first) + "\n\n" + json.dumps(bad) + "\n")
    ws = tmp_path / "ws"
    assert import_ragas(samples, ws) == 2
    err = capsys.readouterr().err
    assert f"{samples}:3: {where}" in err, err
    assert not ws.exists()


def test_ragas_unusable_sample_of_a_json_list_is_named_by_its_index(tmp_path, capsys):
    samples = tmp_path / "bad.json"
    samples.write_text(json.dumps([GOOD, GOOD, {"retrieved_context_ids": ["a"]}], indent=2))
    assert import_ragas(samples, tmp_path / "ws") == 2
    assert f"{samples}[2]: field 'user_input'" in capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


def test_ragas_position_id_taken_by_an_earlier_sample_id_is_refused(tmp_path, capsys):
    samples = write_samples(tmp_path / "s.jsonl", [{**GOOD, "id": "q-00002"}, GOOD])
    assert import_ragas(samples, tmp_path / "ws") == 2
    err = capsys.readouterr().err
    assert f"{samples}:2: field 'id': 'q-00002': the question ID this sample gets from its position" in err
    assert f"is the 'id' of the sample at {samples}:1" in err
    assert not (tmp_path / "ws").exists()


def test_ragas_file_without_retrieved_contexts_is_refused(tmp_path, capsys):
    samples = write_samples(tmp_path / "s.jsonl", [{"user_input": "q", "response": "r", "reference": "x"}])
    assert import_ragas(samples, tmp_path / "ws") == 2
    assert "no sample lists retrieved contexts" in capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize("text, rule", [("", "holds no samples"), ("{not json\n", "not valid JSON"),
                                        ('{"samples": 3}', "expected a JSON list")])
def test_ragas_unreadable_file_is_refused(tmp_path, capsys, text, rule):
    samples = tmp_path / "s.json"
    samples.write_text(text)
    assert import_ragas(samples, tmp_path / "ws") == 2
    assert rule in capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


def test_ragas_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["import", "ragas", "--help"])
    out = capsys.readouterr().out
    assert "example:" in out and "ragslice import ragas samples.jsonl --out ws/" in out and "--k" in out


def test_ragas_one_reference_text_under_two_ids_makes_both_relevant(tmp_path, capsys):
    """shared-text.jsonl: sample 1 retrieves B ("Shared text.") and N, with no reference; sample 2
    retrieves A, holding the same text, and U, and its reference context is "Shared text.". Every ID
    holding the reference's text is relevant to sample 2: relevant [B, A] (file order). k = 2: A at rank
    1, B not retrieved: P@2 = 1/2, R@2 = 1/2, RR = 1 (it was relevant [B] alone: all three 0). The
    import notes the text and its IDs."""
    samples, ws = RAGAS / "shared-text.jsonl", tmp_path / "ws"
    assert import_ragas(samples, ws) == 0
    out = capsys.readouterr().out
    assert (f"note: reference context 'Shared text.' is the text of 2 context IDs (B, A): each is relevant to the "
            f"1 sample it is a reference of (first at {samples}:2)\n") in out
    assert [q["relevant"] for q in read_jsonl(ws / "suites" / "ragas" / "questions.jsonl")] == [[], ["B", "A"]]
    assert scored(ws, tmp_path / "db.duckdb") == [("q-00001", 2, None, None, None), ("q-00002", 2, 0.5, 0.5, 1.0)]


def test_an_id_holding_an_invisible_character_is_imported_with_a_note_naming_its_line(tmp_path, capsys):
    """"c\u200b1" (U+200B ZERO WIDTH SPACE inside) is another ID than "c1", as trec_eval reads it: the
    Ragas and TREC importers keep it as given and say where it is."""
    samples = write_samples(tmp_path / "s.jsonl", [
        {"user_input": "q1", "retrieved_context_ids": ["c1"], "reference_context_ids": ["c1"]},
        {"user_input": "q2", "retrieved_context_ids": ["c\u200b1", "c2"], "reference_context_ids": ["c1"]},
    ])
    assert import_ragas(samples, tmp_path / "ws") == 0
    out = capsys.readouterr().out
    assert (f"note: {samples}:2: field 'retrieved_context_ids[0]': 'c\\u200b1': holds U+200B ZERO WIDTH SPACE, an "
            "invisible format character: imported as given, an ID apart from 'c1'\n") in out
    assert read_jsonl(tmp_path / "ws" / "runs" / "s" / "records.jsonl")[1]["retrieved"] == ["c\u200b1", "c2"]
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("1 0 d1 1\n", encoding="utf-8")
    run.write_text("1 Q0 d1 1 2.0 sys\n1 Q0 d\u20601 2 1.0 sys\n", encoding="utf-8")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(tmp_path / "trec")]) == 0
    out = capsys.readouterr().out
    assert (f"note: {run}:2: field 'docno': 'd\\u20601': holds U+2060 WORD JOINER, an invisible format character: "
            "imported as given, an ID apart from 'd1'\n") in out


# --- what every importer shares: refusals, --skip-bad, staging, provenance --------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def leftovers(folder: Path) -> list[str]:
    """Temporary import folders left beside the workspace (there should be none)."""
    return [p.name for p in folder.iterdir() if ".importing-" in p.name]


def test_trec_bad_run_line_refuses_the_import_and_writes_nothing(tmp_path, capsys):
    qrels, run, ws = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "ws"
    qrels.write_text("1 0 d1 1\n")
    run.write_text("1 Q0 d1 1 2.0 sys\n1 Q0 d2 2 two sys\n")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(ws)]) == 2
    assert f"{run}:2: question '1': field 'score': 'two': the score is a finite decimal number" in \
        capsys.readouterr().err
    assert not ws.exists() and leftovers(tmp_path) == []


def test_trec_skip_bad_lists_and_counts_the_lines_it_leaves_out(tmp_path, capsys):
    """qrels line 3 judges (2, d3) again, line 4 has 2 fields; run line 2 has no number for a score and
    line 4 a docno with a control character (U+0085). What is left: topic 1 judges d1 (1) and d2 (0),
    topic 2 judges d3 (2); the run ranks [d1] for 1 and [d3] for 2 (d2 left out), so at k = 10
    P@10 = 1/10 and RR = 1 on both topics."""
    qrels, run, ws = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "ws"
    qrels.write_text("1 0 d1 1\n2 0 d3 2\n2 0 d3 1\nbroken line\n1 0 d2 0\n")
    run.write_text("1 Q0 d1 1 2.0 sys\n1 Q0 d2 2 x sys\n2 Q0 d3 1 1.0 sys\n2 Q0 d\u0085x 2 0.5 sys\n")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(ws), "--skip-bad"]) == 0
    captured = capsys.readouterr()
    skipped = [line for line in captured.err.splitlines() if line.startswith("skipped")]
    assert skipped == [
        f"skipped {qrels}:3: question '2': field 'docno': 'd3': docno already listed for this topic at line 2; "
        "a docno appears once per topic",
        f"skipped {qrels}:4: expected 4 fields (`qid 0 docno grade`), found 2",
        f"skipped {run}:2: question '1': field 'score': 'x': the score is a finite decimal number, plain or with an "
        "exponent, e.g. 12, -0.5, .5, 3.1e-2 (not 1_000, 0x10, inf or nan)",
        f"skipped {run}:4: field 'docno': 'd\\x85x': a docno is 1-128 characters with no whitespace or control "
        "characters",
        "skipped 4 lines (--skip-bad): not imported",
    ]
    assert "wrote" in captured.out
    got = scored(ws, tmp_path / "db.duckdb", "question_id, precision, rr")
    assert got == [("1", 0.1, 1.0), ("2", 0.1, 1.0)]
    assert read_jsonl(ws / "suites" / "trec" / "questions.jsonl")[1]["relevant"] == {"d3": 2}


def test_trec_docno_breaking_the_id_rule_is_refused_with_its_line(tmp_path, capsys):
    qrels, run, ws = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "ws"
    qrels.write_text("1 0 d1 1\n1 0 " + "d" * 129 + " 1\n")
    run.write_text("1 Q0 d1 1 2.0 sys\n")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(ws)]) == 2
    assert f"{qrels}:2: field 'docno': " in capsys.readouterr().err
    assert not ws.exists()


def test_trec_k_flag_sets_the_cutoff_and_the_manifest_names_its_sources(tmp_path, capsys):
    """--k 2: topic 1 ranks [d2, d1], d1 relevant: P@2 = 1/2, RR = 1/2."""
    qrels, run, ws = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "ws"
    qrels.write_text("1 0 d1 1\n")
    run.write_text("1 Q0 d2 1 2.0 sys\n1 Q0 d1 2 1.0 sys\n")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(ws), "--k", "2"]) == 0
    manifest = json.loads((ws / "runs" / "sys" / "manifest.json").read_text())
    assert manifest["k"] == 2
    assert manifest["x_provenance"] == {"source_format": "trec", "source": str(run), "sha256": sha256(run),
                                        "inputs": [{"path": str(qrels), "sha256": sha256(qrels)}]}
    suite = json.loads((ws / "suites" / "trec" / "suite.json").read_text())
    assert suite["x_provenance"]["inputs"] == [{"path": str(qrels), "sha256": sha256(qrels)}]
    assert scored(ws, tmp_path / "db.duckdb", "question_id, k, precision, rr") == [("1", 2, 0.5, 0.5)]


def test_ragas_skip_bad_lists_and_counts_the_samples_it_leaves_out(tmp_path, capsys):
    """Lines 2 (no question), 3 (not JSON) and 5 (ID `a` with another text than line 4 gave it) are
    left out. Line 1 ranks [a, b], relevant {a}; k = 2: P@2 = 1/2, R@2 = 1, RR = 1."""
    samples = tmp_path / "s.jsonl"
    samples.write_text("\n".join([
        json.dumps({"user_input": "q1", "retrieved_context_ids": ["a", "b"], "reference_context_ids": ["a"]}),
        json.dumps({"user_input": "", "retrieved_context_ids": ["a"]}),
        "not json",
        json.dumps({"user_input": "q3", "retrieved_context_ids": ["a"], "retrieved_contexts": ["A text"]}),
        json.dumps({"user_input": "q4", "retrieved_context_ids": ["a"], "retrieved_contexts": ["Other text"]}),
    ]) + "\n")
    ws = tmp_path / "ws"
    assert import_ragas(samples, ws) == 2
    assert not ws.exists()
    capsys.readouterr()
    assert import_ragas(samples, ws, "--skip-bad") == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"skipped {samples}:2: field 'user_input': required field is missing or empty (the question)",
        f"skipped {samples}:3: not valid JSON (Expecting value)",
        f"skipped {samples}:5: field 'retrieved_context_ids[0]': 'a': this ID names another text at {samples}:4; "
        "an ID names one passage",
        "skipped 3 lines (--skip-bad): not imported",
    ]
    assert [q["text"] for q in read_jsonl(ws / "suites" / "ragas" / "questions.jsonl")] == ["q1", "q3"]
    assert scored(ws, tmp_path / "db.duckdb")[0] == ("q-00001", 2, 0.5, 1.0, 1.0)
    manifest = json.loads((ws / "runs" / "s" / "manifest.json").read_text())
    assert manifest["x_provenance"] == {"source_format": "ragas", "source": str(samples),
                                        "sha256": sha256(samples), "inputs": []}


def test_import_into_a_workspace_replaces_the_run_and_keeps_the_reviews(tmp_path, capsys):
    """A second import replaces the suite's files and the run folder whole (a file the new import
    does not write disappears) and keeps the suite's reviews/ and other runs."""
    ws = tmp_path / "ws"
    first = write_samples(tmp_path / "s.jsonl", [SAMPLE])
    assert import_ragas(first, ws) == 0
    (ws / "suites" / "ragas" / "reviews").mkdir()
    (ws / "suites" / "ragas" / "reviews" / "ana.jsonl").write_text("")
    (ws / "runs" / "s" / "stray.txt").write_text("old")
    (ws / "runs" / "other").mkdir()
    write_samples(first, [SAMPLE, {**SAMPLE, "user_input": "Second?"}])
    assert import_ragas(first, ws) == 0
    assert (ws / "suites" / "ragas" / "reviews" / "ana.jsonl").exists()
    assert (ws / "runs" / "other").exists() and not (ws / "runs" / "s" / "stray.txt").exists()
    assert len(read_jsonl(ws / "runs" / "s" / "records.jsonl")) == 2
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("source", ["trec", "ragas"])
def test_import_subcommand_help_has_an_example(capsys, source):
    with pytest.raises(SystemExit):
        main(["import", source, "--help"])
    out = capsys.readouterr().out
    assert f"example:\n  ragslice import {source} " in out and "--skip-bad" in out


def test_the_command_line_default_k_is_the_importers():
    """The command line's default --k for TREC runs is the importers' (each importer declares its own
    arguments: `scoring.io.importers`)."""
    from scoring.cli import build_parser
    from scoring.io.importing import IMPORT_K

    parser = build_parser()
    trec = parser.parse_args(["import", "trec", "--qrels", "q", "--run", "r", "--out", "o"])
    beir = parser.parse_args(["import", "beir", "folder", "--out", "o"])
    assert trec.k == beir.k == IMPORT_K == 10


def test_every_declared_importer_is_a_subcommand_in_the_registry_s_order():
    """`ragslice import <source>` is built from the registry: one subcommand per module of `FORMATS`,
    each declaring its own `Importer` (a new format is one module and its docs)."""
    import argparse

    from scoring.cli import build_parser
    from scoring.io.importers import FORMATS, importers

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sources = next(a for a in action.choices["import"]._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sources.choices) == [i.source for i in importers()] == [
        "trec", "ragas", "beir", "eval-dataset", "trec-rag", "openinference", "ragchecker"]
    assert len(FORMATS) == len(set(FORMATS)) == 7


def test_an_imported_run_s_cutoff_is_k_or_what_it_delivered_within_the_bound(tmp_path):
    """`importing.delivered_cutoff`, the rule every importer states its cutoff by: --k wins; else the most
    contexts a line delivered, refused above 100 (naming that line) or, when a reason is given, when
    nothing was delivered."""
    from scoring.io.importing import Refusals, delivered_cutoff

    path = tmp_path / "run.jsonl"
    where = {"path": str(path), "line": 7}
    refusals = Refusals(skip_bad=False)
    assert delivered_cutoff(5, 300, refusals, noun="contexts", field="f", widest=where, path=path) == 5
    assert delivered_cutoff(None, 12, refusals, noun="contexts", field="f", widest=where, path=path) == 12
    assert delivered_cutoff(None, 0, refusals, noun="contexts", field="f", widest=None, path=path) == 1
    assert not refusals.fatal_problems
    assert delivered_cutoff(None, 101, refusals, verb="retrieves", noun="IDs", field="retrieved", widest=where,
                            path=path) == 101
    assert delivered_cutoff(None, 0, refusals, noun="contexts", field="f", widest=None, path=path,
                            none_delivered="no line has contexts") == 1
    assert [str(p) for p in refusals.fatal_problems] == [
        f"{path}:7: field 'retrieved': retrieves 101 IDs; the context cutoff k is at most 100: pass --k (1-100) "
        "to score the first k",
        f"{path}: no line has contexts: pass --k"]
