"""Chunks, source versions and stale indexes.

One label set (documents), two runs with different chunking, scored by hand; duplicate chunks of
one document; citations by chunk and by document; a stale chunk and a declared older corpus; a
passage-level suite; TREC import with a passage map; and the SQL path against the reference
(`contract.map_chunks` + `score_question`) on random workspaces.
"""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
from tiers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.cli import main
from scoring.store.schema import SCHEMA_VERSION
from scoring.metrics.reference import Labels, Output, map_chunks, score_question
from scoring.errors import ValidationError
from scoring.metrics import REGISTRY
from scoring.store.refresh import refresh, score_workspace_in_memory
from fixtures import (
    edit_line, run_manifest, set_key, write_json, write_jsonl, write_run_folder, write_suite_folder,
)

SUITE = "books"
CORPUS = "corpus-1"

DOCUMENTS = [
    {"id": "A", "text": "Alpha one. Alpha two. Alpha three.", "version": "v2"},
    {"id": "B", "text": "Beta one. Beta two."},
    {"id": "C", "text": "Gamma one. Gamma two.", "version": "v1"},
    {"id": "D", "text": "Delta is a distractor.", "version": "v1"},
    {"id": "H", "text": "Secret one. Secret two.", "version": "v1", "access": ["hr"]},
]
QUESTIONS = [
    {"id": "q1", "text": "Alpha and beta?", "type": "multi-evidence", "split": "dev", "relevant": ["A", "B"],
     "support": {"x": ["A"], "y": ["B"]}},
    {"id": "q2", "text": "Gamma?", "type": "lookup", "split": "dev", "relevant": ["C"], "support": {"z": ["C"]}},
    {"id": "q3", "text": "Epsilon?", "type": "unanswerable", "split": "dev", "relevant": [], "support": {}},
    {"id": "q4", "text": "Alpha, for an engineer?", "type": "permission", "split": "dev", "caller": ["eng"],
     "relevant": ["A"], "support": {"a": ["A"]}},
]


def chunk(cid: str, doc: str, version: str, text: str, start: int) -> dict:
    return {"id": cid, "doc": doc, "doc_version": version, "text": text, "start": start, "end": start + len(text)}


# The suite's chunking: A in two chunks, every other document whole. B has no version of its own,
# so its chunks are cut from the corpus version.
SUITE_CHUNKS = [
    chunk("A#0", "A", "v2", "Alpha one. Alpha two.", 0),
    chunk("A#1", "A", "v2", "Alpha three.", 22),
    chunk("B#0", "B", CORPUS, "Beta one. Beta two.", 0),
    chunk("C#0", "C", "v1", "Gamma one. Gamma two.", 0),
    chunk("D#0", "D", "v1", "Delta is a distractor.", 0),
    chunk("H#0", "H", "v1", "Secret one. Secret two.", 0),
]
# The fine run's own chunking: one sentence a chunk.
FINE_CHUNKS = [
    chunk("A-0", "A", "v2", "Alpha one.", 0),
    chunk("A-1", "A", "v2", "Alpha two.", 11),
    chunk("A-2", "A", "v2", "Alpha three.", 22),
    chunk("B-0", "B", CORPUS, "Beta one.", 0),
    chunk("B-1", "B", CORPUS, "Beta two.", 10),
    chunk("C-0", "C", "v1", "Gamma one.", 0),
    chunk("C-1", "C", "v1", "Gamma two.", 11),
    chunk("D-0", "D", "v1", "Delta is a distractor.", 0),
    chunk("H-0", "H", "v1", "Secret one.", 0),
    chunk("H-1", "H", "v1", "Secret two.", 12),
]


def rec(qid: str, retrieved: list[str], claims: dict[str, list[str]]) -> dict:
    return {"question_id": qid, "retrieved": retrieved, "answer": "...",
            "claims": [{"id": c, "citations": cites} for c, cites in claims.items()], "error": None}


COARSE = [
    rec("q1", ["A#0", "B#0", "D#0"], {"x": ["A#0"], "y": ["B"]}),
    rec("q2", ["C#0", "D#0"], {"z": ["C#0"]}),
    rec("q3", ["D#0"], {}),
    rec("q4", ["A#1", "H#0"], {"a": ["A#1"]}),
]
FINE = [
    rec("q1", ["A-0", "A-1", "A-2", "B-0"], {"x": ["A-0", "A-2"], "y": ["B-0"]}),
    rec("q2", ["D-0", "C-1", "C-0"], {"z": ["C"]}),
    rec("q3", ["D-0"], {}),
    rec("q4", ["H-0", "H-1", "A-1"], {"a": ["A-1"]}),
]


def manifest(run_id: str, **changes) -> dict:
    """A run of the suite at cutoff 3 whose retrieval names its chunking (the run ID)."""
    return run_manifest(run_id, **{"suite": SUITE, "corpus_version": CORPUS, "created_at": "2026-11-20T09:12:00Z",
                                   "retrieval": {"chunking": run_id}, "k": 3, **changes})


