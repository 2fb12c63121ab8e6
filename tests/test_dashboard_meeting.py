"""The dashboard in a meeting, over the bundled demo (prod-baseline against rerank-v2 under the demo policy):
no page shows its own source text, a diagnosis for every way a gate can fail, rankings that show each grade,
releases-only trends, a review flow with no preset answer, and the newcomer's commands.

Expected figures are the demo's own, read from its records (the comments say where).
"""
from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.util import patch_config_options

from fixtures import REPO

APP = REPO / "dashboard" / "app.py"
VIEWS = REPO / "dashboard" / "views"
DEMO = {"suite": "demo", "baseline": "prod-baseline", "candidate": "rerank-v2"}


def app_config() -> dict[str, object]:
    """The options of the dashboard's own .streamlit/config.toml, as `section.option` (Streamlit reads the
    file beside the entry file; AppTest does not, so the tests apply it)."""
    found = tomllib.loads((APP.parent / ".streamlit" / "config.toml").read_text())
    return {f"{section}.{key}": value for section, options in found.items() for key, value in options.items()}


@pytest.fixture
def demo(demo_db, monkeypatch) -> AppTest:
    from scoring.io.demo import bundled_policy

    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    monkeypatch.setenv("RAGSLICE_POLICY", str(bundled_policy()))
    with patch_config_options(app_config()):
        yield AppTest.from_file(str(APP), default_timeout=120)


def open_page(at: AppTest, page: str, **params: str | list[str]) -> AppTest:
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def plain(text: str) -> str:
    """Markdown as read: escapes removed."""
    return text.replace("\\", "")


# -- 6. no page shows its own source text ------------------------------------------------------------------


