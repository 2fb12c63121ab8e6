"""Corrections for multiplicity over a family of p-values: Holm's step-down adjustment (for claims:
the chance of any false mark stays at most alpha) and Benjamini-Hochberg's (for exploring many cells:
the expected share of false marks stays at most q). None stays None and does not count in the family."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values over the family of non-None p-values (order kept).

    With the m p-values sorted ascending, ``p_holm(i) = min(1, max_{j <= i} (m - j + 1) p(j))``
    (1-based ranks); None stays None and does not count in m.
    """
    idx = [i for i, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: (pvalues[i], i))):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))  # type: ignore[arg-type]
        out[i] = running
    return out


def benjamini_hochberg(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values over the family of non-None p-values (order kept), computed
    as scipy's ``false_discovery_control(method="bh")`` computes them.

    With the m p-values sorted ascending, ``p_fdr(i) = min(1, min_{j >= i} p(j) * (m / j))`` (1-based
    ranks); None stays None and does not count in m. Rejecting every p_fdr <= q keeps the expected share
    of false rejections among the rejections at most q when the tests are independent or positively
    dependent (Benjamini and Hochberg 1995; Benjamini and Yekutieli 2001).
    """
    idx = [i for i, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    out: list[float | None] = [None] * len(pvalues)
    if not idx:
        return out
    ps = np.array([float(pvalues[i]) for i in idx])  # type: ignore[arg-type]
    if len(ps) > 1:
        order = np.argsort(ps)
        ranked = ps[order] * (len(ps) / np.arange(1, len(ps) + 1, dtype=float))
        np.minimum.accumulate(ranked[::-1], out=ranked[::-1])
        ps = np.empty_like(ranked)
        ps[order] = ranked
    for i, p in zip(idx, np.clip(ps, 0.0, 1.0)):
        out[i] = float(p)
    return out
