"""What the release review and the HTML report say about a judge: its kappa by slice (answerable,
unanswerable, each question type) and the demo candidate's Support judge-only, corrected with its
interval, and reviewed-only (the figures of tests/test_ppi.py, shown where a release manager reads)."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.util import patch_config_options

from fixtures import REPO, copy_database
from scoring.cli import main

APP = REPO / "dashboard" / "app.py"
TEXT = {"suite": "demo", "baseline": "prod-baseline", "candidate": "prod-text"}


def app_config() -> dict[str, object]:
    found = tomllib.loads((APP.parent / ".streamlit" / "config.toml").read_text())
    return {f"{section}.{key}": value for section, options in found.items() for key, value in options.items()}


@pytest.fixture
def demo(demo_db, monkeypatch):
    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    with patch_config_options(app_config()):
        yield AppTest.from_file(str(APP), default_timeout=120)


def release_review(at: AppTest, **params: str) -> AppTest:
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page("views/release_review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown(at: AppTest, key: str) -> pd.DataFrame:
    return at.get_by_key(f"box_{key}").dataframe[0].value


def test_the_release_review_shows_judge_only_corrected_and_reviewed_only_support(demo):
    at = release_review(demo, **TEXT)
    rows = shown(at, "w_corrected_support")
    # only the candidate's sentences rest on a judge; the baseline records its claims
    assert list(rows["side"]) == ["candidate"]
    row = rows.iloc[0]
    assert row["judge_only"] == pytest.approx(241 / 324)
    assert (round(row["corrected"], 3), round(row["low"], 3), round(row["high"], 3)) == (0.740, 0.625, 0.856)
    assert round(row["reviewed_only"], 3) == 0.664
    assert (row["n_sampled"], row["n_reviewed"], row["n_judged"]) == (100, 64, 364)
    assert pd.isna(row["reason"])


def test_the_release_review_says_nothing_of_a_judge_when_none_is_behind_the_support(demo):
    at = release_review(demo, suite="demo", baseline="prod-baseline", candidate="rerank-v2")
    with pytest.raises(KeyError):
        at.get_by_key("box_w_corrected_support")
    assert not any(e.label.startswith("Support corrected") for e in at.expander)


def test_the_verdict_card_says_how_many_claims_rest_on_a_judge(demo):
    """The card itself says that 238 of prod-text's claims stand on unreviewed automatic alignments (the count
    the Free-text answers panel below gives), and says nothing of a judge for rerank-v2."""
    at = release_review(demo, **TEXT)
    card = [m.value for m in at.get_by_key("verdict").markdown]
    assert any("Resting on a judge: 238 of the candidate's claims stand on unreviewed automatic alignments"
               in value.replace("\\", "") for value in card), card
    assert any(e.label.startswith("Free-text answers: 0 of the baseline's and 238 of the candidate's") for e in
               at.expander)
    at = release_review(demo, suite="demo", baseline="prod-baseline", candidate="rerank-v2")
    assert not any("Resting on a judge" in m.value for m in at.get_by_key("verdict").markdown)


def test_the_release_review_shows_each_aligner_s_kappa_by_slice(demo):
    at = release_review(demo, **TEXT)
    by = shown(at, "w_kappa_by_slice").set_index(["decided_by", "slice"])
    # the lexical aligner is good on answers and reads refusals as claims: 3 of 15 unanswerable sentences agree,
    # every one of its labels there the same (kappa 0)
    assert (by.loc[("lexical", "unanswerable"), "n"], by.loc[("lexical", "unanswerable"), "agreed"]) == (15, 3)
    assert by.loc[("lexical", "unanswerable"), "kappa"] == pytest.approx(0.0)
    assert by.loc[("lexical", "answerable"), "kappa"] > 0.9
    assert by.loc[("checker", "unanswerable"), "kappa"] == pytest.approx(1.0)
    # a type with fewer than 10 reviewed sentences has no kappa, and says why
    assert by.loc[("checker", "type:permission"), "n"] == 8
    assert pd.isna(by.loc[("checker", "type:permission"), "kappa"])
    assert by.loc[("checker", "type:permission"), "reason"] == "fewer than 10 sentences"


def test_compare_json_carries_kappa_by_slice(demo_db, capsys):
    assert main(["compare", "prod-baseline", "prod-text", "--db", str(demo_db), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["alignment"]["agreement_by_slice"]
    lexical = {r["slice"]: r for r in rows if r["aligner"] == "lexical"}
    assert {k: lexical["unanswerable"][k] for k in ("n", "agreed", "kappa", "reason")} == {
        "n": 15, "agreed": 3, "kappa": 0.0, "reason": None}
    assert lexical["type:outdated"]["kappa"] is None and lexical["type:outdated"]["reason"] == "fewer than 10 sentences"


def test_the_html_report_shows_judge_vs_corrected(demo_db, tmp_path):
    from scoring.io.demo import bundled_policy

    db = copy_database(demo_db, tmp_path)  # the report records its verdict
    out = tmp_path / "r.html"
    assert main(["report", "prod-baseline", "prod-text", "--db", str(db), "--policy", str(bundled_policy()),
                 "-o", str(out)]) in (0, 1, 3)
    page = out.read_text()
    assert "<h3>Judge vs corrected Support</h3>" in page
    assert "<td>candidate</td>" in page and "0.625 to 0.856" in page and "prod-text-support" in page
    assert "kappa by slice: answerable" in page


@pytest.fixture
def reviewing(tmp_path, monkeypatch) -> Path:
    """The demo workspace copied and refreshed, the dashboard in review mode on it (reviewer carl)."""
    import shutil

    from scoring.store.refresh import refresh

    ws = Path(shutil.copytree(REPO / "data" / "demo", tmp_path / "ws"))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    monkeypatch.setenv("RAGSLICE_WORKSPACE", str(ws))
    monkeypatch.setenv("RAGSLICE_REVIEWER", "carl")
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    return ws


def test_the_labels_page_shows_the_review_sample_s_progress(reviewing):
    with patch_config_options(app_config()):
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.query_params.update(TEXT)
        at.switch_page("views/labels.py").run()
    assert not at.exception, [e.value for e in at.exception]
    line = at.get_by_key("sample_progress_candidate").markdown[0].value.replace("\\", "")
    # the figures of `ragslice sample data/demo --runs prod-text --status`
    assert ("Review sample prod-text-support (candidate): 64 of 100 sampled sentences reviewed; Support +/-0.116 "
            "now, about +/-0.081 at 100.") in line


def test_the_labels_queue_puts_the_review_sample_first_and_marks_its_decisions(reviewing):
    """The unreviewed sentences of the demo's sample prod-text-support lead the queue in the sample's order
    (the order `ragslice sample --status` lists); saving the first writes a decision carrying the sample's
    name, so it counts as the sample's review."""
    ws = reviewing
    drawn = [json.loads(line) for line in (ws / "suites" / "demo" / "samples" / "prod-text-support.jsonl").open()]
    reviewed = {(r["question_id"], " ".join(r["sentence"].split())) for path in (ws / "suites" / "demo" / "reviews").glob("*.jsonl")
                for r in map(json.loads, path.open()) if r.get("sample") == "prod-text-support"}
    waiting = [d for d in drawn[1:] if (d["question_id"], " ".join(d["text"].split())) not in reviewed]
    assert len(waiting) == 36  # 64 of the 100 reviewed
    with patch_config_options(app_config()):
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.query_params.update(TEXT)
        at.switch_page("views/labels.py").run()
    assert not at.exception, [e.value for e in at.exception]
    first = at.get_by_key("align_0")
    assert first.text[0].value.startswith(waiting[0]["question_id"] + ":")
    assert f"item {waiting[0]['position']} of review sample prod-text-support" in first.caption[0].value.replace("\\", "")
    second = at.get_by_key("align_1")
    assert f"item {waiting[1]['position']} of review sample prod-text-support" in second.caption[0].value.replace("\\", "")
    first.selectbox[0].set_value("no_claim")
    first.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    saved = [json.loads(line) for line in (ws / "suites" / "demo" / "reviews" / "carl.jsonl").open()]
    assert saved[-1]["kind"] == "alignment" and saved[-1]["question_id"] == waiting[0]["question_id"]
    assert saved[-1]["sample"] == "prod-text-support"


