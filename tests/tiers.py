"""The test tiers: what the README's `pytest` runs, and what `.ci/run` adds.

- ``fast`` (the default): every test but the `browser` and `slow` ones, with Hypothesis at the
  ``fast`` profile, each exhaustive loop over cases cut to a seeded sample (`some`, `examples`), each
  long parametrized list marked `cases(k)` cut to k of its cases (the first, the last and a seeded
  sample: `some` at collection), and a few generated suites smaller (`sized`).
- ``rest``: the `browser` and `slow` tests, and every `sampled` test again at full size (every case,
  the ``default`` Hypothesis profile). Together the two tiers run everything at full size once.
- ``all``: every test at full size.

Choose with ``pytest --tier NAME`` or ``RAGSLICE_TIER``. A test is `sampled` when it uses Hypothesis
or is marked so (it calls `some` or `examples`); `conftest.py` marks the Hypothesis and `cases(k)` ones itself.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

TIERS = ("fast", "rest", "all")
FULL_EXAMPLES = 90
"""Hypothesis examples of the ``default`` profile: the size every `examples(n)` is written against."""
FAST_EXAMPLES = 8
"""Hypothesis examples of the ``fast`` profile."""

full = True
"""Whether this run takes every case (tiers ``rest`` and ``all``); set once by conftest.py."""

HEAVY_FIRST = ("test_dashboard_apptest", "test_validation", "test_stats_fast_paths", "test_pool_relabel_reference",
               "test_bulk", "test_present_inputs", "test_compare_many", "test_rescore", "test_bad_inputs", "test_trec",
               "test_demo_command", "test_dashboard_ux", "test_compare", "test_refresh", "test_failures_never_help",
               "test_corrected_answers", "test_judge_grades_costs")
"""The fast tier's heaviest files (12 to 35 s of one core each, measured on 2 cores), collected first: xdist
hands out whole files (``--dist loadfile``), so a run that ends on light files ends on both workers together.
The second needs no shared database, so the second worker starts on it while the first builds the demo's."""


def heavy_first(module: str) -> int:
    """A test file's place in the collection order: `HEAVY_FIRST`'s files in that order, then every other."""
    return HEAVY_FIRST.index(module) if module in HEAVY_FIRST else len(HEAVY_FIRST)


def examples(n: int, *, least: int = 3) -> int:
    """`n` Hypothesis examples at full size, scaled to the ``fast`` profile's share (at least `least`)."""
    return n if full else min(n, max(least, round(n * FAST_EXAMPLES / FULL_EXAMPLES)))


def sized(n: int, fast: int) -> int:
    """A generated suite's size: `n` at full size, `fast` in the ``fast`` tier (the test says why `fast`
    still reaches what the size is for)."""
    return n if full else fast


def some(items: Sequence[T], k: int, *, seed: int = 0) -> list[T]:
    """Every item at full size; otherwise the first, the last and a seeded sample, `k` in all, in
    their original order (the ends are kept: they are the edge cases lists are usually built around)."""
    items = list(items)
    if full or len(items) <= k:
        return items
    middle = random.Random(seed).sample(range(1, len(items) - 1), max(0, k - 2))
    return [items[i] for i in sorted({0, len(items) - 1, *middle})]