def build(root: Path) -> Path:
    write_suite_folder(root, SUITE, DOCUMENTS, QUESTIONS, corpus_version=CORPUS, chunks=SUITE_CHUNKS)
    for run_id, rows in (("coarse", COARSE), ("fine", FINE)):
        write_run_folder(root, manifest(run_id), rows)
    write_jsonl(root / "runs" / "fine" / "chunks.jsonl", FINE_CHUNKS)
    return root


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return build(tmp_path / "ws")


def scores(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], dict]:
    cur = con.execute("SELECT * FROM question_scores")
    names = [d[0] for d in cur.description]
    return {(r[0], r[names.index("question_id")]): dict(zip(names, r)) for r in cur.fetchall()}


def problems_of(ws: Path) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        score_workspace_in_memory(ws)
    return [str(p).replace(str(ws) + "/", "") for p in caught.value.problems]


# --- two chunkings, one label set, by hand ----------------------------------------------------------

LOG3 = math.log2(3)
HAND = {
    # coarse: q1 ranks A, B, D -> 2 relevant documents in 3 slots.
    ("coarse", "q1"): dict(precision=2 / 3, recall=1.0, rr=1.0, ndcg=1.0, ap=1.0, support=1.0, coverage=1.0,
                           disclosures=0),
    ("coarse", "q2"): dict(precision=1 / 3, recall=1.0, rr=1.0, ndcg=1.0, ap=1.0, support=1.0, coverage=1.0,
                           disclosures=0),
    ("coarse", "q3"): dict(precision=None, recall=None, rr=None, support=None, coverage=None,
                           abstention_correct=True, disclosures=0),
    ("coarse", "q4"): dict(precision=1 / 3, recall=1.0, rr=1.0, support=1.0, coverage=1.0, disclosures=1),
    # fine: q1 fills the 3 slots with three chunks of A: A counts once (slot 1), B's chunk is in slot 4.
    # P@3 = 1/3 (not 3/3), R@3 = 1/2, nDCG@3 = 1 / (1 + 1/log2 3), AP@3 = (1/1) / 2.
    # x cites two chunks of A (one document, visible): supported; y cites B's chunk at slot 4: not visible.
    ("fine", "q1"): dict(precision=1 / 3, recall=0.5, rr=1.0, ndcg=1 / (1 + 1 / LOG3), ap=0.5,
                         f1=2 * (1 / 3) * 0.5 / (1 / 3 + 0.5), support=0.5, coverage=0.5, disclosures=0),
    # q2: D at slot 1, C at slot 2 (its second chunk at slot 3 adds nothing); z cites the document C.
    ("fine", "q2"): dict(precision=1 / 3, recall=1.0, rr=0.5, ndcg=1 / LOG3, ap=0.5, support=1.0, coverage=1.0,
                         disclosures=0),
    ("fine", "q3"): dict(precision=None, recall=None, support=None, abstention_correct=True, disclosures=0),
    # q4: two chunks of the restricted H in view are one disclosure; A at slot 3.
    ("fine", "q4"): dict(precision=1 / 3, recall=1.0, rr=1 / 3, support=1.0, coverage=1.0, disclosures=1),
}


def test_two_chunkings_scored_against_one_label_set_by_hand(ws: Path) -> None:
    got = scores(score_workspace_in_memory(ws))
    assert set(got) == set(HAND)
    for key, expected in HAND.items():
        for column, value in expected.items():
            if value is None or isinstance(value, bool):
                assert got[key][column] is value, (key, column, got[key][column])
            else:
                assert got[key][column] == pytest.approx(value, abs=1e-12), (key, column, got[key][column])


def test_retrieved_rows_keep_every_chunk_with_document_version_and_text(ws: Path) -> None:
    con = score_workspace_in_memory(ws)
    rows = con.execute(
        "SELECT rank, chunk_id, doc_id, doc_version, counted, visible, relevant, chunk_text FROM retrieved "
        "WHERE run_id = 'fine' AND question_id = 'q1' ORDER BY rank").fetchall()
    assert rows == [
        (1, "A-0", "A", "v2", True, True, True, "Alpha one."),
        (2, "A-1", "A", "v2", False, True, True, "Alpha two."),
        (3, "A-2", "A", "v2", False, True, True, "Alpha three."),
        (4, "B-0", "B", CORPUS, True, False, True, "Beta one."),
    ]
    # coarse uses the suite's map
    rows = con.execute("SELECT rank, chunk_id, doc_id, doc_version, counted FROM retrieved "
                       "WHERE run_id = 'coarse' AND question_id = 'q4' ORDER BY rank").fetchall()
    assert rows == [(1, "A#1", "A", "v2", True), (2, "H#0", "H", "v1", True)]


