"""`ragslice trec`: agreement with trec_eval's own output and with pytrec_eval, TREC conventions
(ranking by score, ties by docno descending), the short-list denominator, trec_eval's mean and
the n/a rule (--exclude-na) for topics without a relevant document, repeated -m, trec_eval's
reading of the files (fields after the run ID ignored, decimal scores only), errors that name
file and line (exit code 2), and the fast read agreeing with the line-by-line read.

trec_eval's files are in tests/data/trec_eval/ (see its README.md)."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from tiers import examples
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.metrics import engine

from scoring.io import trec
from scoring.cli import main
from scoring.metrics import RANKING_KEYS as RETRIEVAL_KEYS
from scoring.metrics import JUDGED_ONLY_KEYS

# trec_eval's test files (qrels, a run, its output), copied unchanged: see data/trec_eval/README.md.
REFERENCE = Path(__file__).resolve().parent / "data" / "trec_eval"

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
PYTREC_GOLDEN = {canonical: name for name, canonical in TREC_TO_CANONICAL.items()}


def reference_file(name: str) -> Path:
    path = REFERENCE / name
    if not path.is_file():
        pytest.fail(f"trec_eval reference file missing: {path} (tests/data/trec_eval/ belongs to the repository)")
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


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    return qrels


def read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, docno, _, score, _ = line.split()
        run.setdefault(qid, {})[docno] = float(score)
    return run


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
    [("out.test.aq", "qrels.test", 1), ("out.test.aql", "qrels.rel_level", 2), ("out.test.aql3", "qrels.rel_level", 3),
     ("out.test.aql4", "qrels.rel_level", 4)],
)
def test_agrees_with_trec_eval_per_topic_and_all(capsys, expected, qrels, level):
    # At -l 3 topic 303, at -l 4 topics 302 and 303 have no relevant document: trec_eval's values
    # and means, by default.
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


def test_a_measure_carries_its_own_relevance_level(capsys):
    """``P(rel=2)@10`` scores at level 2 whatever -l says (trec_eval's own output at -l 2), beside
    ``P@10`` at the -l level (1 here, where grade-1 documents count too)."""
    at_two = trec_eval_output("out.test.aql")
    code, out, err = run_trec(capsys, reference_file("qrels.rel_level"), reference_file("results.test"), "-q",
                              "-m", "P(rel=2)@10", "-m", "P@10", "RR(rel=2)")
    assert code == 0, err
    ours = {(measure, qid): value for measure, qid, value in parse_output(out)}
    for qid in ("301", "302", "303", "all"):
        assert ours[("P(rel=2)@10", qid)] == at_two[("P@10", qid)]
        assert ours[("RR(rel=2)", qid)] == at_two[("RR", qid)]
    assert ours[("P@10", "all")] > ours[("P(rel=2)@10", "all")]


def relevant_counts(name: str) -> dict[str, int]:
    """qid -> trec_eval's num_rel (relevant documents at its -l level) in one of its outputs."""
    counts = {}
    for line in reference_file(name).read_text().splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        if measure == "num_rel" and qid != "all":
            counts[qid] = int(value)
    return counts


@pytest.mark.parametrize(("expected", "level"), [("out.test.aql3", 3), ("out.test.aql4", 4), ("out.test.aql", 2)])
def test_exclude_na_leaves_out_topics_without_relevant_documents(capsys, expected, level):
    # A topic trec_eval counts no relevant document for (num_rel 0) is n/a; the others print
    # trec_eval's values; `all` is the mean over them (pytrec_eval's exact values, as trec_eval's
    # are rounded to 4 decimals).
    reference, counts = trec_eval_output(expected), relevant_counts(expected)
    qrels_path, run_path = reference_file("qrels.rel_level"), reference_file("results.test")
    code, out, err = run_trec(capsys, qrels_path, run_path, "-q", "-l", level, "--exclude-na", "-m", *PYTREC_GOLDEN)
    assert code == 0, err
    ours = {(measure, qid): value for measure, qid, value in parse_output(out)}
    scored = sorted(qid for qid, n in counts.items() if n > 0)
    assert len(scored) == {2: 3, 3: 2, 4: 1}[level]
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC_GOLDEN.values()), relevance_level=level).evaluate(run)
    for measure, name in PYTREC_GOLDEN.items():
        for qid in counts:
            assert ours[(measure, qid)] == (reference[(measure, qid)] if qid in scored else "n/a"), (measure, qid)
        assert close(ours[(measure, "all")], math.fsum(theirs[q][name] for q in scored) / len(scored)), measure


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


@pytest.mark.parametrize(
    "args",
    [("-m", "P@5", "-m", "RR", "-m", "AP"), ("-m", "P@5", "RR", "AP"), ("-m", "P@5", "RR", "--measures", "AP"),
     ("-m", "P@5", "-m", "RR", "AP", "-m", "P_5")],
    ids=["one-per-m", "several-after-one-m", "mixed", "repeated-measure"],
)
def test_repeated_m_options_accumulate_like_trec_eval(capsys, args):
    reference = trec_eval_output("out.test.aq")
    code, out, err = run_trec(capsys, reference_file("qrels.test"), reference_file("results.test"), *args)
    assert code == 0, err
    assert parse_output(out) == [(m, "all", reference[(m, "all")]) for m in ("P@5", "RR", "AP")]


def test_default_measures_only_without_m(capsys):
    qrels, run = reference_file("qrels.test"), reference_file("results.test")
    code, out, _ = run_trec(capsys, qrels, run)
    assert code == 0
    assert [m for m, _, _ in parse_output(out)] == ["P@10", "R@10", "nDCG@10", "RR", "AP"]
    code, out, _ = run_trec(capsys, qrels, run, "-m", "RR")
    assert code == 0
    assert [m for m, _, _ in parse_output(out)] == ["RR"]


