"""`ragslice demo`: the bundled workspaces scored into a cache folder, then the dashboard.

Nothing is written into the install folder: the bundled suites and runs (data/demo and
data/seed-lab) are merged into `<cache>/workspace/` and refreshed into `<cache>/demo.duckdb`;
a second start re-scores nothing.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from .refresh import refresh

BUNDLED = ("demo", "seed-lab")


def bundled_root() -> Path:
    """The folder holding the bundled workspaces (`data/` in a checkout, packaged in a wheel)."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "data"
    return checkout if (checkout / "seed-lab").is_dir() else here / "bundled"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragslice"


def merge_workspaces(sources: list[Path], target: Path) -> Path:
    """Copy several workspaces' suites and runs into one (suite and run IDs must not collide)."""
    for kind in ("suites", "runs"):
        wanted = {p.name: p for src in sources for p in sorted((src / kind).iterdir()) if p.is_dir()}
        folder = target / kind
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.iterdir():
            if stale.name not in wanted:
                shutil.rmtree(stale)
        for name, src in wanted.items():
            shutil.copytree(src, folder / name, dirs_exist_ok=True)
    return target


def build_demo(cache: Path | None = None) -> Path:
    """Score the bundled workspaces into the cache folder; returns the database path."""
    cache = cache or default_cache()
    root = bundled_root()
    workspace = merge_workspaces([root / name for name in BUNDLED], cache / "workspace")
    db = cache / "demo.duckdb"
    summary = refresh(workspace, db)
    print(summary.line())
    return db


def demo_command(*, port: int = 8501, cache: Path | None = None, build_only: bool = False) -> int:
    db = build_demo(cache)
    if build_only:
        print(db)
        return 0
    from .serve import dashboard_command

    return dashboard_command(db, port=port, address="127.0.0.1")
