"""Computing a paired comparison: reading its inputs, then every figure of every metric x slice.

A side is one run or a group of repeats (`scoring.decide.sides`). Both sides must be on the same
suite, suite version and corpus version. Questions are paired by ``question_id``
within the suite; for each metric a question counts only where both sides have a value (n/a is
excluded, never 0; missing and failed records are already scored as 0 / false).

With repeats, a question's value on a side is its mean over the repeats that scored it; the spread
is kept (`Comparison.spread`) and questions whose outcome differs between repeats are listed as
flaky (`Comparison.flaky`). Tests treat questions, not repeats, as the samples.

For every metric x slice (all, answerable, unanswerable, critical, each type, each split) the
comparison holds n, both macro means, the mean delta with its paired-bootstrap interval, the
t-test, Wilcoxon and sign-flip randomization p-values, the Holm-adjusted randomization p-value
across the whole table (`family.holm_adjusted`), the counts improved / regressed / unchanged, and
the method (resampling, or normal above `stats.LARGE_SAMPLE` non-zero differences; see
`scoring.decide.stats`). Every metric x slice is computed in one batch (`stats_batch.paired_many`)
that shares resampling work between rows. `compare_many` compares several candidates and adjusts
across them (`family.adjust_family`).

`compare` only reads (use a read-only connection), or reads nothing when given the `Inputs` that
`read_inputs` read before (a reader can then close the file before the statistics run); scores are
read by `scoring.decide.scores`. For two single runs without a policy, inputs read without detail
give the same table from far less: the questions' slice columns and both sides' per-question scores,
not every record's status, latency, cost and question text. `run_comparison` reads, compares and
records the verdict and the held-out use (`scoring.decide.verdicts`). The result is a `Comparison`
(`scoring.decide.paired`).
"""
from __future__ import annotations

import warnings as _warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from ..errors import invalid
from ..metrics import slices
from ..metrics.registry import REGISTRY
from ..metrics.slices import Slice
from ..store.database import Database
from ..store.schema import table_names
from ..store.workspace import HELDOUT
from . import change, detect, gates, stats, stats_batch, verdicts
from . import clusters as cluster_stats
from . import policy as policies
from .alignment import AlignmentFacts, read_alignment
from .clusters import Clusters
from .corrected import read_corrected
from .family import Family, Resolution, adjust_family, fdr_adjusted, holm_adjusted, p_floors, resolve
from .paired import COMPARISON_COLUMNS, Comparison, HeldoutUse, Settings, label_gap_warning
from .policy import Policy
from .significance import ALPHA
from .scores import (
    METRIC_KEYS,
    RECORD_STATUSES,
    SCORE_COLUMNS,
    SIDES,
    ScoreRows,
    SideScores,
    read_questions,
    read_rows,
    read_side_scores,
    read_slice_columns,
    side_values,
)
from .sides import Side, check_comparable, read_runs, resolve_side
from .verdicts import HeldoutLog, comparison_key, record

_AT_K = [m.name for m in REGISTRY if m.cutoff != "none"]
CUTOFF_NAMES = ", ".join(_AT_K[:-1]) + f" and {_AT_K[-1]}"
"""Every metric stored at the run's cutoff k, in words: what a difference in k makes incomparable."""