def test_means_match_trec_eval_default_output(capsys):
    # out.test: trec_eval's default measures, means only; those ragslice knows, with their runid.
    printed = dict(line.split()[::2] for line in reference_file("out.test").read_text().splitlines())
    wanted = ["map", "recip_rank", "P_5", "P_10", "P_20", "P_100", "P_1000"]
    code, out, err = run_trec(capsys, reference_file("qrels.test"), reference_file("results.test"), "-m", *wanted)
    assert code == 0, err
    assert parse_output(out) == [(TREC_TO_CANONICAL[name], "all", printed[name]) for name in wanted]
    assert trec.evaluate_files(reference_file("qrels.test"), reference_file("results.test"), ["RR"]).run_id == \
        printed["runid"] == "STANDARD"


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


def test_the_trec_command_loads_no_import_format(tmp_path):
    """`ragslice trec` builds no `ragslice import` source: those formats' modules (and what they import)
    cost a fifth of a second of every run; `ragslice import` still lists them all."""
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\n")
    run = write(tmp_path / "run", "q1 Q0 d1 1 2.0 r\n")
    probe = ("import sys; from scoring.cli import main; code = main(['trec', sys.argv[1], sys.argv[2]]); "
             "print(code, 'scoring.io.importing' in sys.modules, 'scoring.io.ragas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, str(qrels), str(run)], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.splitlines()[-1] == "0 False False", done.stdout + done.stderr
    from scoring.io.importers import FORMATS

    listed = subprocess.run([sys.executable, "-m", "scoring.cli", "import", "--help"], capture_output=True,
                            text=True, timeout=120).stdout
    assert all(name in listed for name in ("trec", "ragas", "beir", "eval-dataset", "trec-rag", "openinference",
                                           "ragchecker")) and len(FORMATS) == 7


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
    return qrels, run, draw(st.sampled_from([1, 2, 3]))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
    code, out, err = run_trec(capsys, qrels_file, run_file, "-q", "-l", level, "--exclude-na", "-m", *PYTREC)
    assert code == 0, err
    ours_na = {(m, q): v for m, q, v in parse_output(out)}

    shared = set(qrels) & set(run)
    theirs = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in shared}, set(PYTREC.values()), relevance_level=level
    ).evaluate({q: run[q] for q in shared})
    assert {q for _, q in ours} == {q for _, q in ours_na} == shared | {"all"}
    answerable = [q for q in shared if any(g >= level for g in qrels[q].values())]
    for measure, name in PYTREC.items():
        # default: trec_eval's value for every topic, and its mean over every topic
        for q in shared:
            assert close(ours[(measure, q)], theirs[q][name]), (measure, q)
        assert close(ours[(measure, "all")], math.fsum(theirs[q][name] for q in shared) / len(shared)), measure
        # --exclude-na: n/a without a relevant document at the level, the mean over the others
        for q in shared:
            if q in answerable:
                assert ours_na[(measure, q)] == ours[(measure, q)], (measure, q)
            else:
                assert ours_na[(measure, q)] == "n/a", (measure, q)
        if answerable:
            mean = math.fsum(theirs[q][name] for q in answerable) / len(answerable)
            assert close(ours_na[(measure, "all")], mean), measure
        else:
            assert ours_na[(measure, "all")] == "n/a"


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


def test_topic_without_relevant_document_by_hand_trec_eval_mean_and_exclude_na(tmp_path, capsys):
    # At -l 2 only q1 has a relevant document (a, grade 2); q4 only in the qrels and q9 only in the
    # run are ignored. Run order by score: q1 b, a; q2 c, d; q3 e.
    # q1: P@2 = 1/2, RR = 1/2, AP = (1/2) / 1 = 1/2;
    #     nDCG@2 = (1 + 2/log2 3) / (2 + 1/log2 3) = 2.261860 / 2.630930 = 0.859719.
    # q2: nothing at grade >= 2: trec_eval scores P@2, RR, AP 0; its nDCG ignores -l: c (grade 1)
    #     first, ideal c: 1/1 = 1.
    # q3: no positive grade at all: 0 everywhere, nDCG too (ideal DCG 0).
    # trec_eval's means over the three topics: 0.5/3 = 0.1667; nDCG@2 (0.859719 + 1 + 0)/3 = 0.619906.
    # --exclude-na: q2 and q3 are n/a, the means are q1's values.
    qrels = write(tmp_path / "qrels", "q1 0 a 2\nq1 0 b 1\nq2 0 c 1\nq2 0 d 0\nq3 0 e 0\nq4 0 x 1\n")
    run = write(tmp_path / "run", "q1 Q0 b 1 3.0 r\nq1 Q0 a 2 2.0 r\nq2 Q0 c 1 1.0 r\nq2 Q0 d 2 0.5 r\n"
                                  "q3 Q0 e 1 1 r\nq9 Q0 x 1 1 r\n")
    ndcg_q1 = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert f"{ndcg_q1:.4f}" == "0.8597" and f"{(ndcg_q1 + 1) / 3:.4f}" == "0.6199"
    measures = ("-m", "P@2", "RR", "AP", "nDCG@2")
    code, out, err = run_trec(capsys, qrels, run, "-q", "-l", "2", *measures)
    assert code == 0, err
    assert parse_output(out) == [
        ("P@2", "q1", "0.5000"), ("RR", "q1", "0.5000"), ("AP", "q1", "0.5000"), ("nDCG@2", "q1", "0.8597"),
        ("P@2", "q2", "0.0000"), ("RR", "q2", "0.0000"), ("AP", "q2", "0.0000"), ("nDCG@2", "q2", "1.0000"),
        ("P@2", "q3", "0.0000"), ("RR", "q3", "0.0000"), ("AP", "q3", "0.0000"), ("nDCG@2", "q3", "0.0000"),
        ("P@2", "all", "0.1667"), ("RR", "all", "0.1667"), ("AP", "all", "0.1667"), ("nDCG@2", "all", "0.6199"),
    ]
    code, out, err = run_trec(capsys, qrels, run, "-q", "-l", "2", "--exclude-na", *measures)
    assert code == 0, err
    assert parse_output(out) == [
        ("P@2", "q1", "0.5000"), ("RR", "q1", "0.5000"), ("AP", "q1", "0.5000"), ("nDCG@2", "q1", "0.8597"),
        ("P@2", "q2", "n/a"), ("RR", "q2", "n/a"), ("AP", "q2", "n/a"), ("nDCG@2", "q2", "n/a"),
        ("P@2", "q3", "n/a"), ("RR", "q3", "n/a"), ("AP", "q3", "n/a"), ("nDCG@2", "q3", "n/a"),
        ("P@2", "all", "0.5000"), ("RR", "all", "0.5000"), ("AP", "all", "0.5000"), ("nDCG@2", "all", "0.8597"),
    ]


