"""The slides' inputs read the short way are the inputs of the long way: the worst regressions taken from
the per-question values (`Comparison.regressed_questions(limit)`, `n_regressed_questions`) are the first rows
of the list built from every question x metric delta, and the deck the dashboard's Present page builds is,
byte for byte, the one `ragslice report --slides` writes (`present.slides_html` of `compare` and
`load_evidence`), on the bundled demo and on a synthetic suite, for every pair of sides."""
from __future__ import annotations

import itertools
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from scoring.decide import present
from scoring.decide.comparison import Comparison, compare
from scoring.decide.report import load_evidence
from scoring.io.synth import write_workspace
from scoring.store.refresh import refresh

WHEN = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def databases(tmp_path_factory) -> dict[str, Path]:
    """The bundled demo (runs and groups of repeats) and `ragslice synth --questions 2000 --runs 3`."""
    from scoring.io.demo import BUNDLED, bundled_root, merge_workspaces

    out = {}
    root = tmp_path_factory.mktemp("demo")
    out["demo"] = root / "demo.duckdb"
    refresh(merge_workspaces([bundled_root() / name for name in BUNDLED], root / "ws"), out["demo"])
    root = tmp_path_factory.mktemp("synth")
    write_workspace(2000, 3, seed=5, out=root / "ws")
    out["synth"] = root / "synth.duckdb"
    refresh(root / "ws", out["synth"])
    return out


def _pairs(db: Path) -> list[tuple[str, str]]:
    """Every ordered pair of runs of a suite, and every pair of groups of a suite."""
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute("SELECT suite, run_id FROM runs ORDER BY suite, run_id").fetchall()
        groups = con.execute("SELECT DISTINCT suite, run_group FROM runs WHERE run_group IS NOT NULL "
                             "ORDER BY 1, 2").fetchall()
    pairs = [(f"run:{a}", f"run:{b}") for (sa, a), (sb, b) in itertools.permutations(runs, 2) if sa == sb]
    pairs += [(f"group:{a}", f"group:{b}") for (sa, a), (sb, b) in itertools.permutations(groups, 2) if sa == sb]
    return pairs


def every_regressed_question(c: Comparison) -> pd.DataFrame:
    """The list as built from every regressed question x metric row of `Comparison.deltas`: the rows
    of `regressions()` grouped by question, critical first, then more metrics, then suite order."""
    regs = c.regressions()
    cols = ["question_id", "text", "type", "split", "critical", "answerable", "disputed", "position",
            "n_metrics", "changes"]
    if not len(regs):
        return pd.DataFrame(columns=cols)
    changes: dict[str, list[tuple[str, float, float]]] = {}
    for q, name, b, k in zip(regs["question_id"].tolist(), regs["metric_name"].tolist(),
                             regs["baseline"].tolist(), regs["candidate"].tolist()):
        changes.setdefault(q, []).append((name, b, k))
    out = regs.drop_duplicates("question_id")[cols[:-2]].copy()
    out["n_metrics"] = [len(changes[q]) for q in out["question_id"]]
    out["changes"] = [changes[q] for q in out["question_id"]]
    out = out.sort_values(["critical", "n_metrics", "position"], ascending=[False, False, True])
    return out[cols].reset_index(drop=True)


def test_the_worst_regressions_are_the_first_of_every_regressed_question(databases):
    checked = 0
    for name, db in databases.items():
        for base, cand in _pairs(db):
            with duckdb.connect(str(db), read_only=True) as con:
                c = compare(con, base, cand)
            expected = every_regressed_question(c)
            assert c.n_regressed_questions == len(expected), (name, base, cand)
            for limit in (0, 1, present.WORST, len(expected) + 5):
                pd.testing.assert_frame_equal(c.regressed_questions(limit), expected.head(limit),
                                              check_index_type=False, obj=f"{name} {base} {cand} {limit}")
            pd.testing.assert_frame_equal(c.regressed_questions(), expected, check_index_type=False)
            checked += len(expected) > present.WORST
    assert checked >= 3  # pairs with more regressed questions than the screen shows


def test_the_present_page_shows_the_slides_file_s_deck(databases, monkeypatch):
    """The dashboard's `presentation` (no policy) gives, byte for byte, the deck written from the full
    comparison and the evidence of its first WORST regressed questions."""
    from dashboard import data

    class Fixed(datetime):
        @classmethod
        def now(cls, tz=None):
            return WHEN

    monkeypatch.setattr(present, "datetime", Fixed)
    checked = 0
    for name, db in databases.items():
        for base, cand in _pairs(db)[:6]:
            with duckdb.connect(str(db), read_only=True) as con:
                c = compare(con, base, cand)
                ids = every_regressed_question(c)["question_id"].head(present.WORST)
                expected = present.slides_html(c, load_evidence(con, c, ids), generated=WHEN)
            shown = data._presentation.__wrapped__(str(db), data.signature(db), base, cand, None, None)
            assert shown == expected, (name, base, cand)
            checked += f"the {present.WORST} worst" in shown
    assert checked >= 3
