"""Prediction-powered estimates: an automatic judge's figure corrected by a random sample of reviewed
items, with a valid interval (docs/statistics.md, "Correcting a judge's figures").

**The mean (PPI++).** n items were reviewed (truth y, the judge's prediction yhat on each) and N more
were only judged (predictions yhat'). For a tuning weight lambda the estimate of the population mean is

    theta = lambda * mean(yhat') + mean(y - lambda * yhat)

unbiased for any fixed lambda (the second term removes the judge's bias as the sample sees it), with
standard error ``sqrt(lambda^2 var(yhat') / N + var(y - lambda yhat) / n)`` (variances with divisor N
and n), and the (1 - alpha) interval ``theta +- z(1 - alpha/2) se`` (the central limit theorem).
Power tuning chooses ``lambda = cov(y, yhat) / ((1 + n/N) var(yhat, yhat'))`` (the covariance over the
reviewed items with divisor n, the variance over every judged item with divisor n + N - 1), clipped to
[0, 1] and computed at the lambda = 1 estimate, exactly as ppi_py's ``ppi_mean_ci`` (Angelopoulos,
Duchi and Zrnic, "PPI++: Efficient Prediction-Powered Inference", arXiv:2311.01453, 2023): lambda = 0
is the reviewed-only estimate, lambda = 1 the original prediction-powered one (Angelopoulos et al.,
"Prediction-powered inference", *Science* 382, 2023). With two coordinates (a ratio's numerator and
denominator) one lambda serves both, tuned on the trace of the covariance (ppi_py's "overall" mode).

**Strata.** With a stratified sample each stratum h (N_h items in the frame, n_h of them reviewed) is
estimated on its own (its own lambda), and the totals are ``sum_h N_h theta_h``, their covariance
``sum_h N_h^2 Sigma_h`` (Sigma_h with the pseudo-reviews below): the inclusion probabilities n_h / N_h differ between strata, and weighting
each stratum by its size is what makes the estimate unbiased. Each stratum needs at least
`MIN_REVIEWED` reviewed items for a spread.

**Few reviews (pseudo-reviews).** The plain CLT interval undercovers badly with few reviews per stratum
(0.77 at 10 a stratum in benchmarks/calibrate_ppi.py): where the judge is rarely wrong, a handful of
reviews often sees none of its errors, the rectifier's spread is then estimated as about 0 and the
interval is narrowest exactly when the estimate has missed the judge's bias. The product's interval adds
`PSEUDO_REVIEWS` = 2 pseudo-reviews to each stratum's spread, one on which reviewers find one more
supported claim than the rectified mean and one on which they find one fewer (the Agresti-Caffo idea:
add a success and a failure, A. Agresti and B. Caffo, "Simple and effective confidence intervals for
proportions and differences of proportions result from adding two successes and two failures", *The
American Statistician* 54, 2000), and takes the n + 2 values as the sample: the rectifier's covariance
is ``(sum (r - mean r)(r - mean r)^T + 2 e_u e_u^T) / (n + 2)^2``. The point estimate is unchanged
(the pseudo-reviews sit symmetrically about the mean); the term vanishes as n grows. Seeing no error
in 10 reviews, the stratum's half-width is then about 1.96 sqrt(2) / 12 = 0.23 claims a sentence, close
to Wilson's 0.28 upper bound for 0 of 10. `ppi_mean` keeps ppi_py's plain interval (it is the reference
the tests hold the arithmetic to).

**A ratio.** Pooled Support is supported claims over claims. Items contribute (u, c): the supported
claims and the claims of one answer sentence. With the parts no judge decides known exactly (K_u, K_c:
recorded claims, sentences a reviewer aligned outside the sample, failed records' charge), the
estimate is ``(K_u + T_u) / (K_c + T_c)`` and its standard error the delta method's
``sqrt(g' Sigma_T g)``, ``g = (1 / D, -R / D)``, D the denominator and R the ratio.

**A share.** Every ratio here is a share (u <= c on every item), so its interval is cut to [0, 1] and a
delta's to [-1, 1]: the true value lies inside, so the cut never loses coverage, and a share's interval
never reads below 0 or above 1.

**A paired delta** between two runs' estimates treats their samples as independent (items of different
runs are different items): its variance is the sum of theirs.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from .stats import CONFIDENCE

MIN_REVIEWED = 2
"""A stratum needs at least this many reviewed items for its spread (and so for an interval)."""
MIN_SAMPLE = 10
"""The whole sample needs at least this many reviewed items before an interval is given (below that the
normal approximation means little)."""
PSEUDO_REVIEWS = 2
"""Pseudo-reviews added to each stratum's spread (module docstring, "Few reviews")."""
METHOD = "PPI++ (power-tuned lambda), stratified, CLT interval with two pseudo-reviews per stratum"


