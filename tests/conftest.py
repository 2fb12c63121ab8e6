"""Shared test configuration: hypothesis profiles, the tally of cross-checked cases, and the fixtures of
tests/fixtures.py that every module may ask for (`chrome`).

Profiles (pick one with RAGSLICE_HYPOTHESIS_PROFILE): ``default`` for the suite, ``small`` for quick
subprocess runs (mutation tests: fixed seed, no shrinking), ``thorough`` for a long local soak. None
writes an example database; hypothesis's own caches go to the system temporary directory.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.configuration import set_hypothesis_home_dir

from fixtures import chrome  # noqa: F401 - a fixture: one headless Chromium per test module

_COMMON = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("default", max_examples=90, **_COMMON)
settings.register_profile(
    "small", max_examples=25, derandomize=True, phases=(Phase.generate,), report_multiple_bugs=False, **_COMMON
)
settings.register_profile("thorough", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("RAGSLICE_HYPOTHESIS_PROFILE", "default"))

CASE_TALLY = pytest.StashKey[dict]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[CASE_TALLY] = {}
    # Hypothesis caches constants (at collection) and writes failure patches: keep them out of the tree.
    home = os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or Path(tempfile.gettempdir()) / "ragslice-hypothesis"
    set_hypothesis_home_dir(home)


@pytest.fixture(scope="session")
def case_tally(pytestconfig: pytest.Config) -> dict[str, int]:
    """Name -> number of (question x run x cutoff) cases both implementations scored."""
    return pytestconfig.stash[CASE_TALLY]


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    tally = config.stash.get(CASE_TALLY, {})
    if tally:
        detail = ", ".join(f"{name}: {n}" for name, n in sorted(tally.items()))
        terminalreporter.write_line(
            f"reference vs SQL engine: {sum(tally.values())} question x run x cutoff cases compared ({detail})"
        )
