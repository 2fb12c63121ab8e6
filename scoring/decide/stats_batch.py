"""The batch engine of the paired statistics: every metric x slice of a comparison in one pass.

`scoring.decide.stats` holds the readable procedures (one sample at a time) and states every draw
exactly; this module computes the same figures for many samples at once, sharing the work between
them: one bootstrap index matrix per sample size, one matrix of random sign patterns, one ranking
per variable for the Wilcoxon test, and, for samples with more than `stats.LARGE_SAMPLE` non-zero
differences, sums per cell of questions (`Cells`) instead of a pass over the questions. Each result
equals `stats.paired` on that sample alone (up to float rounding): a property test holds both to it,
as the SQL engine is held to the metric reference.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special as _special

from .change import TIE
from .stats import (
    BOOTSTRAP_RESAMPLES, CONFIDENCE, EXACT_MAX, LARGE_SAMPLE, RANDOMIZATION_RESAMPLES, Method, Paired, _bootstrap_means,
    _bootstrap_means_counted, _bootstrap_means_sparse, _bootstrap_values, _check_sizes, _counted_sign_sums, _normal_p,
    _percentile_interval, _sampled_sums, _sign_flip, _signed_rank_normal_p, _t_p, _variance,
    WILCOXON_SCIPY_MAX, _wilcoxon_method, small_sample_warnings, wilcoxon_p,
)


@dataclass
class _Pending:
    """A sample with n >= 2 whose interval and tests are still being computed."""

    d: np.ndarray
    nonzero: np.ndarray
    fields: dict


def paired_many(
    baseline: Sequence[np.ndarray],
    candidate: Sequence[np.ndarray],
    samples: Sequence[tuple[int, np.ndarray | None]],
    *,
    higher_is_better: Sequence[bool] | None = None,
    seed: int = 0,
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
    randomization_resamples: int = RANDOMIZATION_RESAMPLES,
    exact_max: int = EXACT_MAX,
    confidence: float = CONFIDENCE,
    large_sample: int = LARGE_SAMPLE,
    cells: Cells | None = None,
    complete: Sequence[bool] | None = None,
    paired: Sequence[np.ndarray] | None = None,
) -> list[Paired]:
    """`paired` for many samples at once; each result equals `paired` on that sample alone (up to rounding).

    `baseline[j]` and `candidate[j]` hold variable j's per-question values (NaN: n/a), equal lengths.
    A sample ``(j, mask)`` is variable j over the questions the boolean `mask` selects (None: all),
    paired where both sides have a value. Work is shared: one bootstrap index matrix per sample size,
    one matrix of random sign patterns, one ranking per variable for the Wilcoxon test (a sample whose
    differences take few distinct values draws counts of them instead: module docstring). A sample with
    more than `large_sample` (and `WILCOXON_SCIPY_MAX`) non-zero differences needs only sums, counts and
    the Wilcoxon rank-group counts: those come from the `Cells` of the samples' masks (questions
    held by the same masks), so such a sample costs no pass over its questions. `cells`: `Cells`
    built from (at least) the very mask arrays of `samples`, when the caller has them.

    `paired[j]`: variable j's paired questions (both sides have a value), when the caller has them.

    `complete[i]` False: sample i needs only its n, means, counts, warnings, method and
    randomization p-value (what a Holm adjustment over every sample needs): its interval, t-test
    and Wilcoxon p are left None, not computed. Every other figure is the one computed with
    `complete` None (all True).
    """
    if complete is not None and len(complete) != len(samples):
        raise ValueError("complete needs one flag per sample")
    _check_sizes(bootstrap_resamples, confidence)
    _check_sizes(randomization_resamples)
    base = [np.asarray(v, dtype=float) for v in baseline]
    cand = [np.asarray(v, dtype=float) for v in candidate]
    if len(base) != len(cand) or any(len(b) != len(c) for b, c in zip(base, cand)):
        raise ValueError("baseline and candidate need the same variables with the same lengths")
    if paired is not None and (len(paired) != len(base) or any(len(p) != len(b) for p, b in zip(paired, base))):
        raise ValueError("paired needs one mask per variable, as long as its values")
    directions = list(higher_is_better) if higher_is_better is not None else [True] * len(base)
    both = [~(np.isnan(b) | np.isnan(c)) for b, c in zip(base, cand)] if paired is None else \
        [np.asarray(p, dtype=bool) for p in paired]
    diffs = [c - b for b, c in zip(base, cand)]
    alpha = 1 - confidence

    results: list[Paired | None] = [None] * len(samples)
    pending: dict[int, _Pending] = {}
    by_size: dict[int, list[int]] = {}
    counted: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    sparse: list[int] = []
    sampled_flips: list[int] = []

    def flip_test(i: int, nz: np.ndarray) -> None:  # now, or with the batch's shared sign patterns
        sums = None
        if exact_max < len(nz) <= large_sample:
            sums = _counted_sign_sums(nz, randomization_resamples, seed)
            if sums is None:
                sampled_flips.append(i)
                return
        pending[i].fields["p_randomization"] = _sign_flip(nz, "two-sided", randomization_resamples, seed,
                                                          exact_max, large_sample, sums)

    ranked: dict[int, list[tuple[int, np.ndarray]]] = {}
    by_variable: dict[int, list[int]] = {}
    for i, (j, _) in enumerate(samples):
        by_variable.setdefault(j, []).append(i)
    masks: dict[int, np.ndarray] = {}
    for _, mask in samples:
        if mask is not None:
            masks.setdefault(id(mask), mask)
    size = len(base[0]) if base else 0
    if cells is not None and (len(cells.cell) != size or any(key not in cells.column for key in masks)):
        raise ValueError("cells must be the Cells of (at least) every mask of the samples, over the same questions")
    if cells is None and len(masks) <= MAX_MASKS and size:
        cells = Cells(list(masks.values()), size)

    # only a variable with more than `large_sample` pairs can hold a sample computed from cell sums; each
    # variable's tally is independent of the others' (pandas releases the GIL while it hashes; numpy's
    # bincount holds it, so two threads take about a quarter off a batch's tallies, not half)
    n_paired = {j: int(np.count_nonzero(both[j])) for j in by_variable}
    # from cell sums only where every figure takes its normal form, the Wilcoxon test's included (scipy
    # tests up to WILCOXON_SCIPY_MAX differences otherwise, whatever `large_sample` is)
    from_cells = max(large_sample, WILCOXON_SCIPY_MAX)
    tallied = [j for j in by_variable if cells is not None and n_paired[j] > from_cells]
    with _workers(len(tallied)) as pool:
        variables = dict(zip(tallied, pool.map(lambda j: _Variable(cells, base[j], cand[j], both[j], diffs[j]),
                                               tallied)))
    for j, members in by_variable.items():
        variable = variables.get(j)
        for i in members:
            empty = n_paired[j] == 0
            if variable is not None:
                mask = samples[i][1]
                at_cells = variable.cells.member[:, variable.cells.column[id(mask)]] if mask is not None else \
                    np.ones(variable.cells.size, dtype=bool)
                empty = not variable.count[at_cells].any()
            if empty:  # no paired question: what the question-by-question path gives for n = 0
                results[i] = Paired(n=0, baseline=None, candidate=None, delta=None, ci_low=None, ci_high=None,
                                    p_ttest=None, p_wilcoxon=None, p_randomization=None, improved=0, regressed=0,
                                    unchanged=0, warnings=small_sample_warnings(0, 0, alpha=alpha))
                continue
            if variable is not None:
                if variable.nonzero(at_cells) > from_cells:
                    results[i] = variable.normal(at_cells, directions[j], alpha, confidence,
                                                 complete is None or bool(complete[i]))
                    continue
                unchanged = variable.unchanged(at_cells, alpha, complete is None or bool(complete[i]))
                if unchanged is not None:
                    results[i] = unchanged
                    continue
            mask = samples[i][1]
            keep = both[j] if mask is None else both[j] & np.asarray(mask, dtype=bool)
            at = np.flatnonzero(keep)  # positions, then take(): much faster than boolean indexing
            d = diffs[j].take(at)
            n = len(d)
            rises, falls = d > TIE, d < -TIE
            up, down = int(np.count_nonzero(rises)), int(np.count_nonzero(falls))
            nonzero = up + down
            improved, regressed = (up, down) if directions[j] else (down, up)
            notes = small_sample_warnings(n, nonzero, alpha=alpha)
            if n == 0:
                results[i] = Paired(0, None, None, None, None, None, None, None, None, 0, 0, 0, notes)
                continue
            mean = float(d.mean())
            common = dict(n=n, baseline=float(base[j].take(at).mean()), candidate=float(cand[j].take(at).mean()),
                          delta=mean, improved=improved, regressed=regressed, unchanged=n - nonzero)
            if n < 2:
                results[i] = Paired(**common, ci_low=None, ci_high=None, p_ttest=None, p_wilcoxon=None,
                                    p_randomization=None, warnings=notes)
                continue
            flat = bool(np.ptp(d) <= TIE)
            if nonzero and flat:
                notes += ("every paired difference is the same: the t-test is undefined (no spread)",)
            method: Method = "normal" if nonzero > large_sample else "resampling"
            fields = dict(common, warnings=notes, method=method, p_ttest=None)
            differs = rises | falls
            nz = d[differs]
            pending[i] = _Pending(d, nz, fields)
            if complete is not None and not complete[i]:  # the sign-flip test only
                fields.update(ci_low=None, ci_high=None, p_wilcoxon=None)
                flip_test(i, nz)
                continue
            variance = None if flat else _variance(d, mean)
            # the interval
            if flat:
                fields["ci_low"] = fields["ci_high"] = mean
            elif method == "normal":
                half = float(_special.ndtri(0.5 + confidence / 2)) * math.sqrt(variance / n)  # type: ignore[operator]
                fields["ci_low"], fields["ci_high"] = mean - half, mean + half
            elif n > large_sample:
                values = _bootstrap_values(nz, n)
                if values is None:
                    sparse.append(i)
                else:
                    counted[i] = values
            else:
                by_size.setdefault(n, []).append(i)
            # the t-test
            if variance is not None:
                fields["p_ttest"] = _t_p(mean, variance, n, "two-sided")
            # Wilcoxon
            if not nonzero:
                fields["p_wilcoxon"] = 1.0
            else:
                wilcoxon = _wilcoxon_method(d, differs)
                if wilcoxon == "normal":
                    ranked.setdefault(j, []).append((i, at))
                else:
                    fields["p_wilcoxon"] = wilcoxon_p(d)
            flip_test(i, nz)

    def intervals(members: list[int]) -> None:  # one bootstrap index matrix per sample size
        means = _bootstrap_means(np.column_stack([pending[i].d for i in members]), bootstrap_resamples, seed)
        tail = (1 - confidence) / 2
        lows, highs = np.quantile(means, [tail, 1 - tail], axis=0)
        for i, low, high in zip(members, lows, highs):
            pending[i].fields["ci_low"], pending[i].fields["ci_high"] = float(low), float(high)

    def counted_interval(i: int) -> None:
        means = _bootstrap_means_counted(*counted[i], bootstrap_resamples, seed)
        pending[i].fields["ci_low"], pending[i].fields["ci_high"] = _percentile_interval(means, confidence)

    def sparse_interval(i: int) -> None:
        p = pending[i]
        means = _bootstrap_means_sparse(p.nonzero, len(p.d), bootstrap_resamples, seed)
        p.fields["ci_low"], p.fields["ci_high"] = _percentile_interval(means, confidence)

    def sign_flips() -> None:  # one matrix of random sign patterns
        sums = _sampled_sums([pending[i].nonzero for i in sampled_flips], randomization_resamples, seed)
        for i, row in zip(sampled_flips, sums):
            p = pending[i]
            p.fields["p_randomization"] = _sign_flip(p.nonzero, "two-sided", randomization_resamples, seed,
                                                     exact_max, large_sample, row)

    # seeded resampling: each task draws from its own generator and fills its own samples' fields
    tasks = [*(lambda m=m: intervals(m) for m in by_size.values()), *(lambda i=i: counted_interval(i) for i in counted),
             *(lambda i=i: sparse_interval(i) for i in sparse),
             *([sign_flips] if sampled_flips else [])]
    with _workers(len(tasks)) as pool:
        list(pool.map(lambda task: task(), tasks))
    for j, members in ranked.items():
        groups, n_groups = variables[j].groups() if j in variables else _variable_groups(diffs[j], both[j])
        positive_groups = np.where(both[j] & (diffs[j] > TIE), groups, 0)
        for i, at in members:
            sizes = np.bincount(groups.take(at), minlength=n_groups)[1:]
            positives = np.bincount(positive_groups.take(at), minlength=n_groups)[1:]
            pending[i].fields["p_wilcoxon"] = _signed_rank_normal_p(sizes, positives, "two-sided")
    for i, p in pending.items():
        results[i] = Paired(**p.fields)
    return results  # type: ignore[return-value]


WORKERS = 2
"""Threads for a batch's independent work (`paired_many`: the variables' tallies, then the seeded
resampling tasks); 1: one after the other."""


@contextmanager
def _workers(tasks: int) -> Iterator[Any]:
    """A pool of up to `WORKERS` threads for `tasks` independent tasks (`map` in order), or an
    inline one when a single thread is enough."""
    if min(WORKERS, tasks) <= 1:
        yield _Inline()
        return
    with ThreadPoolExecutor(max_workers=min(WORKERS, tasks), thread_name_prefix="ragslice-stats") as pool:
        yield pool


class _Inline:
    """`ThreadPoolExecutor.map` without threads."""

    @staticmethod
    def map(function: Any, items: Sequence[Any]) -> Iterator[Any]:
        return map(function, items)


def _rank_groups_fast(values: np.ndarray) -> tuple[np.ndarray, int]:
    """`_rank_groups` by hashing (no sort of the values, only of the distinct ones): the same ids,
    and their number."""
    import pandas as pd  # imported here: the rest of the module needs only numpy and scipy

    codes, uniques = pd.factorize(values, sort=False)
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[np.argsort(np.asarray(uniques), kind="stable")] = np.arange(len(uniques))
    return rank.take(codes), len(uniques)


def _variable_groups(d: np.ndarray, both: np.ndarray) -> tuple[np.ndarray, int]:
    """Per question, the Wilcoxon rank group of |d| among the variable's non-zero paired differences
    (1 + its `_rank_groups` id; 0 for zero and unpaired differences), and the number of ids (with 0)."""
    d_all = np.where(both, d, 0.0)
    differs_all = np.abs(d_all) > TIE
    groups = np.zeros(len(d_all), dtype=np.int64)
    ids, count = _rank_groups_fast(np.abs(d_all[differs_all]))
    groups[differs_all] = ids + 1
    return groups, count + 1


FACTORIZE_HINT = 1_024
"""Starting size of the hash table that codes a variable's distinct differences (the codes do not
depend on it: first appearance order)."""


MAX_MASKS = 20
"""Above this many distinct masks in one batch, no cells: every sample is taken one by one."""


MAX_CELL_GROUPS = 4_000_000
"""Above this many cells x distinct paired differences, a variable's tally lists only the (cell,
difference) pairs that occur; above this many cells x Wilcoxon rank groups, a sample's rank-group
counts are taken from its own tally entries."""


class Cells:
    """Questions split by the masks that hold them: cell c holds the questions held by exactly the
    masks `member[c]` (a row of booleans, one per mask). A sum over a mask's questions is the sum of
    its cells' sums, so many masks cost one pass over the questions (`totals`, then `over`)."""

    def __init__(self, masks: Sequence[np.ndarray], size: int):
        if len(masks) > MAX_MASKS:
            raise ValueError(f"at most {MAX_MASKS} masks")
        self.masks = tuple(masks)
        self.column = {id(mask): k for k, mask in enumerate(masks)}
        """A mask's column in `member`, by the identity of the array given."""
        key = np.zeros(size, dtype=np.int64)
        for k, mask in enumerate(masks):
            key |= np.asarray(mask, dtype=bool).astype(np.int64) << k
        present = np.flatnonzero(np.bincount(key, minlength=1 << len(masks)))
        lookup = np.full(1 << len(masks), -1, dtype=np.int64)
        lookup[present] = np.arange(len(present))
        self.cell = lookup.take(key)
        self.member = ((present[:, None] >> np.arange(len(masks))) & 1) == 1  # cells x masks
        self.size = len(present)

    def totals(self, weights: np.ndarray) -> np.ndarray:
        """Per cell: the sum of `weights` (one per question)."""
        return np.bincount(self.cell, weights=weights, minlength=self.size)

    def over(self, per_cell: np.ndarray) -> np.ndarray:
        """Per mask: the sum of a per-cell quantity over the mask's cells (exact for whole numbers)."""
        return np.where(self.member, per_cell[:, None], 0).sum(axis=0)