def z_value(confidence: float = CONFIDENCE) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


@dataclass(frozen=True)
class MeanEstimate:
    """A prediction-powered mean: the estimate, its standard error and interval, lambda, n reviewed and N
    judged only."""

    estimate: float
    se: float
    low: float
    high: float
    lam: float
    n: int
    N: int


def _as2d(values: Any) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return array.reshape(-1, 1) if array.ndim == 1 else array


def tuned_lambda(y: Any, yhat: Any, yhat_unlabeled: Any) -> float:
    """PPI++'s power-tuned lambda (module docstring), clipped to [0, 1]; 0 without unlabelled items or
    without spread in the predictions."""
    y, yhat, unl = _as2d(y), _as2d(yhat), _as2d(yhat_unlabeled)
    n, N = len(y), len(unl)
    if N == 0 or n == 0:
        return 0.0
    first = unl.mean(axis=0) + (y - yhat).mean(axis=0)  # the lambda = 1 estimate, as ppi_py centres at it
    g, gh = y - first, yhat - first
    gc, ghc = g - g.mean(axis=0), gh - gh.mean(axis=0)
    cov = (gc.T @ ghc + ghc.T @ gc) / n
    every = np.concatenate([yhat, unl], axis=0)
    var = np.atleast_2d(np.cov(every.T)) if len(every) > 1 else np.zeros((y.shape[1], y.shape[1]))
    denominator = 2 * (1 + n / N) * float(np.trace(var))
    if denominator <= 0 or not math.isfinite(denominator):
        return 0.0
    return float(np.clip(float(np.trace(cov)) / denominator, 0.0, 1.0))


def ppi_vector(y: Any, yhat: Any, yhat_unlabeled: Any, *, lam: float | None = None
               ) -> tuple[np.ndarray, np.ndarray, float]:
    """(estimate, covariance, lambda) of the mean of each coordinate (module docstring): one lambda for
    every coordinate, power-tuned unless given."""
    y, yhat, unl = _as2d(y), _as2d(yhat), _as2d(yhat_unlabeled)
    n, N = len(y), len(unl)
    if lam is None:
        lam = tuned_lambda(y, yhat, unl)
    if N == 0:
        lam = 0.0
    rectified = y - lam * yhat
    estimate = (lam * unl.mean(axis=0) if N else 0.0) + rectified.mean(axis=0)
    cov = np.cov(rectified.T, ddof=0).reshape(y.shape[1], y.shape[1]) / n
    if N:
        cov = cov + np.cov((lam * unl).T, ddof=0).reshape(y.shape[1], y.shape[1]) / N
    return np.atleast_1d(estimate), cov, float(lam)


def ppi_mean(y: Sequence[float], yhat: Sequence[float], yhat_unlabeled: Sequence[float], *,
             lam: float | None = None, confidence: float = CONFIDENCE) -> MeanEstimate:
    """The prediction-powered mean with its CLT interval (module docstring); as ppi_py's
    ``ppi_mean_pointestimate`` and ``ppi_mean_ci`` (alternative two-sided)."""
    if len(y) != len(yhat) or not len(y):
        raise ValueError("each reviewed item needs its truth and its prediction, and one item at least")
    estimate, cov, lam = ppi_vector(y, yhat, yhat_unlabeled, lam=lam)
    se = math.sqrt(max(float(cov[0, 0]), 0.0))
    half = z_value(confidence) * se
    return MeanEstimate(float(estimate[0]), se, float(estimate[0]) - half, float(estimate[0]) + half, lam, len(y),
                        len(yhat_unlabeled))


# --- a stratified ratio ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stratum:
    """One stratum's items: `truth` and `reviewed_pred` (rows (u, c)) on the reviewed items, `unreviewed_pred`
    on the rest of the frame; `population` the stratum's items in the frame."""

    name: str
    population: int
    truth: np.ndarray
    reviewed_pred: np.ndarray
    unreviewed_pred: np.ndarray
    drawn: int = 0

    @property
    def reviewed(self) -> int:
        return len(self.truth)


