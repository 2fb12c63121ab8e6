"""Corrected Coverage and abstention rates: the question unit of a review sample (each drawn answer reviewed
sentence by sentence), the frame's values by hand and against the SQL engine, and the figures end to end on
a copy of the demo (`scoring.decide.frames`, `scoring.decide.corrected`)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from scoring.cli import main
from scoring.decide.corrected import corrected_metric, read_corrected
from scoring.decide.frames import QUESTION_METRICS, AlignmentRow, answer_values, question_frames
from scoring.errors import Problems
from scoring.store.samples import read_sample

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"
RUN = "prod-text"


def row(outcome: str, claims: list[str], citations: list[str]) -> AlignmentRow:
    return AlignmentRow("r", "q", 0, "text", citations, "judge", "j", outcome, claims, True)


def test_an_answer_s_values_by_hand():
    ok = {"c1": {"d1", "d2"}, "c2": {"d3"}}
    sentences = [row("claims", ["c1"], ["d1"]), row("claims", ["c1", "c2"], ["d2"]), row("no_claim", [], [])]
    # c1 cites d1 and d2 (the union of its two sentences), both fully supporting it and visible: covered;
    # c2 cites d2, which does not support it: not covered. Two claims made.
    assert answer_values(sentences, ok, {"d1", "d2", "d3"}) == (1, 2)
    # d2 outside the visible top k: c1 no longer covered
    assert answer_values(sentences, ok, {"d1", "d3"}) == (0, 2)
    # an unlabelled sentence is a claim no expected claim holds; no claim at all is an abstention
    assert answer_values([row("unlabelled", [], ["d1"])], ok, {"d1"}) == (0, 1)
    assert answer_values([row("no_claim", [], []), row("no_claim", [], [])], ok, {"d1"}) == (0, 0)


POOLED = {"coverage": "sum(n_expected_supported), sum(n_expected)",
          "abstention_correct": "sum(abstention_correct::INTEGER), count(abstention_correct)",
          "false_abstention": "sum(false_abstention::INTEGER), count(false_abstention)"}
"""Each question metric's pooled figure over `question_scores`, written here by hand (docs/schema.md)."""


def scored(con: duckdb.DuckDBPyConnection, metric: str, questions: list[str]) -> float | None:
    s, c = con.execute(f"SELECT {POOLED[metric]} FROM question_scores WHERE run_id = ? "
                       "AND list_contains(?::VARCHAR[], question_id)", [RUN, questions]).fetchall()[0]
    return None if not c else s / c


def test_judge_only_figures_are_the_database_s(demo_db):
    """With no question sample, every frame answer is predicted from the alignments the refresh applied:
    its judge-only figure is the SQL engine's pooled figure, on every slice (two implementations agree)."""
    with duckdb.connect(str(demo_db), read_only=True) as con:
        frames = question_frames(con, "demo", [RUN], None)
        assert frames is not None and frames["coverage"].sample is None
        assert len(frames["coverage"].items) > 100 and len(frames["abstention_correct"].items) > 10
        slices = {"all": None, "answerable": True, "unanswerable": False}
        types = [t for (t,) in con.execute("SELECT DISTINCT type FROM questions WHERE suite = 'demo'").fetchall()]
        for name in [*slices, *(f"type:{t}" for t in types)]:
            if name in slices:
                chosen = [q for (q,) in con.execute(
                    "SELECT question_id FROM questions WHERE suite = 'demo' AND (? IS NULL OR answerable = ?)",
                    [slices[name], slices[name]]).fetchall()]
            else:
                chosen = [q for (q,) in con.execute("SELECT question_id FROM questions WHERE suite = 'demo' AND "
                                                    "type = ?", [name[5:]]).fetchall()]
            for metric in QUESTION_METRICS:
                found = corrected_metric(con, "demo", [RUN], metric, slice_=name, found=frames[metric])
                want = scored(con, metric, chosen)
                if found is None:
                    assert want is None, (metric, name)
                    continue
                assert found.judge == pytest.approx(want, abs=1e-12), (metric, name)
                assert not found.corrected.valid and "--unit question" in found.corrected.reason