def test_every_topic_without_relevant_document(tmp_path, capsys):
    # At -l 2 nothing is relevant: trec_eval's mean is 0 (its nDCG, ignoring -l, is 1: a first, grade 1);
    # with --exclude-na every topic is n/a, and so is the mean.
    qrels = write(tmp_path / "qrels", "q1 0 a 1\n")
    run = write(tmp_path / "run", "q1 Q0 a 1 2 r\n")
    code, out, _ = run_trec(capsys, qrels, run, "-l", "2", "-m", "P@1", "nDCG@1")
    assert (code, parse_output(out)) == (0, [("P@1", "all", "0.0000"), ("nDCG@1", "all", "1.0000")])
    code, out, _ = run_trec(capsys, qrels, run, "-l", "2", "--exclude-na", "-m", "P@1", "nDCG@1")
    assert (code, parse_output(out)) == (0, [("P@1", "all", "n/a"), ("nDCG@1", "all", "n/a")])


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
        ("q1 Q0 d1 1 2.0 r\n\nq1 Q0 d2 2 1.0\n", 3, "expected at least 6 fields"),
        ("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 high r\n", 2, "score"),
        ("q1 Q0 d1 1 nan r\n", 1, "finite"),
        ("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq1 Q0 d1 3 0.5 r\n", 3, "at line 1"),
    ],
    ids=["too-few-fields", "non-numeric-score", "nan-score", "duplicate-docno"],
)
def test_malformed_run_line_names_file_and_line(tmp_path, capsys, good_qrels, text, line, words):
    run = write(tmp_path / "bad-run", text)
    code, out, err = run_trec(capsys, good_qrels, run)
    assert code == 2
    assert out == ""
    assert f"{run}:{line}:" in err and words in err


@pytest.mark.parametrize("score", ["1_000", "inf", "-Infinity", "nan", "NaN", "0x10", "1e400", "1,5", "1.5.2", "1e",
                                   "e5", ".", "+", "--1", "1d5", "1.5f", "\u0661", "\uff11"])
@pytest.mark.parametrize("line", [1, 2])
@pytest.mark.cases(12)
def test_score_other_than_a_decimal_number_is_refused(tmp_path, capsys, good_qrels, score, line):
    # Python's float() takes 1_000, inf, nan and full-width digits, DuckDB 1_000, inf and nan, C's
    # atof (trec_eval) reads 1_000 as 1: a score is a plain decimal or exponent number, or refused.
    lines = ["q1 Q0 d1 1 2.0 r", "q1 Q0 d2 2 1.0 r"]
    lines[line - 1] = f"q1 Q0 d{line} {line} {score} r"
    run = write(tmp_path / "run", "".join(f"{text}\n" for text in lines))
    code, out, err = run_trec(capsys, good_qrels, run, "-m", "RR")
    assert (code, out) == (2, "")
    assert f"{run}:{line}: question 'q1': field 'score': '{score}': the score is a finite decimal number" in err


@pytest.mark.parametrize("score", ["12", "-0.5", ".5", "5.", "+3", "-0", "3.1e-2", "1E+05", "1e-400", "007.50"])
def test_decimal_scores_are_read_as_atof_reads_them(tmp_path, capsys, score):
    # d1 holds the score under test, d2 the same value written plainly (the float of the text):
    # equal scores tie and the docno breaks the tie, "d2" > "d1", so d2 ranks first and RR = 1/2.
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\n")
    value = float(score)
    run = write(tmp_path / "run", f"q1 Q0 d1 1 {score} r\nq1 Q0 d2 2 {value!r} r\n")
    code, out, err = run_trec(capsys, qrels, run, "-m", "RR")
    assert (code, parse_output(out)) == (0, [("RR", "all", "0.5000")]), err


def test_run_fields_after_the_run_id_are_ignored(tmp_path, capsys, monkeypatch):
    # trec_eval skips the rest of a run line after its sixth field: results.test with one or more
    # fields added scores as trec_eval scored the file without them; the run ID is the sixth field.
    taken = routes_taken(monkeypatch)
    reference = trec_eval_output("out.test.aq")
    lines = reference_file("results.test").read_text().splitlines()
    for name, extra in (("one", lambda n: " x"), ("several", lambda n: f"\t{n} more fields" if n % 2 else " #7")):
        run = write(tmp_path / name, "".join(f"{line}{extra(n)}\n" for n, line in enumerate(lines)))
        code, out, err = run_trec(capsys, reference_file("qrels.test"), run, "-q", "-m", *GOLDEN_MEASURES)
        assert code == 0, err
        assert {(m, q): v for m, q, v in parse_output(out)} == reference
        assert trec.evaluate_files(reference_file("qrels.test"), run, ["RR"]).run_id == "STANDARD"
    assert taken.count(("run", False)) == 4  # a line with more fields than six takes the line route


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
        ("q1 0 d1 1\nq1 0 d2 1 extra\n", 2, "expected 4 fields (`qid 0 docno grade`), found 5 (trec_eval "
                                           "refuses a field after the grade too)"),
        ("q1 0 d1 yes\n", 1, "grade"),
        ("q1 0 d1 1\nq1 0 d2 1.5\n", 2, "whole number"),
        ("q1 0 d1 1\nq1 0 d1 0\n", 2, "at line 1"),
    ],
    ids=["too-few-fields", "too-many-fields", "non-numeric-grade", "fractional-grade", "duplicate-docno"],
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