@dataclass(frozen=True)
class RatioEstimate:
    """A stratified ratio (module docstring): the estimate, its standard error and interval (None when
    the sample cannot give one: `reason` says why), lambda per stratum, the items in the frame, drawn
    and reviewed."""

    estimate: float | None
    se: float | None
    low: float | None
    high: float | None
    frame: int
    sampled: int
    reviewed: int
    lambdas: dict[str, float] = field(default_factory=dict)
    reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.se is not None

    @property
    def half_width(self) -> float | None:
        return None if self.low is None or self.high is None else (self.high - self.low) / 2

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "se": self.se, "interval": None if self.low is None else
                [self.low, self.high], "frame": self.frame, "n_sampled": self.sampled, "n_reviewed": self.reviewed,
                "lambda": self.lambdas, "reason": self.reason}


def rectifier_cov(rectified: Any, pseudo: int = PSEUDO_REVIEWS) -> np.ndarray:
    """The covariance of a stratum's mean rectified value ``mean(y - lambda yhat)`` (rows (u, c)) for the
    interval (module docstring, "Few reviews"): the n rectified values together with `pseudo` pseudo-reviews,
    half one supported claim above their mean and half one below, taken as a sample of n + pseudo (their
    covariance with divisor n + pseudo, over n + pseudo). pseudo = 0 is the plain CLT covariance (divisor n,
    over n), as ppi_py's."""
    rectified = _as2d(rectified)
    m = len(rectified) + pseudo
    centred = rectified - rectified.mean(axis=0)
    scatter = centred.T @ centred
    scatter[0, 0] += pseudo  # each pseudo-review sits one claim (u) from the mean, its c at the mean
    return scatter / (m * m)


def _cov_of(stratum: Stratum, lam: float | None, *, pseudo: int = PSEUDO_REVIEWS
            ) -> tuple[np.ndarray, np.ndarray, float]:
    """(mean (u, c), covariance of that mean, lambda) of one stratum: the PPI++ estimate with the rectifier's
    spread from `rectifier_cov` (pseudo-reviews included) over n, plus the judged-only part."""
    if stratum.reviewed == 0:
        return stratum.unreviewed_pred.mean(axis=0) if len(stratum.unreviewed_pred) else np.zeros(2), \
            np.full((2, 2), np.nan), 0.0
    mean, _, used = ppi_vector(stratum.truth, stratum.reviewed_pred, stratum.unreviewed_pred, lam=lam)
    cov = rectifier_cov(stratum.truth - used * stratum.reviewed_pred, pseudo)
    unl = stratum.unreviewed_pred
    if len(unl):
        cov = cov + np.cov((used * unl).T, ddof=0).reshape(2, 2) / len(unl)
    return mean, cov, used


def ratio_estimate(strata: Sequence[Stratum], known: tuple[float, float], *, lam: float | None = None,
                   confidence: float = CONFIDENCE, pseudo: int = PSEUDO_REVIEWS) -> RatioEstimate:
    """`(K_u + T_u) / (K_c + T_c)` with the totals estimated stratum by stratum (module docstring).
    `lam`: None to tune per stratum (PPI++), 0 for the reviewed-only estimate, 1 for plain PPI. `pseudo`:
    pseudo-reviews in each stratum's spread (`rectifier_cov`); 0 gives the plain CLT interval, which
    undercovers with few reviews per stratum (docs/statistics.md, the calibration)."""
    frame = sum(s.population for s in strata)
    sampled = sum(s.drawn for s in strata)
    reviewed = sum(s.reviewed for s in strata)
    total = np.array(known, dtype=float)
    cov = np.zeros((2, 2))
    lambdas: dict[str, float] = {}
    reason = None
    for s in strata:
        if s.population == 0:
            continue
        mean, sigma, used = _cov_of(s, lam, pseudo=pseudo)
        lambdas[s.name] = used
        total = total + s.population * mean
        cov = cov + s.population ** 2 * sigma
        if s.reviewed < MIN_REVIEWED and reason is None:
            label = f"stratum {s.name}" if s.name else "the sample"
            reason = f"{label} has {s.reviewed} reviewed item(s); each stratum needs {MIN_REVIEWED} for an interval"
    if reviewed < MIN_SAMPLE and frame:
        reason = f"{reviewed} of the sample's items are reviewed; an interval needs {MIN_SAMPLE} at least"
    if not frame:
        reason = None
    if total[1] <= 0:
        return RatioEstimate(None, None, None, None, frame, sampled, reviewed, lambdas,
                             "no claim in the estimate's denominator")
    ratio = float(total[0] / total[1])
    if reason is not None:
        return RatioEstimate(ratio if reviewed else None, None, None, None, frame, sampled, reviewed, lambdas, reason)
    gradient = np.array([1 / total[1], -ratio / total[1]])
    se = math.sqrt(max(float(gradient @ cov @ gradient), 0.0))
    half = z_value(confidence) * se
    return RatioEstimate(ratio, se, max(ratio - half, 0.0), min(ratio + half, 1.0), frame, sampled, reviewed, lambdas)


