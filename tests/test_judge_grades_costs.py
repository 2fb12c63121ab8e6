"""Judges that grade citations and report their cost, and judges asked again: the answer schema's `support`
and `usage`, the cache and repeats files (checked with file and line), a program and an endpoint judge sent
the cited documents, `ragslice align --repeat N --sample M`, and the refresh's `judge_repeats`,
`alignments.support` and the compare JSON's support agreement, self-agreement and cost per run
(`scoring.decide.judging`)."""
from __future__ import annotations

import json
import shutil
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import numpy as np
import pytest

from scoring.cli import main
from scoring.decide.agreement import weighted_kappa, weighted_kappa_interval
from scoring.decide.judging import labelled_grade
from scoring.errors import Problems
from scoring.io.judges import (
    GRADES_PROMPT, Answer, Failure, Judge, cache_entry, judge_again, judge_missing, judge_requests, parse_answer,
    read_cache, read_repeats, repeats_path,
)
from scoring.metrics.reference import lexical_support

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"

GRADER = r'''
import json, os, sys

count = 0
for line in sys.stdin:
    request = json.loads(line)
    count += 1
    docs = request.get("documents", [])
    grades = ["full" if d["text"] and d["text"] in request["sentence"] else "partial" if d["text"] else "none"
              for d in docs]
    claims = [c["id"] for c in request["claims"] if c["id"] in request["sentence"]] or "unlabelled"
    if os.path.exists("flaky") and count % 2 == 0:
        claims = "unlabelled" if claims != "unlabelled" else "no_claim"
    answer = {"claim_ids": claims, "usage": {"prompt_tokens": len(line.split()), "completion_tokens": 7,
                                             "cost_usd": 0.002}}
    if "documents" in request:
        answer["support"] = grades
    print(json.dumps(answer), flush=True)
'''

CLAIMS = [{"id": "c1", "proposition": "Aurora owns the pager"}]


def ask(sentence: str, citations: list[str], question_id: str = "q-1") -> tuple[str, dict]:
    return question_id, {"question": "Who owns the pager?", "sentence": sentence, "citations": citations,
                         "claims": CLAIMS}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suites" / "s"
    (folder / "judges").mkdir(parents=True)
    (folder / "judges" / "grader.py").write_text(GRADER)
    return folder


def grader(grades: bool = True) -> Judge:
    return Judge("grader", command=(sys.executable, "judges/grader.py"), timeout=5, declaration_hash="h" * 64,
                 grades=grades)


# --- the answer schema ---------------------------------------------------------------------------------------

def test_an_answer_may_grade_each_citation_and_report_its_cost():
    found = parse_answer({"claim_ids": ["c1"], "support": ["full", "partial"],
                          "usage": {"prompt_tokens": 120, "completion_tokens": 9, "cost_usd": 0.0004}}, ["c1"], 2)
    assert (found.support, found.prompt_tokens, found.completion_tokens, found.cost_usd) == (
        ("full", "partial"), 120, 9, 0.0004)
    assert found == Answer("claims", ("c1",), support=("full", "partial"))  # what it cost is not what it says


@pytest.mark.parametrize("answer, reason", [
    ({"claim_ids": ["c1"], "support": ["full"]}, "one grade per citation (2)"),
    ({"claim_ids": ["c1"], "support": ["full", "mostly"]}, "one grade per citation"),
    ({"claim_ids": ["c1"], "usage": {"tokens": 3}}, "expected an object of prompt_tokens, completion_tokens, cost_usd"),
    ({"claim_ids": ["c1"], "usage": {"prompt_tokens": 2.5}}, "usage.prompt_tokens"),
    ({"claim_ids": ["c1"], "usage": {"cost_usd": -1}}, "usage.cost_usd"),
])
def test_a_bad_grade_or_cost_fails_the_answer(answer, reason):
    found = parse_answer(answer, ["c1"], 2)
    assert isinstance(found, Failure) and reason in found.reason