def test_claims_keep_citations_as_recorded_and_the_documents_they_were_judged_on(ws: Path) -> None:
    con = score_workspace_in_memory(ws)
    rows = con.execute("SELECT run_id, question_id, claim_id, citations, cited_docs, supported, reasons FROM claims "
                       "ORDER BY run_id, question_id, claim_id").fetchall()
    assert rows == [
        ("coarse", "q1", "x", ["A#0"], ["A"], True, []),
        ("coarse", "q1", "y", ["B"], ["B"], True, []),
        ("coarse", "q2", "z", ["C#0"], ["C"], True, []),
        ("coarse", "q4", "a", ["A#1"], ["A"], True, []),
        ("fine", "q1", "x", ["A-0", "A-2"], ["A"], True, []),
        ("fine", "q1", "y", ["B-0"], ["B"], False, ["citation_not_visible"]),
        ("fine", "q2", "z", ["C"], ["C"], True, []),
        ("fine", "q4", "a", ["A-1"], ["A"], True, []),
    ]


def test_chunk_maps_are_stored_and_runs_name_the_map_they_used(ws: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        maps = con.execute("SELECT run_id, count(*) FROM chunks GROUP BY ALL ORDER BY run_id NULLS FIRST").fetchall()
        assert maps == [(None, len(SUITE_CHUNKS)), ("fine", len(FINE_CHUNKS))]
        row = con.execute("SELECT chunk_id, doc_id, doc_version, text, start_offset, end_offset, line FROM chunks "
                          "WHERE run_id = 'fine' AND chunk_id = 'A-2'").fetchone()
        assert row == ("A-2", "A", "v2", "Alpha three.", 22, 34, 3)
        assert con.execute("SELECT run_id, chunk_map FROM runs ORDER BY run_id").fetchall() == [
            ("coarse", "suite"), ("fine", "run")]
        assert con.execute("SELECT unit FROM suites").fetchall() == [("document",)]
        # the route back to the exact evidence: offsets into the document at that version
        text, start, end, doc_text = con.execute(
            "SELECT c.text, c.start_offset, c.end_offset, d.text FROM chunks c JOIN documents d "
            "ON d.suite = c.suite AND d.doc_id = c.doc_id WHERE c.chunk_id = 'A-2'").fetchone()
        assert doc_text[start:end] == text


def test_what_if_cutoff_rescoring_reads_the_mapped_rankings(ws: Path, tmp_path: Path, capsys) -> None:
    db = tmp_path / "s.duckdb"
    refresh(ws, db)
    assert main(["table", str(ws), "--db", str(db), "--k", "4"]) == 0
    from_db = capsys.readouterr().out
    assert main(["table", str(ws), "--k", "4"]) == 0
    assert capsys.readouterr().out == from_db
    # fine q1 at k=4: A (slot 1) and B (slot 4) -> P@4 = 2/4, R@4 = 1, RR = 1; y is now visible.
    assert "q1 fine | 0.50 1.00 1.00 1.00 1.00 n/a" in from_db


def test_users_sql_over_retrieved_reproduces_p_at_k(ws: Path) -> None:
    """docs/schema.md: P@k = counted, visible, relevant rows / k."""
    con = score_workspace_in_memory(ws)
    rows = con.execute("""
        SELECT s.run_id, s.question_id, s.precision,
               count(t.rank) FILTER (WHERE t.counted AND t.visible AND t.relevant) / s.k AS from_rows
        FROM question_scores s LEFT JOIN retrieved t ON t.run_id = s.run_id AND t.question_id = s.question_id
        WHERE s.answerable GROUP BY s.run_id, s.question_id, s.precision, s.k""").fetchall()
    assert len(rows) == 6
    assert all(p == pytest.approx(q) for _, _, p, q in rows), rows


def test_a_changed_chunk_map_rescores_only_what_uses_it(ws: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    refresh(ws, db)
    edit_line(ws / "runs" / "fine" / "chunks.jsonl", 1, lambda c: c.update(text="Alpha one!"))
    summary = refresh(ws, db)
    assert (summary.runs_scored, summary.runs_skipped) == (1, 1)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT chunk_text FROM retrieved WHERE run_id = 'fine' AND question_id = 'q1' "
                           "AND rank = 1").fetchone() == ("Alpha one!",)
    edit_line(ws / "suites" / SUITE / "chunks.jsonl", 2, lambda c: c.update(text="Alpha 3."))
    summary = refresh(ws, db)
    assert summary.runs_scored == 2
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT run_id, count(*) FROM chunks GROUP BY ALL ORDER BY 1 NULLS FIRST").fetchall() == [
            (None, len(SUITE_CHUNKS)), ("fine", len(FINE_CHUNKS))]