# --- the two reading routes: the fast one certifies what the line route would accept --------------


def routes_taken(monkeypatch) -> list[tuple[str, bool]]:
    """Record (kind, fast route taken) for every file read."""
    taken: list[tuple[str, bool]] = []
    fast = trec._read_fast

    def spy(con, path, kind):
        run_id = fast(con, path, kind)
        taken.append((kind, run_id is not None))
        return run_id

    monkeypatch.setattr(trec, "_read_fast", spy)
    return taken


def test_clean_files_take_the_fast_route_with_spaces_or_tabs(tmp_path, capsys, monkeypatch):
    taken = routes_taken(monkeypatch)
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\nq1 0 d2 0\n\nq2 0 d3 2\n")
    for name, sep in (("spaces", " "), ("tabs", "\t")):
        run = write(tmp_path / name, "".join(sep.join(line.split()) + "\n"
                                             for line in ("q1 Q0 d2 1 2.0 r", "q1 Q0 d1 2 1.5 last")))
        code, out, err = run_trec(capsys, qrels, run, "-m", "P@1", "RR")
        assert (code, parse_output(out)) == (0, [("P@1", "all", "0.0000"), ("RR", "all", "0.5000")]), err
        assert trec.evaluate_files(qrels, run, ["P@1"]).run_id == "last"
    assert taken and all(fast for _, fast in taken), taken


def test_files_the_fast_route_cannot_certify_take_the_line_route(tmp_path, capsys, monkeypatch):
    taken = routes_taken(monkeypatch)
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\n")
    for name, text, code in (
        ("comment", "#q9 Q0 d1 1 9.0 r\nq1 Q0 d1 1 2.0 r\n", 0),
        ("crlf", "q1 Q0 d1 1 2.0 r\r\n", 0),
        ("tab-and-space", "q1\tQ0 d1 1 2.0 r\n", 0),
        ("nul", "q1 Q0 d\x002 1 2.0 r\nq1 Q0 d1 2 1.0 r\n", 0),
        ("empty-iter", "q1  d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n", 2),
        ("empty-rank", "q1 Q0 d1  2.0 r\nq1 Q0 d2 2 1.0 r\n", 2),
        ("empty-runid", "q1 Q0 d1 1 2.0  \nq1 Q0 d2 2 1.0 r\n", 2),
        ("control-0x01", "q1 Q0 d\x012 1 2.0 r\nq1 Q0 d1 2 1.0 r\n", 2),
    ):
        run = write(tmp_path / name, text)
        assert run_trec(capsys, qrels, run, "-m", "RR")[0] == code, name
        assert taken.pop() == ("run", False), name


CLEAN = {"qid": ["q1", "q2", "q10"], "docno": ["d1", "d2", "d3", "D1", "d#"], "score": ["1", "2.5", "-1e-3", "+.5"],
         "grade": ["0", "1", "2", "-1"], "other": ["Q0", "0", "r"]}
ODD_VALUES = {
    "qid": ["#q", "q\x01", "é"],
    "docno": ["d\x00x", "d\x01", "d\rx", "\ufeffd", "d\vx", "d\fx", "d x"],
    "score": ["1_000", "0x10", "nan", "inf", "-Infinity", "1e400", "1e-400", "4.9e-324", "x", "1,5", "", "+1.5e+3",
              "5.", "-0", "0.1000000000000000055511151231257827", "1.7976931348623159e308", ".5e-3", "1E+05", "1e",
              "e5", ".", "+", "1.5.2", "1d5", "\u0661", "1__0", "_1"],
    "grade": ["+1", "02", "1.5", "x", "2147483648", "1_0", ""],
    "other": [""],
}
LAYOUT = {"qrels": ("qid", "other", "docno", "grade"), "run": ("qid", "other", "docno", "other", "score", "other")}
ODDITIES = ["value", "gap", "short", "long", "comment", "blank", "separator", "leading", "trailing", "duplicate",
            "crlf", "mixed", "cr", "no-final-newline", "bom"]


