"""Free-text answers, two implementations: random workspaces whose records answer in sentences, refreshed
by the real refresh (SQL alignment, generated claims, the engine), against the reference (`lexical_alignment`,
`sentence_claims`, `score_question`) with reviewers' alignment decisions taking precedence.

Sentences mix index and ID citations, repeat spaces, tabs and composed/decomposed accents (matched on their
normalised text), state a claim's proposition with noise, or nothing; reviewers decide some sentences
(sometimes two who disagree, which decides nothing)."""
from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path

import duckdb
import pytest
from tiers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixtures import run_manifest, write_jsonl, write_run_folder, write_suite_folder
from scoring.metrics import REGISTRY
from scoring.metrics.alignment import canonical_outcome
from scoring.metrics.reference import (
    Alignment, Output, lexical_alignment, lexical_support, normalise_sentence, resolve_citations, score_question, sentence_claims,
    suite_labels,
)
from scoring.store.refresh import refresh

DOCS = tuple(f"d{i}" for i in range(6))
WORDS = ("window", "monday", "rollback", "traffic", "60", "seconds", "the", "is", "a", "été", "e\u0301te\u0301",
         "Straße", "ALPHA", "of")
SPACES = (" ", "  ", "\t", " \n ")
COUNTS = ("n_claims", "n_supported", "n_expected", "n_expected_supported")


def _text(draw, words) -> str:
    gaps = draw(st.lists(st.sampled_from(SPACES), min_size=len(words), max_size=len(words)))
    return (draw(st.sampled_from(("", " "))) + "".join(w + g for w, g in zip(words, gaps))).rstrip() + "."