def test_the_slides_say_where_the_judge_and_the_review_sample_differ(demo_db):
    """The "where it regressed" screen says the candidate's judge-only and corrected Support when they
    differ (prod-text: the figures of tests/test_ppi.py); a candidate whose Support rests on no judge has no
    such line."""
    import duckdb

    from scoring.decide import present
    from scoring.decide.comparison import compare
    from scoring.decide.report import load_evidence
    from scoring.io.demo import bundled_policy

    with duckdb.connect(str(demo_db), read_only=True) as con:
        found = {}
        for candidate in ("prod-text", "rerank-v2"):
            c = compare(con, "prod-baseline", candidate, policy=bundled_policy())
            where = next(s for s in present.screens(c, load_evidence(con, c, [])) if s.key == "where")
            found[candidate] = where.body
    assert ("Judge vs reviewers: the candidate&#x27;s pooled Support is 0.744 as the judge aligned its sentences, "
            "0.740 corrected by the review sample (95% 0.625 to 0.856; 64 of 100 sampled sentences reviewed)."
            ) in found["prod-text"]
    assert "Judge vs reviewers" not in found["rerank-v2"]


def test_question_detail_marks_each_sampled_sentence_reviewed_or_to_review(demo_db, monkeypatch):
    """The sentence table's `sample` column, over every question of the demo's sample prod-text-support:
    100 sentences sampled, 64 reviewed in the sample, as the corrected Support counts them; sentences the
    sample did not draw are left empty. The page shows the column."""
    import duckdb

    from dashboard import data

    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    with duckdb.connect(str(demo_db), read_only=True) as con:
        drawn = con.execute("SELECT question_id, sentence FROM samples WHERE sample = 'prod-text-support' "
                            "AND run_id = 'prod-text'").fetchall()
    status: dict[str, int] = {}
    for question in sorted({q for q, _ in drawn}):
        table = data.answer_sentences("demo", ["prod-text"], question)["prod-text"]
        marked = {int(n) - 1 for n, value in zip(table["#"], table["sample"]) if isinstance(value, str)}
        assert marked == {s for q, s in drawn if q == question}, question
        for value in table["sample"].dropna():
            status[value] = status.get(value, 0) + 1
    assert status == {"reviewed": 64, "to review": 36}
    with patch_config_options(app_config()):
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.query_params.update({**TEXT, "q": drawn[0][0]})
        at.switch_page("views/question_detail.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "sample" in shown(at, "w_sentences_candidate").columns


def test_a_review_outside_the_sample_leaves_a_sampled_sentence_to_review(reviewing):
    """A reviewer aligns a sampled sentence without naming the sample: the alignment counts as a label
    (the sentence is decided by the reviewer), never as the sample's review, so it stays 'to review'."""
    import duckdb

    from dashboard import data
    from scoring.store.refresh import refresh

    db = Path(__import__("os").environ["RAGSLICE_DB"])
    table = None
    with duckdb.connect(str(db), read_only=True) as con:
        waiting = con.execute("SELECT question_id, sentence FROM samples WHERE sample = 'prod-text-support' "
                              "ORDER BY position").fetchall()
    for question, sentence in waiting:
        table = data.answer_sentences("demo", ["prod-text"], question)["prod-text"]
        if table.loc[table["#"] == sentence + 1, "sample"].item() == "to review":
            break
    text = table.loc[table["#"] == sentence + 1, "sentence"].item()
    with (reviewing / "suites" / "demo" / "reviews" / "carl.jsonl").open("a") as f:
        f.write(json.dumps({"at": "2026-12-01T10:00:00Z", "reviewer": "carl", "kind": "alignment",
                            "question_id": question, "sentence": text, "claim_ids": "unlabelled"}) + "\n")
    refresh(reviewing, db)
    after = data.answer_sentences("demo", ["prod-text"], question)["prod-text"]
    row = after.loc[after["#"] == sentence + 1].iloc[0]
    assert row["decided_by"] == "reviewer carl" and row["sample"] == "to review"
