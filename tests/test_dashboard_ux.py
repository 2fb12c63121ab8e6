"""The dashboard as its three users read it, driven through AppTest over the bundled demo (prod-baseline
against rerank-v2 under the demo policy, evaluated live): the verdict card, honest links, neutral zero
changes, the per-question diagnosis, one ordering of questions and counts that filter.

Expected figures are the demo's own, checked by hand against its records (the comments say how).
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fixtures import REPO

APP = REPO / "dashboard" / "app.py"
DEMO = {"suite": "demo", "baseline": "prod-baseline", "candidate": "rerank-v2"}


@pytest.fixture
def demo(demo_db, monkeypatch) -> AppTest:
    from scoring.io.demo import bundled_policy

    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    monkeypatch.setenv("RAGSLICE_POLICY", str(bundled_policy()))
    return AppTest.from_file(str(APP), default_timeout=120)


def open_page(at: AppTest, page: str, **params: str | list[str]) -> AppTest:
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page(f"views/{page}.py").run()  # the page itself is the first to read the link
    assert not at.exception, [e.value for e in at.exception]
    return at


def plain(text: str) -> str:
    """Markdown as read: escapes removed."""
    return text.replace("\\", "")


def frame(at: AppTest, key: str) -> pd.DataFrame:
    return at.get_by_key(f"box_{key}").dataframe[0].value


def warnings(at: AppTest) -> list[str]:
    return [plain(w.proto.body) for w in at.warning]


# -- 1. the verdict explains itself ---------------------------------------------------------------------

FAILING = ["critical coverage", "no answerable question loses support", "current information not significantly worse",
           "current information shown no worse", "no unanswerable question newly answered", "no restricted disclosure"]
PASSING = ["recall not significantly worse", "failure rate", "p95 latency", "mean cost per question",
           "alignment agreement"]


def gate_markdown(at: AppTest) -> list[str]:
    """The gate lines of the verdict card, in order (containers `gate_0`, `gate_1`, ...)."""
    out, i = [], 0
    while True:
        try:
            box = at.get_by_key(f"gate_{i}")
        except KeyError:
            return out
        out.append(plain(box.markdown[0].value))
        i += 1


def gate_link(at: AppTest, i: int) -> tuple[str, dict[str, list[str]]]:
    link = at.get_by_key(f"gate_{i}").get("page_link")[0]
    return link.proto.page, parse_qs(link.proto.query_string, keep_blank_values=True)


def test_verdict_card_says_fail_first_with_failing_gates_as_sentences(demo):
    at = open_page(demo, "release_review", **DEMO)
    card = at.get_by_key("verdict")
    assert plain(card.markdown[0].value) == "## Release verdict: :red[:material/cancel: FAIL]"
    lines = gate_markdown(at)
    names = [line.split("**")[1] for line in lines]
    # Failing gates first, in policy order, then the passing ones (policy order too).
    assert names == FAILING + PASSING
    assert all(line.startswith(":red[:material/close:]") for line in lines[:6])
    assert all(line.startswith(":green[:material/check:]") for line in lines[6:])
    # Plain sentences with the figures: candidate Coverage over the 66 critical questions 0.732 (< 0.9); 9 of the
    # 205 paired answerable questions have a lower Support than production.
    assert ("Coverage on critical questions is 0.732, below the minimum 0.9 (66 questions; 6 n/a left out; "
            "baseline 0.929).") in lines[0]
    assert "9 of 205 answerable questions scored worse on Support than the baseline (allowed 0; 20 n/a left out)." \
        in lines[1]
    assert ("Coverage on outdated questions dropped by 0.258 (31 questions, clustered: 20 clusters): more than the "
            "0.02 allowed, and significant (one-sided p 0.016, alpha 0.05).") in lines[2]
    # Four headline averages rise while the verdict fails: the card says why both hold.
    assert any("Better on average (R@k, nDCG@k, Support, Coverage), yet FAIL" in plain(m.value)
               for m in card.markdown)


def test_verdict_card_says_inconclusive_with_the_gates_that_could_not_tell(demo_db, monkeypatch, tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('name = "outdated"\nmin_power = 0.8\n[[gates]]\nname = "current information"\n'
                      'metric = "coverage"\nslice = "type:outdated"\nmax_drop = 0.02\n'
                      '[[gates]]\nname = "failure rate"\nmetric = "failure_rate"\nmax = 0.05\n', encoding="utf-8")
    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    monkeypatch.setenv("RAGSLICE_POLICY", str(policy))
    at = open_page(AppTest.from_file(str(APP), default_timeout=120), "release_review",
                   **{**DEMO, "candidate": "hybrid-v1"})
    card = at.get_by_key("verdict")
    assert plain(card.markdown[0].value) == "## Release verdict: :orange[:material/help: INCONCLUSIVE]"
    lines = gate_markdown(at)
    assert lines[0].startswith(":orange[:material/help:] **current information**")
    assert "31 questions can only detect a drop of 0.17 or more; the margin is 0.02" in lines[0]
    assert "questions would make it conclusive at the observed spread" in lines[0]
    assert lines[1].startswith(":green[:material/check:] **failure rate**")
    assert any("could not tell" in plain(m.value) for m in card.markdown)


def test_each_failing_gate_links_to_the_view_that_shows_it(demo):
    at = open_page(demo, "release_review", **DEMO)
    page, params = gate_link(at, 0)  # critical coverage
    assert page == "question_deltas"
    assert (params["metric"], params["critical"]) == (["coverage"], ["critical only"])
    # earlier filters cleared; the 6 critical questions without a Coverage (n/a) left out, as the gate leaves them
    assert (params["type"], params["worse"]) == ([""], ["0"])
    assert params["status"] == ["regressed", "improved", "unchanged", "missing", "failed"]
    page, params = gate_link(at, 1)  # answerable questions that lost support
    assert (params["metric"], params["slice"], params["worse"]) == (["support"], ["answerable"], ["1"])
    page, params = gate_link(at, 2)  # outdated questions' coverage
    assert (params["metric"], params["type"]) == (["coverage"], ["outdated"])
    page, params = gate_link(at, 8)  # p95 latency: no question list, the runs' latency
    assert page == "runs"
    # Following the support gate's link lists exactly the 9 questions the gate counted, critical ones first.
    _, params = gate_link(at, 1)
    at = open_page(at, "question_deltas", **{k: v[0] for k, v in params.items()})
    rows = frame(at, "w_delta_table")
    assert len(rows) == 9 and (rows["delta"] < 0).all()
    assert rows["critical"].tolist() == [True] * 6 + [False] * 3
    # Following the critical coverage gate's link: exactly the 66 critical questions the gate scored (of the demo's
    # 72, 6 are unanswerable: Coverage n/a, said in its sentence), those that scored worse first.
    _, params = gate_link(open_page(at, "release_review", **DEMO), 0)
    at = open_page(at, "question_deltas", **{k: v if k == "status" else v[0] for k, v in params.items()})
    rows = frame(at, "w_delta_table")
    assert rows["critical"].all() and len(rows) == 66 and rows["delta"].notna().all()
    assert rows["delta"].iloc[0] < 0


def test_verdict_card_names_what_was_configured_differently(demo):
    at = open_page(demo, "release_review", **DEMO)
    changed = frame(at, "w_config_changes")
    fields = changed["field"].tolist()
    # The reranker run stopped preferring the latest version of a document and pinning critical topics: what
    # explains its outdated and critical failures. Bookkeeping (ID, time, code revision, notes) is left out.
    assert {"retrieval.prefer_latest_version", "retrieval.pinned", "retrieval.reranker"} <= set(fields)
    assert not {"run_id", "created_at", "code_revision", "notes"} & set(fields)
    row = changed.set_index("field").loc["retrieval.prefer_latest_version"]
    assert (row["baseline"], row["candidate"]) == ("true", "false")


def test_notices_hashes_and_paths_are_one_collapsed_line(demo):
    at = open_page(demo, "release_review", **DEMO)
    details = [e for e in at.expander if e.label.startswith("Details:")]
    assert len(details) == 1 and not details[0].proto.expanded
    # The two failed-record notices (2 of production's records failed, 3 of the reranker's) live inside it.
    inside = [plain(w.proto.body) for w in details[0].warning]
    assert any("prod-baseline has 2 failed records" in w for w in inside)
    assert any("rerank-v2 has 3 failed records" in w for w in inside)
    assert "2 notices" in details[0].label
    # Nothing above the card but the title and the sides' caption: no warning is drawn outside the details.
    outside = [w for w in warnings(at) if "failed records" in w]
    assert len(outside) == 2  # the same two, once each


def test_the_metric_selector_says_what_it_drives_and_adds_its_tile(demo):
    at = open_page(demo, "release_review", **DEMO, metric="precision")
    assert any("the metric drives the question counts and the worst regressions" in c.value for c in at.sidebar.caption)
    assert [m.label for m in at.metric][:7] == ["R@k", "nDCG@k", "Support", "Coverage", "Abstention", "Disclosures",
                                               "P@k"]


# -- 4. honest URLs and colours ----------------------------------------------------------------------------

UNKNOWN = [
    ("release_review", "suite", "nosuch", "suite 'nosuch'", "showing demo instead"),
    ("release_review", "baseline", "doesnotexist", "baseline 'doesnotexist'", "showing prod-baseline instead"),
    ("release_review", "candidate", "doesnotexist", "candidate 'doesnotexist'", "showing rerank-v2 instead"),
    ("release_review", "metric", "nosuch", "metric 'nosuch'", "showing Support instead"),
    ("question_deltas", "type", "nosuchtype", "question type 'nosuchtype'", "every question type (no filter)"),
    ("question_deltas", "slice", "nosuch", "slice 'nosuch'", "showing all instead"),
    ("question_deltas", "split", "nosuch", "split 'nosuch'", "every split (no filter)"),
    ("question_deltas", "critical", "nosuch", "critical 'nosuch'", "showing all instead"),
    ("question_deltas", "tags", "nosuch", "tag 'nosuch'", "every tag (no filter)"),
    ("question_deltas", "status", "nosuch", "status 'nosuch'", "every status (no filter)"),
    ("question_deltas", "sort", "nosuch", "sort 'nosuch'", "showing worst first instead"),
    ("question_deltas", "gap", "maybe", "label gap = 'maybe'", "unticked"),
    ("question_deltas", "worse", "maybe", "scored worse = 'maybe'", "unticked"),
    ("question_deltas", "pick", "q-9999", "picked question 'q-9999'", "every question that matches the filters"),
    ("question_detail", "q", "q-9999", "question 'q-9999'", "showing q-0001"),
    ("statistics", "metrics", "nosuch", "metric 'nosuch'", "every metric (no filter)"),
    ("statistics", "family", "nosuch", "slice family 'nosuch'", "every slice family (no filter)"),
    ("statistics", "p", "nosuch", "judge significance by 'nosuch'", "Holm-adjusted"),
    ("statistics", "alpha", "0.5", "alpha '0.5'", "showing 0.05 instead"),
    ("statistics", "significant", "maybe", "significant only = 'maybe'", "unticked"),
    ("statistics", "regressions", "maybe", "regressions only = 'maybe'", "unticked"),
    ("runs", "run", "nosuch", "run 'nosuch'", "showing prod-baseline instead"),
]


@pytest.mark.parametrize(("page", "param", "value", "names", "instead"), UNKNOWN,
                         ids=[f"{u[0]}-{u[1]}" for u in UNKNOWN])
@pytest.mark.cases(8)
def test_an_unknown_value_in_the_link_is_named_with_what_is_shown_instead(demo, page, param, value, names, instead):
    at = open_page(demo, page, **{**DEMO, param: value})
    said = [w for w in warnings(at) if w.startswith("The link asks for")]
    assert len(said) == 1, warnings(at)
    assert names in said[0] and instead in said[0], said[0]


def test_a_known_link_draws_no_unknown_value_warning(demo):
    at = open_page(demo, "question_deltas", **DEMO, type="outdated", status="regressed", sort="best first")
    assert not [w for w in warnings(at) if w.startswith("The link asks for")]
    # and a repeat-group side with the repeat to show
    at = open_page(demo, "question_detail", suite="demo", baseline="prod-baseline", candidate="temp07", q="q-0030",
                   candidate_run="temp07-r2")
    assert not [w for w in warnings(at) if w.startswith("The link asks for")]


def test_an_unknown_repeat_in_the_link_is_named(demo):
    at = open_page(demo, "question_detail", suite="demo", baseline="prod-baseline", candidate="temp07", q="q-0030",
                   candidate_run="temp07-r9")
    said = [w for w in warnings(at) if w.startswith("The link asks for")]
    assert len(said) == 1 and "'temp07-r9'" in said[0]


@pytest.mark.parametrize(("delta", "higher", "expected"), [
    (0.0, True, {"delta": "0.000", "delta_color": "off", "delta_arrow": "off"}),
    (0.0004, True, {"delta": "0.000", "delta_color": "off", "delta_arrow": "off"}),  # reads +0.000: neutral
    (-0.0004, False, {"delta": "0.000", "delta_color": "off", "delta_arrow": "off"}),
    (0.0006, True, {"delta": "+0.001", "delta_color": "normal"}),  # rounds to 0.001: a change, green when up
    (0.0006, False, {"delta": "+0.001", "delta_color": "inverse"}),  # lower is better: up is red
    (float("nan"), True, {"delta": None}),
])
def test_a_change_that_reads_as_zero_is_neutral(delta, higher, expected):
    from dashboard.display import delta_look

    assert delta_look(delta, higher) == expected


# -- 2. a diagnosis per question --------------------------------------------------------------------------


def diagnosis_lines(at: AppTest) -> list[str]:
    """The diagnosis box's lines, candidate first, each as `<icon> <text>` (the alert's colour is its kind)."""
    box = at.get_by_key("diagnosis")
    alerts = [*box.error, *box.warning, *box.success]
    alerts.sort(key=lambda a: 0 if "Candidate" in a.proto.body else 1)
    return [f"{a.proto.icon} {plain(a.proto.body)}" for a in alerts]


def test_diagnosis_of_a_retrieval_miss(demo):
    # q-0039 (critical): its expected claim identity-rto is supported by rb-0017 only, which production ranks in
    # its first 5 and the reranker does not: the candidate cannot cover the claim.
    at = open_page(demo, "question_detail", **DEMO, q="q-0039")
    candidate, baseline = diagnosis_lines(at)[:2]
    assert candidate.startswith(":material/search_off: **Candidate rerank-v2: Retrieval missed the evidence**")
    assert "no document supporting identity-rto was among the first 5 delivered (rb-0017 not delivered)" in candidate
    assert baseline.startswith(":material/check_circle: **Baseline prod-baseline: Evidence delivered and used**")


def test_diagnosis_of_an_answer_that_misused_delivered_evidence(demo):
    # q-0030: the relevant pol-0007 is still delivered at rank 3, but the answer cites the superseded pol-0008.
    at = open_page(demo, "question_detail", **DEMO, q="q-0030")
    candidate = diagnosis_lines(at)[0]
    assert candidate.startswith(":material/rule: **Candidate rerank-v2: Evidence delivered, but the answer misused it**")
    assert "pol-0007 (rank 3) supports the expected claim and was delivered" in candidate
    assert ("claim tier1-reviewers-old cites pol-0008 (not a claim the labels expect, cites a document not labelled "
            "as supporting it)") in candidate
    # The rankings mark the relevant and the cited rows; the claims say why in words.
    ranked = frame(at, "w_retrieved_candidate").set_index("doc_id")
    assert ranked.loc["pol-0007", ["relevant", "cited"]].tolist() == [True, False]
    assert ranked.loc["pol-0008", ["relevant", "cited"]].tolist() == [False, True]
    claims = at.get_by_key("box_w_claims_candidate").table[0].value.map(plain).set_index("claim")  # escaped cells
    assert claims.loc["tier1-reviewers-old", "why not supported"] == (
        "not a claim the labels expect, cites a document not labelled as supporting it")
    assert claims.loc["tier1-reviewers-old", "cites"] == "pol-0008"


def test_diagnosis_of_a_failed_record(demo):
    at = open_page(demo, "question_detail", **DEMO, q="q-0063")
    candidate = diagnosis_lines(at)[0]
    assert candidate.startswith(":material/error: **Candidate rerank-v2: The record failed**")
    assert "answer model timed out after 30 s" in candidate


@pytest.mark.parametrize(("question", "shown"), [("q-0014", "temp07-r3"), ("q-0096", "temp07-r2"),
                                                 ("q-0002", "temp07-r1")])
def test_a_repeat_group_shows_its_failing_repeat_first(demo, question, shown):
    # q-0014: temp07-r3's record failed; q-0096: temp07-r2 alone misuses its evidence; q-0002: the repeats agree.
    at = open_page(demo, "question_detail", suite="demo", baseline="prod-baseline", candidate="temp07", q=question)
    box = at.selectbox(key="w_candidate_run")
    assert box.value == shown
    assert f"**Candidate {shown}:" in diagnosis_lines(at)[0]
    if question != "q-0002":
        assert box.format_func(shown).endswith("(differs)")


def test_diagnosis_rule_on_hand_made_records():
    from scoring.decide.diagnosis import diagnose

    ok = {"status": "ok", "k": 2, "abstention_correct": None, "n_relevant": 2, "n_hits": 1}
    ranked = [{"rank": 1, "doc_id": "d1", "chunk_id": None, "visible": True, "restricted": False},
              {"rank": 2, "doc_id": "d9", "chunk_id": None, "visible": True, "restricted": False},
              {"rank": 3, "doc_id": "d2", "chunk_id": None, "visible": False, "restricted": False}]
    # d2, the only support of claim b, is ranked 3rd with k = 2: not delivered, so b cannot be covered.
    found = diagnose(ok, {"error": None}, ranked, [{"claim_id": "a", "supported": True, "reasons": [],
                                                    "cited_docs": ["d1"]}], {"a": ["d1"], "b": ["d2"]})
    assert (found.kind, found.missed) == ("retrieval", ("d2",))
    # Both supports delivered (d2 now restricted-free at rank 2), b made but citing d9: the answer misused it.
    ranked[1] = {**ranked[1], "doc_id": "d2"}
    found = diagnose(ok, {"error": None}, ranked, [
        {"claim_id": "a", "supported": True, "reasons": [], "cited_docs": ["d1"]},
        {"claim_id": "b", "supported": False, "reasons": ["citation_not_supporting"], "cited_docs": ["d9"]}],
        {"a": ["d1"], "b": ["d2"]})
    assert (found.kind, found.misused) == ("answer", ("b",))
    # A restricted document is not delivered evidence: the caller may not see it.
    ranked[1] = {**ranked[1], "restricted": True}
    assert diagnose(ok, {"error": None}, ranked, [], {"b": ["d2"]}).kind == "retrieval"
    # Retrieval only (no expected claim): 1 of 2 relevant documents in the first k.
    assert diagnose(ok, {"error": None}, ranked, [], {}).detail.startswith("1 of 2 relevant documents")
    # An unanswerable question answered with a claim; then abstained.
    unanswerable = {**ok, "abstention_correct": 0.0, "n_relevant": 0}
    assert diagnose(unanswerable, {"error": None}, [], [{"claim_id": "x", "supported": False,
                                                         "reasons": ["no_citation"]}], {}).kind == "answer"
    assert diagnose({**unanswerable, "abstention_correct": 1.0}, {"error": None}, [], [], {}).kind == "ok"
    # A failed record: nothing else is judged.
    assert diagnose({**ok, "status": "failed"}, {"error": "timeout"}, ranked, [], {"b": ["d2"]}).kind == "failed"
    assert diagnose(None, None, [], [], {}).kind == "failed"


# -- 3. one click from a row to its evidence; one order everywhere ------------------------------------


def test_question_deltas_rows_link_to_their_detail(demo):
    at = open_page(demo, "question_deltas", **DEMO, metric="coverage", worse="1")
    rows = frame(at, "w_delta_table")
    first = rows.iloc[0]
    assert first["open"].startswith("question_detail?") and parse_qs(first["open"].split("?", 1)[1]) == {
        "suite": ["demo"], "baseline": ["prod-baseline"], "candidate": ["rerank-v2"], "metric": ["coverage"],
        "q": [first["question_id"]]}


def test_one_order_everywhere_critical_first_then_the_drop(demo):
    # Coverage: the questions that scored worse, critical ones first, each group by size of the drop, in both the
    # release review's worst regressions and Question deltas' worst-first table.
    at = open_page(demo, "release_review", **DEMO, metric="coverage")
    worst = [t.value.split("  ·  ")[0].removeprefix("CRITICAL  ") for t in at.text if "  ·  " in t.value]
    at = open_page(demo, "question_deltas", **DEMO, metric="coverage")
    rows = frame(at, "w_delta_table")
    assert list(rows["question_id"][:len(worst)]) == worst
    worse = rows[rows["delta"] < 0]
    critical = worse["critical"].tolist()
    assert critical == sorted(critical, reverse=True)  # every critical one before any other
    for flag in (True, False):
        drops = worse.loc[worse["critical"] == flag, "delta"].tolist()
        assert drops == sorted(drops)  # the biggest drop first


def test_status_counts_filter_when_clicked(demo):
    at = open_page(demo, "question_deltas", **DEMO, metric="support")
    labels = [b.label for b in at.get_by_key("status_counts").button]
    # Support, prod-baseline -> rerank-v2 over the 257 questions: the release review's counts.
    assert labels == ["regressed 6", "improved 42", "unchanged 155", "n/a 49", "missing 0", "failed 5"]
    at.button(key="w_count_regressed").click().run()
    assert at.query_params["status"] == "regressed"
    assert frame(at, "w_delta_table")["status"].tolist() == ["regressed"] * 6
    at.button(key="w_count_regressed").click().run()  # again: every status
    assert "status" not in at.query_params and len(frame(at, "w_delta_table")) == 257


def test_no_question_changed_is_said_instead_of_an_empty_chart(demo):
    # prod-text answers as production does, sentence by sentence: no question changes on Support.
    at = open_page(demo, "question_deltas", suite="demo", baseline="prod-baseline", candidate="prod-text")
    assert any("No question changed on Support" in plain(i.proto.body) for i in at.info)
    assert not at.get("vega_lite_chart")
    at = open_page(demo, "question_deltas", **DEMO)
    assert len(at.get("vega_lite_chart")) == 1


# -- 5. plain language first, method on demand ------------------------------------------------------


def test_statistics_opens_with_one_sentence_and_defines_its_columns(demo):
    at = open_page(demo, "statistics", **DEMO)
    first = plain(at.markdown[0].value)
    # Over all 257 questions, the Holm-adjusted randomization p of P@k, R@k, F1@k and P'@k (better) and Judged@k
    # (worse) is below 0.05; the 17 other metrics' changes are not.
    assert first == ("Over all 257 questions, P'@k very likely improved and Judged@k very likely got "
                     "worse (Holm-adjusted p below 0.05); the other 17 metrics' changes could be noise. The table "
                     "below does the same for every slice.")
    method = [e for e in at.expander if e.label == "How these figures are computed"]
    assert len(method) == 1 and not method[0].proto.expanded
    columns = frame(at, "w_stats_columns").set_index("column")["means"]
    assert columns["n"].startswith("Paired questions: scored on both sides")
    assert columns["p Holm"].startswith("The randomization p-value Holm-adjusted")
    assert all(columns.str.len() > 10), columns[columns.str.len() <= 10]


def test_sidebar_help_is_a_popover_and_each_side_has_its_own(demo):
    at = open_page(demo, "slices", **DEMO)
    assert not any("Numerator" in c.value for c in at.sidebar.caption)  # no definition printed in the sidebar
    popovers = at.sidebar.get("popover")
    assert [p.proto.popover.label for p in popovers] == ["What Support measures"]
    assert "Numerator" in plain(popovers[0].markdown[0].value)  # the definition, one click away
    baseline, candidate = at.selectbox(key="w_baseline"), at.selectbox(key="w_candidate")
    assert baseline.help != candidate.help
    assert "judged against" in baseline.help and "would replace the baseline" in candidate.help


def test_wording_slips(demo):
    at = open_page(demo, "release_review", **DEMO)
    # 9 questions scored worse on Support: all are listed, never "at most 10 of 9".
    assert any(c.value.startswith("Critical questions first, then by size of the drop: the 9 questions")
               for c in at.caption)
    assert all(not w.proto.body[:1].islower() for w in at.warning)  # every warning starts a sentence
    at = open_page(demo, "runs", **DEMO)
    runs = frame(at, "w_stats").set_index("run_id")
    assert runs.loc["prod-baseline", "repeat"] == "" and runs.loc["temp07-r2", "repeat"] == "2"
    at = open_page(demo, "aggregation", **DEMO)
    pooled = frame(at, "w_agg_summary").set_index("metric")["pooled"]
    assert pooled["nDCG@k"] == "same as macro" and pooled["Support"].startswith(("+", "-"))


def test_slices_show_the_critical_questions_and_chart_deltas(demo):
    at = open_page(demo, "slices", **DEMO, metric="coverage")
    critical = frame(at, "w_slice_critical").set_index("metric")
    # Coverage over the critical questions both sides score: the gate's 66, 0.929 -> 0.732.
    assert critical.loc["Coverage", "n"] == 66
    assert round(critical.loc["Coverage", "baseline"], 3) == 0.929 and round(critical.loc["Coverage", "candidate"], 3) == 0.732
    spec = [s for s in (json.loads(c.proto.spec) for c in at.get("vega_lite_chart"))][0]
    assert spec["title"].startswith("Coverage by answerability: candidate - baseline")
    bars = [layer for layer in spec["layer"] if layer["mark"] in ("bar", {"type": "bar"})
            or (isinstance(layer["mark"], dict) and layer["mark"].get("type") == "bar")][0]
    assert bars["encoding"]["y"]["field"] == "delta"


def test_the_two_answers_side_by_side_word_by_word(demo):
    # q-0030: production answers "Deploys of tier-1 services need two reviewers. [pol-0007]", the reranker
    # "Every production deploy needs one reviewer. [pol-0008]": its claim cites the superseded policy.
    at = open_page(demo, "question_detail", **DEMO, q="q-0030")
    shown = [h.proto.body for h in at.get("html") if 'id="answer-diff"' in h.proto.body]
    assert len(shown) == 1
    diff = shown[0]
    assert diff.endswith('<div class="answer-diff" id="answer-diff"><del class="diff-del">Deploys of tier-1 services '
                         'need two reviewers</del> <ins class="diff-add">Every production deploy needs one reviewer</ins>'
                         '. [<del class="diff-del">pol-0007</del> <ins class="diff-add">pol-0008</ins>]</div>')
    citations = next(c.value for c in at.caption if c.value.startswith("Citations"))
    assert plain(citations) == "Citations (documents the claims cite): no longer cited: pol-0007; newly cited: pol-0008."
