"""`ragslice align` and refresh with judges: a real program judge answers once, its answers are cached, refresh
applies them offline with a reviewer's decision first and the lexical aligner last; agreement is measured."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import pytest

from fixtures import R, build, edit_line, write_jsonl
from scoring.cli import main
from scoring.store.refresh import refresh

JUDGE = """\
import json, re, sys
with open("calls.txt", "a") as log:
    for line in sys.stdin:
        request = json.loads(line)
        log.write(request["sentence"] + "\\n")
        text = request["sentence"].lower()
        ids = [c["id"] for c in request["claims"] if c["id"] in re.findall(r"[a-z]+", text)]
        answer = {"claim_ids": ids, "confidence": 0.9} if ids else {"claim_ids": "unlabelled", "confidence": 0.6}
        if "found" in text:
            answer = {"claim_ids": "no_claim"}
        print(json.dumps(answer), flush=True)
"""

SENTENCES = [
    {"text": "Here is what I found:", "citations": []},
    {"text": "The window opens on monday.", "citations": [0]},   # names claim `monday`: the judge aligns it
    {"text": "The release window starts on Mondays.", "citations": [0]},  # the lexical aligner's match only
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = build(tmp_path / "ws")
    edit_line(R(root), 1, lambda obj: (obj.pop("claims"), obj.update(answer_sentences=SENTENCES)))
    folder = root / "suites" / "demo"
    (folder / "judge.py").write_text(JUDGE)
    (folder / "judges.toml").write_text(f'[judges.names]\ncommand = ["{sys.executable}", "judge.py"]\ntimeout = 20\n')
    return root


def alignments(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT sentence, aligner, decided_by, outcome, claim_ids, applied FROM alignments "
                           "WHERE run_id = 'base' AND question_id = 'q-1' ORDER BY sentence, aligner").fetchall()


def test_align_asks_once_and_refresh_applies_the_cache_offline(ws, tmp_path, capsys):
    suite = ws / "suites" / "demo"
    assert main(["align", str(ws), "--runs", "base", "--judge", "names"]) == 0
    assert "3 sentences, 0 answered before (cached), 3 answered now, 0 failed" in capsys.readouterr().out
    assert main(["align", str(ws), "--runs", "base", "--judge", "names"]) == 0
    assert "3 sentences, 3 answered before (cached), 0 answered now, 0 failed" in capsys.readouterr().out
    assert len((suite / "calls.txt").read_text().splitlines()) == 3  # the second run asked nothing
    (suite / "judge.py").unlink()  # refresh never calls a judge
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    assert alignments(db) == [
        (0, "judge", "names", "no_claim", [], True), (0, "lexical", "lexical", "no_claim", [], False),
        (1, "judge", "names", "claims", ["monday"], True), (1, "lexical", "lexical", "unlabelled", [], False),
        (2, "judge", "names", "unlabelled", [], True), (2, "lexical", "lexical", "claims", ["monday"], False),
    ]
    # a reviewer decides sentence 2 (as the lexical aligner did): the decision wins over the judge
    write_jsonl(suite / "reviews" / "ann.jsonl", [{
        "at": "2026-11-30T10:00:00Z", "reviewer": "ann", "kind": "alignment", "question_id": "q-1",
        "sentence": "The release  window starts on Mondays.", "claim_ids": ["monday"]}])
    refresh(ws, db)
    found = alignments(db)
    assert (2, "human", "ann", "claims", ["monday"], True) in found
    assert (2, "judge", "names", "unlabelled", [], False) in found
    with duckdb.connect(str(db), read_only=True) as con:
        claims = con.execute("SELECT claim_id, citations, supported, aligned_by FROM claims WHERE run_id = 'base' "
                             "AND question_id = 'q-1' ORDER BY position").fetchall()
    # sentences 1 (judge) and 2 (human) state `monday`: one claim, the least reviewed aligner named
    assert claims == [("monday", ["rb-3"], True, "judge")]


def test_a_failing_judge_is_reported_and_its_sentence_left_to_the_next_aligner(ws, tmp_path, capsys):
    suite = ws / "suites" / "demo"
    (suite / "judge.py").write_text("import sys\nsys.stdin.readline()\nsys.exit(3)\n")
    assert main(["align", str(ws), "--runs", "base", "--judge", "names"]) == 1
    captured = capsys.readouterr()
    assert "3 sentences, 0 answered before (cached), 0 answered now, 3 failed" in captured.out
    assert "failed: q-1:" in captured.err and "exit" in captured.err
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    assert {(s, a) for s, a, _, _, _, applied in alignments(db) if applied} == {(0, "lexical"), (1, "lexical"),
                                                                                 (2, "lexical")}


def test_judges_and_caches_are_checked_like_any_input(ws, tmp_path):
    suite = ws / "suites" / "demo"
    (suite / "judgements").mkdir()
    (suite / "judgements" / "ghost.jsonl").write_text("")
    (suite / "judges.toml").write_text('[judges.names]\ncommand = []\n')
    with pytest.raises(Exception) as raised:
        refresh(ws, tmp_path / "db.duckdb")
    text = str(raised.value)
    assert "judges.toml" in text and "command" in text
    assert "judgements/ghost.jsonl: answers of a judge that judges.toml does not declare" in text
    assert not (tmp_path / "db.duckdb").exists()


def test_an_unknown_judge_is_refused(ws, capsys):
    assert main(["align", str(ws), "--runs", "base", "--judge", "nobody"]) == 2
    assert "is not declared in" in capsys.readouterr().err


def test_a_new_cached_answer_rescores_the_suite(ws, tmp_path, capsys):
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    assert main(["align", str(ws), "--runs", "base", "--judge", "names"]) == 0
    summary = refresh(ws, db)
    assert summary.runs_scored == 2  # the cache is part of the suite's files: its runs are scored again
    assert json.loads((ws / "suites" / "demo" / "judgements" / "names.jsonl").read_text().splitlines()[0])["judge"] \
        == "names"


def test_compare_reports_claims_by_aligner_the_measured_agreement_and_the_alignment_gate(ws, tmp_path, capsys):
    suite = ws / "suites" / "demo"
    assert main(["align", str(ws), "--runs", "base", "--judge", "names"]) == 0
    write_jsonl(suite / "reviews" / "ann.jsonl", [{
        "at": "2026-11-30T10:00:00Z", "reviewer": "ann", "kind": "alignment", "question_id": "q-1",
        "sentence": "The release window starts on Mondays.", "claim_ids": ["monday"]}])
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    policy = tmp_path / "policy.toml"
    policy.write_text('name = "p"\nmin_alignment_kappa = 0.5\n[[gates]]\nmetric = "support"\nslice = "all"\n'
                      'aggregate = "pooled"\nmin = 0.0\n')
    capsys.readouterr()
    main(["compare", "base", "cand", "--db", str(db), "--policy", str(policy), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    found = doc["alignment"]
    # base answers q-1 in sentences: 0 no_claim (judge), 1 monday (judge), 2 monday (ann); one claim, `monday`,
    # resting on the judge's alignment of sentence 1
    assert found["baseline"]["sentences"] == {"human": 1, "judge": 2}
    assert found["baseline"]["claims"] == {"judge": 1, "recorded": 1} and found["baseline"]["unreviewed_claims"] == 1
    assert found["candidate"]["sentences"] == {} and found["questions_resting_on_automatic_alignments"] == 1
    agreement = {row["decided_by"]: row for row in found["agreement"]}
    # the one reviewed sentence: ann says monday, the judge unlabelled (kappa 0), the lexical aligner monday (one
    # label each, so chance explains the agreement: no kappa)
    assert (agreement["names"]["n"], agreement["names"]["agreed"], agreement["names"]["kappa"]) == (1, 0, 0.0)
    assert agreement["names"]["confusion"] == [["monday", "unlabelled", 1]]
    assert (agreement["lexical"]["n"], agreement["lexical"]["agreed"], agreement["lexical"]["kappa"]) == (1, 1, None)
    gate = next(g for g in doc["gates"] if g["kind"] == "agreement")
    assert not gate["passed"] and gate["observed"] == 0.0 and gate["n"] == 1
    assert "judge names: kappa 0" in gate["reason"] and doc["verdict"] == "fail"
    without = doc["without_unreviewed_alignments"]
    assert without["n_excluded"] == 1


def test_compare_text_and_markdown_say_what_rests_on_automatic_alignments(ws, tmp_path, capsys):
    assert main(["align", str(ws), "--runs", "base", "--judge", "names"]) == 0
    write_jsonl(ws / "suites" / "demo" / "reviews" / "ann.jsonl", [{
        "at": "2026-11-30T10:00:00Z", "reviewer": "ann", "kind": "alignment", "question_id": "q-1",
        "sentence": "The release window starts on Mondays.", "claim_ids": ["monday"]}])
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    policy = tmp_path / "policy.toml"
    policy.write_text('name = "p"\nmin_alignment_kappa = 0.5\n[[gates]]\nmetric = "support"\nslice = "all"\n'
                      'aggregate = "pooled"\nmin = 0.0\n')
    capsys.readouterr()
    main(["compare", "base", "cand", "--db", str(db), "--policy", str(policy)])
    out = capsys.readouterr().out
    # as in the JSON above: base's two claims, one recorded, one resting on judge names (0 of 1 reviewed agreed)
    assert "The baseline's 2 claims: 1 recorded as claims, 1 aligned by a judge; 1 rest on unreviewed" in out
    assert "Judge names agrees with the reviewers on 0 of 1 reviewed sentences (kappa 0.000)." in out
    assert "The lexical aligner agrees with the reviewers on 1 of 1 reviewed sentences (no kappa: one label only)." in out
    assert "Without the 1 question(s) resting on unreviewed automatic alignments: " in out
    main(["compare", "base", "cand", "--db", str(db), "--policy", str(policy), "--format", "markdown"])
    out = capsys.readouterr().out
    assert "**Without the 1 question(s) resting on unreviewed automatic alignments:**" in out
    assert "- The baseline's 2 claims: 1 recorded as claims, 1 aligned by a judge" in out