def reviews_replaying_the_judge(con: duckdb.DuckDBPyConnection, items, changed: str) -> list[dict]:
    """Review lines for each sentence of the drawn answers that no reviewer aligned: as the applied
    automatic alignment, except on the answer to `changed`, every sentence of which the reviewer finds
    states nothing (`no_claim`)."""
    out = []
    for n, item in enumerate(items):
        for question, text, outcome, claims in con.execute(
                "SELECT question_id, text, outcome, claim_ids FROM alignments WHERE run_id = ? AND question_id = ? "
                "AND applied AND aligner <> 'human' ORDER BY sentence", [item.run_id, item.question_id]).fetchall():
            decided = "no_claim" if question == changed else list(claims) if outcome == "claims" else outcome
            out.append({"at": f"2026-11-20T10:{n:02d}:00Z", "reviewer": "tess", "kind": "alignment",
                        "question_id": question, "sentence": text, "claim_ids": decided, "sample": "answers"})
    return out


def lowering_label(con: duckdb.DuckDBPyConnection, drawn: list[str]) -> tuple[str, str]:
    """(question, sentence) of an undrawn answer with two or more sentences resting on the judge, one of
    which, found by a reviewer to state nothing, lowers the answer's Coverage."""
    from scoring.decide.frames import read_answers

    answers = read_answers(con, "demo", [RUN])
    by_answer: dict[str, list[AlignmentRow]] = {}
    for (run, question, _), own in sorted(answers.groups.items()):
        if question not in drawn and not any(a.aligner == "human" for a in own):
            by_answer.setdefault(question, []).append(next(a for a in own if a.applied))
    for question, sentences in by_answer.items():
        ok, seen = answers.ok.get(question, {}), answers.visible.get((RUN, question), set())
        before = answer_values(sentences, ok, seen)[0]
        for n, sentence in enumerate(sentences):
            if len(sentences) > 1 and sentence.outcome == "claims":
                muted = [*sentences[:n], sentence._replace(outcome="no_claim", claim_ids=[]), *sentences[n + 1:]]
                if answer_values(muted, ok, seen)[0] < before:
                    return question, sentence.text
    raise AssertionError("the demo has no such answer")


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory) -> tuple[Path, Path, str]:
    """A copy of the demo with a question sample of prod-text (30 answers, by answerable, seed 3) whose first
    22 answers are reviewed: as the judge aligned them, but for one answerable question the reviewer says
    nothing is claimed (an abstention the judge missed)."""
    root = tmp_path_factory.mktemp("answers")
    ws = Path(shutil.copytree(DEMO, root / "ws"))
    db = root / "db.duckdb"
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    assert main(["sample", str(ws), "--runs", RUN, "--unit", "question", "--size", "30", "--strata", "answerable",
                 "--seed", "3", "--name", "answers", "--db", str(db)]) == 0
    problems = Problems()
    sample = read_sample(ws / "suites" / "demo" / "samples" / "answers.jsonl", problems)
    assert not problems.items and sample.unit == "question" and len(sample.items) == 30
    first = sample.items[:22]
    with duckdb.connect(str(db), read_only=True) as con:
        answerable = {q for (q,) in con.execute("SELECT question_id FROM question_scores WHERE run_id = ? AND "
                                                "false_abstention = false", [RUN]).fetchall()}
        changed = next(i.question_id for i in first if i.question_id in answerable)
        lines = reviews_replaying_the_judge(con, first, changed)
        # outside the sample (labels, never the sample's): the last drawn answer reviewed whole, and one
        # sentence of an undrawn answer that the judge aligned to a covered claim found to state nothing
        outside = reviews_replaying_the_judge(con, sample.items[-1:], changed="")
        question, text = lowering_label(con, [i.question_id for i in sample.items])
    outside.append({"at": "2026-11-21T10:00:00Z", "reviewer": "uma", "kind": "alignment", "question_id": question,
                    "sentence": text, "claim_ids": "no_claim"})
    for x in outside:
        x.pop("sample", None)
        x["reviewer"] = "uma"
    (ws / "suites" / "demo" / "reviews" / "tess.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (ws / "suites" / "demo" / "reviews" / "uma.jsonl").write_text("".join(json.dumps(x) + "\n" for x in outside))
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    return ws, db, changed


def test_a_question_sample_is_drawn_over_answers_and_reads_back(reviewed):
    ws, db, _ = reviewed
    text = (ws / "suites" / "demo" / "samples" / "answers.jsonl").read_text().splitlines()
    draw = json.loads(text[0])
    assert (draw["unit"], draw["strata"], draw["seed"]) == ("question", ["answerable"], 3)
    items = [json.loads(x) for x in text[1:]]
    assert all(set(x) == {"kind", "position", "stratum", "population", "drawn", "inclusion", "run_id",
                          "question_id"} for x in items)
    with duckdb.connect(str(db), read_only=True) as con:  # the frame: answers resting on an automatic alignment
        (answers,) = con.execute("SELECT count(DISTINCT question_id) FROM alignments WHERE run_id = ? AND applied "
                                 "AND aligner <> 'human'", [RUN]).fetchall()[0], 
    # the frame was counted before the reviews: the 22 reviewed answers no longer rest on the judge
    assert draw["population"] >= answers[0] and len({x["question_id"] for x in items}) == 30


def test_a_reviewed_answer_s_truth_is_the_reviewers(reviewed):
    _, db, changed = reviewed
    with duckdb.connect(str(db), read_only=True) as con:
        frames = question_frames(con, "demo", [RUN], None)
        n_expected = con.execute("SELECT n_expected FROM question_scores WHERE run_id = ? AND question_id = ?",
                                 [RUN, changed]).fetchall()[0][0]
    assert frames["coverage"].sample == "answers"
    truths = {i.question_id: i for i in frames["false_abstention"].items if i.truth is not None}
    assert truths[changed].prediction == (0.0, 1.0) and truths[changed].truth == (1.0, 1.0)
    assert [i.truth for i in frames["coverage"].items if i.question_id == changed] == [(0.0, float(n_expected))]
    agreeing = [i for m in QUESTION_METRICS for i in frames[m].items if i.truth is not None and i.question_id != changed]
    assert agreeing and all(i.truth == i.prediction for i in agreeing)
    drawn = sum(i.drawn for i in frames["coverage"].items) + sum(i.drawn for i in frames["abstention_correct"].items)
    assert drawn == 30  # every drawn answer is in exactly one of the two: answerable or not
    # 22 reviewed in the sample; the last drawn answer, reviewed whole outside the sample, is not the sample's
    reviewed_items = [i for m in ("coverage", "abstention_correct") for i in frames[m].items if i.truth is not None]
    assert len(reviewed_items) == 22
    # an unreviewed answer is predicted from the alignments applied (reviewers' labels where they aligned a
    # sentence outside the sample, the judge's elsewhere): its prediction is the database's figure
    unreviewed = [i for m in QUESTION_METRICS for i in frames[m].items if i.truth is None]
    assert unreviewed and all(i.prediction == i.part for i in unreviewed)


def test_the_corrected_rates_move_toward_the_reviewers(reviewed, capsys):
    _, db, changed = reviewed
    with duckdb.connect(str(db), read_only=True) as con:
        false = corrected_metric(con, "demo", [RUN], "false_abstention")
        coverage = corrected_metric(con, "demo", [RUN], "coverage")
        facts = read_corrected(con, "demo", ["prod-baseline"], [RUN])
    for found in (false, coverage):
        assert found.sample == "answers" and found.corrected.valid, found.corrected.reason
        assert found.corrected.low <= found.corrected.estimate <= found.corrected.high
    # the reviewers found an abstention the judge missed, and nothing else different: the corrected false
    # abstention rate rises above the judge's, the corrected Coverage falls below it
    assert false.corrected.estimate > false.judge and coverage.corrected.estimate < coverage.judge
    assert facts.sampled_metrics() == ["support", *QUESTION_METRICS]
    assert main(["compare", "prod-baseline", RUN, "--db", str(db), "--format", "json"]) == 0
    block = json.loads(capsys.readouterr().out)["corrected"]
    assert block["metric"] == "support" and block["sample"] == "prod-text-support"  # as before
    got = block["metrics"]["false_abstention"]
    assert (got["sample"], got["estimate"], got["judge"]) == ("answers", pytest.approx(false.corrected.estimate),
                                                              pytest.approx(false.judge))
    assert got["n_reviewed"] == false.corrected.reviewed and got["aggregate"] == "macro"
    assert main(["compare", "prod-baseline", RUN, "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "false_abstention (all): judge-only" in text and "Corrected paired delta of FalseAbstention" in text


def test_sample_status_reads_a_question_sample(reviewed, capsys):
    ws, db, _ = reviewed
    assert main(["sample", str(ws), "--runs", RUN, "--status", "--name", "answers", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "sample answers: 22 of 30 sampled answers reviewed" in out and "coverage (all)" in out and "false_abstention (all)" in out
    assert "one more review narrows the interval by about" in out


def corrected_policy(tmp_path: Path, metric: str, bound: str) -> Path:
    path = tmp_path / f"{metric}.toml"
    path.write_text(f'name = "corrected"\n\n[[gates]]\nmetric = "{metric}"\n{bound}\nestimate = "corrected"\n')
    return path


def test_a_corrected_gate_on_coverage_reads_the_question_sample(reviewed, tmp_path, capsys):
    _, db, _ = reviewed
    assert main(["compare", "prod-baseline", RUN, "--db", str(db), "--policy",
                 str(corrected_policy(tmp_path, "coverage", "min = 0.05"))]) == 0
    assert main(["compare", "prod-baseline", RUN, "--db", str(db), "--policy",
                 str(corrected_policy(tmp_path, "coverage", "min = 0.95"))]) == 1  # the whole interval below
    assert main(["compare", "prod-baseline", RUN, "--db", str(db), "--policy",
                 str(corrected_policy(tmp_path, "false_abstention", "max = 0.1"))]) == 3  # it straddles the bound
    out = capsys.readouterr().out
    assert "FalseAbstention (macro, corrected by a review sample) on all" in out and "straddles" in out


def test_without_a_question_sample_a_corrected_coverage_gate_is_inconclusive(demo_db, tmp_path, capsys):
    assert main(["compare", "prod-baseline", RUN, "--db", str(demo_db), "--policy",
                 str(corrected_policy(tmp_path, "coverage", "min = 0.05"))]) == 3
    assert "ragslice sample --unit question" in capsys.readouterr().out


def test_the_labels_queue_walks_a_question_sample_sentence_by_sentence(reviewed):
    from dashboard.data import labels
    from dashboard.data.labels import ALIGNMENT_QUEUE_SQL
    from scoring.store.alignment import normalised

    _, db, _ = reviewed
    sql = ALIGNMENT_QUEUE_SQL.replace("{normalised}", normalised("text"))
    runs = ["prod-baseline", RUN]
    with duckdb.connect(str(db), read_only=True) as con:
        queue = con.execute(sql, [runs, "demo", runs, "demo", runs, "demo", 400]).df()
        left = con.execute("SELECT position FROM samples WHERE sample = 'answers' AND position BETWEEN 23 AND 29 "
                           "ORDER BY position").fetchall()
    assert labels.ALIGNMENT_QUEUE_SQL is ALIGNMENT_QUEUE_SQL
    firsts = queue[queue["sample"] == "answers"]
    # the unreviewed answers (items 23 to 29; 30 was reviewed outside the sample) come first, in the sample's order, each sentence its own row
    assert not firsts.empty and list(firsts.index) == list(range(len(firsts)))
    assert sorted({int(p) for p in firsts["sample_position"]}) == [p for (p,) in left]
    assert list(firsts["sample_position"]) == sorted(firsts["sample_position"])


# --- coverage by simulation: answers of 1 to 3 expected claims (benchmarks/calibrate_ppi.py, coverage-answers) --

def test_corrected_coverage_interval_covers_at_its_nominal_rate():
    """1,500 answers in three strata, each of 1 to 3 expected claims, u ~ Binomial(c, p); the judge counts one
    more supported claim on 30% and 15% of two strata's answers. 8 reviewed a stratum, 300 trials (Monte Carlo
    se about 0.0126 at 0.95); the judge-only interval misses the bias every time."""
    import numpy as np

    from scoring.decide import ppi

    rng = np.random.default_rng(0)
    sizes, p, over = {"a": 600, "b": 500, "c": 400}, {"a": 0.8, "b": 0.65, "c": 0.5}, {"a": 0.0, "b": 0.3, "c": 0.15}
    truth, pred = {}, {}
    for h, n in sizes.items():
        c = rng.integers(1, 4, n)
        u = rng.binomial(c, p[h])
        truth[h] = np.stack([u, c], axis=1).astype(float)
        pred[h] = np.stack([u + ((rng.random(n) < over[h]) & (u < c)), c], axis=1).astype(float)
    every_truth, every_pred = np.concatenate(list(truth.values())), np.concatenate(list(pred.values()))
    true_value = every_truth[:, 0].sum() / every_truth[:, 1].sum()
    judged = every_pred[:, 0].sum() / every_pred[:, 1].sum()
    half = 1.96 * np.sqrt(((every_pred[:, 0] - judged * every_pred[:, 1]) ** 2).sum()) / every_pred[:, 1].sum()
    hits = 0
    for _ in range(300):
        strata = []
        for h, n in sizes.items():
            picked = rng.choice(n, 8, replace=False)
            rest = np.setdiff1d(np.arange(n), picked)
            strata.append(ppi.Stratum(h, n, truth[h][picked], pred[h][picked], pred[h][rest], drawn=8))
        found = ppi.ratio_estimate(strata, (0.0, 0.0))
        hits += found.low <= true_value <= found.high
    assert hits / 300 >= 0.95 - 3 * 0.0126
    assert not judged - half <= true_value <= judged + half


# --- the dashboard: the Labels page's progress and the release review's table -------------------------------

def test_the_dashboard_shows_the_question_sample(reviewed, monkeypatch):
    import tomllib

    from streamlit.testing.v1 import AppTest
    from streamlit.testing.v1.util import patch_config_options

    ws, db, _ = reviewed
    app = REPO / "dashboard" / "app.py"
    config = tomllib.loads((app.parent / ".streamlit" / "config.toml").read_text())
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    monkeypatch.setenv("RAGSLICE_WORKSPACE", str(ws))
    monkeypatch.setenv("RAGSLICE_REVIEWER", "carl")
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    with patch_config_options({f"{s}.{k}": v for s, options in config.items() for k, v in options.items()}):
        at = AppTest.from_file(str(app), default_timeout=120)
        at.query_params.update({"suite": "demo", "baseline": "prod-baseline", "candidate": RUN})
        at.switch_page("views/labels.py").run()
        assert not at.exception, [e.value for e in at.exception]
        line = at.get_by_key("sample_progress_candidate_question").markdown[0].value.replace("\\", "")
        assert line.startswith("Review sample answers (candidate): 22 of 30 sampled answers reviewed; ")
        assert "+/-" in line and "every sentence of each" in line
        at.switch_page("views/release_review.py").run()
        assert not at.exception, [e.value for e in at.exception]
        rows = at.get_by_key("box_w_corrected_support").dataframe[0].value
    assert list(rows["metric"]) == ["Support", "Coverage", "Abstention", "FalseAbstention"]
    assert list(rows["sample"]) == ["prod-text-support", "answers", "answers", "answers"]
    assert any(e.label.startswith("Support, Coverage and abstention corrected") for e in at.expander)


def test_a_question_item_naming_a_sentence_is_refused_with_file_and_line(tmp_path):
    from scoring.store.samples import draw_from_frame

    frame = [{"run_id": "r", "question_id": f"q-{i:03d}", "sentence": None, "text": None, "doc_id": None,
              "type": "lookup", "answerable": True} for i in range(12)]
    sample = draw_from_frame(frame, ["r"], unit="question", size=5, seed=2, name="s1", drawn_at="t")
    lines = [json.loads(x) for x in sample.text().splitlines()]
    assert all(set(x) == {"kind", "position", "stratum", "population", "drawn", "inclusion", "run_id",
                          "question_id"} for x in lines[1:])
    lines[3]["text"] = "A sentence."
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    problems = Problems()
    assert read_sample(path, problems) is None
    assert [(p.line, p.field) for p in problems.items] == [(4, "text")] and str(path) in str(problems.items[0])
