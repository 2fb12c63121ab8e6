"""The one significance rule: a p-value is significant at level alpha when it is strictly below alpha.

Every place that calls a p-value significant calls `significant` (a gate's test, the comparison
table's marks, the release matrix, the slides, the dashboard's pages and filters): whether p equal to
alpha counts is decided here, once. It does not: ``p < alpha``, as scipy's documentation and the
Neyman-Pearson test of level alpha state it (reject when the p-value is below the level; a test whose
p can equal alpha exactly then keeps its size at most alpha). A p-value that is n/a (None or NaN) is
never significant.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

ALPHA = 0.05
"""The level used where nothing declares another: the comparison table's marks, the release matrix."""


def significant(p: Any, alpha: float = ALPHA) -> Any:
    """Whether `p` is significant at `alpha` (``p < alpha``): a bool for one p-value (False when it is
    None or NaN), a boolean Series or array for a Series or array of them (False where n/a)."""
    if isinstance(p, pd.Series):
        return (pd.to_numeric(p, errors="coerce") < alpha).fillna(False).astype(bool)
    if isinstance(p, np.ndarray) and p.ndim:
        values = pd.to_numeric(pd.Series(p.ravel()), errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            return (values < alpha).reshape(p.shape)
    if p is None:
        return False
    try:
        value = float(p)
    except (TypeError, ValueError):
        return False
    return not math.isnan(value) and value < alpha


__all__ = ["ALPHA", "significant"]