@st.composite
def workspaces(draw):
    questions = []
    for q in range(draw(st.integers(1, 3))):
        relevant = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=3))
        claims = {f"c{i}": draw(st.lists(st.sampled_from(relevant), unique=True, min_size=1, max_size=2))
                  for i in range(draw(st.integers(1, 3)))}
        propositions = {c: " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))) for c in claims}
        questions.append({"id": f"q{q}", "text": f"Question {q}?", "type": "lookup", "split": "dev",
                          "critical": False, "tags": [], "relevant": relevant, "support": claims,
                          "claims": propositions})
    runs = {}
    for r in range(draw(st.integers(1, 2))):
        records = []
        for q in questions:
            status = draw(st.sampled_from(("ok", "ok", "ok", "failed", "missing")))
            if status == "missing" and (records or q is not questions[-1]):  # a run holds at least one record
                continue
            retrieved = list(draw(st.permutations(DOCS)))[: draw(st.integers(0, len(DOCS)))]
            sentences = []
            for _ in range(draw(st.integers(0, 4))):
                source = draw(st.sampled_from(["noise", *q["claims"].values()]))
                words = source.split() if source != "noise" else []
                words = [w for w in words if draw(st.integers(0, 4))] + draw(st.lists(st.sampled_from(WORDS),
                                                                                      max_size=3))
                cited = draw(st.lists(st.sampled_from([*range(len(retrieved)), *DOCS, "ghost"]), max_size=3))
                unique, seen = [], set()
                for c in cited:  # one document once per sentence (an index and its ID are the same document)
                    doc = retrieved[c] if isinstance(c, int) else c
                    if doc not in seen:
                        seen.add(doc)
                        unique.append(c)
                sentences.append({"text": _text(draw, words or ["Here"]), "citations": unique})
            record = {"question_id": q["id"], "retrieved": retrieved, "answer_sentences": sentences,
                      "error": "timeout" if status == "failed" else None}
            records.append(record)
        runs[f"r{r}"] = records
    decisions = []
    written = [(rec["question_id"], s["text"]) for recs in runs.values() for rec in recs
               for s in rec["answer_sentences"]]
    by_id = {q["id"]: q for q in questions}
    for n, (qid, text) in enumerate(draw(st.lists(st.sampled_from(written), unique=True, max_size=4))
                                    if written else []):
        claims = sorted(by_id[qid]["claims"])
        for reviewer in ("ann", "bob")[: draw(st.integers(1, 2))]:
            choice = draw(st.sampled_from(["unlabelled", "no_claim", "claims", "claims"]))
            aligned = (sorted(draw(st.lists(st.sampled_from(claims), unique=True, min_size=1)))
                       if choice == "claims" else choice)
            shown = unicodedata.normalize(draw(st.sampled_from(("NFC", "NFD"))), " \t".join(text.split(" ")))
            decisions.append({"at": f"2026-11-30T10:{n:02d}:00Z", "reviewer": reviewer, "kind": "alignment",
                              "question_id": qid, "sentence": shown, "claim_ids": aligned})
    return questions, runs, decisions


def _human(decisions) -> dict[tuple[str, str], Alignment]:
    """(question, normalised sentence) -> the reviewers' alignment where every reviewer's latest agrees."""
    latest: dict[tuple[str, str], dict[str, dict]] = {}
    for d in sorted(decisions, key=lambda d: d["at"]):
        latest.setdefault((d["question_id"], normalise_sentence(d["sentence"])), {})[d["reviewer"]] = d
    out = {}
    for key, by_reviewer in latest.items():
        values = {canonical_outcome("claims" if isinstance(d["claim_ids"], list) else d["claim_ids"],
                                    d["claim_ids"] if isinstance(d["claim_ids"], list) else ())
                  for d in by_reviewer.values()}
        if len(values) == 1:
            d = next(iter(by_reviewer.values()))
            aligned = d["claim_ids"]
            out[key] = Alignment("claims", tuple(sorted(aligned))) if isinstance(aligned, list) else Alignment(aligned)
    return out


def doc_text(d: str, questions) -> str:
    """A document's text: a note, and the propositions of the claims it supports (so the lexical aligner's
    support grades see both overlap, for sentences built from those propositions, and its absence)."""
    said = [p for q in questions for c, p in q["claims"].items() if d in q["support"][c]]
    return " ".join([f"note {d}", *said])


def _write(root: Path, questions, runs, decisions) -> Path:
    documents = [{"id": d, "text": doc_text(d, questions)} for d in DOCS]
    folder = write_suite_folder(root, "s", documents, questions)
    for run_id, records in runs.items():
        write_run_folder(root, run_manifest(run_id, suite="s", k=3), records)
    for reviewer in ("ann", "bob"):
        mine = [d for d in decisions if d["reviewer"] == reviewer]
        if mine:
            write_jsonl(folder / "reviews" / f"{reviewer}.jsonl", mine)
    return root


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _same(a, b) -> bool:
    if _missing(a) or _missing(b):
        return _missing(a) and _missing(b)
    return math.isclose(float(a), float(b), abs_tol=1e-9)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(workspaces())
def test_alignment_and_scores_agree(tmp_path_factory, batch):
    questions, runs, decisions = batch
    root = _write(tmp_path_factory.mktemp("ws"), questions, runs, decisions)
    db = root / "db.duckdb"
    refresh(root, db)
    human = _human(decisions)
    labels = suite_labels(questions)
    propositions = {q["id"]: q["claims"] for q in questions}
    with duckdb.connect(str(db), read_only=True) as con:
        applied = {(r, q, s): (outcome, tuple(ids), aligner) for r, q, s, outcome, ids, aligner in con.execute(
            "SELECT run_id, question_id, sentence, outcome, claim_ids, aligner FROM alignments WHERE applied"
        ).fetchall()}
        graded = {(r, q, s): tuple(grades) for r, q, s, grades in con.execute(
            "SELECT run_id, question_id, sentence, support FROM alignments WHERE aligner = 'lexical'").fetchall()}
        scores = {(row["run_id"], row["question_id"]): row for row in con.execute(
            "SELECT * FROM question_scores").df().to_dict("records")}
    for run_id, records in runs.items():
        by_question = {rec["question_id"]: rec for rec in records}
        for q in questions:
            record = by_question.get(q["id"])
            status = "missing" if record is None else "failed" if record["error"] else "ok"
            output = None
            if record is not None:
                cited, alignments = [], []
                for n, sentence in enumerate(record["answer_sentences"]):
                    ids = resolve_citations(sentence["citations"], record["retrieved"])
                    norm = normalise_sentence(sentence["text"])
                    alignment = human.get((q["id"], norm)) or lexical_alignment(norm, ids, propositions[q["id"]])
                    got = applied[(run_id, q["id"], n)]
                    assert got[:2] == (alignment.outcome, alignment.claim_ids), (run_id, q["id"], n, sentence, got)
                    assert (got[2] == "human") == ((q["id"], norm) in human)
                    texts = [doc_text(d, questions) if d in DOCS else None for d in ids]
                    assert graded[(run_id, q["id"], n)] == lexical_support(norm, texts), (sentence, ids)
                    cited.append(ids)
                    alignments.append(alignment)
                output = Output(tuple(record["retrieved"]), sentence_claims(cited, alignments))
            expected = score_question(labels[q["id"]], output, k=3, known=set(DOCS), status=status)
            row = scores[(run_id, q["id"])]
            for key in [m.key for m in REGISTRY] + list(COUNTS):
                assert _same(expected[key], row[key]), (run_id, q["id"], key, expected[key], row[key], record)


def test_normalisation_and_tokens_agree_with_sql():
    """The SQL normalisation and token rules on texts that differ from ASCII (`scoring.store.alignment`)."""
    from scoring.metrics.reference import content_tokens
    from scoring.store.alignment import normalised, tokens

    texts = [" Été  é\u0301té\tStraße\n60s, İstanbul: naïve_word x2 ", "Here is what I found:", "\t a \u00a0b "]
    with duckdb.connect() as con:
        for text in texts:
            norm, words = con.execute(f"SELECT {normalised('$t')}, {tokens('$t')}", {"t": text}).fetchone()
            assert norm == normalise_sentence(text)
            assert sorted(words) == sorted(content_tokens(text)), text


@pytest.mark.parametrize("sentence, citations, expected", [
    ("The release window starts on Monday.", ["rb-3"], Alignment("claims", ("monday",), 1.0)),
    ("Here is what I found:", [], Alignment("no_claim", (), 1.0)),
    ("Here is what I found:", ["rb-3"], Alignment("unlabelled", (), 1.0)),
    ("The window starts soon.", [], Alignment("unlabelled", (), 1 - 2 / 4)),  # 2 of 4 tokens: below 0.6
    ("Windows and releases start sometime.", [], Alignment("unlabelled", (), 1.0)),  # other words entirely
])
def test_lexical_alignment_by_hand(sentence, citations, expected):
    """Proposition tokens {release, window, starts, monday}; "windows"/"releases" are other tokens."""
    found = lexical_alignment(sentence, citations, {"monday": "The release window starts on Monday."})
    assert (found.outcome, found.claim_ids) == (expected.outcome, expected.claim_ids)
    assert found.confidence == pytest.approx(expected.confidence)


def test_sentence_claims_by_hand():
    """One sentence to two claims; two sentences to one claim with one wrong citation (the union keeps
    it: the claim is unsupported); a no_claim sentence; an unlabelled one."""
    claims = sentence_claims(
        [("rb-3",), ("rb-3", "rb-4"), (), ("rb-1",)],
        [Alignment("claims", ("a", "b")), Alignment("claims", ("a",)), Alignment("no_claim"),
         Alignment("unlabelled")])
    assert claims == (("a", ("rb-3", "rb-4")), ("b", ("rb-3",)), ("unlabelled#3", ("rb-1",)))


def test_the_refresh_reports_aligned_claims_beyond_max_claims(tmp_path):
    questions = [{"id": "q0", "text": "Q?", "type": "lookup", "split": "dev", "critical": False, "tags": [],
                  "relevant": ["d0"], "support": {"c0": ["d0"], "c1": ["d0"]},
                  "claims": {"c0": "alpha beta", "c1": "alpha gamma"}}]
    write_suite_folder(tmp_path, "s", [{"id": "d0", "text": "t"}], questions, max_claims=2)
    # two sentences within max_claims, but the second states both claims and the first neither
    sentences = [{"text": "Fact number one stated here.", "citations": [0]},
                 {"text": "Alpha beta gamma.", "citations": [0]}]
    write_run_folder(tmp_path, run_manifest("r", suite="s", k=1),
                     [{"question_id": "q0", "retrieved": ["d0"], "answer_sentences": sentences}])
    with pytest.raises(Exception) as raised:
        refresh(tmp_path, tmp_path / "db.duckdb")
    assert ("runs/r/records.jsonl:1: question 'q0': field 'answer_sentences': aligned, the sentences make 3 claims, "
            "more than the suite's max_claims (2)") in str(raised.value).replace(f"{tmp_path}/", "")
    assert not (tmp_path / "db.duckdb").exists()


def test_json_round_trip_of_a_sentence_record():
    """A record with answer_sentences and no claims is a valid record line (docs/formats.md example)."""
    line = json.loads('{"question_id": "q-1", "retrieved": ["rb-3", "rb-4"], "answer_sentences": '
                      '[{"text": "The release window starts on Monday.", "citations": [0]}]}')
    assert resolve_citations(line["answer_sentences"][0]["citations"], line["retrieved"]) == ("rb-3",)


def test_an_overlap_exactly_at_the_threshold_aligns_in_both_implementations(tmp_path):
    """3 of the proposition's 5 tokens = 0.6 = LEXICAL_THRESHOLD: aligned; 2 of 5 is not."""
    questions = [{"id": "q0", "text": "Q?", "type": "lookup", "split": "dev", "critical": False, "tags": [],
                  "relevant": ["d0"], "support": {"c0": ["d0"]}, "claims": {"c0": "alpha beta gamma delta epsilon"}}]
    write_suite_folder(tmp_path, "s", [{"id": "d0", "text": "t"}], questions)
    sentences = [{"text": "Alpha beta gamma.", "citations": [0]}, {"text": "Alpha beta zeta.", "citations": [0]}]
    write_run_folder(tmp_path, run_manifest("r", suite="s", k=1),
                     [{"question_id": "q0", "retrieved": ["d0"], "answer_sentences": sentences}])
    refresh(tmp_path, tmp_path / "db.duckdb")
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        found = con.execute("SELECT outcome, confidence FROM alignments ORDER BY sentence").fetchall()
    assert found == [("claims", pytest.approx(0.6)), ("unlabelled", pytest.approx(0.6))]
    props = {"c0": "alpha beta gamma delta epsilon"}
    assert [lexical_alignment(s["text"], ["d0"], props).outcome for s in sentences] == ["claims", "unlabelled"]