@st.composite
def trec_text(draw, kind: str) -> bytes:
    """Clean lines with up to two oddities that the line route judges (a bad value or byte, an empty,
    missing or extra field, a comment or blank line, other whitespace, a repeated line, CR, a BOM)."""
    lines = [[draw(st.sampled_from(CLEAN[f])) for f in LAYOUT[kind]] for _ in range(draw(st.integers(1, 5)))]
    seps = [[" "] * (len(LAYOUT[kind]) - 1) for _ in lines]
    edges = [["", ""] for _ in lines]
    ending, text_edits = "\n", set()
    for oddity in draw(st.lists(st.sampled_from(ODDITIES), max_size=2)):
        i = draw(st.integers(0, len(lines) - 1))
        if oddity in ("value", "gap", "short") and len(lines[i]) < len(LAYOUT[kind]):
            continue  # a blank line, or one already short of a field
        if oddity == "value":
            f = draw(st.integers(0, len(LAYOUT[kind]) - 1))
            lines[i][f] = draw(st.sampled_from(ODD_VALUES[LAYOUT[kind][f]]))
        elif oddity == "gap":  # a field left out, its separators kept
            lines[i][draw(st.integers(0, len(LAYOUT[kind]) - 1))] = ""
        elif oddity == "short":
            f = draw(st.integers(1, len(LAYOUT[kind]) - 1))
            del lines[i][f], seps[i][f - 1]
        elif oddity == "long":
            lines[i].append("extra")
            seps[i].append(" ")
        elif oddity == "comment":
            lines[i][0] = "#" + lines[i][0]
        elif oddity == "blank":
            lines.insert(i, [draw(st.sampled_from(["", " ", "\t"]))])
            seps.insert(i, [])
            edges.insert(i, ["", ""])
        elif oddity == "separator":
            if seps[i]:  # not a blank line
                where = draw(st.integers(0, len(seps[i]) - 1))
                seps[i][where] = draw(st.sampled_from(["\t", "  ", " \t", "\v", "\f", "\r"]))
        elif oddity in ("leading", "trailing"):
            edges[i][oddity == "trailing"] = draw(st.sampled_from([" ", "\t", "  "]))
        elif oddity == "duplicate":
            lines.append(list(lines[i]))
            seps.append(list(seps[i]))
            edges.append(list(edges[i]))
        elif oddity in ("crlf", "cr"):
            ending = {"crlf": "\r\n", "cr": "\r"}[oddity]
        else:  # mixed, no-final-newline, bom
            text_edits.add(oddity)
    text = ""
    for n, (fields, gaps, (lead, trail)) in enumerate(zip(lines, seps, edges)):
        line = fields[0] + "".join(sep + field for sep, field in zip(gaps, fields[1:]))
        other_ending = "\r\n" if ending == "\n" else "\n"
        text += lead + line + trail + (other_ending if "mixed" in text_edits and n == len(lines) // 2 else ending)
    if "no-final-newline" in text_edits:
        text = text.rstrip("\r\n")
    if "bom" in text_edits:
        text = "\ufeff" + text
    return text.encode()


CLEAN_FILES = {"qrels": [["q1", "0", "d1", "1"], ["q1", "0", "d2", "0"], ["q2", "0", "d3", "2"]],
               "run": [["q1", "Q0", "d1", "1", "2.5", "r"], ["q1", "Q0", "d2", "2", "1", "r"],
                       ["q2", "Q0", "d3", "1", "-1e-3", "r"]]}


def one_oddity(kind: str) -> list[tuple[str, bytes]]:
    """The clean file of `kind` with one oddity, each kind of oddity at every place it can take."""
    clean = CLEAN_FILES[kind]
    n = len(LAYOUT[kind])

    def text(lines: list[list[str]], seps: dict[tuple[int, int], str] | None = None, ending: str = "\n") -> bytes:
        seps = seps or {}
        return "".join(line[0] + "".join(seps.get((i, f), " ") + field for f, field in enumerate(line[1:], 1)) + ending
                       for i, line in enumerate(lines)).encode()

    def edited(i: int, f: int, value: str) -> list[list[str]]:
        return [[value if (r, c) == (i, f) else v for c, v in enumerate(line)] for r, line in enumerate(clean)]

    cases = [("clean", text(clean))]
    for i in (0, len(clean) - 1):
        for f in range(n):
            cases += [(f"line {i} field {f} = {v!r}", text(edited(i, f, v)))
                      for v in ODD_VALUES[LAYOUT[kind][f]] + ["", "#x"]]
            cases.append((f"line {i} without field {f}", text([line[:f] + line[f + 1:] if r == i else line
                                                                for r, line in enumerate(clean)])))
            if f in (1, n - 1):
                cases += [(f"line {i} separator {f} = {sep!r}", text(clean, {(i, f): sep}))
                          for sep in ("\t", "  ", " \t", "\v", "\f", "\r", "\x00", "\x01")]
        cases += [(f"line {i} extra field", text([line + ["x"] if r == i else line for r, line in enumerate(clean)])),
                  (f"line {i} repeated", text(clean + [clean[i]])),
                  *((f"line {i} {edge!r}", text([[edge + line[0], *line[1:]] if r == i else line
                                                 for r, line in enumerate(clean)]))
                    for edge in (" ", "\t", "#", "\ufeff")),
                  *((f"line {i} ends {edge!r}", text([[*line[:-1], line[-1] + edge] if r == i else line
                                                      for r, line in enumerate(clean)]))
                    for edge in (" ", "  ", "\t", "\r", "\v", "\f"))]
    body = text(clean)
    cases += [("blank lines", b"\n" + body.replace(b"\n", b"\n\n", 1) + b"\n  \n"),
              ("only a comment", b"# judged\n"), ("empty", b""), ("crlf", text(clean, ending="\r\n")),
              ("cr", text(clean, ending="\r")), ("mixed endings", body.replace(b"\n", b"\r\n", 1)),
              ("no final newline", body.rstrip(b"\n")), ("bom", "\ufeff".encode() + body),
              ("tabs", body.replace(b" ", b"\t")),
              ("tabs, a space in a field", body.replace(b" ", b"\t").replace(b"d2", b"d 2")),
              ("not utf-8", body.replace(b"d2", b"d\xff2"))]
    return cases


def read_by(con: duckdb.DuckDBPyConnection, path: Path, kind: str, *, fast: bool) -> tuple:
    """What reading a file leaves (run ID, rows, topics) or the error it raises, by either route."""
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(trec, "_read_fast", lambda con, path, kind: None)
        try:
            run_id = trec._load(con, path, kind)
        except trec.ValidationError as error:
            return ("error", str(error))
    return (run_id, con.execute(f"SELECT * FROM trec_{kind} ORDER BY ALL").fetchall(),
            con.execute(f"SELECT * FROM trec_{kind}_topics ORDER BY ALL").fetchall())


@pytest.mark.parametrize("kind", ["qrels", "run"])
def test_fast_route_agrees_with_the_line_route_on_every_single_oddity(tmp_path, kind):
    con = duckdb.connect()
    disagree, fast_taken = [], 0
    for n, (name, text) in enumerate(one_oddity(kind)):
        path = write(tmp_path / f"{kind}-{n}", text)
        fast_taken += trec._read_fast(con, path, kind) is not None
        fast, lines = read_by(con, path, kind, fast=True), read_by(con, path, kind, fast=False)
        if fast != lines:
            disagree.append((name, fast, lines))
    assert not disagree, disagree
    assert fast_taken >= 20, "the clean file and the oddities the fast route certifies take it (22 and 36)"


@settings(max_examples=examples(100), deadline=None)
@given(qrels_text=trec_text("qrels"), run_text=trec_text("run"))
def test_fast_route_agrees_with_the_line_route(tmp_path_factory, qrels_text, run_text):
    folder = tmp_path_factory.mktemp("routes")
    con = duckdb.connect()
    for kind, text in (("qrels", qrels_text), ("run", run_text)):
        path = write(folder / kind, text)
        assert read_by(con, path, kind, fast=True) == read_by(con, path, kind, fast=False), text


@pytest.mark.parametrize(("pair", "fast"), [("0::UBIGINT", False), ("hash(qid, docno) & 4294967295", True)],
                         ids=["every-hash-equal", "top-bits-equal"])
def test_hash_collisions_are_told_apart(tmp_path, capsys, monkeypatch, pair, fast):
    # Every (qid, docno) pair given the same hash: the duplicate check and the ranking's prefilter
    # see nothing but collisions, the line route reads the files and the scores stay trec_eval's.
    # Hashes that share only their top 32 bits: the full hashes tell the pairs apart, on the fast route.
    monkeypatch.setattr(trec, "_KEPT", {kind: columns.replace("hash(qid, docno)", pair)
                                        for kind, columns in trec._KEPT.items()})
    taken = routes_taken(monkeypatch)
    reference = trec_eval_output("out.test.aq")
    qrels = write(tmp_path / "qrels", reference_file("qrels.test").read_text())
    run = write(tmp_path / "run", "".join(" ".join(line.split()) + "\n"
                                          for line in reference_file("results.test").read_text().splitlines()))
    code, out, err = run_trec(capsys, qrels, run, "-m", "P@10", "AP", "nDCG@20")
    assert code == 0, err
    assert parse_output(out) == [(m, "all", reference[(m, "all")]) for m in ("P@10", "AP", "nDCG@20")]
    assert taken == [("qrels", fast), ("run", fast)]


@pytest.mark.parametrize(("qrels", "level"), [("qrels.test", 1), ("qrels.rel_level", 2), ("qrels.rel_level", 1)])
def test_ranking_of_positively_graded_documents_scores_as_the_full_ranking(qrels, level):
    """The engine sees only the positively graded judgements and those documents at their rank in
    the full ranking: every retrieval metric of the registry scores as with every judgement and the
    whole ranking."""
    con = duckdb.connect()
    trec.load_qrels(con, reference_file(qrels))
    run_id = trec.load_run(con, reference_file("results.test"))
    trec.build_inputs(con, run_id, [1, 5, 10, 20, 100, 1000, engine.WHOLE_RANKING])
    query = f"SELECT question_id, k, {', '.join(RETRIEVAL_KEYS)} FROM ({engine.retrieval_sql()}) ORDER BY ALL"
    restricted = con.execute(query, {"level": level}).fetchall()
    n_restricted = con.execute("SELECT count(*) FROM eval_retrieved").fetchone()[0]
    n_positive = con.execute("SELECT count(*) FROM eval_labels").fetchone()[0]
    con.execute("""CREATE OR REPLACE TEMP TABLE eval_retrieved AS
        SELECT $run_id AS run_id, qid AS question_id, row_number() OVER (
            PARTITION BY qid ORDER BY score DESC, docno DESC)::INTEGER AS rank, docno AS doc_id FROM trec_run""",
                {"run_id": run_id})
    con.execute("""CREATE OR REPLACE TEMP TABLE eval_labels AS
        SELECT 'trec' AS suite, qid AS question_id, docno AS doc_id, grade FROM trec_qrels""")
    full = con.execute(query, {"level": level}).fetchall()
    assert con.execute("SELECT count(*) FROM eval_retrieved").fetchone()[0] == 1500 > n_restricted
    assert con.execute("SELECT count(*) FROM eval_labels").fetchone()[0] > n_positive
    assert len(full) == len(restricted) == 3 * 7
    for ours, whole in zip(restricted, full):
        assert ours[:2] == whole[:2]
        for key, a, b in zip(RETRIEVAL_KEYS, ours[2:], whole[2:]):
            assert (a is None) == (b is None) and (a is None or math.isclose(a, b, abs_tol=1e-12)), (ours[:2], key)


# --- the measures over judged documents only: trec_eval's bpref, and its measures under -J ----------

# trec_eval's names -> ragslice's (bpref; under -J, the condensed-list measures), written out here.
JUDGED_TO_CANONICAL = {
    "bpref": "Bpref",
    **{f"P_{k}": f"P'@{k}" for k in (5, 10, 20, 100, 1000)},
    **{f"ndcg_cut_{k}": f"nDCG'@{k}" for k in (5, 10, 20, 100, 1000)},
    "map": "AP'",
    **{f"map_cut_{k}": f"AP'@{k}" for k in (10, 100)},
}
JUDGED_MEASURES = list(JUDGED_TO_CANONICAL.values())


def trec_eval_judged(name: str, wanted: dict[str, str] = JUDGED_TO_CANONICAL) -> dict[tuple[str, str], str]:
    """(canonical measure, qid) -> value as trec_eval printed it, for the `wanted` trec_eval measures."""
    values = {}
    for line in reference_file(name).read_text().splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        if measure in wanted:
            values[(wanted[measure], qid)] = value
    return values


@pytest.mark.parametrize(("expected", "qrels", "level"),
                         [("out.test.aq", "qrels.test", 1), ("out.test.aql", "qrels.rel_level", 2),
                          ("out.test.aql3", "qrels.rel_level", 3), ("out.test.aql4", "qrels.rel_level", 4)])
def test_bpref_agrees_with_trec_eval(capsys, expected, qrels, level):
    # qrels.rel_level grades some documents -1: trec_eval's pooled but unjudged documents, passed over.
    reference = trec_eval_judged(expected, {"bpref": "Bpref"})
    code, out, err = run_trec(capsys, reference_file(qrels), reference_file("results.test"), "-q", "-l", level,
                              "-m", "bpref")
    assert code == 0, err
    assert {(m, q): v for m, q, v in parse_output(out)} == reference
    assert len(reference) == 4


@pytest.mark.parametrize(("expected", "qrels", "level"),
                         [("out.test.aqJ", "qrels.test", 1), ("out.test.aqlJ", "qrels.rel_level", 2),
                          ("out.test.aql3J", "qrels.rel_level", 3)])
def test_condensed_lists_agree_with_trec_eval_judged_only(capsys, expected, qrels, level):
    """P'@k, nDCG'@k, AP'@k and AP' are trec_eval -J's P_k, ndcg_cut_k, map_cut_k and map, per topic and
    in its mean (at -l3 topic 303 has no relevant document: trec_eval's 0, and nDCG' its graded value)."""
    reference = trec_eval_judged(expected)
    code, out, err = run_trec(capsys, reference_file(qrels), reference_file("results.test"), "-q", "-l", level,
                              "-m", *JUDGED_MEASURES)
    assert code == 0, err
    rows = parse_output(out)
    assert {(m, q): v for m, q, v in rows} == reference
    assert len(rows) == len(reference) == 4 * len(JUDGED_MEASURES)
    # unjudged documents rank above relevant ones in these runs, and count against the standard AP only
    code, out, _ = run_trec(capsys, reference_file(qrels), reference_file("results.test"), "-l", level,
                            "-m", "AP", "AP'")
    (_, _, standard), (_, _, condensed) = parse_output(out)
    assert code == 0 and float(condensed) > float(standard)


def test_condensed_lists_exclude_na_topics_without_relevant_documents(capsys):
    # At -l3 topic 303 has no relevant document: n/a for every measure, P'@k and Bpref included, and the
    # means are over 301 and 302 (pytrec_eval -J's exact values; trec_eval's are rounded).
    reference = trec_eval_judged("out.test.aql3J")
    qrels_path, run_path = reference_file("qrels.rel_level"), reference_file("results.test")
    code, out, err = run_trec(capsys, qrels_path, run_path, "-q", "-l", "3", "--exclude-na", "-m", *JUDGED_MEASURES)
    assert code == 0, err
    ours = {(measure, qid): value for measure, qid, value in parse_output(out)}
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    names = {canonical: name for name, canonical in JUDGED_TO_CANONICAL.items()}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(names.values()), relevance_level=3,
                                            judged_docs_only_flag=True).evaluate(run)
    for measure, name in names.items():
        assert ours[(measure, "303")] == "n/a", measure
        for qid in ("301", "302"):
            assert ours[(measure, qid)] == reference[(measure, qid)], (measure, qid)
        assert close(ours[(measure, "all")], (theirs["301"][name] + theirs["302"][name]) / 2), measure


