"""The metric core: the registry (one declaration per metric), the slices of a suite's questions that
metrics are read over (one declaration per family), the plain-Python reference that reads the
registry aloud, and the set-based SQL engine that production uses. Both implementations follow the
registry and are property-tested against each other."""
from .registry import *  # noqa: F403  (the registry is this package's vocabulary)
from .registry import __all__  # noqa: F401  (the package exports what the registry declares)
