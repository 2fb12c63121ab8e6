"""The bundled demo in Debian's headless Chromium (Playwright): the README's release review screenshot,
and the engineer's path through the dashboard, clicked and timed step by step.

    python benchmarks/demo_in_browser.py screenshot docs/release-review.png
    python benchmarks/demo_in_browser.py engineer-path [--repeats 3]
    python benchmarks/demo_in_browser.py slides

The slides command writes `ragslice report --slides` of the demo comparison and prints each screen's content
height against the window at 1280x720 and 1024x600 (a screen fits when its content ends above the footer),
with the type's scale (1 unless the slides' script had to shrink a screen to fit).

Both build the demo database in a temporary folder (`ragslice demo --build-only`), serve it with
`ragslice dashboard --policy` (the demo policy, evaluated live) on a free local port, and view it at
1280x720, a projector's size. The engineer's path, from Question deltas on prod-baseline against
rerank-v2: filter the outdated questions, keep the regressed ones (the count that filters), open the
worst (its row's detail link), read why (the diagnosis line). A step's time runs from its first click
until the page has settled (no script run, the network quiet) and what the step is for is drawn;
the figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PROJECTOR = {"width": 1280, "height": 720}
DEMO = {"suite": "demo", "baseline": "prod-baseline", "candidate": "rerank-v2"}
IDLE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning' && !!app.querySelector('h1')
    && !document.querySelector('[data-testid="stStatusWidget"]') && !document.querySelector('[data-testid="stSkeleton"]');
}"""


def settle(page: Any) -> None:
    """Wait until no script run is drawn as running and the network is quiet."""
    page.wait_for_function(IDLE, timeout=120_000)
    page.wait_for_load_state("networkidle")


@contextmanager
def demo_server(folder: Path) -> Iterator[str]:
    """`ragslice dashboard` over a freshly built demo database, stopped afterwards; yields its URL."""
    from scoring.io.demo import build_demo, bundled_policy

    db = build_demo(folder / "cache")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (folder / "server.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "scoring.cli", "dashboard", "--db", str(db), "--policy",
                                str(bundled_policy()), "--port", str(port)], cwd=REPO, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                    if answer.read().decode().strip() == "ok":
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the dashboard did not start; see {folder / 'server.log'}")
            time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield chrome
        finally:
            chrome.close()


def screenshot(out: Path) -> None:
    """The release review of the demo comparison at 1280x720, as the first screen shows it."""
    with tempfile.TemporaryDirectory() as tmp, demo_server(Path(tmp)) as url, browser() as chrome:
        page = chrome.new_context(viewport=PROJECTOR).new_page()
        page.goto(f"{url}/?{urlencode(DEMO)}")
        settle(page)
        page.locator(".st-key-verdict .st-key-gate_0").wait_for()
        page.mouse.move(PROJECTOR["width"] - 1, PROJECTOR["height"] - 1)  # nothing hovered in the picture
        page.screenshot(path=str(out))
    print(f"wrote {out} (1280x720, Release review of {DEMO['candidate']} against {DEMO['baseline']})")


def timed(label: str, clicks: int, act: Callable[[], Any], done: Callable[[Any], None],
          steps: list[tuple[str, int, float]]) -> Any:
    started = time.perf_counter()
    result = act()
    done(result)
    steps.append((label, clicks, time.perf_counter() - started))
    return result