def judge_only(strata: Sequence[Stratum], known: tuple[float, float]) -> float | None:
    """The figure with every frame item taken as the judge decided it (no correction)."""
    total = np.array(known, dtype=float)
    for s in strata:
        if s.reviewed:
            total = total + s.reviewed_pred.sum(axis=0)
        if len(s.unreviewed_pred):
            total = total + s.unreviewed_pred.sum(axis=0)
    return None if total[1] <= 0 else float(total[0] / total[1])


def difference(candidate: RatioEstimate, baseline: RatioEstimate, *, confidence: float = CONFIDENCE
               ) -> RatioEstimate:
    """candidate - baseline, the two samples independent (module docstring)."""
    if candidate.estimate is None or baseline.estimate is None:
        return RatioEstimate(None, None, None, None, candidate.frame + baseline.frame,
                             candidate.sampled + baseline.sampled, candidate.reviewed + baseline.reviewed,
                             reason=candidate.reason or baseline.reason)
    delta = candidate.estimate - baseline.estimate
    if not (candidate.valid and baseline.valid):
        return RatioEstimate(delta, None, None, None, candidate.frame + baseline.frame,
                             candidate.sampled + baseline.sampled, candidate.reviewed + baseline.reviewed,
                             reason=candidate.reason or baseline.reason)
    se = math.sqrt(float(candidate.se) ** 2 + float(baseline.se) ** 2)
    half = z_value(confidence) * se
    return RatioEstimate(delta, se, max(delta - half, -1.0), min(delta + half, 1.0), candidate.frame + baseline.frame,
                         candidate.sampled + baseline.sampled, candidate.reviewed + baseline.reviewed)


def projected_half_width(strata: Sequence[Stratum], known: tuple[float, float], reviewed: dict[str, int], *,
                         confidence: float = CONFIDENCE) -> float | None:
    """About how wide (half) the interval would be with `reviewed[h]` items of stratum h reviewed, the
    spreads, lambdas and ratio staying as the current reviews show them: each stratum's rectifier
    variance shrinks as 1 / n_h, its judged-only part as 1 / (N_h - n_h)."""
    total = np.array(known, dtype=float)
    cov = np.zeros((2, 2))
    for s in strata:
        if s.population == 0:
            continue
        if s.reviewed < MIN_REVIEWED:
            return None
        mean, _, lam = _cov_of(s, None)
        total = total + s.population * mean
        n_new = max(min(reviewed.get(s.name, s.reviewed), s.population), 1)
        rest = s.population - n_new
        rectified = s.truth - lam * s.reviewed_pred
        every = np.concatenate([s.reviewed_pred, s.unreviewed_pred], axis=0) if len(s.unreviewed_pred) else \
            s.reviewed_pred
        spread = np.cov(rectified.T, ddof=0).reshape(2, 2)  # per item, as the current reviews show it
        sigma = (n_new * spread + np.diag([float(PSEUDO_REVIEWS), 0.0])) / (n_new + PSEUDO_REVIEWS) ** 2
        if rest > 0:
            sigma = sigma + np.cov((lam * every).T, ddof=0).reshape(2, 2) / rest
        cov = cov + s.population ** 2 * sigma
    if total[1] <= 0:
        return None
    ratio = total[0] / total[1]
    gradient = np.array([1 / total[1], -ratio / total[1]])
    return z_value(confidence) * math.sqrt(max(float(gradient @ cov @ gradient), 0.0))


__all__ = ["METHOD", "MIN_REVIEWED", "MIN_SAMPLE", "PSEUDO_REVIEWS", "MeanEstimate", "RatioEstimate", "Stratum", "difference",
           "judge_only", "ppi_mean", "ppi_vector", "projected_half_width", "ratio_estimate", "rectifier_cov", "tuned_lambda",
           "z_value"]
