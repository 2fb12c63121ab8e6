"""The suite can fail: the seed's three scoring defects, planted in a copy of `scoring`, are caught.

Each mutant is a copy of the package in tmp_path with one defect written in as exact text
replacements (each target must occur exactly once, so a refactor breaks this test loudly instead
of silently mutating nothing). The relevant tests then run in a subprocess that imports the copy,
and must fail on assertions, not on import or syntax errors. The unmutated copy must pass.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import scoring

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parent
CONTRACT_TESTS = [str(TESTS / "test_contract.py")]
ENGINE_TESTS = [str(TESTS / "test_engine_agrees_with_reference.py"), "-k", "seed_by_hand or random_batches"]

# (file, target text, replacement): applied in order, each target found exactly once.
Mutation = list[tuple[str, str, str]]

MUTANTS: dict[str, tuple[Mutation, list[str], str]] = {
    # (a) precision over the returned items instead of the k slots
    "reference-precision-by-returned": (
        [("metrics/reference.py", "hits / cutoff", "hits / max(1, len(top))")],
        CONTRACT_TESTS,
        "test_short_list_keeps_the_cutoff_as_precision_denominator",
    ),
    "engine-precision-by-returned": (
        [
            (
                "metrics/engine.py",
                "count(*) FILTER (WHERE grade >= $level) AS n_hits,",
                "count(*) FILTER (WHERE grade >= $level) AS n_hits, count(*) AS n_returned,",
            ),
            (
                "metrics/engine.py",
                "coalesce(g.n_hits, 0) AS n_hits,",
                "coalesce(g.n_hits, 0) AS n_hits, coalesce(g.n_returned, 0) AS n_returned,",
            ),
            ("metrics/engine.py", '"precision": "n_hits / k",', '"precision": "n_hits / greatest(1, n_returned)",'),
        ],
        ENGINE_TESTS,
        "test_engine_reproduces_the_seed_by_hand",
    ),
    # (b) one supporting citation is enough, instead of every citation supporting
    "reference-any-citation": (
        [("metrics/reference.py", '"citation_not_supporting": any(', '"citation_not_supporting": all(')],
        CONTRACT_TESTS,
        "test_missing_unknown_or_mixed_citations_do_not_support",
    ),
    "engine-any-citation": (
        [("metrics/engine.py", "bool_or(known AND NOT labelled AND NOT partial)",
          "bool_and(known AND NOT labelled AND NOT partial)")],
        ENGINE_TESTS,
        "test_engine_reproduces_the_seed_by_hand",
    ),
    # (c) a labelled citation counts even when it is not in the first k
    "reference-no-visible-context": (
        [("metrics/reference.py", "any((d in labelled or d in partial) and d not in visible for d in citations)", "False")],
        CONTRACT_TESTS,
        "test_citation_outside_the_visible_context_is_unsupported",
    ),
    "engine-no-visible-context": (
        [("metrics/engine.py", "bool_or((labelled OR partial) AND NOT is_visible)", "bool_or(false)")],
        ENGINE_TESTS,
        "test_engine_reproduces_the_seed_by_hand",
    ),
}

# Reports which `scoring` the test process really imported.
WHICH_PLUGIN = '''
import sys

def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"scoring imported from {sys.modules['scoring'].__file__}")
'''


def _copy(tmp_path: Path, mutation: Mutation) -> Path:
    """A copy of the installed `scoring` package with `mutation` applied; returns the copy's root."""
    root = tmp_path / "src"
    shutil.copytree(Path(scoring.__file__).parent, root / "scoring", ignore=shutil.ignore_patterns("__pycache__"))
    for name, target, replacement in mutation:
        path = root / "scoring" / name
        text = path.read_text()
        found = text.count(target)
        if found != 1:
            pytest.fail(f"mutation target {target!r} found {found} times in {name}; update the mutant")
        path.write_text(text.replace(target, replacement))
    (root / "which_scoring.py").write_text(WHICH_PLUGIN)
    return root


def _run(root: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "RAGSLICE_HYPOTHESIS_PROFILE": "small"}
    env.pop("PYTEST_ADDOPTS", None)
    report = root / "report.xml"
    command = [sys.executable, "-m", "pytest", *args, "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "which_scoring"]
    return subprocess.run(
        [*command, f"--junitxml={report}"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def _failures(root: Path) -> tuple[dict[str, str], list[str]]:
    """Failed test name -> failure message, and the names of tests that errored (not failed)."""
    cases = ET.parse(root / "report.xml").getroot().iter("testcase")
    failed, errored = {}, []
    for case in cases:
        if (failure := case.find("failure")) is not None:
            failed[case.get("name")] = failure.get("message", "")
        if case.find("error") is not None:
            errored.append(case.get("name"))
    return failed, errored


def _imported_from(result: subprocess.CompletedProcess[str]) -> Path:
    found = re.search(r"scoring imported from (\S+)", result.stdout)
    assert found, result.stdout[-3000:] + result.stderr[-3000:]
    return Path(found.group(1)).parent


def test_unmutated_copy_passes(tmp_path):
    root = _copy(tmp_path, [])
    result = _run(root, [*CONTRACT_TESTS, *ENGINE_TESTS])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert _imported_from(result) == root / "scoring"


@pytest.mark.parametrize("name", MUTANTS)
def test_mutant_is_caught_by_assertions(tmp_path, name):
    mutation, tests, expected_failure = MUTANTS[name]
    root = _copy(tmp_path, mutation)
    result = _run(root, tests)
    output = result.stdout + result.stderr
    assert _imported_from(result) == root / "scoring"
    assert result.returncode == 1, output[-3000:]  # 1: tests failed (2 would be collection/import errors)
    failed, errored = _failures(root)
    assert not errored, errored
    assert any(test.startswith(expected_failure) for test in failed), failed
    for test, message in failed.items():
        assert message.startswith(("AssertionError", "assert ")), (test, message[:500])
