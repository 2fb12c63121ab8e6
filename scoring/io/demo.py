"""`ragslice demo`: the bundled workspaces scored into a cache folder, the demo's release verdict
recorded, then the dashboard.

Nothing is written into the install folder: the bundled suites and runs (data/demo and
data/seed-lab) are merged into `<cache>/workspace/` and refreshed into `<cache>/demo.duckdb`;
a second start re-scores nothing. The verdict of `DEMO_CANDIDATE` against `DEMO_BASELINE` under
the bundled policy (`data/demo/policy.toml`, or `--policy FILE`) is recorded when the refresh
scored or removed runs, or when no verdict for that pair and policy text is stored yet, so repeated
starts do not pile up verdicts. The dashboard then evaluates the same policy live.
"""
from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ..store.refresh import RefreshSummary, refresh

BUNDLED = ("demo", "seed-lab")
DEMO_SUITE = "demo"
DEMO_BASELINE = "prod-baseline"
DEMO_CANDIDATE = "rerank-v2"


def bundled_root() -> Path:
    """The folder holding the bundled workspaces (`data/` in a checkout, packaged in a wheel)."""
    package = Path(__file__).resolve().parents[1]  # scoring/
    checkout = package.parent / "data"
    return checkout if (checkout / "seed-lab").is_dir() else package / "bundled"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragslice"


def demo_database() -> Path | None:
    """The database `ragslice demo` built in the default cache folder, when there is one."""
    db = default_cache() / "demo.duckdb"
    return db if db.is_file() else None


def commands(db: Path, policy: Path) -> list[str]:
    """What a newcomer types next to read the demo from the command line: the report and the comparison,
    with the exact `--db` and `--policy` (the database lives in a cache folder, not in the current one)."""
    where = f"--db {shlex.quote(str(db))} --policy {shlex.quote(str(policy))}"
    return [f"ragslice report {DEMO_BASELINE} {DEMO_CANDIDATE} {where} -o report.html",
            f"ragslice compare {DEMO_BASELINE} {DEMO_CANDIDATE} {where}"]


def newcomer_hints(problems: Iterable[Any]) -> list[str]:
    """Lines that follow a command's input error when the demo was built: the exact `--db` of the demo's
    database for a missing database file, and the demo's policy for a missing policy file."""
    db = demo_database()
    if db is None:
        return []
    out = []
    for problem in problems:
        rule = str(getattr(problem, "rule", ""))
        if getattr(problem, "field", None) == "db" and rule.startswith("no database here") and \
                Path(str(getattr(problem, "value", ""))).resolve() != db.resolve():
            out.append(f"`ragslice demo` keeps its database in a cache folder: add --db {shlex.quote(str(db))}")
        elif rule.startswith("cannot read the policy file"):
            out.append(f"the demo's policy is {bundled_policy()}: add --policy {shlex.quote(str(bundled_policy()))}")
    return list(dict.fromkeys(out))


def merge_workspaces(sources: list[Path], target: Path) -> Path:
    """Copy several workspaces' suites and runs into one (suite and run IDs must not collide).

    Review files are append-only: a target file that extends its source (decisions recorded in the
    demo's review mode) is kept, and review files of other reviewers stay."""
    for kind in ("suites", "runs"):
        wanted = {p.name: p for src in sources for p in sorted((src / kind).iterdir()) if p.is_dir()}
        folder = target / kind
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.iterdir():
            if stale.name not in wanted:
                shutil.rmtree(stale)
        for name, src in wanted.items():
            shutil.copytree(src, folder / name, dirs_exist_ok=True, copy_function=_copy_unless_extended)
    return target


def _copy_unless_extended(src: str, dst: str) -> str:
    target = Path(dst)
    if target.parent.name == "reviews" and target.is_file() and target.read_bytes().startswith(Path(src).read_bytes()):
        return dst
    return shutil.copy2(src, dst)


def bundled_policy() -> Path:
    """The demo's acceptance policy, declared before any candidate was scored."""
    return bundled_root() / "demo" / "policy.toml"


def build_demo(cache: Path | None = None, *, policy: Path | None = None) -> Path:
    """Score the bundled workspaces into the cache folder and record the demo verdict (see the
    module docstring); returns the database path."""
    cache = cache or default_cache()
    root = bundled_root()
    workspace = merge_workspaces([root / name for name in BUNDLED], cache / "workspace")
    db = cache / "demo.duckdb"
    summary = refresh(workspace, db)
    print(summary.line())
    record_demo_verdict(db, policy or bundled_policy(), summary)
    return db


def record_demo_verdict(db: Path, policy: Path, summary: RefreshSummary) -> str | None:
    """Record the verdict of DEMO_CANDIDATE against DEMO_BASELINE under `policy` when `summary`
    says runs were scored or removed, or when no verdict for this pair and policy hash is stored.
    Returns the new verdict_id, or None when nothing was recorded."""
    from ..decide.comparison import compare
    from ..decide.policy import load_policy
    from ..decide.verdicts import read_verdicts, record
    from ..store.database import Database

    loaded = load_policy(policy)
    rebuilt = summary.runs_scored > 0 or summary.runs_removed > 0
    con = Database(db).connect()
    try:
        stored = read_verdicts(con)
        same = stored[(stored["baseline"] == DEMO_BASELINE) & (stored["candidate"] == DEMO_CANDIDATE)
                      & (stored["policy_hash"] == loaded.sha256)]
        if not rebuilt and len(same):
            print(f"verdict {str(same['verdict'].iloc[0]).upper()} for {DEMO_CANDIDATE} against {DEMO_BASELINE} "
                  f"(policy {loaded.name}, sha256 {loaded.sha256[:12]}) already recorded")
            return None
        comparison = compare(con, DEMO_BASELINE, DEMO_CANDIDATE, policy=loaded)
    finally:
        con.close()
    verdict_id = record(db, comparison)
    print(f"recorded verdict {comparison.verdict.verdict.upper()} for {DEMO_CANDIDATE} against {DEMO_BASELINE} "
          f"(policy {loaded.name}, sha256 {loaded.sha256[:12]})")
    return verdict_id


def review_url(port: int) -> str:
    """The release review of the demo comparison on the local dashboard."""
    query = urlencode({"suite": DEMO_SUITE, "baseline": DEMO_BASELINE, "candidate": DEMO_CANDIDATE})
    return f"http://127.0.0.1:{port}/?{query}"