def test_a_database_of_the_previous_schema_is_rebuilt_and_keeps_its_verdicts(ws: Path, tmp_path: Path) -> None:
    from scoring.store.refresh import rescore_stored

    db = tmp_path / "s.duckdb"
    refresh(ws, db)
    with duckdb.connect(str(db)) as con:
        con.execute("ALTER TABLE retrieved_slots DROP COLUMN counted")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        con.execute("CREATE TABLE verdicts (verdict_id VARCHAR)")
        con.execute("INSERT INTO verdicts VALUES ('kept')")
    with pytest.raises(ValidationError, match=f"schema version 1, this ragslice reads version {SCHEMA_VERSION}; refresh it first"):
        rescore_stored(db, k=2)
    summary = refresh(ws, db)
    assert summary.runs_scored == 2
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        # fine: A-1, A-2 (q1), C-0 (q2), H-1 (q4)
        assert con.execute("SELECT count(*) FILTER (WHERE NOT counted) FROM retrieved").fetchone() == (4,)
        assert con.execute("SELECT * FROM verdicts").fetchall() == [("kept",)]


# --- a stale chunk, and a declared older corpus ---------------------------------------------------


def test_stale_chunk_names_run_file_line_chunk_and_both_versions(ws: Path) -> None:
    edit_line(ws / "runs" / "fine" / "chunks.jsonl", 3, lambda c: c.update(doc_version="v1"))
    assert problems_of(ws) == [
        "runs/fine/chunks.jsonl:3: field 'doc_version': 'v1' is not the version of document 'A' in suite 'books' "
        "('v2'): chunk 'A-2' of run 'fine' comes from a stale index; re-index against corpus 'corpus-1', or "
        "declare the index's corpus_version in the manifest (the run is then refused beside runs on the current "
        "corpus)"]


def test_stale_chunk_of_a_document_without_version_is_checked_against_the_corpus_version(ws: Path) -> None:
    edit_line(ws / "runs" / "fine" / "chunks.jsonl", 4, lambda c: c.update(doc_version="corpus-0"))
    found = problems_of(ws)
    assert len(found) == 1 and found[0].startswith(
        "runs/fine/chunks.jsonl:4: field 'doc_version': 'corpus-0' is not the version of document 'B' in suite "
        "'books' ('corpus-1'): chunk 'B-0' of run 'fine'")


def test_suite_chunk_of_another_version_is_an_error(ws: Path) -> None:
    edit_line(ws / "suites" / SUITE / "chunks.jsonl", 2, lambda c: c.update(doc_version="v1"))
    found = problems_of(ws)
    assert found == ["suites/books/chunks.jsonl:2: field 'doc_version': 'v1' is not the version of document 'A' in "
                     "suite 'books' ('v2'): chunk 'A#1' must be cut from the suite's version of its document"]