def unshown_strings(path: Path) -> set[str]:
    """The string literals of a page script that no call receives: docstrings and bare strings, the text
    Streamlit's magic would write to the page."""
    tree = ast.parse(path.read_text())
    return {" ".join(node.value.value.split()) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def shown_texts(at: AppTest) -> list[str]:
    """Every markdown-like text element the run drew (magic writes with st.markdown)."""
    out = []
    for kind in ("markdown", "caption", "text", "info", "warning", "error", "success", "title", "header",
                 "subheader"):
        for element in at.get(kind):
            out.append(" ".join(str(getattr(element, "value", None) or getattr(element.proto, "body", "")).split()))
    return out


def test_the_dashboard_runs_without_magic():
    # A bare string at the top of a page script is a source comment, never page text.
    assert app_config()["runner.magicEnabled"] is False


@pytest.mark.parametrize("page", sorted(p.stem for p in VIEWS.glob("*.py") if p.stem != "__init__"))
@pytest.mark.cases(4)
def test_no_page_shows_a_string_from_its_own_source(demo, demo_db, monkeypatch, page):
    if page == "labels":  # the Labels page exists in review mode only
        monkeypatch.setenv("RAGSLICE_WORKSPACE", str(demo_db.parent / "workspace"))
        monkeypatch.setenv("RAGSLICE_REVIEWER", "reader")
    at = open_page(demo, page, **DEMO, q="q-0017")
    source = unshown_strings(VIEWS / f"{page}.py") | unshown_strings(APP)
    assert source, "the page has no docstring or bare string to look for"
    shown = [text for text in shown_texts(at) if text]
    assert shown, "the page drew no text"
    leaked = [text for text in shown if text in source or plain(text) in source]
    assert not leaked, leaked


# -- 7. a diagnosis for every cause a gate can fail on; grades in the rankings ------------------------------


def diagnosis_lines(at: AppTest) -> dict[str, str]:
    """The diagnosis box's lines by side, each as `<icon> <text>` (the alert's colour is its kind)."""
    box = at.get_by_key("diagnosis")
    alerts = [*box.error, *box.warning, *box.success]
    return {("candidate" if "Candidate" in a.proto.body else "baseline"): f"{a.proto.icon} {plain(a.proto.body)}"
            for a in alerts}


def test_a_restricted_disclosure_is_named_not_called_evidence_used(demo):
    # q-0017 (permission, caller engineering): rerank-v2 ranks the restricted sec-0004 2nd of its first 5; its one
    # claim still cites pm-0016 correctly. prod-baseline ranks nothing restricted.
    at = open_page(demo, "question_detail", **DEMO, q="q-0017")
    lines = diagnosis_lines(at)
    assert lines["candidate"].startswith(
        ":material/lock_open: **Candidate rerank-v2: A restricted document reached the caller**")
    assert "sec-0004 (delivered at rank 2 of the first 5)" in lines["candidate"]
    assert "besides, evidence delivered and used" in lines["candidate"]
    assert lines["baseline"].startswith(":material/check_circle: **Baseline prod-baseline: Evidence delivered and used")
    ranked = at.get_by_key("box_w_retrieved_candidate").dataframe[0].value.set_index("doc_id")
    assert ranked.loc["sec-0004", ["grade", "restricted", "visible"]].tolist() == ["0", True, True]
    assert ranked.loc["sec-0004", "marks"] == "in first k, restricted"


@pytest.mark.parametrize(("question", "headline", "words"), [
    # q-0001: rerank-v2 delivers pol-0007 at rank 5 but its answer makes no claim.
    ("q-0001", "Evidence delivered, but the answer declined", "the answer makes no claim"),
    # q-0023 (unanswerable): rerank-v2 answers with one claim citing rb-0005.
    ("q-0023", "Answered a question the corpus cannot answer", "claim dispatch-load-balancer cites rb-0005"),
])
def test_a_declined_answer_and_an_answered_unanswerable_question_say_so(demo, question, headline, words):
    at = open_page(demo, "question_detail", **DEMO, q=question)
    line = diagnosis_lines(at)["candidate"]
    assert line.startswith(f":material/rule: **Candidate rerank-v2: {headline}**") and words in line, line


def test_each_ranked_document_shows_its_grade_or_unjudged(demo):
    # q-0100: labels rb-0017 2, ov-0006 1, rb-0044 0 (and nine more 0s); rerank-v2 ranks dr-0001, which nobody
    # judged, 2nd.
    at = open_page(demo, "question_detail", **DEMO, q="q-0100")
    table = at.get_by_key("box_w_retrieved_candidate").dataframe[0]
    assert list(table.proto.column_order)[:5] == ["rank", "doc_id", "grade", "marks", "title"]  # fits a half column
    ranked = table.value
    grades = dict(zip(ranked["doc_id"], ranked["grade"]))
    marks = dict(zip(ranked["doc_id"], ranked["marks"]))
    assert (marks["rb-0017"], marks["dr-0001"], marks["oc-0007"]) == ("in first k, cited", "in first k", "")
    assert (grades["rb-0017"], grades["dr-0001"], grades["rb-0044"], grades["rb-0027"]) == ("2", "unjudged", "0",
                                                                                              "unjudged")
    # "Relevant documents" lists grade > 0 only; the judged-not-relevant ones are counted beside it.
    relevant = at.get_by_key("box_w_labels").dataframe[0].value
    assert list(zip(relevant["doc_id"], relevant["grade"])) == [("rb-0017", 2), ("ov-0006", 1)]
    assert any(plain(c.value).startswith("Judged not relevant (grade 0 or below): 10 documents, ")
               for c in at.caption)


def test_diagnosis_rule_names_every_cause_on_hand_made_records():
    from scoring.decide.diagnosis import CAUSES, KINDS, diagnose

    ok = {"status": "ok", "k": 2, "abstention_correct": None, "n_relevant": 1, "n_hits": 1, "disclosures": 0}
    ranked = [{"rank": 1, "doc_id": "d1", "chunk_id": None, "visible": True, "restricted": False},
              {"rank": 2, "doc_id": "hr", "chunk_id": None, "visible": True, "restricted": True},
              {"rank": 3, "doc_id": "hr2", "chunk_id": None, "visible": False, "restricted": True}]
    supported = [{"claim_id": "a", "supported": True, "reasons": [], "cited_docs": ["d1"]}]
    assert diagnose(ok, {"error": None}, ranked, supported, {"a": ["d1"]}).kind == "ok"
    # The stored count says a restricted document was delivered: hr at rank 2 (hr2 lies beyond k).
    found = diagnose({**ok, "disclosures": 1}, {"error": None}, ranked, supported, {"a": ["d1"]})
    assert (found.kind, found.causes, dict(found.disclosed)) == ("disclosure", ("disclosure",), {"hr": "rank 2"})
    # Cited too, and the answer misuses it: both causes, the disclosure first.
    cites = [{"claim_id": "a", "supported": False, "reasons": ["citation_restricted"], "cited_docs": ["hr2"]}]
    found = diagnose({**ok, "disclosures": 2}, {"error": None}, ranked, cites, {"a": ["d1"]})
    assert found.causes == ("disclosure", "misuse")
    assert dict(found.disclosed) == {"hr": "rank 2", "hr2": "cited by claim a"}
    # A failed record that still showed a restricted document names it after the error.
    failed = diagnose({**ok, "status": "failed", "disclosures": 1}, {"error": "timeout"}, ranked, [], {"a": ["d1"]})
    assert (failed.kind, failed.causes) == ("failed", ("failed", "disclosure")) and "hr (delivered" in failed.detail
    # Declined: an answerable question, its evidence delivered, no claim made.
    assert diagnose(ok, {"error": None}, ranked, [], {"a": ["d1"]}).causes == ("declined",)
    # Every cause belongs to a case, worst first.
    assert [KINDS.index(CAUSES[c][0]) for c in CAUSES] == sorted(KINDS.index(CAUSES[c][0]) for c in CAUSES)


# -- 9. trends: releases only, on an axis fitted to them ----------------------------------------------------


def test_trends_show_releases_only_on_an_axis_fitted_to_them(demo):
    # The demo's one recorded verdict compared prod-baseline with rerank-v2: those two are its releases; the
    # temp07 repeats, chunk-160, hybrid-v1 and prod-text are experiments.
    at = open_page(demo, "trends", suite="demo")
    releases = at.get_by_key("box_w_releases").dataframe[0].value
    assert list(releases["release"]) == ["prod-baseline", "rerank-v2"]
    assert list(releases["verdict"]) == ["", "fail"]
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    low, high = spec["layer"][0]["encoding"]["y"]["scale"]["domain"]
    # nDCG, R, Support, Coverage of the two runs lie in 0.807 .. 0.918 (run_totals): the axis spans them.
    assert 0.78 < low < 0.807 and 0.918 < high < 0.95
    assert spec["layer"][0]["encoding"]["y"]["scale"]["domain"] == spec["layer"][1]["encoding"]["y"]["scale"]["domain"]
    # Every run on request: a group's repeats are one configuration.
    at.checkbox(key="w_every_run").check().run()
    shown = list(at.get_by_key("box_w_releases").dataframe[0].value["release"])
    assert "temp07" in shown and "chunk-160" in shown and not any(r.startswith("temp07-r") for r in shown)
    assert at.query_params["every_run"] == "1"


def test_trends_of_a_suite_without_releases_show_every_run_and_say_why(demo):
    at = open_page(demo, "trends", suite="seed-lab")
    assert list(at.get_by_key("box_w_releases").dataframe[0].value["release"]) == ["A", "B"]
    assert any(plain(i.proto.body).startswith("No run of suite seed-lab is marked as a release") for i in at.info)


def test_a_value_span_fits_the_data_inside_zero_and_one():
    from dashboard.charts import value_span
    import pandas as pd

    assert value_span(pd.Series([0.8, 0.9])) == [0.79, 0.91]
    assert value_span(pd.Series([0.995, 1.0])) == [0.985, 1.0]  # a margin of at least 0.01, capped at 1
    assert value_span(pd.Series([2.0, 4.0])) == [1.8, 4.2]  # a count: no cap
    assert value_span(pd.Series([], dtype=float)) == [0.0, 1.0]


def test_releases_are_marked_by_manifest_pin_or_verdict():
    from scoring.decide.releases import marked_releases, release_of

    manifests = {"a": json.dumps({"release": "2026.11"}), "b": json.dumps({}), "c": json.dumps({}),
                 "r1": json.dumps({"group": "g"}), "r2": json.dumps({"group": "g"}), "x": json.dumps({})}
    assert marked_releases(manifests, pinned=["b"], compared=["g", "c"]) == {"a", "b", "c", "r1", "r2"}
    assert (release_of("a", manifests["a"]), release_of("r1", manifests["r1"]), release_of("x", manifests["x"])) == (
        "2026.11", "g", "x")


# -- 10. reviewing: find any unjudged document, no preset answer, one form per decision, a visible update ----


@pytest.fixture
def reviewing(demo, demo_db, monkeypatch) -> AppTest:
    """The demo in review mode (reading only: these tests record nothing)."""
    monkeypatch.setenv("RAGSLICE_WORKSPACE", str(demo_db.parent / "workspace"))
    monkeypatch.setenv("RAGSLICE_REVIEWER", "reader")
    return demo


def queued(at: AppTest) -> list[str]:
    """The queue's items as `question / document`."""
    out, i = [], 0
    while True:
        try:
            box = at.get_by_key(f"judge_{i}")
        except KeyError:
            return out
        texts = [t.value for t in box.text]
        out.append(f"{texts[0].split(':')[0]} / {texts[1].split(':')[0].removeprefix('document ')}")
        i += 1


def test_the_queue_finds_any_unjudged_document_by_question_or_document(reviewing):
    at = open_page(reviewing, "labels", **DEMO)
    assert len(queued(at)) == 10 and "q-0100 / dr-0001" not in queued(at)
    # rerank-v2 ranks three documents nobody judged for q-0100 within its k = 5: dr-0001 2nd, rb-0027 3rd, rb-0041 5th
    at = open_page(reviewing, "labels", **DEMO, pool_search="q-0100")
    assert queued(at) == ["q-0100 / dr-0001", "q-0100 / rb-0027", "q-0100 / rb-0041"]
    at.text_input(key="w_pool_search").input("DR-0001").run()
    assert queued(at)[0] == "q-0100 / dr-0001" and at.query_params["pool_search"] == "DR-0001"
    at.text_input(key="w_pool_search").input("no such thing").run()
    assert queued(at) == [] and any("No unjudged document" in plain(i.proto.body) for i in at.info)


def test_a_grade_is_chosen_from_the_suite_s_scale_never_preset_and_saved_with_a_neutral_button(reviewing, demo_db):
    at = open_page(reviewing, "labels", **DEMO)
    grade = at.selectbox(key="w_grade_0")
    assert grade.value is None and grade.options == ["0 not relevant", "1 related", "2 answers"]  # the demo's 0..2
    save = at.button(key="w_save_0")
    assert save.proto.type == "secondary"
    save.click().run()  # no grade chosen: nothing is recorded, and the page says so
    assert any(plain(w.proto.body) == "Not recorded: choose a grade first." for w in at.warning)
    assert not (demo_db.parent / "workspace" / "suites" / "demo" / "reviews" / "reader.jsonl").exists()


def test_question_detail_shows_one_form_per_decision_kind_with_nothing_answered(reviewing):
    at = open_page(reviewing, "question_detail", **DEMO, q="q-0100")
    kind = at.selectbox(key="w_detail_kind")
    assert kind.value is None and not at.get("number_input")
    assert not [w for w in at.selectbox if w.key == "w_detail_grade"]
    kind.set_value("relevance").run()
    grade = at.selectbox(key="w_detail_grade")
    assert grade.value is None and grade.options == ["0 not relevant", "1 related", "2 answers"]
    assert not at.get("number_input") and not [r for r in at.radio if r.key == "w_detail_supports"]
    at.selectbox(key="w_detail_kind").set_value("support").run()
    assert at.radio(key="w_detail_supports").value is None
    assert not [w for w in at.selectbox if w.key == "w_detail_grade"]
    at.selectbox(key="w_detail_kind").set_value("dispute").run()
    assert [t.key for t in at.text_input if t.key.startswith("w_detail_")] == ["w_detail_note"]


@pytest.fixture
def seed_review(tmp_path, monkeypatch):
    """A seed-lab workspace and its database, the dashboard in review mode as `carl` (writes in tmp_path)."""
    import shutil

    import streamlit as st

    from scoring.store.refresh import refresh

    ws = Path(shutil.copytree(REPO / "data" / "seed-lab", tmp_path / "ws"))
    db = tmp_path / "seed.duckdb"
    refresh(ws, db)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    monkeypatch.setenv("RAGSLICE_WORKSPACE", str(ws))
    monkeypatch.setenv("RAGSLICE_REVIEWER", "carl")
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    st.cache_data.clear()
    st.cache_resource.clear()
    with patch_config_options(app_config()):
        yield ws, db, AppTest.from_file(str(APP), default_timeout=60)


SEED = {"suite": "seed-lab", "baseline": "A", "candidate": "B"}


def test_the_page_says_when_the_numbers_include_a_decision(seed_review):
    from scoring.store.background import refresher

    ws, db, at = seed_review
    at = open_page(at, "labels", **SEED)
    at.selectbox(key="w_grade_0").select(1).run()
    at.button(key="w_save_0").click().run()
    assert [t.proto.body for t in at.toast if "Recorded" in t.proto.body]
    assert refresher(ws, db).wait(60).ok
    at.run()  # the refresh has landed: the page reruns on the new numbers and says so
    assert any(plain(t.proto.body) == "Updated: the numbers now include your decisions" for t in at.toast)
    assert any(plain(s.proto.body).endswith("the numbers on this page include your decisions.") for s in at.success)


def test_a_dispute_is_listed_beside_the_disagreements(seed_review):
    from scoring.store.refresh import refresh

    ws, db, at = seed_review
    folder = ws / "suites" / "seed-lab" / "reviews"
    folder.mkdir(parents=True)
    (folder / "dana.jsonl").write_text(json.dumps({
        "at": "2026-11-30T10:00:00Z", "reviewer": "dana", "kind": "dispute", "question_id": "owner",
        "note": "two teams share the alert"}) + "\n")
    refresh(ws, db)
    at = open_page(at, "labels", **SEED)
    disputes = at.get_by_key("box_w_disputes").dataframe[0].value
    assert list(zip(disputes["question_id"], disputes["reviewer"], disputes["note"])) == [
        ("owner", "dana", "two teams share the alert")]
    assert any(c.value == "No label has reviewers whose latest decisions differ." for c in at.caption)


# -- 8. free-text answers: the sentence table spans the page ------------------------------------------------


def test_the_answer_sentences_span_the_page_not_a_half_column(demo):
    # prod-text answers in sentences (the TREC RAG format); its table has six text columns and a sample status.
    at = open_page(demo, "question_detail", suite="demo", baseline="prod-baseline", candidate="prod-text", q="q-0030")
    sentences = at.get_by_key("box_w_sentences_candidate").dataframe[0].value
    assert {"sentence", "aligned_to", "decided_by"} <= set(sentences.columns)
    in_columns = [frame for column in at.columns for frame in column.dataframe
                  if "aligned_to" in frame.value.columns]
    assert not in_columns
    widths = {c: json.loads(at.get_by_key("box_w_sentences_candidate").dataframe[0].proto.columns)[c]["width"]
              for c in ("#", "sentence", "citations", "aligned_to", "decided_by", "other_aligners", "sample")}
    assert sum(widths.values()) <= 820  # every column in view in the main area at 1280 px


# -- 11. a newcomer's commands after `ragslice demo` ---------------------------------------------------------


def test_a_missing_database_names_the_demo_s_exact_db_path(demo_db, tmp_path, monkeypatch, capsys):
    import shlex
    import shutil

    from scoring.cli import main
    from scoring.io.demo import bundled_policy, commands

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    newcomer = ["report", "prod-baseline", "rerank-v2", "--policy", "policy.toml", "-o", "report.html"]
    assert main(newcomer) == 2  # before the demo was built: no hint to give
    assert capsys.readouterr().err.splitlines()[1:] == ["policy.toml: cannot read the policy file: No such file or "
                                                       "directory"]
    built = tmp_path / "cache" / "ragslice" / "demo.duckdb"
    built.parent.mkdir(parents=True)
    shutil.copy2(demo_db, built)
    assert main(newcomer) == 2
    err = capsys.readouterr().err
    assert f"add --policy {shlex.quote(str(bundled_policy()))}" in err
    shutil.copy2(bundled_policy(), tmp_path / "policy.toml")
    assert main(newcomer) == 2
    err = capsys.readouterr().err
    assert "no database here" in err and f"add --db {shlex.quote(str(built))}" in err
    assert main([*newcomer, "--db", str(built)]) == 0  # the hint, followed, works
    assert (tmp_path / "report.html").is_file()
    # `ragslice demo` prints the same commands, with the exact paths.
    report, compare = commands(built, bundled_policy())
    assert report.startswith("ragslice report prod-baseline rerank-v2 --db ") and f"--db {built}" in report
    assert main(shlex.split(compare)[1:]) == 1  # the demo's verdict: FAIL


# -- 12. smaller: an unknown page path is said -------------------------------------------------------------


def test_an_unknown_page_path_is_named(monkeypatch):
    import streamlit as st

    from dashboard.selection import unknown_page

    known = ["", "trends", "question_detail"]
    assert unknown_page(None, known) is None  # no address known (AppTest): nothing to say
    assert unknown_page("http://127.0.0.1:8501", known) is None
    assert unknown_page("http://127.0.0.1:8501/trends", known) is None
    assert unknown_page("http://127.0.0.1:8501/nosuch", known) == "nosuch"
    assert unknown_page("http://127.0.0.1:8501/a%20b/c", known) == "a b/c"
    monkeypatch.setattr(st, "get_option", lambda name: "ragslice" if name == "server.baseUrlPath" else None)
    assert unknown_page("http://host/ragslice/", known) is None
    assert unknown_page("http://host/ragslice/trends", known) is None
    assert unknown_page("http://host/ragslice/nosuch", known) == "nosuch"


@pytest.mark.slow  # every page's computations on the demo; the fast tier routes to sampled pages
# (test_no_page_shows_a_string_from_its_own_source) and renders every page (test_dashboard_apptest)
def test_every_page_still_routes(demo):
    # The router lists its pages as (file, title): each opens, and Release review stays the default.
    at = demo
    at.run()
    assert not at.exception and at.title[0].value == "Release review"
    for page in ("release_matrix", "trends", "statistics", "question_deltas", "question_detail", "present", "slices",
                 "aggregation", "runs"):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
