"""Paired comparison of a baseline and a candidate, and the release verdict: the public names.

The comparison lives in three modules, each named for what it holds:

- `scoring.decide.paired`: the `Comparison` type (its `Settings`, `HeldoutUse`, table columns,
  JSON document and read-only per-question views);
- `scoring.decide.compute`: reading the inputs (`Inputs`, `read_inputs`) and computing a comparison
  (`compare`, `compare_many`), and recording its verdict (`run_comparison`, `run_comparisons`);
- `scoring.decide.family`: families of tests and their p-value corrections (Holm, Benjamini-Hochberg)
  and resolution (`Resolution`), the many-candidate `Family`, the p-value columns (`P_COLUMNS`,
  `table_rows`).

Every name is importable from here as before; new code may import from the module that holds it.
"""
from __future__ import annotations

from .compute import (
    CUTOFF_NAMES,
    Inputs,
    compare,
    compare_many,
    read_inputs,
    read_regressed,
    run_comparison,
    run_comparisons,
)
from .family import (
    HOLM_FAMILY,
    P_COLUMNS,
    SIGNIFICANT,
    Family,
    Resolution,
    adjust_family,
    fdr_adjusted,
    holm_adjusted,
    significant,
    table_rows,
)
from .paired import (
    COMPARISON_COLUMNS,
    Comparison,
    HeldoutUse,
    Settings,
    judged,
    label_gap_warning,
)
from .scores import SIDES, ScoreRows, SideScores, read_questions, read_side_scores, read_slice_columns

__all__ = [
    "COMPARISON_COLUMNS", "CUTOFF_NAMES", "HOLM_FAMILY", "P_COLUMNS", "SIDES", "SIGNIFICANT", "Comparison", "Family",
    "HeldoutUse", "Inputs", "Resolution", "ScoreRows", "SideScores", "Settings", "adjust_family", "compare",
    "compare_many", "fdr_adjusted", "holm_adjusted", "judged", "label_gap_warning", "read_inputs", "read_questions", "read_regressed",
    "read_side_scores", "read_slice_columns", "run_comparison", "run_comparisons", "significant", "table_rows",
]