def _spread_and_flaky(name: str, rows: ScoreRows, side: int, run_ids: Sequence[str], ids: pd.Index
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spread over repeats per question x metric, and the question x metric (or status) that flip.

    A question flips when its repeats disagree: values further apart than `change.TIE`, a value in
    some repeats and n/a in others, or different statuses (ok / missing / failed).
    """
    if len(run_ids) < 2:
        return pd.DataFrame(), pd.DataFrame()
    own = rows.side == side
    qi = rows.slot[own]
    ri = rows.run[own] - (0 if side == 0 else len(rows.run_ids) - len(run_ids))
    metrics = len(METRIC_KEYS)
    cube = np.full((len(ids), len(run_ids), metrics), np.nan)  # question x repeat x metric
    cube[qi, ri, :] = rows.values[own][:, :metrics]
    status = np.full((len(ids), len(run_ids)), RECORD_STATUSES.index("missing"), dtype=np.int8)
    status[qi, ri] = rows.status[own]
    scored = ~np.isnan(cube)
    count = scored.sum(axis=1)
    with np.errstate(invalid="ignore"), _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        mean, low, high = np.nanmean(cube, axis=1), np.nanmin(cube, axis=1), np.nanmax(cube, axis=1)
        sd = np.where(count >= 2, np.nanstd(cube, axis=1, ddof=1), np.nan)
    q_idx, m_idx = np.nonzero(count > 0)
    spread = pd.DataFrame({
        "side": name, "question_id": ids[q_idx], "metric": np.array(METRIC_KEYS, dtype=object)[m_idx],
        "repeats": count[q_idx, m_idx], "mean": mean[q_idx, m_idx], "sd": sd[q_idx, m_idx],
        "min": low[q_idx, m_idx], "max": high[q_idx, m_idx],
    })
    flips = ((high - low) > change.TIE) | ((count > 0) & (count < len(run_ids)))
    fq, fm = np.nonzero(flips)
    rows_out = [(name, ids[q], METRIC_KEYS[m], q, m, tuple(None if v != v else float(v) for v in cube[q, :, m]))
                for q, m in zip(fq, fm)]
    status_flips = np.flatnonzero((status != status[:, :1]).any(axis=1))
    rows_out += [(name, ids[q], "status", q, metrics, tuple(RECORD_STATUSES[c] for c in status[q])) for q in status_flips]
    rows_out.sort(key=lambda r: (r[3], r[4]))
    flaky = pd.DataFrame([(a, b, c, v) for a, b, c, _, _, v in rows_out],
                         columns=["side", "question_id", "metric", "values"])
    return spread, flaky


def _table(questions: pd.DataFrame, values: dict[str, Any], settings: Settings,
           tested: Collection[tuple[str, str]] | None = None,
           grouped: Clusters | None = None) -> tuple[pd.DataFrame, Resolution]:
    """One row per metric x slice with at least one paired question, computed in one batch, and how
    finely its randomization p-values are resolved for the table's size (`family.resolve`).

    Slices holding the same paired questions for a metric (e.g. all and answerable for retrieval
    metrics) get the same, identically seeded result. `tested`: (metric key, slice) pairs whose
    interval, t-test and Wilcoxon p are computed; the other rows hold them as None (None: every
    row's). Every other figure, the Holm and BH adjustments included, does not depend on `tested`.
    `grouped`: the questions' clusters; every row's interval, tests, MDE and bound then resample whole
    clusters (`clusters.paired`, `clusters.row_figures`) and its `clusters` counts them.
    """
    chosen = slices.default_slices(questions)
    masks = [slices.mask(questions, s) for s in chosen]
    base = [np.asarray(values["baseline"][m.key], dtype=float) for m in REGISTRY]
    cand = [np.asarray(values["candidate"][m.key], dtype=float) for m in REGISTRY]
    cells = stats_batch.Cells(masks, len(questions))
    samples: list[tuple[int, np.ndarray]] = []
    layout: list[tuple[int, Slice, int, int]] = []
    pooled_sums: dict[int, np.ndarray] = {}
    paired_masks = []
    counts = {(side, c): np.asarray(values[side][c], dtype=float) for side in SIDES for m in REGISTRY
              for c in m.pooled or ()}
    for j, m in enumerate(REGISTRY):
        both = ~(np.isnan(base[j]) | np.isnan(cand[j]))
        paired_masks.append(both)
        for k, (s, mask) in enumerate(zip(chosen, masks)):  # slices without a paired question go below (n 0)
            layout.append((j, s, len(samples), k))
            samples.append((j, mask))
        if m.pooled:
            paired = np.where(both, cells.cell, cells.size)  # cell of each paired question; the others: a last bin
            pooled_sums[j] = np.column_stack([
                cells.over(np.bincount(paired, weights=counts[side, c], minlength=cells.size + 1)[:cells.size])
                for side in SIDES for c in m.pooled])  # slices x (side, numerator / denominator)
    complete = None
    if tested is not None:
        wanted = {(str(key), str(name)) for key, name in tested}
        complete = [(REGISTRY[j].key, str(s)) in wanted for j, s, _, _ in layout]
    if grouped is None:
        results = stats_batch.paired_many(
            base, cand, samples, higher_is_better=[m.higher_is_better for m in REGISTRY], seed=settings.seed,
            bootstrap_resamples=settings.bootstrap_resamples, randomization_resamples=settings.randomization_resamples,
            exact_max=settings.exact_max, confidence=settings.confidence, large_sample=settings.large_sample,
            cells=cells, complete=complete, paired=paired_masks)
    else:
        results = cluster_stats.paired_many(
            base, cand, samples, paired_masks, grouped.codes, higher_is_better=[m.higher_is_better for m in REGISTRY],
            seed=settings.seed, bootstrap_resamples=settings.bootstrap_resamples,
            randomization_resamples=settings.randomization_resamples, exact_max=settings.exact_max,
            confidence=settings.confidence, large_sample=settings.large_sample, complete=complete)
    out = []
    kept: list[tuple[int, int]] = []  # (variable, mask) of each row
    for j, s, at, k in layout:
        m, r = REGISTRY[j], results[at]
        if r.n < 1:  # no paired question in the slice: no row
            continue
        kept.append((j, k))
        chosen_pairs = samples[at][1] & paired_masks[j]
        d = cand[j][chosen_pairs] - base[j][chosen_pairs]
        options = dict(exact_max=settings.exact_max, resamples=settings.randomization_resamples,
                       large_sample=settings.large_sample)
        if grouped is None:
            mde, bound = detect.row_figures(d if m.higher_is_better else -d, ALPHA, detect.POWER, tie=settings.tie,
                                            **options)
        else:
            mde, bound = cluster_stats.row_figures(d if m.higher_is_better else -d, grouped.codes[chosen_pairs], ALPHA,
                                                   detect.POWER, **options)
        pooled: dict[str, float | None] = {"baseline_pooled": None, "candidate_pooled": None}
        if m.pooled:
            for i, side in enumerate(SIDES):
                num, den = pooled_sums[j][k, 2 * i], pooled_sums[j][k, 2 * i + 1]
                pooled[f"{side}_pooled"] = float(num / den) if den else None
        out.append({
            "metric": m.key, "metric_name": m.name, "slice": str(s), "n": r.n,
            "baseline": r.baseline, "candidate": r.candidate, "delta": r.delta,
            "ci_low": r.ci_low, "ci_high": r.ci_high, "p_ttest": r.p_ttest, "p_wilcoxon": r.p_wilcoxon,
            "p_randomization": r.p_randomization, "p_holm": None, "improved": r.improved,
            "regressed": r.regressed, "unchanged": r.unchanged, **pooled,
            "higher_is_better": m.higher_is_better, "warnings": list(r.warnings), "method": r.method,
            "mde": mde, "bound": bound,
            "clusters": None if grouped is None else cluster_stats.count(grouped.codes[chosen_pairs]),
        })
    table = pd.DataFrame(out, columns=list(COMPARISON_COLUMNS))
    table["method"] = pd.Series([r["method"] for r in out], dtype=object)  # None (n < 2) stays None

    def differences(i: int) -> np.ndarray:  # what the sign-flip test flips: the differences, or cluster sums
        j, k = kept[i]
        chosen_pairs = masks[k] & paired_masks[j]
        d = (cand[j] - base[j])[chosen_pairs]
        return d if grouped is None else cluster_stats.sums(d, grouped.codes[chosen_pairs])[0]

    nonzero = [r["improved"] + r["regressed"] for r in out] if grouped is None else \
        [int(np.count_nonzero(np.abs(differences(i)) > change.TIE)) for i in range(len(out))]
    p_values, floors, resolution = resolve(table["p_randomization"], p_floors(nonzero, table["p_randomization"],
                                                                              settings), nonzero, differences, settings)
    if resolution.refined:
        table["p_randomization"] = np.array([np.nan if pd.isna(p) else float(p) for p in p_values], dtype=float)
    table["p_floor"] = np.array([np.nan if pd.isna(f) else float(f) for f in floors], dtype=float)
    if len(table):
        table["p_holm"] = holm_adjusted(table[settings.holm_of])
        table["p_fdr"] = fdr_adjusted(table[settings.holm_of])
    return table, resolution


def _comparison_warnings(baseline: Side, candidate: Side, n_questions: int, include_heldout: bool,
                         n_heldout_dropped: int) -> list[str]:
    out = []
    for side in (baseline, candidate):
        if len(set(side.k)) > 1:
            ks = ", ".join(map(str, sorted(set(side.k))))
            out.append(f"the repeats of {side.name} use different cutoffs k ({ks})")
    if set(baseline.k) != set(candidate.k):
        shown = lambda s: "/".join(map(str, sorted(set(s.k))))  # noqa: E731
        out.append(f"k differs (baseline {shown(baseline)}, candidate {shown(candidate)}): {CUTOFF_NAMES} compare "
                   "different cutoffs, and the answer stage saw different context")
    b_rubric = {m.get("rubric_version") for m in baseline.manifests.values()}
    c_rubric = {m.get("rubric_version") for m in candidate.manifests.values()}
    if b_rubric != c_rubric:
        out.append(f"rubric versions differ (baseline {sorted(map(str, b_rubric))}, candidate "
                   f"{sorted(map(str, c_rubric))})")
    if n_questions < stats.SMALL_N:
        out.append(f"only {n_questions} questions: every figure here is arithmetic on a handful of cases, "
                   "not an estimate of general performance; read the per-question deltas")
    if not include_heldout and n_heldout_dropped:
        out.append(f"{n_heldout_dropped} held-out questions left out (development questions only)")
    return out


@dataclass(frozen=True)
class Inputs:
    """Everything `compare` reads from the database, read at once by `read_inputs`.

    `compare` given Inputs reads nothing, so a reader can close the file before the statistics run.
    `questions`: the compared questions in suite order (`text` None when read without text);
    `n_heldout`: the suite's held-out questions; `heldout_log`: the comparisons logged on the held-out
    set of this suite version (empty when no held-out question is compared); `labels_hash`: the
    suite's labels as scored (`suites.files_hash`); `verdicts`:
    (policy_name, policy_hash, verdict, created_at) of the verdicts recorded for these side names,
    newest first. Read without detail (`read_inputs`), `questions` holds the slice columns only
    (`read_slice_columns`), `rows` is None and `scores` holds both sides' per-question scores.
    """

    baseline_name: str
    candidate_name: str
    include_heldout: bool
    baseline: Side
    candidate: Side
    questions: pd.DataFrame
    n_heldout: int
    rows: ScoreRows | None
    heldout_log: HeldoutLog
    verdicts: tuple[tuple[str, str, str, datetime], ...]
    scores: SideScores | None = None
    labels_hash: str = ""
    alignment: tuple[AlignmentFacts, dict[tuple[str, str], int]] | None = None
    """What free-text alignment means here (`alignment.read_alignment`), None when no run answers in sentences."""
    corrected: Any = None
    """Pooled Support corrected by a review sample (`corrected.read_corrected`), None when no run answers in
    sentences."""


def read_inputs(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str, *, include_heldout: bool = True,
                with_text: bool = True, scores: tuple[pd.DataFrame, ScoreRows] | None = None, detail: bool = True,
                side_scores: SideScores | None = None, slice_columns: pd.DataFrame | None = None) -> Inputs:
    """Read what `compare` needs for these two sides (names as `compare` takes them).

    Raises ValidationError for unknown names, sides on different suites / versions, or a database
    that is not a ragslice database. `with_text` False leaves the questions' text out (None).
    `scores`: what `read_scores` returned for the same runs (in side order) and held-out choice,
    read before; used instead of reading them again when the runs agree.

    `detail` False reads only what the comparison's table needs, for two single runs: the
    questions' slice columns (`read_slice_columns`; `slice_columns`: those read before) and both
    sides' per-question scores (`read_side_scores`; `side_scores`: those read before, used when they
    hold these runs over these questions), not every record's status, latency and cost nor the
    questions' IDs, tags and text. `compare` then gives the same table, settings, warnings and
    (empty) flaky list, and refuses a policy; a group of repeats (its flaky questions) needs `detail`.
    """
    tables = table_names(con)
    runs = read_runs(con, tables)
    b_side = resolve_side(runs, baseline, "baseline")
    c_side = resolve_side(runs, candidate, "candidate")
    check_comparable(b_side, c_side)
    if not detail:
        if len(b_side.run_ids) != 1 or len(c_side.run_ids) != 1:
            raise ValueError("a group of repeats needs every record (its flaky questions): read the inputs with detail")
        questions = slice_columns if slice_columns is not None else read_slice_columns(con, b_side.suite)
        n_heldout = int((questions["split"] == HELDOUT).sum())
        if not include_heldout:
            questions = questions[questions["split"] != HELDOUT].reset_index(drop=True)
        positions = questions["position"].to_numpy(dtype=np.int64)
        if side_scores is None or side_scores.run_ids != (b_side.run_ids, c_side.run_ids) or \
                not np.array_equal(side_scores.positions, positions) or \
                any(n not in side_scores.columns[0] for n in SCORE_COLUMNS):
            side_scores = read_side_scores(con, b_side.suite, b_side.run_ids, c_side.run_ids, positions)
        log = verdicts.read_heldout_log(con, b_side.suite, b_side.suite_version, tables) \
            if include_heldout and n_heldout else HeldoutLog()
        return Inputs(baseline, candidate, include_heldout, b_side, c_side, questions, n_heldout, None, log,
                      verdicts.read_earlier_verdicts(con, b_side.name, c_side.name, tables), side_scores,
                      verdicts.read_labels_hash(con, b_side.suite))
    if scores is not None and scores[1].run_ids == (*b_side.run_ids, *c_side.run_ids):
        questions, rows = scores
        n_heldout = int((questions["split"] == HELDOUT).sum()) if include_heldout else int(con.execute(
            "SELECT count(*) FROM questions WHERE suite = ? AND split = ?", [b_side.suite, HELDOUT]).fetchall()[0][0])
    else:
        questions = read_questions(con, b_side.suite, with_text=with_text)
        n_heldout = int((questions["split"] == HELDOUT).sum())
        if not include_heldout:
            questions = questions[questions["split"] != HELDOUT]
        rows = read_rows(con, b_side.suite, b_side.run_ids, c_side.run_ids, questions["position"].to_numpy())
    log = verdicts.read_heldout_log(con, b_side.suite, b_side.suite_version, tables) \
        if include_heldout and n_heldout else HeldoutLog()
    return Inputs(baseline, candidate, include_heldout, b_side, c_side, questions, n_heldout, rows, log,
                  verdicts.read_earlier_verdicts(con, b_side.name, c_side.name, tables),
                  labels_hash=verdicts.read_labels_hash(con, b_side.suite),
                  alignment=read_alignment(con, b_side.suite, b_side.run_ids, c_side.run_ids),
                  corrected=read_corrected(con, b_side.suite, b_side.run_ids, c_side.run_ids))


def compare(
    con: duckdb.DuckDBPyConnection | Inputs,
    baseline: str,
    candidate: str,
    *,
    policy: Policy | str | Path | None = None,
    seed: int = 0,
    bootstrap_resamples: int = stats.BOOTSTRAP_RESAMPLES,
    randomization_resamples: int = stats.RANDOMIZATION_RESAMPLES,
    include_heldout: bool = True,
    tested: Collection[tuple[str, str]] | None = None,
    cluster_by: str | None = None,
) -> Comparison:
    """Compare two runs or groups on a (read-only) connection, or on `Inputs` that `read_inputs`
    read for the same names and `include_heldout`; evaluate `policy` when given.

    Raises ValidationError for unknown names, sides on different suites / versions, or a database
    that is not a ragslice database. With `include_heldout` False the held-out questions are left
    out of every slice (and the comparison does not count as a use of the held-out set).
    `tested`: the (metric key, slice) rows of the table whose interval, t-test and Wilcoxon p are
    wanted; the other rows hold those three as None, not computed (their randomization p-values,
    and so every Holm-adjusted p-value, are computed all the same). None: every row. Inputs read
    without detail give the table, settings, warnings and flaky list only: no policy, no
    per-question view.

    `cluster_by` (`clusters.CLUSTER_BY`): how the questions are clustered; None: the policy's
    ``cluster_by``, else the questions' own ``cluster`` when they carry one. A clustered comparison
    resamples whole clusters in every row and gate (`scoring.decide.clusters`).
    """
    pol = policies.load_policy(policy) if isinstance(policy, (str, Path)) else policy
    settings = Settings(seed=seed, bootstrap_resamples=bootstrap_resamples,
                        randomization_resamples=randomization_resamples, large_sample=stats.LARGE_SAMPLE)
    if isinstance(con, Inputs):
        inputs = con
        asked = (baseline, candidate, include_heldout)
        if (inputs.baseline_name, inputs.candidate_name, inputs.include_heldout) != asked:
            raise ValueError(f"the inputs were read for {inputs.baseline_name} vs {inputs.candidate_name} "
                             f"(held-out included: {inputs.include_heldout}), not {asked}")
    else:
        inputs = read_inputs(con, baseline, candidate, include_heldout=include_heldout)
    b_side, c_side, questions, rows = inputs.baseline, inputs.candidate, inputs.questions, inputs.rows
    n_heldout = inputs.n_heldout
    ids = questions.index
    values: dict[str, pd.DataFrame] = {}
    spreads, flakies = [], []
    if rows is None:  # read without detail: two single runs, their per-question scores only
        if pol is not None:
            raise ValueError("a policy's gates need every record: read the inputs with detail")
        if inputs.scores is None:
            raise ValueError("inputs without score rows need the sides' per-question scores")
        for at, name in enumerate(SIDES):
            columns = inputs.scores.columns[at]
            values[name] = pd.DataFrame({n: columns[n] for n in SCORE_COLUMNS}, index=ids, copy=False)
    for at, (name, side) in enumerate((("baseline", b_side), ("candidate", c_side)) if rows is not None else ()):
        values[name] = side_values(rows, at, ids)
        spread, flaky = _spread_and_flaky(name, rows, at, side.run_ids, ids)
        spreads.append(spread)
        flakies.append(flaky)
    spread = pd.concat([s for s in spreads if len(s)], ignore_index=True) if any(len(s) for s in spreads) else \
        pd.DataFrame(columns=["side", "question_id", "metric", "repeats", "mean", "sd", "min", "max"])
    flaky = pd.concat([f for f in flakies if len(f)], ignore_index=True) if any(len(f) for f in flakies) else \
        pd.DataFrame(columns=["side", "question_id", "metric", "values"])
    heldout = None
    if include_heldout and n_heldout:
        key = comparison_key(b_side.run_ids, c_side.run_ids, pol.sha256 if pol else None, inputs.labels_hash)
        heldout = HeldoutUse(n_heldout, inputs.heldout_log.previous(key), pol.heldout_budget if pol else None, key,
                             key in inputs.heldout_log.keys)
    warnings = _comparison_warnings(b_side, c_side, len(questions), include_heldout, n_heldout)
    alignment, resting = inputs.alignment if inputs.alignment is not None else (None, {})
    if alignment is not None and rows is not None:
        questions = questions.assign(automatic=questions.index.isin(list(alignment.automatic_questions)))
    by = cluster_by or (pol.cluster_by if pol is not None else None) or cluster_stats.DEFAULT_BY
    grouped = cluster_stats.question_clusters(questions, by)
    table, resolution = _table(questions, values, settings, tested, grouped)
    gap = label_gap_warning(table)
    warnings += [gap] if gap else []
    unresolved = resolution.warning()
    warnings += [unresolved] if unresolved else []
    comparison = Comparison(
        baseline=b_side, candidate=c_side, suite=b_side.suite, suite_version=b_side.suite_version,
        corpus_version=b_side.corpus_version, questions=questions, table=table,
        spread=spread, flaky=flaky,
        settings=settings, warnings=tuple(warnings), heldout=heldout, verdict=gates.no_policy_verdict(),
        policy=pol, values=values, rows=rows, detail=rows is not None, labels_hash=inputs.labels_hash,
        alignment=alignment, resting=resting, resolution=resolution, clusters=grouped,
        corrected=inputs.corrected,
    )
    if pol is not None:
        notes = verdicts.policy_edits(inputs.verdicts, b_side.name, c_side.name, pol)
        if heldout is not None:
            note = gates.heldout_warning(pol, heldout.uses, b_side.suite, b_side.suite_version)
            notes += [note] if note else []
        comparison.verdict = gates.evaluate(pol, comparison, n_disputed=comparison.n_disputed, notes=notes,
                                               seed=seed)
    return comparison


def read_regressed(con: duckdb.DuckDBPyConnection, c: Comparison, limit: int) -> pd.DataFrame:
    """`c.regressed_questions(limit)` for a comparison on any inputs, those read without detail or
    without the questions' text included: the first `limit` regressed questions' IDs, text and slices
    are read here (by suite position, a few rows) and kept, so that later calls of
    `regressed_questions` with at most `limit` give the same rows. Regressed questions as always:
    worse beyond `change.TIE` on at least one metric both sides score."""
    chosen = c._regressed_order(max(limit, 0))[1]
    if len(chosen):
        positions = c.questions["position"].to_numpy(dtype=np.int64)[chosen]
        q = con.sql(
            "SELECT question_id, position, text, type, split, critical, answerable, disputed FROM questions "
            "WHERE suite = $suite AND list_contains($positions, CAST(position AS BIGINT))",
            params={"suite": c.suite, "positions": positions.tolist()}).to_arrow_table().to_pandas()
        q["critical"] = q["critical"].astype(bool)
        q["answerable"] = q["answerable"].astype(bool)
        q["disputed"] = q["disputed"].astype(object).where(q["disputed"].notna(), None)
        slot = dict(zip(positions.tolist(), chosen.tolist()))
        q.index = pd.Index([slot[int(p)] for p in q["position"]], dtype=np.int64)
        c._question_rows = q
    return c.regressed_questions(limit)


# --- storing verdicts ----------------------------------------------------------------------------


def run_comparison(
    baseline: str, candidate: str, *, db: Path, policy: str | Path | None, seed: int = 0
) -> Comparison:
    """Read the database (read-only), compare, then record the verdict and held-out use."""
    pol = policies.load_policy(policy) if policy else None
    with Database(db).command() as con:
        comparison = compare(con, baseline, candidate, policy=pol, seed=seed)
    record(db, comparison)
    return comparison


# --- one baseline, several candidates ------------------------------------------------------------


def _distinct_candidates(baseline: str, candidates: Sequence[str]) -> None:
    if not candidates:
        raise invalid("name at least one candidate", "candidate", "")
    seen: set[str] = set()
    for name in candidates:
        if name in seen:
            raise invalid("candidate given twice: each candidate is compared once", "candidate", name)
        seen.add(name)


def compare_many(con: duckdb.DuckDBPyConnection, baseline: str, candidates: Sequence[str], *,
                 policy: Policy | str | Path | None = None, seed: int = 0, include_heldout: bool = True,
                 **kw: Any) -> Family:
    """Compare `baseline` with each of `candidates` (`compare`, the same settings), then Holm-adjust
    across the family (`adjust_family`). Raises ValidationError for an empty or repeated candidate
    list and whatever `compare` refuses (naming the candidate)."""
    _distinct_candidates(baseline, candidates)
    pol = policies.load_policy(policy) if isinstance(policy, (str, Path)) else policy
    comparisons = [compare(con, baseline, name, policy=pol, seed=seed, include_heldout=include_heldout, **kw)
                   for name in candidates]
    return Family(comparisons, adjust_family(comparisons))


def run_comparisons(baseline: str, candidates: Sequence[str], *, db: Path, policy: str | Path | None,
                    seed: int = 0) -> Family:
    """Read the database (read-only), compare every candidate, then record each verdict and
    held-out use (`run_comparison` for several candidates). Nothing is recorded when any candidate
    is refused."""
    pol = policies.load_policy(policy) if policy else None
    with Database(db).command() as con:
        family = compare_many(con, baseline, candidates, policy=pol, seed=seed)
    for comparison in family.comparisons:
        record(db, comparison)
    return family