def test_cache_lines_keep_grades_and_cost_and_bad_ones_are_refused_with_file_and_line(tmp_path):
    judge = grader()
    q, request = ask("c1: Aurora owns the pager.", ["d1", "d2"])
    answer = Answer("claims", ("c1",), support=("full", "none"), prompt_tokens=50, completion_tokens=4,
                    cost_usd=0.001, latency_ms=12.5)
    good = cache_entry(judge, q, request, answer, at="2026-12-01T10:00:00Z")
    bad_length = {**good, "key": "b" * 64, "support": ["full"]}
    bad_cost = {**good, "key": "c" * 64, "cost_usd": -0.5}
    path = tmp_path / "judgements" / "grader.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(x) + "\n" for x in (good, bad_length, bad_cost)))
    problems = Problems()
    cache = read_cache(path, problems)
    assert [(p.line, p.field) for p in problems.items] == [(2, "support"), (3, "cost_usd")]
    back = cache[good["key"]].answer
    assert (back.support, back.prompt_tokens, back.completion_tokens, back.cost_usd, back.latency_ms) == (
        ("full", "none"), 50, 4, 0.001, 12.5)


# --- asking: documents sent, cost recorded, repeats -----------------------------------------------------------

def test_a_grading_program_judge_is_sent_the_cited_documents_and_its_cost_is_cached(suite):
    documents = {"d1": "Aurora owns the pager", "d2": "Aurora owns it since 2024"}
    requests = [ask("c1: Aurora owns the pager.", ["d1", "d2", "d9"])]
    run = judge_missing(grader(), suite, requests, documents)
    assert (run.answered, run.failed) == (1, 0)
    [line] = [json.loads(x) for x in (suite / "judgements" / "grader.jsonl").read_text().splitlines()]
    # d1's text is in the sentence: full; d2 says part: partial; d9 is not in the suite: sent empty, none
    assert line["support"] == ["full", "partial", "none"]
    assert (line["completion_tokens"], line["cost_usd"]) == (7, 0.002) and line["prompt_tokens"] > 10
    assert line["latency_ms"] > 0
    # a judge not declared with grades is sent the request alone, so it cannot grade
    [plain] = judge_requests(grader(grades=False), suite, requests, documents)
    assert plain == Answer("claims", ("c1",)) and plain.support is None


def test_asked_again_a_judge_s_repeats_are_kept_apart_and_seeded(suite):
    judge = grader()
    requests = [ask(f"c1 number {i}.", ["d1"]) for i in range(8)]
    judge_missing(judge, suite, requests, {"d1": "x"})
    cache_before = (suite / "judgements" / "grader.jsonl").read_text()
    (suite / "flaky").write_text("")  # from now on every second answer changes its mind
    first = judge_again(judge, suite, requests, repeats=2, sample=3, seed=4, documents={"d1": "x"})
    assert (first.sampled, first.repeats, first.failed) == (3, 6, 0)
    assert (suite / "judgements" / "grader.jsonl").read_text() == cache_before  # the cache is not touched
    problems = Problems()
    lines = read_repeats(repeats_path(suite, "grader"), problems)
    assert not problems.items and [(x.repeat, x.sample_seed) for x in lines] == [(1, 4)] * 3 + [(2, 4)] * 3
    assert sum(a == b for _, _, a, b in first.pairs) == 3  # the flaky half differs
    again = judge_again(judge, suite, requests, repeats=1, sample=3, seed=4, documents={"d1": "x"})
    assert [k for k, *_ in again.pairs] == [k for k, n, *_ in first.pairs if n == 1]  # same seed, same sample
    with pytest.raises(Exception, match="--sample"):
        judge_again(judge, suite, requests, repeats=1, sample=0)