def test_a_negative_grade_is_unjudged_for_the_judged_only_measures(tmp_path, capsys):
    # Ranking n (grade -1), a (1), b (0), u (not in the qrels). trec_eval reads -1 as pooled but not
    # judged: the condensed list is a, b, so P'@1 = 1, AP' = 1; Bpref: nothing judged non-relevant
    # above a: 1. (Had n counted as judged non-relevant: P'@1 = 0, Bpref 1 - 1/1 = 0.)
    # The standard measures see n in the first slot: P@1 = 0, AP = 1/2.
    qrels = write(tmp_path / "qrels", "q1 0 a 1\nq1 0 n -1\nq1 0 b 0\n")
    run = write(tmp_path / "run", "q1 Q0 n 1 4.0 r\nq1 Q0 a 2 3.0 r\nq1 Q0 b 3 2.0 r\nq1 Q0 u 4 1.0 r\n")
    code, out, err = run_trec(capsys, qrels, run, "-m", "P'@1", "AP'", "bpref", "P@1", "AP")
    assert code == 0, err
    assert parse_output(out) == [("P'@1", "all", "1.0000"), ("AP'", "all", "1.0000"), ("Bpref", "all", "1.0000"),
                                 ("P@1", "all", "0.0000"), ("AP", "all", "0.5000")]
    theirs = pytrec_eval.RelevanceEvaluator(read_qrels(qrels), {"P_1", "map", "bpref"},
                                            judged_docs_only_flag=True).evaluate(read_run(run))["q1"]
    assert (theirs["P_1"], theirs["map"], theirs["bpref"]) == (1.0, 1.0, 1.0)