def test_declared_older_corpus_is_stored_and_refused_beside_the_current_corpus(ws: Path, tmp_path: Path,
                                                                                capsys) -> None:
    edit_line(ws / "runs" / "fine" / "chunks.jsonl", 3, lambda c: c.update(doc_version="v1"))
    set_key(ws / "runs" / "fine" / "manifest.json", "corpus_version", "corpus-0")
    db = tmp_path / "s.duckdb"
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT corpus_version FROM runs WHERE run_id = 'fine'").fetchone() == ("corpus-0",)
        assert con.execute("SELECT doc_version, counted FROM retrieved WHERE run_id = 'fine' AND question_id = 'q1' "
                           "AND rank = 3").fetchone() == ("v1", False)
    code = main(["compare", "coarse", "fine", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2
    assert "corpus version 'corpus-1'" in err and "'corpus-0'" in err and "not comparable" in err


# --- chunk map rules -------------------------------------------------------------------------------


@pytest.mark.parametrize("change, expected", [
    (lambda c: c.update(id="A"), "runs/fine/chunks.jsonl:2: field 'id': 'A' is also a document of suite 'books'; "
                                 "a chunk ID must differ from every document ID"),
    (lambda c: c.update(id="A-0"), "runs/fine/chunks.jsonl:2: field 'id': 'A-0': duplicate chunk ID (first on line 1)"),
    (lambda c: c.update(doc="Z"), "runs/fine/chunks.jsonl:2: field 'doc': 'Z' is not a document of suite 'books' v1"),
    (lambda c: c.pop("doc_version"), "runs/fine/chunks.jsonl:2: field 'doc_version': required field is missing"),
    (lambda c: c.update(start=-1), "runs/fine/chunks.jsonl:2: field 'start': -1: a character offset is a whole "
                                   "number >= 0"),
    (lambda c: c.update(start=20, end=5), "runs/fine/chunks.jsonl:2: field 'end': 5: the chunk ends before it starts "
                                          "(start 20)"),
    (lambda c: c.update(score=1), "runs/fine/chunks.jsonl:2: field 'score': unknown field (allowed: doc, doc_version, "
                                  "end, id, start, text; prefix extensions with x_)"),
])
def test_chunk_map_rules(ws: Path, change, expected: str) -> None:
    edit_line(ws / "runs" / "fine" / "chunks.jsonl", 2, change)
    found = problems_of(ws)
    assert expected in found, found


def test_an_id_that_is_neither_document_nor_chunk_names_the_chunk_map(ws: Path) -> None:
    # The suite's chunk A#0 is not in the fine run's own map.
    edit_line(ws / "runs" / "fine" / "records.jsonl", 3, lambda r: r.update(retrieved=["A#0"]))
    assert problems_of(ws) == [
        f"runs/fine/records.jsonl:3: question 'q3': field 'retrieved': 'A#0' is not a document of suite 'books' v1 "
        f"or a chunk of {ws}/runs/fine/chunks.jsonl".replace(str(ws) + "/", "")]


def test_duplicate_chunk_in_a_ranking_is_an_error_but_two_chunks_of_one_document_are_not(ws: Path) -> None:
    edit_line(ws / "runs" / "fine" / "records.jsonl", 3, lambda r: r.update(retrieved=["D-0", "D-0"]))
    assert problems_of(ws) == [
        "runs/fine/records.jsonl:3: question 'q3': field 'retrieved': 'D-0' appears twice in the ranking "
        "(first at rank 1)"]


# --- a passage-level suite -----------------------------------------------------------------------


def test_passage_level_suite_matches_chunks_exactly(ws: Path, tmp_path: Path) -> None:
    set_key(ws / "suites" / SUITE / "suite.json", "unit", "chunk")
    (ws / "runs" / "fine" / "chunks.jsonl").unlink()
    write_jsonl(ws / "suites" / SUITE / "questions.jsonl", [
        {"id": "q1", "text": "Alpha three?", "type": "lookup", "split": "dev", "relevant": {"A#1": 2},
         "support": {"x": ["A#1"]}},
        {"id": "q2", "text": "Secret?", "type": "permission", "split": "dev", "caller": ["eng"],
         "relevant": {"C#0": 1}, "support": {}},
    ])
    write_jsonl(ws / "runs" / "coarse" / "records.jsonl", [
        # A#0 is a chunk of the relevant document but not the labelled passage: no credit.
        rec("q1", ["A#0", "A#1", "A"], {"x": ["A#1"], "y": ["A"]}),
        rec("q2", ["H#0", "C#0"], {}),
    ])
    write_jsonl(ws / "runs" / "fine" / "records.jsonl", [rec("q1", ["A#1"], {"x": ["A"]})])
    write_json(ws / "runs" / "fine" / "manifest.json", manifest("fine"))
    got = scores(score_workspace_in_memory(ws))
    c1 = got[("coarse", "q1")]
    # A#1 at rank 2: P@3 = 1/3, RR = 1/2; x cites the labelled passage (supported), y cites the document
    # (known but not labelled for y): support 1/2, coverage 1/1.
    assert (c1["precision"], c1["rr"], c1["support"], c1["coverage"]) == (pytest.approx(1 / 3), 0.5, 0.5, 1.0)
    # the restricted document's chunk is a disclosure
    assert got[("coarse", "q2")]["disclosures"] == 1
    # citing the whole document is not citing the labelled passage
    assert got[("fine", "q1")]["support"] == 0.0 and got[("fine", "q1")]["precision"] == pytest.approx(1 / 3)
    # re-scoring the stored database at another cutoff reads the same passages
    from scoring.store.refresh import rescore_stored

    db = tmp_path / "passages.duckdb"
    refresh(ws, db)
    assert scores(rescore_stored(db, k=3)) == got


def test_passage_level_suite_refuses_labels_on_documents_and_run_chunk_maps(ws: Path) -> None:
    set_key(ws / "suites" / SUITE / "suite.json", "unit", "chunk")
    found = problems_of(ws)
    assert ("suites/books/questions.jsonl:1: question 'q1': field 'relevant': 'A' is not a chunk of suite 'books' "
            "v1 (unit 'chunk': labels name the chunks of chunks.jsonl)") in found
    assert ("runs/fine/chunks.jsonl: suite 'books' is passage-level (unit 'chunk'): its labels name its own chunks, "
            "so a run cannot bring another chunk map; score this run in a document-level suite") in found


def test_passage_level_suite_needs_its_chunk_map(ws: Path) -> None:
    set_key(ws / "suites" / SUITE / "suite.json", "unit", "chunk")
    (ws / "suites" / SUITE / "chunks.jsonl").unlink()
    assert ("suites/books/chunks.jsonl: a passage-level suite (unit 'chunk') needs chunks.jsonl: its labels name "
            "those chunks") in problems_of(ws)


def test_unit_must_be_document_or_chunk(ws: Path) -> None:
    set_key(ws / "suites" / SUITE / "suite.json", "unit", "passage")
    found = problems_of(ws)
    assert found[0] == ("suites/books/suite.json:6: field 'unit': 'passage': expected 'document' (labels name "
                        "documents) or 'chunk' (labels name the chunks of chunks.jsonl)")


# --- the SQL path equals the reference mapping + score_question ---------------------------------------

DOCS = ("d0", "d1", "d2", "d3", "d4")
RESTRICTED = "d4"


@st.composite
def workspaces(draw):
    """A random suite (document- or passage-level) with a chunk map, and runs with their own maps."""
    unit = draw(st.sampled_from(["document", "chunk"]))
    versions = {d: draw(st.sampled_from([None, "v1", "v2"])) for d in DOCS}
    suite_map = {f"{d}#{i}": d for d in DOCS for i in range(draw(st.integers(0 if unit == "document" else 1, 3)))}
    units = sorted(suite_map) if unit == "chunk" else list(DOCS)
    questions = []
    for n in range(draw(st.integers(1, 4))):
        labelled = draw(st.lists(st.sampled_from(units), unique=True, max_size=4))
        grades = {u: draw(st.integers(-1, 2)) for u in labelled}
        positive = [u for u, g in grades.items() if g > 0]
        support = {}
        for c in range(draw(st.integers(0, 2)) if positive else 0):
            support[f"c{c}"] = draw(st.lists(st.sampled_from(positive), unique=True, min_size=1, max_size=2))
        caller = draw(st.sampled_from([None, ["eng"], ["hr"]]))
        questions.append({"id": f"q{n}", "text": "?", "type": "t", "split": "dev", "relevant": grades,
                          "support": support, **({"caller": caller} if caller else {})})
    runs = {}
    for r in range(draw(st.integers(1, 3))):
        own = None
        if unit == "document" and draw(st.booleans()):
            own = {f"{d}~{i}": d for d in DOCS for i in range(draw(st.integers(0, 3)))}
        ids = list(DOCS) + sorted(own if own is not None else suite_map)
        records = {}
        for q in questions:
            status = draw(st.sampled_from(["ok", "ok", "ok", "failed", "missing"]))
            if status == "missing":
                continue
            retrieved = draw(st.lists(st.sampled_from(ids), unique=True, max_size=6))
            claims = {}
            for c in draw(st.lists(st.sampled_from(["c0", "c1", "extra"]), unique=True, max_size=3)):
                claims[c] = draw(st.lists(st.sampled_from(ids + ["elsewhere"]), unique=True, max_size=3))
            records[q["id"]] = (retrieved, claims, status)
        runs[f"r{r}"] = (draw(st.integers(1, 4)), own, records)
    return unit, versions, suite_map, questions, runs


def write_random(root: Path, unit, versions, suite_map, questions, runs) -> None:
    write_suite_folder(root, SUITE, [
        {"id": d, "text": f"text of {d}", **({"version": versions[d]} if versions[d] else {}),
         **({"access": ["hr"]} if d == RESTRICTED else {})} for d in DOCS], questions, corpus_version=CORPUS,
        chunks=[{"id": c, "doc": d, "doc_version": versions[d] or CORPUS} for c, d in suite_map.items()] if suite_map
        else None, unit=unit)
    for run_id, (k, own, records) in runs.items():
        write_json(root / "runs" / run_id / "manifest.json", manifest(run_id, k=k))
        write_jsonl(root / "runs" / run_id / "records.jsonl", [
            {"question_id": q, "retrieved": retrieved, "claims": [{"id": c, "citations": v} for c, v in claims.items()],
             "error": "timeout" if status == "failed" else None} for q, (retrieved, claims, status) in records.items()
        ] or [{"question_id": questions[0]["id"], "retrieved": [], "claims": [], "error": "timeout"}])
        if own is not None:
            rows = [{"id": c, "doc": d, "doc_version": versions[d] or CORPUS} for c, d in own.items()]
            write_jsonl(root / "runs" / run_id / "chunks.jsonl",
                        rows or [{"id": "d0~x", "doc": "d0", "doc_version": versions["d0"] or CORPUS}])


def reference(unit, suite_map, questions, runs, root: Path) -> tuple[dict, dict]:
    """Scores and counted flags from the plain-Python reference, reading the workspace files back."""
    access = {d: (["hr"] if d == RESTRICTED else []) for d in DOCS}
    known = set(DOCS)
    if unit == "chunk":
        known |= set(suite_map)
        access |= {c: access[d] for c, d in suite_map.items()}
    out, counted = {}, {}
    for run_id in runs:
        folder = root / "runs" / run_id
        k = json.loads((folder / "manifest.json").read_text())["k"]
        map_file = folder / "chunks.jsonl"
        if not map_file.exists():
            map_file = root / "suites" / SUITE / "chunks.jsonl"
        chunk_docs = {} if unit == "chunk" or not map_file.exists() else {
            c["id"]: c["doc"] for c in map(json.loads, map_file.read_text().splitlines())}
        records = {r["question_id"]: r for r in map(json.loads, (folder / "records.jsonl").read_text().splitlines())}
        for q in questions:
            labels = replace(Labels(q["relevant"], {c: frozenset(d) for c, d in q["support"].items()},
                                    frozenset(q["caller"]) if q.get("caller") else None),
                             answers_asked=any(x["support"] for x in questions))
            record = records.get(q["id"])
            status = "missing" if record is None else ("failed" if record["error"] else "ok")
            output = None
            if record is not None:
                recorded = Output(tuple(record["retrieved"]),
                                  tuple((c["id"], tuple(c["citations"])) for c in record["claims"]))
                output = map_chunks(recorded, chunk_docs)
                counted[(run_id, q["id"])] = [d is not None for d in output.retrieved]
            out[(run_id, q["id"])] = score_question(labels, output, k=k, known=known, access=access, status=status)
    return out, counted


@settings(max_examples=examples(40))
@given(workspaces())
def test_sql_staging_and_engine_equal_the_reference_mapping(tmp_path_factory, case_tally, drawn) -> None:
    root = tmp_path_factory.mktemp("random-chunks")
    write_random(root, *drawn)
    unit, _, suite_map, questions, runs = drawn
    expected, counted = reference(unit, suite_map, questions, runs, root)
    con = score_workspace_in_memory(root)
    got = scores(con)
    flags: dict = {}
    for run_id, qid, flag in con.execute("SELECT run_id, question_id, counted FROM retrieved ORDER BY rank").fetchall():
        flags.setdefault((run_id, qid), []).append(flag)
    assert set(got) == set(expected)
    for key, ref in expected.items():
        for m in REGISTRY:
            if ref[m.key] is None or got[key][m.key] is None:
                assert got[key][m.key] is ref[m.key], (key, m.key, got[key][m.key], ref[m.key])
            else:
                assert got[key][m.key] == pytest.approx(ref[m.key], abs=1e-12), (key, m.key)
        for count in ("n_claims", "n_supported", "n_expected", "n_expected_supported", "n_hits", "n_relevant"):
            assert got[key][count] == ref[count], (key, count)
    assert flags == {key: v for key, v in counted.items() if v}, "counted = the reference's non-empty slots"
    # docs/schema.md: a user's P@k from the stored rows (counted, visible, relevant) / k is the engine's
    from_rows = dict(((r, q), p) for r, q, p in con.execute("""
        SELECT s.run_id, s.question_id, count(t.rank) FILTER (WHERE t.counted AND t.visible AND t.relevant) / s.k
        FROM question_scores s JOIN retrieved t ON t.run_id = s.run_id AND t.question_id = s.question_id
        WHERE s.answerable AND s.status = 'ok' GROUP BY s.run_id, s.question_id, s.k""").fetchall())
    for key, p_at_k in from_rows.items():
        assert p_at_k == pytest.approx(expected[key]["precision"], abs=1e-12), (key, "precision from rows")
    case_tally["chunk maps"] = case_tally.get("chunk maps", 0) + len(expected)


# --- TREC import with a passage map -----------------------------------------------------------------

PASSAGE_MAP = "p1\td1\np2\td1\np3\td2\n# a comment\n\np4\td3\n"
TREC_RUN = ("t1 Q0 p2 1 3.0 chunky\nt1 Q0 p1 2 2.0 chunky\nt1 Q0 p3 3 1.0 chunky\n"
            "t2 Q0 p4 1 5.0 chunky\nt2 Q0 p1 2 4.0 chunky\n")


def trec_files(tmp_path: Path, qrels: str) -> tuple[str, str, str]:
    paths = []
    for name, text in (("qrels", qrels), ("run", TREC_RUN), ("map.tsv", PASSAGE_MAP)):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    return paths[0], paths[1], paths[2]


def imported_scores(tmp_path: Path, qrels: str) -> tuple[Path, dict]:
    q, r, m = trec_files(tmp_path, qrels)
    ws = tmp_path / "ws"
    assert main(["import", "trec", "--qrels", q, "--run", r, "--chunk-map", m, "--out", str(ws)]) == 0
    return ws, scores(score_workspace_in_memory(ws))


def test_trec_passage_qrels_make_a_passage_level_suite_scored_like_trec_eval(tmp_path: Path, capsys) -> None:
    from scoring.io.trec import evaluate_files

    ws, got = imported_scores(tmp_path, "t1 0 p1 1\nt1 0 p3 2\nt2 0 p4 1\n")
    assert "suite trec (chunk-level labels), runs chunky" in capsys.readouterr().out
    suite = json.loads((ws / "suites" / "trec" / "suite.json").read_text())
    assert suite["unit"] == "chunk"
    chunk_rows = [json.loads(line) for line in (ws / "suites" / "trec" / "chunks.jsonl").read_text().splitlines()]
    assert [(c["id"], c["doc"], c["doc_version"]) for c in chunk_rows] == [
        ("p1", "d1", suite["corpus_version"]), ("p2", "d1", suite["corpus_version"]),
        ("p3", "d2", suite["corpus_version"]), ("p4", "d3", suite["corpus_version"])]
    records = [json.loads(line) for line in (ws / "runs" / "chunky" / "records.jsonl").read_text().splitlines()]
    assert records[0]["retrieved"] == ["p2", "p1", "p3"], "passage IDs are kept as chunks"
    # by hand at the imported cutoff 10: t1 ranks p2 (not judged), p1 (1), p3 (2)
    assert got[("chunky", "t1")]["precision"] == pytest.approx(2 / 10)
    assert got[("chunky", "t1")]["rr"] == 0.5
    assert got[("chunky", "t1")]["ap"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    # and exactly what `ragslice trec` (trec_eval's conventions) says on the same files
    reference = evaluate_files(str(tmp_path / "qrels"), str(tmp_path / "run"), ["P@10", "R@10", "nDCG@10", "AP@10"])
    for qid in ("t1", "t2"):
        for name, key in (("P@10", "precision"), ("R@10", "recall"), ("nDCG@10", "ndcg"), ("AP@10", "ap")):
            assert got[("chunky", qid)][key] == pytest.approx(reference.values[name][qid], abs=1e-12), (qid, name)


def test_trec_document_qrels_with_passage_runs_count_each_document_once(tmp_path: Path) -> None:
    ws, got = imported_scores(tmp_path, "t1 0 d1 1\nt1 0 d2 1\nt2 0 d3 1\n")
    assert json.loads((ws / "suites" / "trec" / "suite.json").read_text())["unit"] == "document"
    # t1: p2 -> d1 at slot 1, p1 -> d1 again (slot 2, not counted), p3 -> d2 at slot 3.
    t1 = got[("chunky", "t1")]
    assert (t1["precision"], t1["recall"], t1["rr"]) == (pytest.approx(2 / 10), 1.0, 1.0)
    assert t1["ap"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    t2 = got[("chunky", "t2")]
    assert (t2["precision"], t2["recall"], t2["rr"]) == (pytest.approx(1 / 10), 1.0, 1.0)


def test_trec_qrels_judging_passages_and_documents_are_refused(tmp_path: Path, capsys) -> None:
    q, r, m = trec_files(tmp_path, "t1 0 p1 1\nt1 0 d2 1\n")
    assert main(["import", "trec", "--qrels", q, "--run", r, "--chunk-map", m, "--out", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert "the qrels judge passages of the map (e.g. 'p1') and other IDs (e.g. 'd2')" in err


@pytest.mark.parametrize("text, expected", [
    ("p1\td1\np2\n", "map.tsv:2: expected 2 fields (`passage_id<TAB>doc_id`), found 1"),
    ("p1\td1\np1\td2\n", "map.tsv:2: field 'passage_id': 'p1' is listed twice (a passage belongs to one document)"),
    ("p1\td1\nd1\td2\n", "map.tsv:2: field 'passage_id': 'd1' is also a document ID; passage and document IDs "
                         "must differ"),
    ("# nothing\n", "map.tsv: the file has no lines; expected lines of `passage_id<TAB>doc_id`"),
])
def test_bad_passage_map_lines_name_file_and_line(tmp_path: Path, capsys, text: str, expected: str) -> None:
    q, r, m = trec_files(tmp_path, "t1 0 p1 1\n")
    Path(m).write_text(text)
    assert main(["import", "trec", "--qrels", q, "--run", r, "--chunk-map", m, "--out", str(tmp_path / "ws")]) == 2
    assert expected in capsys.readouterr().err


# --- the route back to the evidence, on the question detail page -----------------------------------


def test_question_detail_shows_each_chunk_with_its_document_version_and_text(ws: Path, tmp_path: Path,
                                                                               monkeypatch) -> None:
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "s.duckdb"
    refresh(ws, db)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py"), default_timeout=60)
    at.query_params.update({"suite": SUITE, "baseline": "coarse", "candidate": "fine", "q": "q1"})
    at.run()
    at.switch_page("views/question_detail.py").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = at.get_by_key("box_w_retrieved_candidate").dataframe[0].value
    rows = shown[["rank", "chunk_id", "doc_id", "doc_version", "counted", "chunk_text"]].values.tolist()
    assert rows == [
        [1, "A-0", "A", "v2", True, "Alpha one."],
        [2, "A-1", "A", "v2", False, "Alpha two."],
        [3, "A-2", "A", "v2", False, "Alpha three."],
        [4, "B-0", "B", CORPUS, True, "Beta one."],
    ]