class _Variable:
    """One variable's paired differences summed per cell of the batch's masks; a sample (one mask)
    with more than `LARGE_SAMPLE` non-zero differences is computed from these sums alone (`normal`).

    The differences are first tallied per cell and distinct value (`tally`: how many paired
    questions of cell c have difference `values[k]`); per cell: paired questions, sums of both sides
    (one pass over the questions each) and of the differences, increases, decreases, the sum and sum
    of squares of the non-zero differences, the within-cell sum of squared deviations (a sample's
    variance combines its cells: Chan's pairwise formula), the extreme differences, and the Wilcoxon
    rank-group counts of the non-zero |d| all follow from that tally.
    """

    def __init__(self, cells: Cells, b: np.ndarray, c: np.ndarray, both: np.ndarray, d: np.ndarray):
        import pandas as pd  # imported here: the rest of the module needs only numpy and scipy

        self.cells = cells
        size = cells.size
        # NaN (unpaired) -> -1; a small starting hash table (it grows as needed): differences take few
        # distinct values, and a table sized for every question costs more than the hashing
        codes, values = pd.factorize(np.where(both, d, np.nan), size_hint=FACTORIZE_HINT)
        values = np.asarray(values, dtype=float)
        width = len(values)
        if size * width <= MAX_CELL_GROUPS:  # a dense cells x values table, one pass
            key = np.where(codes >= 0, cells.cell * width + codes, size * width)
            dense = np.bincount(key, minlength=size * width + 1)[:size * width]
            entries = np.flatnonzero(dense)
            count = dense.take(entries)
        else:  # many distinct differences: tally the (cell, value) pairs that occur
            paired = codes >= 0
            key = cells.cell[paired] * width + codes[paired]
            pair_codes, entries = pd.factorize(key)
            entries = np.asarray(entries, dtype=np.int64)
            count = np.bincount(pair_codes, minlength=len(entries))
        self.codes = codes
        self.values = values
        self.cell_of = entries // max(width, 1)
        """Per (cell, value) entry of the tally: its cell; `value_of`: its value's index; `tally`: its questions."""
        self.value_of = entries % max(width, 1)
        self.tally = count.astype(float)
        self.entry_d = values.take(self.value_of)
        rises, falls = self.entry_d > TIE, self.entry_d < -TIE
        differs = rises | falls
        self.count = self._per_cell(count).astype(np.int64)
        self.up = self._per_cell(np.where(rises, count, 0)).astype(np.int64)
        self.down = self._per_cell(np.where(falls, count, 0)).astype(np.int64)
        paired_key = np.where(codes >= 0, cells.cell, size)
        weighted = self.tally * self.entry_d
        self.sums = {
            "b": np.bincount(paired_key, weights=b, minlength=size + 1)[:size],
            "c": np.bincount(paired_key, weights=c, minlength=size + 1)[:size],
            "d": self._per_cell(weighted),
            "nz": self._per_cell(np.where(differs, weighted, 0.0)),
            "nz2": self._per_cell(np.where(differs, weighted * self.entry_d, 0.0)),
        }
        self._entry_rises, self._entry_differs = rises, differs
        self._squares: np.ndarray | None = None
        self._extremes: tuple[np.ndarray, np.ndarray] | None = None
        self._groups: tuple[np.ndarray, int] | None = None
        self._ranks: tuple[np.ndarray, np.ndarray] | None | bool = False

    def _per_cell(self, per_entry: np.ndarray) -> np.ndarray:
        """Per cell: the sum of a quantity given per tally entry."""
        return np.bincount(self.cell_of, weights=per_entry, minlength=self.cells.size)

    def nonzero(self, at: np.ndarray) -> int:
        return int(self.up[at].sum() + self.down[at].sum())

    def squares(self) -> np.ndarray:
        if self._squares is None:
            cell_mean = self.sums["d"] / np.maximum(self.count, 1)
            deviation = self.entry_d - cell_mean.take(self.cell_of)
            self._squares = self._per_cell(self.tally * deviation * deviation)
        return self._squares

    def extremes(self) -> tuple[np.ndarray, np.ndarray]:
        if self._extremes is None:
            size = self.cells.size
            low, high = np.full(size, np.inf), np.full(size, -np.inf)
            np.minimum.at(low, self.cell_of, self.entry_d)
            np.maximum.at(high, self.cell_of, self.entry_d)
            self._extremes = (low, high)
        return self._extremes

    def _value_groups(self) -> tuple[np.ndarray, int]:
        """Per distinct value: 1 + the Wilcoxon rank group of its |d| among the non-zero ones (0 for
        |d| <= TIE), and the number of ids with 0."""
        differs = np.abs(self.values) > TIE
        ids, count = _rank_groups_fast(np.abs(self.values[differs]))
        groups = np.zeros(len(self.values), dtype=np.int64)
        groups[differs] = ids + 1
        return groups, count + 1

    def groups(self) -> tuple[np.ndarray, int]:
        """Per question, 1 + the Wilcoxon rank group of its non-zero paired |d| (0: none), and the
        number of ids with 0: `_variable_groups` of the variable."""
        if self._groups is None:
            by_value, n_groups = self._value_groups()
            self._groups = (np.append(by_value, 0).take(self.codes), n_groups)  # code -1 (unpaired): 0
        return self._groups

    def ranks(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per cell x rank group (ascending |d|): non-zero differences, and the positive ones; None
        when that table would be too large."""
        if self._ranks is False:
            by_value, n_groups = self._value_groups()
            n_ids = n_groups - 1
            if self.cells.size * n_ids > MAX_CELL_GROUPS:
                self._ranks = None
            else:
                group = by_value.take(self.value_of)
                flat = (self.cell_of * n_ids + group - 1)[self._entry_differs]
                size = self.cells.size * n_ids
                sizes = np.bincount(flat, weights=self.tally[self._entry_differs], minlength=size)
                positives = np.bincount(flat, weights=np.where(self._entry_rises, self.tally, 0.0)[self._entry_differs],
                                        minlength=size)
                self._ranks = (sizes.astype(np.int64).reshape(self.cells.size, n_ids),
                               positives.astype(np.int64).reshape(self.cells.size, n_ids))
        return self._ranks  # type: ignore[return-value]

    def unchanged(self, at: np.ndarray, alpha: float, complete: bool = True) -> Paired | None:
        """The sample made of the cells `at` when it holds at least 2 paired questions and none of
        their differences exceeds `TIE` nor do they spread beyond it (every test is then decided:
        interval (mean, mean), no t-test, Wilcoxon and sign-flip p 1; without `complete` the
        interval and Wilcoxon p are left None); else None."""
        n = int(self.count[at].sum())
        if n < 2 or self.nonzero(at):
            return None
        low, high = self.extremes()
        if float(high[at].max()) - float(low[at].min()) > TIE:
            return None
        mean = float(self.sums["d"][at].sum()) / n
        return Paired(n=n, baseline=float(self.sums["b"][at].sum()) / n, candidate=float(self.sums["c"][at].sum()) / n,
                      delta=mean, ci_low=mean if complete else None, ci_high=mean if complete else None, p_ttest=None,
                      p_wilcoxon=1.0 if complete else None, p_randomization=1.0,
                      improved=0, regressed=0, unchanged=n, warnings=small_sample_warnings(n, 0, alpha=alpha),
                      method="resampling")

    def normal(self, at: np.ndarray, higher_is_better: bool, alpha: float, confidence: float,
               complete: bool = True) -> Paired:
        """The sample made of the cells `at`, known to hold more than `LARGE_SAMPLE` non-zero
        differences; without `complete`, its interval, t-test and Wilcoxon p are left None."""
        count = self.count[at]
        n = int(count.sum())
        up, down = int(self.up[at].sum()), int(self.down[at].sum())
        nonzero = up + down
        improved, regressed = (up, down) if higher_is_better else (down, up)
        notes = small_sample_warnings(n, nonzero, alpha=alpha)
        mean = float(self.sums["d"][at].sum()) / n
        fields = dict(n=n, baseline=float(self.sums["b"][at].sum()) / n, candidate=float(self.sums["c"][at].sum()) / n,
                      delta=mean, improved=improved, regressed=regressed, unchanged=n - nonzero, method="normal",
                      p_ttest=None)
        flat = False
        if nonzero == n:  # with a zero difference beside non-zero ones the spread exceeds TIE
            low, high = self.extremes()
            flat = bool(float(high[at].max()) - float(low[at].min()) <= TIE)
        z = float(self.sums["nz"][at].sum()) / math.sqrt(float(self.sums["nz2"][at].sum()))
        fields["p_randomization"] = _normal_p(z, "two-sided")
        if flat:
            notes += ("every paired difference is the same: the t-test is undefined (no spread)",)
        if not complete:
            return Paired(**fields, ci_low=None, ci_high=None, p_wilcoxon=None, warnings=notes)
        if flat:
            fields["ci_low"] = fields["ci_high"] = mean
        else:
            cell_mean = self.sums["d"][at] / np.maximum(count, 1)
            spread = float(self.squares()[at].sum()) + float((count * np.square(cell_mean - mean)).sum())
            variance = spread / (n - 1)
            half = float(_special.ndtri(0.5 + confidence / 2)) * math.sqrt(variance / n)
            fields["ci_low"], fields["ci_high"] = mean - half, mean + half
            fields["p_ttest"] = _t_p(mean, variance, n, "two-sided")
        ranks = self.ranks()
        if ranks is None:  # too many distinct |d| for a table per cell: count the sample's own entries
            by_value, n_groups = self._value_groups()
            inside = at.take(self.cell_of) & self._entry_differs
            group = by_value.take(self.value_of[inside])
            sizes = np.bincount(group, weights=self.tally[inside], minlength=n_groups)[1:]
            positives = np.bincount(group, weights=np.where(self._entry_rises[inside], self.tally[inside], 0.0),
                                    minlength=n_groups)[1:]
        else:
            sizes, positives = ranks[0][at].sum(axis=0), ranks[1][at].sum(axis=0)
        fields["p_wilcoxon"] = _signed_rank_normal_p(sizes, positives, "two-sided")
        return Paired(**fields, warnings=notes)


__all__ = ["Cells", "paired_many"]