def engineer_path(url: str, chrome: Any) -> list[tuple[str, int, float]]:
    """One walk of the engineer's path; (step, clicks, seconds) per step."""
    steps: list[tuple[str, int, float]] = []
    page = chrome.new_context(viewport=PROJECTOR).new_page()
    timed("open Question deltas (a link)", 0, lambda: page.goto(f"{url}/question_deltas?{urlencode(DEMO)}"),
          lambda _: settle(page), steps)

    def outdated() -> None:
        box = page.locator('[data-testid="stMultiSelect"]').filter(
            has=page.get_by_text("Question type", exact=True)).first.get_by_role("combobox")
        box.click()
        page.get_by_role("option", name="outdated", exact=True).click()
        page.keyboard.press("Escape")

    timed("filter: question type outdated", 2, outdated,
          lambda _: (page.wait_for_function("() => location.search.includes('type=outdated')"), settle(page)), steps)
    timed("filter: regressed (its count)", 1,
          lambda: page.locator(".st-key-w_count_regressed button").first.click(),
          lambda _: (page.wait_for_function("() => location.search.includes('status=regressed')"), settle(page)),
          steps)

    def open_worst() -> Any:
        grid = page.locator('.st-key-box_w_delta_table [data-testid="stDataFrameResizable"]')
        grid.scroll_into_view_if_needed()
        page.wait_for_function("() => document.querySelectorAll("
                               "'.st-key-box_w_delta_table [role=\"gridcell\"]').length > 0")  # rows drawn
        box = grid.bounding_box()
        at = (box["x"] + 95, box["y"] + 35 + 17)  # the first (worst) row's detail link
        page.mouse.move(*at)
        with page.context.expect_page() as opened:
            page.mouse.click(*at)
        return opened.value

    detail = timed("open the worst question (its detail link)", 1, open_worst,
                   lambda tab: (tab.wait_for_load_state(), settle(tab)), steps)
    why = detail.locator(".st-key-diagnosis [data-testid='stAlert']").first
    timed("read why (the diagnosis line, no click)", 0, lambda: why.wait_for(), lambda _: None, steps)
    steps.append(("  -> " + why.inner_text().split("\n")[-1][:110], 0, 0.0))
    page.context.close()
    return steps


SIZES = (PROJECTOR, {"width": 1024, "height": 600})
SCREEN = """() => {
  const s = document.querySelector('section.screen.on');
  const bottom = Math.max(...[...s.querySelectorAll('*')].map(e => e.getBoundingClientRect().bottom));
  return [s.id, Math.round(bottom), Math.round(document.querySelector('footer').getBoundingClientRect().top),
          s.scrollHeight, s.getAttribute('data-fit')];
}"""


def slides() -> None:
    """Each screen of the demo's slides at both sizes: content bottom, footer top, scroll height, type scale."""
    from scoring.cli import main as ragslice
    from scoring.io.demo import build_demo, bundled_policy

    with tempfile.TemporaryDirectory() as tmp, browser() as chrome:
        db = build_demo(Path(tmp) / "cache")
        out = Path(tmp) / "slides.html"
        ragslice(["report", DEMO["baseline"], DEMO["candidate"], "--db", str(db), "--policy", str(bundled_policy()),
                  "--slides", "-o", str(out)])
        for size in SIZES:
            page = chrome.new_context(viewport=size).new_page()
            page.goto(out.as_uri())
            print(f"{size['width']}x{size['height']}: screen, content bottom / footer top (px), scroll height, scale")
            for _ in range(page.locator("section.screen").count()):
                key, bottom, footer, height, scale = page.evaluate(SCREEN)
                print(f"  {key:<12} {bottom:>5} / {footer:<5} {height:>6}   {scale}")
                page.keyboard.press("ArrowRight")
            page.context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    shot = sub.add_parser("screenshot", help="the README's release review screenshot")
    shot.add_argument("out", type=Path)
    walk = sub.add_parser("engineer-path", help="clicks and seconds per step of the engineer's path")
    walk.add_argument("--repeats", type=int, default=3)
    sub.add_parser("slides", help="each screen of the demo's slides against 1280x720 and 1024x600")
    args = parser.parse_args(argv)
    if args.command == "slides":
        slides()
        return 0
    if args.command == "screenshot":
        screenshot(args.out)
        return 0
    with tempfile.TemporaryDirectory() as tmp, demo_server(Path(tmp)) as url, browser() as chrome:
        walks = [engineer_path(url, chrome) for _ in range(args.repeats)]
    print(f"engineer's path on the demo at 1280x720, {args.repeats} walks (median seconds per step; "
          "first walk in brackets, the server's first visit of each page)")
    total_clicks = 0
    for i, (label, clicks, _) in enumerate(walks[0]):
        if label.startswith("  -> "):
            print(label)
            continue
        seconds = [w[i][2] for w in walks]
        total_clicks += clicks
        print(f"  {label:<45} clicks {clicks}   {statistics.median(seconds):6.2f} s   [{seconds[0]:.2f} s]")
    print(f"  total: {total_clicks} clicks, {statistics.median(sum(s for _, _, s in w) for w in walks):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