def test_ir_measures_and_trec_eval_spellings_print_canonically(capsys):
    code, out, err = run_trec(capsys, reference_file("qrels.test"), reference_file("results.test"), "-m",
                              "P(judged_only=True)@10", "nDCG(judged_only=True)@10", "AP(judged_only=True)", "bpref",
                              "P'@10")
    assert code == 0, err
    reference = trec_eval_judged("out.test.aqJ")
    assert parse_output(out) == [(m, "all", reference[(m, "all")]) for m in ("P'@10", "nDCG'@10", "AP'", "Bpref")]


# pytrec_eval under judged_docs_only_flag (trec_eval -J) for the condensed lists; its plain bpref.
PYTREC_JUDGED = {"P'@3": "P_3", "P'@10": "P_10", "nDCG'@3": "ndcg_cut_3", "nDCG'@10": "ndcg_cut_10", "AP'": "map",
                 "AP'@5": "map_cut_5"}


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(collections())
def test_judged_only_measures_agree_with_pytrec_eval_on_random_runs_with_ties(tmp_path_factory, capsys, data):
    """Grades -1 to 3 (a negative grade: pooled, not judged), many ties, topics on one side only; trec_eval's
    values and mean by default, n/a and the mean over the others with --exclude-na."""
    qrels, run, level = data
    folder = tmp_path_factory.mktemp("judged")
    qrels_file = write(folder / "qrels", "".join(
        f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    run_file = write(folder / "run", "".join(
        f"{q} Q0 {d} {r} {s} run-x\n" for q, docs in run.items() for r, (d, s) in enumerate(docs.items(), 1)))
    measures = [*PYTREC_JUDGED, "Bpref"]
    shared = set(qrels) & set(run)
    judged_qrels, judged_run = {q: qrels[q] for q in shared}, {q: run[q] for q in shared}
    theirs = pytrec_eval.RelevanceEvaluator(judged_qrels, set(PYTREC_JUDGED.values()), relevance_level=level,
                                            judged_docs_only_flag=True).evaluate(judged_run)
    bpref = pytrec_eval.RelevanceEvaluator(judged_qrels, {"bpref"}, relevance_level=level).evaluate(judged_run)
    for q in shared:
        theirs[q]["bpref"] = bpref[q]["bpref"]
    names = {**PYTREC_JUDGED, "Bpref": "bpref"}
    answerable = [q for q in shared if any(g >= level for g in qrels[q].values())]
    for exclude_na in (False, True):
        code, out, err = run_trec(capsys, qrels_file, run_file, "-q", "-l", level, *(["--exclude-na"] * exclude_na),
                                  "-m", *measures)
        assert code == 0, err
        ours = {(m, q): v for m, q, v in parse_output(out)}
        scored = answerable if exclude_na else sorted(shared)
        for measure, name in names.items():
            for q in shared:
                if q in scored:
                    assert close(ours[(measure, q)], theirs[q][name]), (measure, q, exclude_na)
                else:
                    assert ours[(measure, q)] == "n/a", (measure, q)
            if scored:
                assert close(ours[(measure, "all")], math.fsum(theirs[q][name] for q in scored) / len(scored)), measure
            else:
                assert ours[(measure, "all")] == "n/a"


IR_MEASURES = ["P(judged_only=True)@5", "P(judged_only=True)@10", "P(judged_only=True,rel=2)@10",
               "nDCG(judged_only=True)@10", "nDCG(judged_only=True)@100", "AP(judged_only=True)",
               "AP(judged_only=True)@100", "AP(judged_only=True,rel=3)", "Bpref", "Bpref(rel=2)"]


@pytest.mark.parametrize("qrels", ["qrels.test", "qrels.rel_level"])
def test_judged_only_measures_agree_with_ir_measures(capsys, qrels):
    """ir_measures' own measure strings, parsed by ragslice, give ir_measures' values per topic."""
    ir_measures = pytest.importorskip("ir_measures")
    wanted = [ir_measures.parse_measure(text) for text in IR_MEASURES]
    qrels_path, run_path = reference_file(qrels), reference_file("results.test")
    theirs = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(
        wanted, ir_measures.read_trec_qrels(str(qrels_path)), ir_measures.read_trec_run(str(run_path)))}
    code, out, err = run_trec(capsys, qrels_path, run_path, "-q", "-m", *map(str, wanted))
    assert code == 0, err
    ours = {(m, q): v for m, q, v in parse_output(out) if q != "all"}
    canonical = {str(m): str(trec.parse_measures([str(m)])[0]) for m in wanted}
    assert canonical["P(judged_only=True,rel=2)@10"] == "P'(rel=2)@10" and canonical["Bpref"] == "Bpref"
    assert len(theirs) == 3 * len(IR_MEASURES)
    for (measure, qid), value in theirs.items():
        assert close(ours[(canonical[measure], qid)], value), (measure, qid)


@pytest.mark.parametrize(("qrels", "level"), [("qrels.test", 1), ("qrels.rel_level", 2), ("qrels.rel_level", 1)])
def test_ranking_of_judged_documents_scores_as_the_full_ranking(qrels, level):
    """With `judged`, the engine sees every judged document (grade 0 and above) at its rank in the full
    ranking: every retrieval metric scores as with the whole ranking and every judgement (the negative
    grades left out, as trec_eval reads them: pooled, not judged)."""
    keys = [*RETRIEVAL_KEYS, *JUDGED_ONLY_KEYS]
    query = f"SELECT question_id, k, {', '.join(keys)} FROM ({engine.retrieval_sql()}) ORDER BY ALL"
    con = duckdb.connect()
    trec.load_qrels(con, reference_file(qrels))
    run_id = trec.load_run(con, reference_file("results.test"))
    trec.build_inputs(con, run_id, [1, 5, 10, 20, 100, 1000, engine.WHOLE_RANKING], judged=True)
    restricted = con.execute(query, {"level": level}).fetchall()
    n_judged = con.execute("SELECT count(*) FROM eval_retrieved").fetchone()[0]
    con.execute("""CREATE OR REPLACE TEMP TABLE eval_retrieved AS
        SELECT $run_id AS run_id, qid AS question_id, row_number() OVER (
            PARTITION BY qid ORDER BY score DESC, docno DESC)::INTEGER AS rank, docno AS doc_id FROM trec_run""",
                {"run_id": run_id})
    con.execute("""CREATE OR REPLACE TEMP TABLE eval_labels AS
        SELECT 'trec' AS suite, qid AS question_id, docno AS doc_id, grade FROM trec_qrels WHERE grade >= 0""")
    full = con.execute(query, {"level": level}).fetchall()
    assert con.execute("SELECT count(*) FROM eval_retrieved").fetchone()[0] == 1500 > n_judged
    assert len(full) == len(restricted) == 3 * 7
    for ours, whole in zip(restricted, full):
        assert ours[:2] == whole[:2]
        for key, a, b in zip(keys, ours[2:], whole[2:]):
            assert (a is None) == (b is None) and (a is None or math.isclose(a, b, abs_tol=1e-12)), (ours[:2], key)
