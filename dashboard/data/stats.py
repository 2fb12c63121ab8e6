"""Paired statistics and the live verdict for two sides, computed by `scoring.decide.comparison`
(and `scoring.decide.policy` for the policy given to the dashboard) from the scores the other figures
share, and the same decision as five screens (`scoring.decide.present`). Nothing holds the file
while scoring computes; results are cached on the database's and the policy file's signatures.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from scoring.decide import comparison as scoring_compare
from scoring.decide import scores as scoring_scores
from scoring.decide.sides import Side
from scoring.metrics import slices
from scoring.store.database import READ_ERRORS, DatabaseMissing, Signature

from .database import METRIC_KEYS, allowed_metric, copied, current, file_signature, policy_path, reading, runs
from .pair import needs_records, pair_at, questions_at

SLICE_FAMILIES: tuple[str, ...] = tuple(f.name for f in slices.FAMILIES)
"""Every slice family (`scoring.metrics.slices`), in declaration order."""


class StatisticsUnavailable(RuntimeError):
    """`scoring.decide.comparison` refused the comparison; the message says why (e.g. the sides share runs)."""


@dataclass(frozen=True)
class PolicyInfo:
    """Which acceptance policy a live verdict applied: its name, sha256 of its text, and its file."""

    name: str
    sha256: str
    path: str
    description: str | None


@dataclass(frozen=True)
class Statistics:
    """What `scoring.decide.comparison.compare` computed for two sides on the current database (nothing recorded).

    - `table`: one row per metric x slice with n >= 1 (`scoring.decide.comparison.COMPARISON_COLUMNS`): n
      paired questions (both sides scored; n/a excluded, never 0), both macro means, the mean paired
      delta and its bootstrap interval (`ci_low`, `ci_high`), p-values (t-test, Wilcoxon,
      sign-flip randomization, and the randomization p Holm-adjusted across every row), questions
      improved / regressed / unchanged, and warnings (too few pairs for a test to mean anything);
    - `flaky`: per side with repeats, the question x metric (or `status`) whose repeats disagree,
      with the values per repeat;
    - `settings`: the resampling and test settings in words; `warnings`: about the comparison;
    - `verdict`: the policy's verdict evaluated now (`scoring.decide.gates.Verdict`), None without a
      policy; `policy`: which policy; `policy_error`: why the policy file could not be used;
    - `confidence`: the interval's confidence level; `seconds`: how long `compare` took.
    """

    table: pd.DataFrame
    flaky: pd.DataFrame
    settings: str
    confidence: float
    warnings: tuple[str, ...]
    n_questions: int
    verdict: Any
    policy: PolicyInfo | None
    policy_error: str | None
    seconds: float


def statistics(base: Side, cand: Side) -> Statistics:
    """Paired statistics for the two sides and, when a policy file is known (`policy_path`), its
    verdict evaluated live. Computed by `scoring.decide.comparison` from the sides' scores (read once and
    shared with the other figures of the page) and a few small tables; nothing holds the file while
    it computes. Two single runs without a policy are compared on inputs read without detail (the
    questions' slice columns and the page's per-question scores, `scoring.decide.comparison.read_inputs`); a
    group's flaky questions and a policy's gates need every record.
    Cached on the database's and the policy file's signatures and the two sides. Raises
    StatisticsUnavailable when scoring refuses the comparison."""
    return _statistics_of(base, cand, None)


def release_statistics(base: Side, cand: Side, metrics: Sequence[str] = METRIC_KEYS) -> Statistics:
    """What the release review shows of `statistics`: the same verdict, settings and warnings, and a
    table whose overall rows (slice ``all``) of `metrics` hold every figure; with no live policy the
    other rows hold n, the means, the counts and the randomization p-value but no interval, t-test
    or Wilcoxon p (None, not computed). Every Holm-adjusted p-value is the one `statistics` gives:
    the adjustment spans every row either way."""
    return _statistics_of(base, cand, tuple((allowed_metric(m), "all") for m in dict.fromkeys(metrics)))


def _statistics_of(base: Side, cand: Side, rows: tuple[tuple[str, str], ...] | None) -> Statistics:
    path, sig = current()
    policy = policy_path()
    table = runs().set_index("run_id")
    suite = str(table.loc[base.run_ids[0], "suite"]) if base.run_ids and base.run_ids[0] in table.index else None
    return _statistics(path, sig, base.spec, cand.spec, suite, tuple(base.run_ids),
                       tuple(cand.run_ids), None if policy is None else str(policy), file_signature(policy), rows)


def _comparison_inputs(path: str, sig: Signature, base: str, cand: str, suite: str | None,
                       base_runs: tuple[str, ...], cand_runs: tuple[str, ...], *, judged: bool) -> Any:
    """The comparison's inputs (`scoring.decide.comparison.read_inputs`) as the pages share them: two
    single runs with nothing to judge (`judged`: a policy's gates) from the per-question scores and
    slice columns the pages read; a group's flaky questions and a policy's gates need every record
    (read once for the pages too)."""
    paired = suite is not None and not set(base_runs) & set(cand_runs)
    detail = judged or len(base_runs) != 1 or len(cand_runs) != 1 or not paired
    pair = pair_at(path, sig, suite, base_runs, cand_runs, scoring_scores.SCORE_COLUMNS,
                   needs_records(base_runs, cand_runs) or detail) if paired else None
    with reading(path, sig) as con:
        if detail:
            return scoring_compare.read_inputs(con, base, cand, with_text=False,
                                               scores=pair.records if pair is not None else None)
        return scoring_compare.read_inputs(con, base, cand, detail=False, side_scores=pair.scores,
                                           slice_columns=questions_at(path, sig, suite))


@copied(max_entries=32)
def _statistics(path: str, sig: Signature, base: str, cand: str, suite: str | None,
                base_runs: tuple[str, ...], cand_runs: tuple[str, ...], policy: str | None,
                policy_sig: Signature | None, rows: tuple[tuple[str, str], ...] | None = None
                ) -> Statistics:
    del policy_sig  # cache key only
    from scoring.decide.comparison import compare  # looked up when called
    from scoring.decide.policy import load_policy
    from scoring.errors import ValidationError

    loaded, problem = None, None
    if policy is not None:
        try:
            loaded = load_policy(policy)
        except ValidationError as error:
            problem = str(error)
    started = time.perf_counter()
    try:
        inputs = _comparison_inputs(path, sig, base, cand, suite, base_runs, cand_runs, judged=loaded is not None)
        result = compare(inputs, base, cand, policy=loaded, tested=rows)  # the file is let go by now
    except ValidationError as error:
        raise StatisticsUnavailable(str(error)) from None
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error
    seconds = time.perf_counter() - started
    return Statistics(
        table=result.table.reset_index(drop=True),
        flaky=result.flaky.reset_index(drop=True),
        settings=result.settings.describe(),
        confidence=float(result.settings.confidence),
        warnings=tuple(result.warnings),
        n_questions=int(len(result.questions)),
        verdict=result.verdict if loaded is not None else None,
        policy=None if loaded is None else PolicyInfo(loaded.name, loaded.sha256, str(policy), loaded.description),
        policy_error=problem,
        seconds=seconds,
    )


def presentation(base: Side, cand: Side) -> str:
    """The decision in five screens (`scoring.decide.present`) as one HTML document: the comparison of the
    other pages, with the policy file given to the dashboard (a policy that cannot be read gives no
    verdict). The same document `ragslice report --slides` writes. Read as `statistics` reads (two single
    runs without a policy: the slice columns and per-question scores the other pages share), plus the
    few regressed questions and their evidence the screens show. Cached on the database's and the
    policy file's signatures and the two sides."""
    policy = policy_path()
    table = runs().set_index("run_id")
    suite = str(table.loc[base.run_ids[0], "suite"]) if base.run_ids and base.run_ids[0] in table.index else None
    return _presentation(*current(), base.spec, cand.spec, suite, tuple(base.run_ids),
                         tuple(cand.run_ids), None if policy is None else str(policy), file_signature(policy))


@copied(max_entries=8)
def _presentation(path: str, sig: Signature, base: str, cand: str, suite: str | None,
                  base_runs: tuple[str, ...], cand_runs: tuple[str, ...], policy: str | None,
                  policy_sig: Signature | None) -> str:
    del policy_sig  # cache key only
    from scoring.decide.comparison import compare, read_regressed
    from scoring.decide.policy import load_policy
    from scoring.decide.present import WORST, slides_html
    from scoring.decide.report import load_evidence
    from scoring.errors import ValidationError

    try:
        loaded = load_policy(policy) if policy is not None else None
    except ValidationError:
        loaded = None  # the release review names the policy's problem
    try:
        inputs = _comparison_inputs(path, sig, base, cand, suite, base_runs, cand_runs, judged=loaded is not None)
        # the screens show no interval, t-test or Wilcoxon p (a policy's gates may read them)
        result = compare(inputs, base, cand, policy=loaded, tested=None if loaded is not None else ())
        with reading(path, sig) as con:
            evidence = load_evidence(con, result, read_regressed(con, result, WORST)["question_id"])
    except ValidationError as error:
        raise StatisticsUnavailable(str(error)) from None
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error
    return slides_html(result, evidence)


P_COLUMNS = scoring_compare.P_COLUMNS
statistics_rows = scoring_compare.table_rows
