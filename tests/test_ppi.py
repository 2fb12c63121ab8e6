"""Review samples and prediction-powered estimates: the draw (seeded, stratified, checked like every input),
the PPI++ arithmetic by hand and against ppi_py, coverage by simulation, and the demo's corrected Support."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from scoring.cli import main
from scoring.decide import ppi
from scoring.errors import Problems
from scoring.store.samples import allocate, draw_from_frame, read_sample

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"


# --- the arithmetic, by hand -------------------------------------------------------------------------------

def test_ppi_mean_by_hand():
    # lambda 1: mean of the 6 judged-only predictions (4/6) + mean of y - yhat over the reviewed (0, -1, 0, 1: 0)
    found = ppi.ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 0, 1, 1, 1, 0], lam=1)
    assert found.estimate == pytest.approx(4 / 6)
    # se^2 = var(y - yhat) / n + var(yhat') / N = (2/4) / 4 + (2/9) / 6 = 0.125 + 0.037037...
    assert found.se == pytest.approx((0.125 + 2 / 9 / 6) ** 0.5)
    assert found.high - found.estimate == pytest.approx(1.959964 * found.se, rel=1e-6)
    # lambda 0 is the reviewed-only mean (3/4) with the reviewed items' own spread
    alone = ppi.ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 0, 1, 1, 1, 0], lam=0)
    assert alone.estimate == pytest.approx(0.75)
    assert alone.se == pytest.approx((0.75 * 0.25 / 4) ** 0.5)


def test_tuned_lambda_by_hand():
    # y = yhat = (1, 0), no unlabelled spread beyond them: cov(y, yhat) = 1/4 (divisor n), the variance of
    # (1, 0, 1, 0) with divisor 3 is 1/3, n/N = 1: lambda = (1/4) / (2 * 1/3) = 0.375
    assert ppi.tuned_lambda([1, 0], [1, 0], [1, 0]) == pytest.approx(0.375)


@pytest.mark.slow  # ppi_py compiles its numba kernels on first use (4 s); the hand values above run in the fast tier
def test_ppi_mean_agrees_with_ppi_py():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(3)
    for _ in range(20):
        n, big = int(rng.integers(5, 60)), int(rng.integers(10, 400))
        y = rng.integers(0, 2, n).astype(float)
        yhat = np.where(rng.random(n) < 0.8, y, 1 - y)
        unlabelled = rng.integers(0, 2, big).astype(float)
        ours = ppi.ppi_mean(y, yhat, unlabelled)
        low, high = ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=0.05)
        assert ours.estimate == pytest.approx(float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, unlabelled))))
        assert (ours.low, ours.high) == pytest.approx((float(np.squeeze(low)), float(np.squeeze(high))))


def test_ratio_with_one_claim_per_item_is_the_mean():
    # every item makes one claim: (K_u + N mean_u) / (K_c + N); with no known part, the PPI mean of u
    y, yhat, rest = np.array([1, 0, 1, 1.0]), np.array([1, 1, 1, 0.0]), np.array([1, 0, 1, 1, 1, 0.0])
    pairs = lambda u: np.stack([u, np.ones_like(u)], axis=1)  # noqa: E731
    stratum = ppi.Stratum("", 10, pairs(y), pairs(yhat), pairs(rest), drawn=4)
    found = ppi.ratio_estimate([stratum], (0.0, 0.0), lam=1.0)
    mean = ppi.ppi_mean(y, yhat, rest, lam=1.0)
    assert found.estimate == pytest.approx(mean.estimate)
    assert found.se is None and found.reason is not None  # 4 reviewed: below MIN_SAMPLE, no interval is given
    many = ppi.Stratum("", 18, pairs(np.tile(y, 3)), pairs(np.tile(yhat, 3)), pairs(rest), drawn=12)
    found = ppi.ratio_estimate([many], (0.0, 0.0), lam=1.0, pseudo=0)  # the plain CLT interval is ppi_py's
    mean = ppi.ppi_mean(np.tile(y, 3), np.tile(yhat, 3), rest, lam=1.0)
    assert (found.estimate, found.se, found.low) == pytest.approx((mean.estimate, mean.se, mean.low))
    # two pseudo-reviews leave the estimate; the rectifier's u (0, -1, 0, 1 three times) has squared deviations
    # 6, plus 2: 8 / 14^2, the judged-only part as before (2/9) / 6
    padded = ppi.ratio_estimate([many], (0.0, 0.0), lam=1.0)
    assert padded.estimate == pytest.approx(mean.estimate)
    assert padded.se == pytest.approx((8 / 196 + 2 / 9 / 6) ** 0.5)


def test_rectifier_covariance_with_pseudo_reviews_by_hand():
    # rectified u: 0, -1, 0, 1 (mean 0, squared deviations 2), c: 0 throughout; two pseudo-reviews one claim
    # above and below the mean add 2: (2 + 2) / (4 + 2)^2 = 1/9; plain: 2 / 4^2 = 1/8 (ppi_py's, divisor n, over n)
    rectified = np.array([[0, 0], [-1, 0], [0, 0], [1, 0.0]])
    assert ppi.rectifier_cov(rectified) == pytest.approx(np.array([[1 / 9, 0], [0, 0]]))
    assert ppi.rectifier_cov(rectified, pseudo=0) == pytest.approx(np.array([[1 / 8, 0], [0, 0]]))


def test_a_judge_no_review_contradicts_still_gets_an_interval_by_hand():
    # 10 reviewed, the judge right on each (8 supported, 2 not), 30 more judged supported; lambda 1: the
    # rectifier is 0 on every review. Totals T_u = 40 (1 + 0) = 40 = T_c: the ratio 1. The plain CLT interval
    # has no width; with the pseudo-reviews the u-mean's variance is 2 / 12^2, the ratio's gradient (1/40,
    # -1/40) on the totals' covariance 40^2 [[2/144, 0], [0, 0]]: se = sqrt(2) / 12 = 0.1179
    pairs = lambda u: np.stack([np.asarray(u, float), np.ones(len(u))], axis=1)  # noqa: E731
    seen = [1] * 8 + [0] * 2
    stratum = ppi.Stratum("", 40, pairs(seen), pairs(seen), pairs([1] * 30), drawn=10)
    plain = ppi.ratio_estimate([stratum], (0.0, 0.0), lam=1.0, pseudo=0)
    assert (plain.estimate, plain.se) == pytest.approx((1.0, 0.0))
    found = ppi.ratio_estimate([stratum], (0.0, 0.0), lam=1.0)
    assert found.estimate == pytest.approx(1.0)
    assert found.se == pytest.approx(2 ** 0.5 / 12)
    assert found.low == pytest.approx(1 - 1.959964 * 2 ** 0.5 / 12, rel=1e-6)


def test_a_stratum_without_two_reviews_gives_no_interval():
    pairs = lambda u: np.stack([np.asarray(u, float), np.ones(len(u))], axis=1)  # noqa: E731
    a = ppi.Stratum("type=a", 40, pairs([1] * 12), pairs([1] * 12), pairs([1] * 28), drawn=12)
    b = ppi.Stratum("type=b", 10, pairs([0]), pairs([1]), pairs([1] * 9), drawn=3)
    found = ppi.ratio_estimate([a, b], (0.0, 0.0))
    assert not found.valid and "type=b" in found.reason


# --- coverage by simulation (a small version of benchmarks/calibrate_ppi.py) -------------------------------

def simulate(trials: int, n_per: int, seed: int = 0) -> tuple[float, float]:
    """A population of 2,000 sentences in two strata; the judge is right on stratum a and calls 40% of stratum
    b's unsupported claims supported. Coverage of the corrected 95% interval and of the judge-only figure's
    binomial interval (which cannot see the judge's bias)."""
    rng = np.random.default_rng(seed)
    sizes = {"a": 1200, "b": 800}
    truth = {"a": rng.random(sizes["a"]) < 0.85, "b": rng.random(sizes["b"]) < 0.5}
    pred = {"a": truth["a"].copy(), "b": truth["b"] | (rng.random(sizes["b"]) < 0.4)}
    true_value = (truth["a"].sum() + truth["b"].sum()) / 2000
    hits = judge_hits = 0
    for _ in range(trials):
        strata = []
        for h, size in sizes.items():
            picked = rng.choice(size, n_per, replace=False)
            rest = np.setdiff1d(np.arange(size), picked)
            pairs = lambda u: np.stack([u.astype(float), np.ones(len(u))], axis=1)  # noqa: E731
            strata.append(ppi.Stratum(h, size, pairs(truth[h][picked]), pairs(pred[h][picked]), pairs(pred[h][rest]),
                                      drawn=n_per))
        found = ppi.ratio_estimate(strata, (0.0, 0.0))
        hits += found.low <= true_value <= found.high
        judged = ppi.judge_only(strata, (0.0, 0.0))
        half = 1.96 * (judged * (1 - judged) / 2000) ** 0.5
        judge_hits += judged - half <= true_value <= judged + half
    return hits / trials, judge_hits / trials


@pytest.mark.parametrize("n_per", [8, 100])
def test_corrected_interval_covers_at_its_nominal_rate(n_per):
    # 8 a stratum is about the demo's; the plain CLT interval covered 0.70 there (benchmarks/calibrate_ppi.py)
    coverage, judge = simulate(300, n_per)
    # 300 trials: Monte Carlo se about 0.0126 at 0.95; the judge-only interval misses the bias every time
    assert coverage >= 0.95 - 3 * 0.0126
    assert judge < 0.05


# --- the draw ----------------------------------------------------------------------------------------------

def frame(n: int = 60) -> list[dict]:
    return [{"run_id": "r", "question_id": f"q-{i // 3:03d}", "sentence": i % 3, "text": f"sentence {i}",
             "doc_id": None, "type": "lookup" if i < 45 else "refusal", "answerable": i < 54} for i in range(n)]


def test_allocation_by_hand():
    # 45 and 15 items, 12 asked: proportional 9 and 3
    assert allocate({"a": 45, "b": 15}, 12) == {"a": 9, "b": 3}
    # a stratum of 2 among 98 still gets its two (for a spread), the rest proportionally
    assert allocate({"a": 98, "b": 2}, 10) == {"a": 8, "b": 2}
    assert allocate({"a": 3, "b": 2}, 10) == {"a": 3, "b": 2}


def test_same_seed_same_sample_and_inclusion_probabilities():
    one = draw_from_frame(frame(), ["r"], unit="sentence", size=12, strata=["type"], seed=5, drawn_at="t")
    two = draw_from_frame(frame(), ["r"], unit="sentence", size=12, strata=["type"], seed=5, drawn_at="t")
    other = draw_from_frame(frame(), ["r"], unit="sentence", size=12, strata=["type"], seed=6, drawn_at="t")
    assert one.text() == two.text()
    assert one.text() != other.text()
    by = {i.stratum: i for i in one.items}
    assert by["type=lookup"].inclusion == pytest.approx(9 / 45) and by["type=refusal"].inclusion == pytest.approx(3 / 15)
    assert [i.position for i in one.items] == list(range(1, 13))


def test_a_drawn_sample_reads_back(tmp_path):
    sample = draw_from_frame(frame(), ["r"], unit="sentence", size=12, strata=["type", "answerable"], seed=1,
                             name="s1", drawn_at="2026-11-30T10:00:00Z")
    path = tmp_path / "s1.jsonl"
    path.write_text(sample.text())
    problems = Problems()
    back = read_sample(path, problems)
    assert not problems.items
    assert [i.as_json() for i in back.items] == [i.as_json() for i in sample.items]


BAD = [
    ("item", {"stratum": 5}, 2, "stratum"),
    ("item", {"inclusion": 0.5}, 2, "inclusion"),
    ("item", {"position": 7}, 2, "position"),
    ("item", {"run_id": "elsewhere"}, 2, "run_id"),
    ("item", {"colour": "red"}, 2, "colour"),
    ("draw", {"seed": -1}, 1, "seed"),
    ("draw", {"name": "other"}, 1, "name"),
    ("draw", {"strata": ["colour"]}, 1, "strata"),
]


@pytest.mark.parametrize("where, change, line, field", BAD, ids=[f"{w}-{f}-{list(c)[0]}" for w, c, _, f in BAD])
def test_bad_lines_are_refused_with_file_and_line(tmp_path, where, change, line, field):
    sample = draw_from_frame(frame(), ["r"], unit="sentence", size=6, seed=1, name="s1", drawn_at="t")
    lines = [json.loads(x) for x in sample.text().splitlines()]
    lines[line - 1].update(change)
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    problems = Problems()
    assert read_sample(path, problems) is None
    found = [p for p in problems.items if p.line == line and p.field == field]
    assert found, [str(p) for p in problems.items]
    assert str(path) in str(found[0])


def test_a_bad_sample_file_fails_the_refresh(tmp_path):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    assert main(["sample", str(ws), "--runs", "prod-text", "--size", "20", "--seed", "3", "--name", "s"]) == 0
    path = ws / "suites" / "demo" / "samples" / "s.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace('"kind": "item"', '"kind": "thing"')
    path.write_text("\n".join(lines) + "\n")
    assert main(["refresh", str(ws), "--db", str(tmp_path / "db.duckdb"), "--quiet"]) == 2


# --- the demo: the corrected block, and a gate on it -------------------------------------------------------

@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    assert main(["refresh", str(DEMO), "--db", str(db), "--quiet"]) == 0
    return db


def test_demo_support_judge_only_corrected_and_reviewed_only(demo_db, capsys):
    assert main(["compare", "prod-baseline", "prod-text", "--db", str(demo_db), "--format", "json"]) == 0
    block = json.loads(capsys.readouterr().out)["corrected"]
    assert (block["sample"], block["n_sampled"], block["n_reviewed"]) == ("prod-text-support", 100, 64)
    # judge-only: the pooled Support the database holds, 241 supported of 324 claims (with failures' charge)
    assert block["judge"] == pytest.approx(241 / 324)
    low, high = block["interval"]
    assert low < block["estimate"] < high and high - low < 0.25  # about 8 reviews a stratum: wide
    assert block["reviewed_only"] < block["estimate"]
    assert block["method"].startswith("PPI++")


def gate_policy(tmp_path: Path, minimum: float) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(f'name = "corrected"\n\n[[gates]]\nname = "support corrected"\nmetric = "support"\n'
                    f'min = {minimum}\nestimate = "corrected"\n')
    return path


def test_a_corrected_gate_passes_fails_or_cannot_tell(demo_db, tmp_path, capsys):
    assert main(["compare", "prod-baseline", "prod-text", "--db", str(demo_db), "--policy",
                 str(gate_policy(tmp_path, 0.6))]) == 0
    assert main(["compare", "prod-baseline", "prod-text", "--db", str(demo_db), "--policy",
                 str(gate_policy(tmp_path, 0.9))]) == 1
    assert main(["compare", "prod-baseline", "prod-text", "--db", str(demo_db), "--policy",
                 str(gate_policy(tmp_path, 0.74))]) == 3  # the interval straddles the bound
    assert "straddles" in capsys.readouterr().out


def test_without_a_sample_a_corrected_gate_is_inconclusive(tmp_path, capsys):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    shutil.rmtree(ws / "suites" / "demo" / "samples")
    for path in (ws / "suites" / "demo" / "reviews").glob("*.jsonl"):  # their sample is gone: reviews outside it
        path.write_text("".join(line.replace(', "sample": "prod-text-support"', "") + "\n"
                                for line in path.read_text().splitlines()))
    db = tmp_path / "db.duckdb"
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    assert main(["compare", "prod-baseline", "prod-text", "--db", str(db), "--policy",
                 str(gate_policy(tmp_path, 0.6))]) == 3
    assert "no review sample covers these runs" in capsys.readouterr().out


@pytest.mark.parametrize("gate", ['metric = "precision"\nmin = 0.5', 'metric = "coverage"\naggregate = "macro"\nmin = 0.5',
                                  'metric = "support"\nmax_drop = 0.05'])
def test_a_corrected_gate_on_another_metric_or_aggregate_is_refused(tmp_path, gate):
    # a corrected estimate exists for pooled Support and Coverage and the abstention rates, of min/max gates
    path = tmp_path / "policy.toml"
    path.write_text(f'name = "x"\n\n[[gates]]\n{gate}\nestimate = "corrected"\n')
    from scoring.decide.policy import load_policy
    from scoring.errors import ValidationError

    with pytest.raises(ValidationError, match="estimate"):
        load_policy(path)
    path.write_text('name = "x"\n\n[[gates]]\nmetric = "coverage"\nmin = 0.5\nestimate = "corrected"\n')
    assert load_policy(path).gates[0].aggregate == "pooled"


def test_sampled_reviews_are_marked_and_others_are_not(tmp_path):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    args = ["review", str(ws), "--reviewer", "zed", "--question", "q-0005", "--sentence",
            "Pricing fails over to its warm standby in harbor-east.", "--align", "pricing-standby"]
    assert main(args + ["--sample", "prod-text-support"]) == 0
    assert main(args) == 0
    lines = [json.loads(x) for x in (ws / "suites" / "demo" / "reviews" / "zed.jsonl").read_text().splitlines()]
    assert [x.get("sample") for x in lines] == ["prod-text-support", None]
    assert main(args + ["--sample", "no-such-sample"]) == 2
