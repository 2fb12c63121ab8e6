"""ragslice scoring: validate test sets and recorded runs, compute metrics, refresh DuckDB."""
from .errors import ValidationError
from .metrics.reference import ClaimVerdict, claim_verdicts, evaluate, validate_corpus
from .metrics.registry import REGISTRY, Measure, Metric, metric, parse_measure

__all__ = [
    "REGISTRY",
    "ClaimVerdict",
    "Measure",
    "Metric",
    "ValidationError",
    "claim_verdicts",
    "evaluate",
    "metric",
    "parse_measure",
    "validate_corpus",
]
