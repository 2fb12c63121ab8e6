"""From a reviewer's decision to the new numbers on screen, in the real dashboard and a real browser.

    python benchmarks/bench_review.py [--records 100000] [--decisions 5] [--work /tmp/ragslice-bench]

Two workspaces: the demo (the bundled workspaces, as `ragslice demo` builds them) and a synthetic one
of --records records (`ragslice synth`, --records / 5 questions x 5 runs). For each, a real
`ragslice dashboard --workspace WS --reviewer bench` serves the database and a headless Chromium
opens the Labels page on the first and last run; then, --decisions times in turn, it grades the
first document of the queue and measures from the click:

- on disk: until the decision's line is in the reviewer's file (appended and flushed);
- on screen: until the page shows the refreshed database: the decision listed in its Decisions
  table, which is read from the database only, so every number on the page is then the new one.
  This includes the background refresh and the up-to-1 s poll of the page's progress fragment.

Beside them, one more decision recorded with `ragslice review` and the `ragslice refresh` that
scores it, as a command (the refresh the page waits for, start-up included). Medians over the decisions; the polling interval of
this script is 20 ms. Nothing is asserted: figures are printed.
"""
from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlencode

from common import REPO, child_env, heading, machine, note, ragslice, row, secs

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REVIEWER = "bench"
POLL = 0.02


def demo_workspace(work: Path) -> tuple[Path, dict[str, str]]:
    """The bundled workspaces merged as `ragslice demo` does, and the demo comparison."""
    from scoring.io.demo import BUNDLED, DEMO_BASELINE, DEMO_CANDIDATE, DEMO_SUITE, bundled_root, merge_workspaces

    ws = work / "review-demo"
    shutil.rmtree(ws, ignore_errors=True)
    merge_workspaces([bundled_root() / name for name in BUNDLED], ws)
    return ws, {"suite": DEMO_SUITE, "baseline": DEMO_BASELINE, "candidate": DEMO_CANDIDATE}


def synth_workspace(work: Path, records: int) -> tuple[Path, dict[str, str]]:
    ws = work / f"review-synth-{records}"
    shutil.rmtree(ws, ignore_errors=True)
    ragslice("synth", "--questions", records // 5, "--runs", 5, "--seed", 0, "--out", ws)
    runs = sorted(p.name for p in (ws / "runs").iterdir())
    return ws, {"suite": "synth", "baseline": runs[0], "candidate": runs[-1]}


@contextmanager
def dashboard(db: Path, ws: Path, log: Path) -> Iterator[str]:
    """`ragslice dashboard` in review mode on a free loopback port; its URL once healthy."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "scoring.cli", "dashboard", "--db", str(db), "--port",
                                   str(port), "--workspace", str(ws), "--reviewer", REVIEWER],
                                  cwd=REPO, env=child_env(), stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the dashboard did not start; its log: {log}")
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(30)


def wait(read: Any, until: Any, timeout: float = 600.0) -> float:
    """Poll `read()` every `POLL` s until `until(value)`; the seconds it took."""
    started = time.perf_counter()
    while not until(read()):
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"gave up after {timeout:.0f} s")
        time.sleep(POLL)
    return time.perf_counter() - started


def listed(page: Any) -> int:
    """Rows of the Decisions table (newest first) that are this benchmark's decisions."""
    cells = page.locator('.st-key-box_w_reviews [role="row"] [role="gridcell"]:first-child')
    return sum(1 for text in cells.all_inner_texts() if text.strip() == REVIEWER)


def settle(page: Any) -> None:
    page.wait_for_function("""() => {
      const app = document.querySelector('[data-testid="stApp"]');
      return !!app && app.getAttribute('data-test-script-state') === 'notRunning' && !!app.querySelector('h1');
    }""", timeout=120_000)
    page.wait_for_load_state("networkidle")


def measure(name: str, ws: Path, comparison: dict[str, str], work: Path, decisions: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    db = work / f"{ws.name}.duckdb"
    for old in work.glob(f"{ws.name}.duckdb*"):
        old.unlink()
    first = ragslice("refresh", ws, "--db", db, "--quiet")
    records = sum(1 for p in (ws / "runs").glob("*/records.jsonl") for _ in p.open())
    heading(f"{name}: {records:,} records; first refresh {secs(first.wall)} (command, start-up included)")
    own = ws / "suites" / comparison["suite"] / "reviews" / f"{REVIEWER}.jsonl"
    on_disk, on_screen = [], []
    with dashboard(db, ws, work / f"{ws.name}-server.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_context(viewport={"width": 1400, "height": 2600}).new_page()
        page.goto(f"{url}/labels?{urlencode(comparison)}")
        settle(page)
        for n in range(1, decisions + 1):
            page.locator(".st-key-w_save_0 button").wait_for(timeout=120_000)
            started = time.perf_counter()
            page.locator(".st-key-w_save_0 button").click()
            wait(lambda: own.exists() and len(own.read_text().splitlines()), lambda lines: lines == n)
            on_disk.append(time.perf_counter() - started)
            wait(lambda: listed(page), lambda shown: shown >= n)
            on_screen.append(time.perf_counter() - started)
            settle(page)
        browser.close()
    pair = json.loads(ragslice("pool", ws, "--runs", f"{comparison['baseline']},{comparison['candidate']}",
                               "--suite", comparison["suite"]).stdout.splitlines()[0])
    ragslice("review", ws, "--reviewer", REVIEWER, "--question", pair["question_id"], "--doc", pair["doc_id"],
             "--grade", 0)
    again = ragslice("refresh", ws, "--db", db, "--quiet")
    row("", "median", "min", "max")
    for label, values in (("decision on disk", on_disk), ("new numbers on screen", on_screen)):
        row(label, secs(statistics.median(values)), secs(min(values)), secs(max(values)))
    row("ragslice refresh after a decision (command)", secs(again.wall), "", "")
    note(f"{decisions} decisions, one after another, each waited for on screen before the next")
    return {"workspace": name, "records": records, "on_disk": on_disk, "on_screen": on_screen,
            "refresh_command": again.wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--decisions", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragslice-bench"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"ragslice review benchmark: {machine()}")
    results = [measure("demo", *demo_workspace(args.work), args.work, args.decisions)]
    results.append(measure(f"synthetic {args.records:,}", *synth_workspace(args.work, args.records), args.work,
                           args.decisions))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