def test_an_endpoint_judge_that_grades_is_prompted_for_grades_and_its_usage_read(suite, monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append(body)
            content = json.dumps({"claim_ids": ["c1"], "support": ["partial"]})
            reply = json.dumps({"choices": [{"message": {"content": content}}],
                                "usage": {"prompt_tokens": 311, "completion_tokens": 12, "cost": 0.00042}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        judge = Judge("hosted", endpoint=f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions",
                      model="m", timeout=5, declaration_hash="e" * 64, grades=True)
        [found] = judge_requests(judge, suite, [ask("c1 it is.", ["d1"])], {"d1": "Aurora owns the pager."})
    finally:
        server.shutdown()
    assert received[0]["messages"][0]["content"] == GRADES_PROMPT
    sent = json.loads(received[0]["messages"][1]["content"])
    assert sent["documents"] == [{"id": "d1", "text": "Aurora owns the pager."}]
    assert (found.support, found.prompt_tokens, found.completion_tokens, found.cost_usd) == (("partial",), 311, 12,
                                                                                             0.00042)
    assert found.latency_ms > 0


# --- the grades measured ------------------------------------------------------------------------------------

def test_weighted_kappa_and_its_interval_by_hand():
    # labels none, partial, full against an aligner that reads every full as partial
    x = [0, 1, 2, 2, 0, 2, 1, 0, 2, 2, 1, 0]
    y = [0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0]
    observed = np.mean((np.array(x) - np.array(y)) ** 2)  # 5 items off by one: 5 / 12
    expected = np.mean((np.array(x)[:, None] - np.array(y)[None, :]) ** 2)
    assert weighted_kappa(x, y) == pytest.approx(1 - observed / expected)
    low, high = weighted_kappa_interval(x, y)
    assert low <= weighted_kappa(x, y) <= high
    # the interval is the percentile bootstrap of the same resamples, computed plainly
    drawn = np.random.default_rng(0).integers(0, 12, size=(10_000, 12))
    kappas = [weighted_kappa(np.array(x)[i], np.array(y)[i]) for i in drawn[:2000]]
    plain = np.quantile([k for k in kappas if k is not None], [0.025, 0.975])
    assert abs(plain[0] - low) < 0.05 and abs(plain[1] - high) < 0.05
    assert weighted_kappa_interval(x[:5], y[:5]) is None  # below 10 items: no interval


def test_labelled_grade_is_the_weakest_over_the_sentence_s_claims():
    labels = {("q", "c1"): (frozenset({"d1"}), frozenset({"d2"})), ("q", "c2"): (frozenset({"d1", "d2"}), frozenset())}
    assert labelled_grade(labels, "q", ["c1"], "d1") == "full"
    assert labelled_grade(labels, "q", ["c1"], "d2") == "partial"
    assert labelled_grade(labels, "q", ["c1", "c2"], "d2") == "partial"
    assert labelled_grade(labels, "q", ["c2"], "d3") == "none"


def test_the_lexical_aligner_never_grades_full():
    text = "Aurora owns the pager rotation"
    assert lexical_support("Aurora owns the pager.", [text, "Nothing alike", None]) == ("partial", "none", "none")
    assert lexical_support("Aurora owns the pager.", [text + " since 2024"]) == ("partial",)


# --- the refresh and compare on the demo ---------------------------------------------------------------------

def test_repeats_and_costs_reach_the_database_and_compare(tmp_path, capsys):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    folder = ws / "suites" / "demo"
    cache = folder / "judgements" / "checker.jsonl"
    lines = [json.loads(x) for x in cache.read_text().splitlines()]
    for n, line in enumerate(lines):  # the cost a hosted judge would have reported for each answer
        line.update(cost_usd=0.001, prompt_tokens=100 + n % 7, completion_tokens=10, latency_ms=200.0 + n % 50)
    cache.write_text("".join(json.dumps(x) + "\n" for x in lines))
    repeats = []
    for n, line in enumerate(lines[:20]):
        for r in (1, 2):
            changed = r == 2 and n < 4
            repeats.append({**line, "claim_ids": "unlabelled" if changed and line["claim_ids"] != "unlabelled"
                            else "no_claim" if changed else line["claim_ids"], "repeat": r, "sample_seed": 9})
    (folder / "judgements" / "repeats").mkdir(exist_ok=True)  # the demo's own repeats replaced by these
    (folder / "judgements" / "repeats" / "checker.jsonl").write_text("".join(json.dumps(x) + "\n" for x in repeats))
    db = tmp_path / "db.duckdb"
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    capsys.readouterr()
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT key) FROM judge_repeats").fetchone() == (40, 20)
        requests = con.execute("SELECT count(DISTINCT judgement_key) FROM alignments WHERE run_id = 'prod-text' "
                               "AND aligner = 'judge'").fetchone()[0]
        lexical_full = con.execute("SELECT count(*) FROM alignments WHERE aligner = 'lexical' "
                                   "AND list_contains(support, 'full')").fetchone()[0]
    assert lexical_full == 0
    assert main(["compare", "prod-baseline", "prod-text", "--db", str(db), "--format", "json"]) == 0
    block = json.loads(capsys.readouterr().out)["alignment"]
    [own] = block["self_agreement"]
    assert (own["judge"], own["sampled"], own["repeats"], own["agreed"]) == ("checker", 20, 40, 36)
    [cost] = block["judge_costs"]
    assert (cost["run_id"], cost["judge"], cost["requests"], cost["reported"]) == ("prod-text", "checker", requests,
                                                                                   requests)
    assert cost["cost_usd"] == pytest.approx(0.001 * requests) and 200 <= cost["latency_p50_ms"] < 250
    [lexical] = [r for r in block["support_agreement"] if r["aligner"] == "lexical"]
    assert lexical["n"] > 100 and not any(given == "full" for _, given, _ in lexical["confusion"])
    assert main(["compare", "prod-baseline", "prod-text", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "Judge checker asked again: 36 of 40 repeated answers about 20 sentences equal its first" in text
    assert f"Judge checker on prod-text: {requests} requests, {0.001 * requests:.4f} USD reported" in text


def test_the_release_review_shows_grades_self_agreement_and_cost(demo_db, monkeypatch):
    import tomllib

    from streamlit.testing.v1 import AppTest
    from streamlit.testing.v1.util import patch_config_options

    app = REPO / "dashboard" / "app.py"
    config = tomllib.loads((app.parent / ".streamlit" / "config.toml").read_text())
    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    with patch_config_options({f"{s}.{k}": v for s, options in config.items() for k, v in options.items()}):
        at = AppTest.from_file(str(app), default_timeout=120)
        at.query_params.update({"suite": "demo", "baseline": "prod-baseline", "candidate": "prod-text"})
        at.switch_page("views/release_review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    grades = at.get_by_key("box_w_support_grades").dataframe[0].value
    assert list(grades["aligner"]) == ["judge", "lexical"] and grades["weighted_kappa"].iloc[0] > grades[
        "weighted_kappa"].iloc[1]
    itself = at.get_by_key("box_w_self_agreement").dataframe[0].value.iloc[0]
    assert (itself["judge"], itself["sampled"], itself["repeats"], itself["agreed"]) == ("checker", 40, 120, 120)
    cost = at.get_by_key("box_w_judge_costs").dataframe[0].value.iloc[0]
    assert (cost["run_id"], cost["cost_usd"], cost["reported"]) == ("prod-text", 0.0, cost["requests"])


def test_align_repeat_asks_the_demo_judge_again_and_says_how_often_it_agrees(tmp_path, capsys):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    shutil.rmtree(ws / "suites" / "demo" / "judgements" / "repeats")
    cache = (ws / "suites" / "demo" / "judgements" / "checker.jsonl").read_bytes()
    assert main(["align", str(ws), "--runs", "prod-text", "--judge", "checker", "--repeat", "2", "--sample", "5",
                 "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "0 answered now, 0 failed" in out  # the cache answers every sentence: nothing asked for it
    assert ("asked again: 5 sampled sentences x 2 (seed 3), 10 answers, 0 failed; 10 of 10 repeated answers equal "
            "the first (100.0%") in out
    assert (ws / "suites" / "demo" / "judgements" / "checker.jsonl").read_bytes() == cache
    lines = [json.loads(x) for x in (ws / "suites" / "demo" / "judgements" / "repeats" / "checker.jsonl")
             .read_text().splitlines()]
    assert len(lines) == 10 and {x["sample_seed"] for x in lines} == {3} and all(x["latency_ms"] > 0 for x in lines)
    assert all(len(x["support"]) == len(x["citations"]) for x in lines)  # declared with grades = true
    assert main(["align", str(ws), "--runs", "prod-text", "--judge", "checker", "--repeat", "2"]) == 2
    assert "--sample" in capsys.readouterr().err
