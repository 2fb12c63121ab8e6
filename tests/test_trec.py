"""`ragslice trec`: agreement with trec_eval's own output and with pytrec_eval, TREC conventions
(ranking by score, ties by docno descending), the short-list denominator, n/a topics, and
errors that name file and line (exit code 2)."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.cli import main

# CI clones the repository into some folder and puts a copy of shared/ beside it.
REFERENCE = Path(__file__).resolve().parent.parent.parent / "shared" / "reference" / "trec_eval"

# trec_eval's names -> ragslice's canonical names (written out here, not taken from the code under test).
TREC_TO_CANONICAL = {
    "recip_rank": "RR",
    "map": "AP",
    **{f"P_{k}": f"P@{k}" for k in (5, 10, 20, 100, 1000)},
    **{f"recall_{k}": f"R@{k}" for k in (5, 10, 20, 100, 1000)},
    **{f"ndcg_cut_{k}": f"nDCG@{k}" for k in (5, 10, 20, 100, 1000)},
    **{f"map_cut_{k}": f"AP@{k}" for k in (10, 100)},
    **{f"success_{k}": f"Success@{k}" for k in (1, 5, 10)},
}
GOLDEN_MEASURES = list(TREC_TO_CANONICAL.values())


def reference_file(name: str) -> Path:
    path = REFERENCE / name
    if not path.is_file():
        pytest.fail(f"trec_eval reference file missing: {path} (shared/ belongs beside the repository clone)")
    return path


def trec_eval_output(name: str) -> dict[tuple[str, str], str]:
    """(canonical measure, qid) -> value as trec_eval printed it, for the measures we compare."""
    values = {}
    for line in reference_file(name).read_text().splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        if measure in TREC_TO_CANONICAL:
            values[(TREC_TO_CANONICAL[measure], qid)] = value
    return values


def parse_output(text: str) -> list[tuple[str, str, str]]:
    rows = [tuple(line.split("\t")) for line in text.splitlines()]
    assert all(len(row) == 3 for row in rows), text
    return rows


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def close(printed: str, exact: float) -> bool:
    """A 4-decimal printed value agrees with an exact one."""
    return abs(float(printed) - exact) <= 0.00005 + 1e-12


def run_trec(capsys, *args: str | Path) -> tuple[int, str, str]:
    code = main(["trec", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def ragslice_executable() -> str:
    found = shutil.which("ragslice", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if found is None:
        pytest.fail("the `ragslice` console script is not installed (pip install -e .)")
    return found


# --- golden: trec_eval's own output ------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "qrels", "level"),
    [("out.test.aq", "qrels.test", 1), ("out.test.aql", "qrels.rel_level", 2)],
)
def test_agrees_with_trec_eval_per_topic_and_all(capsys, expected, qrels, level):
    reference = trec_eval_output(expected)
    code, out, err = run_trec(
        capsys, reference_file(qrels), reference_file("results.test"), "-q", "-l", level, "-m", *GOLDEN_MEASURES
    )
    assert code == 0, err
    rows = parse_output(out)
    ours = {(measure, qid): value for measure, qid, value in rows}
    assert len(ours) == len(rows), "one line per measure and topic"
    assert ours == reference
    # trec_eval's order: topic by topic, every measure per topic, then the `all` lines.
    n = len(GOLDEN_MEASURES)
    assert [qid for _, qid, _ in rows] == ["301"] * n + ["302"] * n + ["303"] * n + ["all"] * n
    assert [m for m, _, _ in rows] == GOLDEN_MEASURES * 4


def test_trec_eval_names_are_accepted_and_printed_canonically(capsys):
    reference = trec_eval_output("out.test.aq")
    code, out, _ = run_trec(
        capsys, reference_file("qrels.test"), reference_file("results.test"),
        "-m", "P_5", "ndcg_cut_20", "recip_rank", "map", "recall_100", "P@5",
    )
    assert code == 0
    assert parse_output(out) == [
        ("P@5", "all", reference[("P@5", "all")]),
        ("nDCG@20", "all", reference[("nDCG@20", "all")]),
        ("RR", "all", reference[("RR", "all")]),
        ("AP", "all", reference[("AP", "all")]),
        ("R@100", "all", reference[("R@100", "all")]),
    ]


def test_real_command_default_measures_match_trec_eval():
    reference = trec_eval_output("out.test.aq")
    done = subprocess.run(
        [ragslice_executable(), "trec", str(reference_file("qrels.test")), str(reference_file("results.test"))],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert parse_output(done.stdout) == [
        (m, "all", reference[(m, "all")]) for m in ("P@10", "R@10", "nDCG@10", "RR", "AP")
    ]


def test_real_command_bad_input_exits_2_without_traceback(tmp_path):
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\n")
    run = write(tmp_path / "run", "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 oops r\n")
    done = subprocess.run([ragslice_executable(), "trec", str(qrels), str(run)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert f"{run}:2:" in done.stderr and "score" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


# --- agreement with pytrec_eval on random inputs with ties --------------------------------------

PYTREC = {"P@3": "P_3", "P@10": "P_10", "R@5": "recall_5", "nDCG@3": "ndcg_cut_3", "nDCG@10": "ndcg_cut_10",
          "RR": "recip_rank", "AP": "map", "AP@5": "map_cut_5", "Success@1": "success_1"}
DOCS = ["d1", "d2", "d10", "d9", "D3", "a", "b-7", "z", "x.1", "X"]


@st.composite
def collections(draw):
    topics = ["q1", "q2", "q10", "t"]
    qrels = {}
    for qid in draw(st.lists(st.sampled_from(topics), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        qrels[qid] = {doc: draw(st.integers(-1, 3)) for doc in docs}
    run = {}
    for qid in draw(st.lists(st.sampled_from([*topics, "q99"]), min_size=1, max_size=5, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        run[qid] = {doc: draw(st.sampled_from([0.5, 1.0, 1.0, 2.25, -3.0])) for doc in docs}  # many ties
    shared = sorted(set(qrels) & set(run))
    if not shared:
        run[next(iter(qrels))] = {"d1": 1.0, "d2": 1.0}
    return qrels, run, draw(st.sampled_from([1, 2]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(collections())
def test_agrees_with_pytrec_eval_on_random_runs_with_ties(tmp_path_factory, capsys, data):
    qrels, run, level = data
    folder = tmp_path_factory.mktemp("random")
    qrels_file = write(folder / "qrels", "".join(
        f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    # the rank column is deliberately misleading: ranks follow file order, not the score
    run_file = write(folder / "run", "".join(
        f"{q}\tQ0\t{d}  {r}\t{s}\trun-x\n" for q, docs in run.items() for r, (d, s) in enumerate(docs.items(), 1)))

    code, out, err = run_trec(capsys, qrels_file, run_file, "-q", "-l", level, "-m", *PYTREC)
    assert code == 0, err
    ours = {(m, q): v for m, q, v in parse_output(out)}

    shared = set(qrels) & set(run)
    theirs = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in shared}, set(PYTREC.values()), relevance_level=level
    ).evaluate({q: run[q] for q in shared})
    assert {q for _, q in ours} == shared | {"all"}
    for measure, name in PYTREC.items():
        answerable = [q for q in shared if any(g >= level for g in qrels[q].values())]
        for q in shared:
            if q in answerable:
                assert close(ours[(measure, q)], theirs[q][name]), (measure, q)
            else:
                assert ours[(measure, q)] == "n/a", (measure, q)
        if answerable:
            mean = math.fsum(theirs[q][name] for q in answerable) / len(answerable)
            assert close(ours[(measure, "all")], mean), measure
        else:
            assert ours[(measure, "all")] == "n/a"


# --- conventions on hand-made examples ------------------------------------------------------------


def test_ties_are_broken_by_docno_in_descending_byte_order(tmp_path, capsys):
    # Same score for all three. Byte order descending: "a9" > "a10" > "B" ('9' > '1', 'a' > 'B').
    # Rank column and file order say the opposite, and are ignored.
    run = write(tmp_path / "run", "q1 Q0 B 1 7.0 r\nq1 Q0 a10 2 7.0 r\nq1 Q0 a9 3 7.0 r\n")
    for relevant, rr in (("a9", "1.0000"), ("a10", "0.5000"), ("B", "0.3333")):
        qrels = write(tmp_path / f"qrels-{relevant}", f"q1 0 {relevant} 1\n")
        code, out, _ = run_trec(capsys, qrels, run, "-m", "RR", "P@1")
        assert code == 0
        assert parse_output(out) == [("RR", "all", rr), ("P@1", "all", "1.0000" if rr == "1.0000" else "0.0000")]


def test_score_orders_before_docno_and_rank_column_is_ignored(tmp_path, capsys):
    # "a" has the higher score, so it ranks first although "z" > "a" and its rank column says 1.
    qrels = write(tmp_path / "qrels", "q1 0 a 1\n")
    run = write(tmp_path / "run", "q1 Q0 z 1 1.5 r\nq1 Q0 a 2 1.75 r\n")
    code, out, _ = run_trec(capsys, qrels, run, "-m", "RR")
    assert (code, parse_output(out)) == (0, [("RR", "all", "1.0000")])


def test_short_list_keeps_the_cutoff_denominator(tmp_path, capsys):
    # 2 retrieved, both relevant, 3 relevant labelled: P@5 = 2/5, R@5 = 2/3, AP = (1/1 + 2/2) / 3.
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 1\n")
    run = write(tmp_path / "run", "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n")
    code, out, _ = run_trec(capsys, qrels, run, "-m", "P@5", "R@5", "AP", "Success@1")
    assert code == 0
    assert parse_output(out) == [("P@5", "all", "0.4000"), ("R@5", "all", "0.6667"),
                                 ("AP", "all", "0.6667"), ("Success@1", "all", "1.0000")]


def test_graded_ndcg_and_relevance_level_by_hand(tmp_path, capsys):
    # Ranking d1 (grade 1), d2 (grade 3), d3 (unjudged); d4 grade 2 and d5 grade -1 not retrieved.
    # DCG@3 = 1/log2(2) + 3/log2(3) = 2.892789; ideal 3, 2, 1: 3 + 2/log2(3) + 1/2 = 4.761860.
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\nq1 0 d2 3\nq1 0 d4 2\nq1 0 d5 -1\n")
    run = write(tmp_path / "run", "q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d3 3 1.0 r\n")
    dcg = 1 + 3 / math.log2(3)
    idcg = 3 + 2 / math.log2(3) + 1 / 2
    code, out, _ = run_trec(capsys, qrels, run, "-l", "2", "-m", "nDCG@3", "P@3", "R@3", "RR")
    assert code == 0
    # at level 2 the relevant documents are d2 and d4: one of them in the top 3, first at rank 2
    assert parse_output(out) == [("nDCG@3", "all", f"{dcg / idcg:.4f}"), ("P@3", "all", "0.3333"),
                                 ("R@3", "all", "0.5000"), ("RR", "all", "0.5000")]


def test_topic_without_relevant_document_is_na_and_left_out_of_the_mean(tmp_path, capsys):
    # q1: P@2 = 1/2. q2: judged, nothing relevant -> n/a (trec_eval would say 0 and average 0.25).
    # q3 only in the qrels and q9 only in the run: ignored.
    qrels = write(tmp_path / "qrels", "q1 0 a 1\nq2 0 b 0\nq3 0 c 1\n")
    run = write(tmp_path / "run", "q1 Q0 a 1 2 r\nq1 Q0 x 2 1 r\nq2 Q0 b 1 2 r\nq9 Q0 c 1 2 r\n")
    code, out, _ = run_trec(capsys, qrels, run, "-q", "-m", "P@2", "AP")
    assert code == 0
    assert parse_output(out) == [
        ("P@2", "q1", "0.5000"), ("AP", "q1", "1.0000"),
        ("P@2", "q2", "n/a"), ("AP", "q2", "n/a"),
        ("P@2", "all", "0.5000"), ("AP", "all", "1.0000"),
    ]


def test_every_topic_na_prints_na_means(tmp_path, capsys):
    qrels = write(tmp_path / "qrels", "q1 0 a 1\n")
    run = write(tmp_path / "run", "q1 Q0 a 1 2 r\n")
    code, out, _ = run_trec(capsys, qrels, run, "-l", "2", "-m", "P@1")
    assert (code, parse_output(out)) == (0, [("P@1", "all", "n/a")])


def test_whitespace_comments_blank_lines_and_crlf(tmp_path, capsys):
    qrels = write(tmp_path / "qrels", "# judged by hand\n\nq1\t0\td1\t1\n  q1 0   d2 0  \n")
    expected = [("P@2", "all", "0.5000"), ("RR", "all", "0.5000")]
    for name, text in (
        ("lf", "q1 Q0 d2 1 2.0 r\nq1 Q0 d1 2 1.0 r\n"),
        ("crlf", "q1 Q0 d2 1 2.0 r\r\nq1 Q0 d1 2 1.0 r\r\n"),
        ("mixed-space", "\n# a comment\nq1\tQ0\td2\t1\t  2.0\tr\n\tq1 Q0  d1 2 1e0 r"),
        ("vertical-tab-form-feed", "q1\vQ0 d2 1 2.0 r\nq1 Q0\fd1 2 1.0 r\n"),
    ):
        run = write(tmp_path / name, text)
        code, out, err = run_trec(capsys, qrels, run, "-m", "P@2", "RR")
        assert (code, parse_output(out)) == (0, expected), (name, err)


# --- errors: exit code 2, file and line named ------------------------------------------------------


@pytest.fixture
def good_qrels(tmp_path):
    return write(tmp_path / "qrels", "q1 0 d1 1\nq1 0 d2 0\n")


@pytest.fixture
def good_run(tmp_path):
    return write(tmp_path / "run", "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("q1 Q0 d1 1 2.0 r\n\nq1 Q0 d2 2 1.0\n", 3, "expected 6 fields"),
        ("q1 Q0 d1 1 2.0 r extra\n", 1, "expected 6 fields"),
        ("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 high r\n", 2, "score"),
        ("q1 Q0 d1 1 nan r\n", 1, "finite"),
        ("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq1 Q0 d1 3 0.5 r\n", 3, "at line 1"),
    ],
    ids=["too-few-fields", "too-many-fields", "non-numeric-score", "nan-score", "duplicate-docno"],
)
def test_malformed_run_line_names_file_and_line(tmp_path, capsys, good_qrels, text, line, words):
    run = write(tmp_path / "bad-run", text)
    code, out, err = run_trec(capsys, good_qrels, run)
    assert code == 2
    assert out == ""
    assert f"{run}:{line}:" in err and words in err


@pytest.mark.slow
def test_line_numbers_stay_exact_in_a_file_read_in_parallel(tmp_path, capsys, good_qrels):
    # ~40 MB, several buffers of DuckDB's CSV reader, with 20 bad scores spread over the file.
    n = 1_600_000
    bad = list(range(40_000, n, 80_000))
    lines = [f"q{i // 1000} Q0 doc-{i} {i} {1 + i % 97}.5 run\n" for i in range(1, n + 1)]
    for line_no in bad:
        lines[line_no - 1] = f"q1 Q0 doc-{line_no} 1 {line_no}x run\n"
    run = write(tmp_path / "big-run", "".join(lines))
    code, _, err = run_trec(capsys, good_qrels, run)
    assert code == 2
    reported = [line.split(":")[1] for line in err.splitlines() if line.startswith(f"{run}:")]
    assert reported == [str(line_no) for line_no in bad]
    assert f"{run}:{bad[-1]}: question 'q1': field 'score': '{bad[-1]}x'" in err


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 fields"),
        ("q1 0 d1 yes\n", 1, "grade"),
        ("q1 0 d1 1\nq1 0 d2 1.5\n", 2, "whole number"),
        ("q1 0 d1 1\nq1 0 d1 0\n", 2, "at line 1"),
    ],
    ids=["too-few-fields", "non-numeric-grade", "fractional-grade", "duplicate-docno"],
)
def test_malformed_qrels_line_names_file_and_line(tmp_path, capsys, good_run, text, line, words):
    qrels = write(tmp_path / "bad-qrels", text)
    code, _, err = run_trec(capsys, qrels, good_run)
    assert code == 2
    assert f"{qrels}:{line}:" in err and words in err


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"], ids=["empty", "blank", "comment"])
def test_empty_file_is_an_error(tmp_path, capsys, good_qrels, text):
    run = write(tmp_path / "run-empty", text)
    code, _, err = run_trec(capsys, good_qrels, run)
    assert code == 2
    assert str(run) in err and "no lines" in err


@pytest.mark.parametrize(
    ("raw", "line", "words"),
    [
        (b"q1 Q0 d1 1 2.0 r\nq1 Q0 d\xff2 2 1.0 r\n", 2, "UTF-8"),
        (b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\r\nq1 Q0 d3 3 0.5 r\n", 2, "mixed line endings"),
    ],
    ids=["not-utf8", "mixed-line-endings"],
)
def test_unreadable_run_names_the_line(tmp_path, capsys, good_qrels, raw, line, words):
    run = write(tmp_path / "run-raw", raw)
    code, _, err = run_trec(capsys, good_qrels, run)
    assert code == 2
    assert f"{run}:{line}:" in err and words in err


@pytest.mark.parametrize(
    ("measure", "words"),
    [("P@k10", "cutoff"), ("Bogus@5", "unknown metric"), ("Support", "answer-level"), ("P", "needs a cutoff")],
)
def test_bad_measure_exits_2(capsys, good_qrels, good_run, measure, words):
    code, out, err = run_trec(capsys, good_qrels, good_run, "-m", measure)
    assert code == 2
    assert out == "" and words in err


def test_relevance_level_below_one_is_refused(capsys, good_qrels, good_run):
    code, _, err = run_trec(capsys, good_qrels, good_run, "-l", "0")
    assert code == 2 and "level" in err


def test_no_shared_topic_is_an_error(tmp_path, capsys, good_qrels):
    run = write(tmp_path / "other-run", "q7 Q0 d1 1 2.0 r\n")
    code, _, err = run_trec(capsys, good_qrels, run)
    assert code == 2 and "no topic of the run" in err


def test_missing_file_is_an_error(tmp_path, capsys, good_qrels):
    code, _, err = run_trec(capsys, good_qrels, tmp_path / "absent")
    assert code == 2 and "no such file" in err
