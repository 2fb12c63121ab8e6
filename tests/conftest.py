"""Shared test configuration: the tiers (tests/tiers.py), hypothesis profiles, the tally of
cross-checked cases, and the fixtures of tests/fixtures.py that every module may ask for (`chrome`,
`demo_db`).

Profiles: ``fast`` for the fast tier, ``default`` for the rest and for ``--tier all``, ``small`` for
quick subprocess runs (mutation tests: fixed seed, no shrinking), ``thorough`` for a long local soak;
RAGSLICE_HYPOTHESIS_PROFILE overrides the tier's choice. None writes an example database;
hypothesis's own caches go to the system temporary directory.

Compiled bytecode is cached (``__pycache__``, ignored by git) even where the environment asks Python
not to write it (PYTHONDONTWRITEBYTECODE): the suite starts hundreds of processes (xdist workers, the
command line, Streamlit servers), and each would compile the package again (collection alone took 11.2 s
against 4.4 s).
"""
from __future__ import annotations

import functools
import os
import sys
import tempfile
import zlib
from pathlib import Path

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for every process the tests start

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.configuration import set_hypothesis_home_dir

import tiers
from fixtures import chrome, demo_db  # noqa: F401 - fixtures: one headless Chromium, the demo's database

_COMMON = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("default", max_examples=tiers.FULL_EXAMPLES, **_COMMON)
settings.register_profile("fast", max_examples=tiers.FAST_EXAMPLES, **_COMMON)
settings.register_profile(
    "small", max_examples=25, derandomize=True, phases=(Phase.generate,), report_multiple_bugs=False, **_COMMON
)
settings.register_profile("thorough", max_examples=2000, **_COMMON)

CASE_TALLY = pytest.StashKey[dict]()
SAMPLED = "sampled"
"""The marker of a test whose cases the fast tier samples and the rest tier runs in full."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier", choices=tiers.TIERS, default=os.environ.get("RAGSLICE_TIER", "fast"),
        help="fast (default): all but browser and slow tests, cases sampled; rest: browser, slow and "
             "sampled tests at full size; all: everything at full size (tests/tiers.py)")


def pytest_configure(config: pytest.Config) -> None:
    tier = config.getoption("--tier")
    tiers.full = tier != "fast"
    settings.load_profile(os.environ.get("RAGSLICE_HYPOTHESIS_PROFILE", "fast" if tier == "fast" else "default"))
    config.stash[CASE_TALLY] = {}
    # Hypothesis caches constants (at collection) and writes failure patches: keep them out of the tree.
    home = os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or Path(tempfile.gettempdir()) / "ragslice-hypothesis"
    set_hypothesis_home_dir(home)
    _scan_components_once()


def _scan_components_once() -> None:
    """Keep Streamlit's scan for installed components per process. Each new AppTest reads the metadata
    of every installed distribution for v2 component manifests (0.6 s with the test extra's 150
    packages, once for each of some hundreds of apps); what is installed does not change during a run."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:  # a Streamlit without v2 components scans nothing
        return
    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


def pytest_report_header(config: pytest.Config) -> str:
    tier = config.getoption("--tier")
    left = {"fast": "browser and slow tests left out, cases sampled (run them: pytest --tier rest)",
            "rest": "browser, slow and sampled tests, at full size", "all": "every test at full size"}[tier]
    return f"ragslice tier {tier}: {left}; hypothesis profile {settings.get_current_profile_name()}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark Hypothesis tests and `cases(k)` tests `sampled`, put the heaviest files first
    (`tiers.HEAVY_FIRST`), then keep the tier's tests (an explicit -m decides alone); the fast tier keeps
    k cases of a `cases(k)` test (`tiers.some`, seeded by its name)."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False) or item.get_closest_marker("cases"):
            item.add_marker(SAMPLED)
    items.sort(key=lambda item: tiers.heavy_first(item.path.stem))  # stable: a file's own order is kept
    tier = config.getoption("--tier")
    if tier == "all" or config.getoption("markexpr"):
        return
    if tier == "fast":
        keep = [i for i in items if not i.get_closest_marker("browser") and not i.get_closest_marker("slow")]
        keep = _sample_cases(keep)
    else:
        keep = [i for i in items if any(i.get_closest_marker(m) for m in ("browser", "slow", SAMPLED))]
    dropped = [i for i in items if i not in set(keep)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def _sample_cases(items: list[pytest.Item]) -> list[pytest.Item]:
    """`items` with each `cases(k)` test's parametrized cases cut to `tiers.some(cases, k)`, in order."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        if item.get_closest_marker("cases"):
            groups.setdefault(item.nodeid.split("[")[0], []).append(item)
    kept = set()
    for name, cases in groups.items():
        k = cases[0].get_closest_marker("cases").args[0]
        kept.update(tiers.some(cases, k, seed=zlib.crc32(name.encode())))
    return [i for i in items if not i.get_closest_marker("cases") or i in kept]


@pytest.fixture(scope="session")
def case_tally(pytestconfig: pytest.Config) -> dict[str, int]:
    """Name -> number of (question x run x cutoff) cases both implementations scored."""
    return pytestconfig.stash[CASE_TALLY]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its tally to the controller (`pytest_testnodedown`)."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["case_tally"] = dict(session.config.stash.get(CASE_TALLY, {}))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """The controller adds up its workers' tallies (pytest-xdist)."""
    tally = node.config.stash.setdefault(CASE_TALLY, {})
    for name, n in getattr(node, "workeroutput", {}).get("case_tally", {}).items():
        tally[name] = tally.get(name, 0) + n


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    tally = config.stash.get(CASE_TALLY, {})
    if tally:
        detail = ", ".join(f"{name}: {n}" for name, n in sorted(tally.items()))
        terminalreporter.write_line(
            f"reference vs SQL engine: {sum(tally.values())} question x run x cutoff cases compared ({detail})"
        )
