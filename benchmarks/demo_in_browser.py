"""The bundled demo in Debian's headless Chromium (Playwright): the README's release review screenshot,
every page and every slide at a projector's and a small laptop's size, and the engineer's and the
reviewer's paths through the dashboard, clicked and timed step by step.

    python benchmarks/demo_in_browser.py screenshot docs/release-review.png
    python benchmarks/demo_in_browser.py screenshots OUT_FOLDER
    python benchmarks/demo_in_browser.py engineer-path [--repeats 3]
    python benchmarks/demo_in_browser.py reviewer-path [--repeats 3]
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

The screenshots command serves the demo in review mode (a copy of its workspace, reviewer
``screenshots``), so the Labels page is among the pages; it writes one picture per page and per slide
and size into OUT_FOLDER (``page-<page>-<width>x<height>.png``, ``slide-<nn>-<screen>-<width>x<height>.png``)
and prints, for each page, whether it scrolls sideways and how many console errors it logged. The
reviewer's path, on Labels in review mode: find q-0100 with the queue's search, grade the unjudged
dr-0001 (2 answers), save, and wait until the page says the numbers include the decision (the
background refresh landed).
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
def demo_server(folder: Path, reviewer: str | None = None) -> Iterator[str]:
    """`ragslice dashboard` over a freshly built demo database, stopped afterwards; yields its URL. With
    `reviewer`, in review mode over the demo's workspace copy that the build wrote beside the database."""
    from scoring.io.demo import build_demo, bundled_policy

    db = build_demo(folder / "cache")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (folder / "server.log").open("w")
    review = ["--workspace", str(folder / "cache" / "workspace"), "--reviewer", reviewer] if reviewer else []
    process = subprocess.Popen([sys.executable, "-m", "scoring.cli", "dashboard", "--db", str(db), "--policy",
                                str(bundled_policy()), "--port", str(port), *review], cwd=REPO, stdout=log,
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


PAGES = {"": DEMO, "release_matrix": {"suite": "demo", "baseline": "prod-baseline"}, "trends": {"suite": "demo"},
         "statistics": DEMO, "question_deltas": DEMO, "question_detail": {**DEMO, "q": "q-0017"}, "present": DEMO,
         "slices": DEMO, "aggregation": DEMO, "runs": {"suite": "demo"}, "labels": {**DEMO, "pool_search": "q-0100"}}
"""Every page of the dashboard in review mode, each with the demo comparison (Question detail on the
restricted disclosure of q-0017, Labels searched for q-0100)."""
SIDEWAYS = """() => [document.scrollingElement.scrollWidth > document.scrollingElement.clientWidth,
  document.querySelector('[data-testid=stMain]').scrollWidth > document.querySelector('[data-testid=stMain]').clientWidth]"""


def screenshots(out: Path) -> None:
    """Every page and every slide of the demo at 1280x720 and 1024x600, as the first screen shows it."""
    from scoring.cli import main as ragslice
    from scoring.io.demo import bundled_policy

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, demo_server(Path(tmp), reviewer="screenshots") as url, \
            browser() as chrome:
        print("page, size: scrolls sideways (page, main), console errors")
        for size in SIZES:
            for name, params in PAGES.items():
                page = chrome.new_context(viewport=size).new_page()
                logged: list[str] = []
                page.on("console", lambda m: logged.append(m.text) if m.type == "error" and
                        "/_stcore/" not in m.location.get("url", "") else None)
                page.goto(f"{url}/{name}?{urlencode(params)}")
                settle(page)
                page.mouse.move(size["width"] - 1, size["height"] - 1)
                shown = name or "release_review"
                page.screenshot(path=str(out / f"page-{shown}-{size['width']}x{size['height']}.png"))
                print(f"  {shown:<16} {size['width']}x{size['height']}: sideways {page.evaluate(SIDEWAYS)}, "
                      f"console errors {len(logged)}")
                page.context.close()
        deck = out / "slides.html"
        ragslice(["report", DEMO["baseline"], DEMO["candidate"], "--db", str(Path(tmp) / "cache" / "demo.duckdb"),
                  "--policy", str(bundled_policy()), "--slides", "-o", str(deck)])
        for size in SIZES:
            page = chrome.new_context(viewport=size).new_page()
            page.goto(deck.as_uri())
            for n in range(page.locator("section.screen").count()):
                key = page.evaluate("() => document.querySelector('section.screen.on').id")
                page.screenshot(path=str(out / f"slide-{n + 1:02d}-{key}-{size['width']}x{size['height']}.png"))
                page.keyboard.press("ArrowRight")
            page.context.close()
    print(f"wrote {len(list(out.glob('*.png')))} pictures into {out}")


def reviewer_path(url: str, chrome: Any) -> list[tuple[str, int, float]]:
    """One walk of the reviewer's path on a freshly built demo (a graded document leaves the queue of
    unjudged ones); (step, clicks, seconds) per step."""
    steps: list[tuple[str, int, float]] = []
    page = chrome.new_context(viewport=PROJECTOR).new_page()
    timed("open Labels (a link)", 0, lambda: page.goto(f"{url}/labels?{urlencode(DEMO)}"), lambda _: settle(page),
          steps)
    first = page.locator(".st-key-judge_0 [data-testid='stText']")

    def search() -> None:
        box = page.get_by_role("textbox", name="Find a question or a document in the queue")
        box.click()
        box.fill("q-0100")
        box.press("Enter")

    timed("find q-0100 (the queue's search, typed)", 1, search,
          lambda _: (page.wait_for_function("() => location.search.includes('pool_search=q-0100')"), settle(page),
                     page.wait_for_function("() => [...document.querySelectorAll('.st-key-judge_0 "
                                            "[data-testid=\"stText\"]')].some(e => e.innerText.includes('dr-0001'))")),
          steps)
    steps.append(("  -> " + " / ".join(first.all_inner_texts())[:110], 0, 0.0))
    grade = "2 answers"

    def choose_grade() -> None:
        box = page.locator(".st-key-judge_0 [data-testid='stSelectbox']").get_by_role("combobox")
        box.click()
        box.fill(grade)
        page.get_by_role("option").filter(has_text=grade).first.click()

    timed(f"grade dr-0001: {grade}", 2, choose_grade, lambda _: settle(page), steps)
    timed("save", 1, lambda: page.locator(".st-key-w_save_0 button").click(),
          lambda _: page.get_by_text("Recorded dr-0001").first.wait_for(timeout=60_000), steps)
    timed("see the numbers change (the page says so, no click)", 0,
          lambda: page.get_by_text("the numbers on this page include your decisions").first.wait_for(timeout=180_000),
          lambda _: None, steps)
    page.context.close()
    return steps


def report(title: str, walks: list[list[tuple[str, int, float]]]) -> None:
    print(f"{title} on the demo at 1280x720, {len(walks)} walks (median seconds per step; first walk in brackets)")
    total_clicks = 0
    for i, (label, clicks, _) in enumerate(walks[0]):
        if label.startswith("  -> "):
            print(label)
            continue
        seconds = [w[i][2] for w in walks]
        total_clicks += clicks
        print(f"  {label:<52} clicks {clicks}   {statistics.median(seconds):6.2f} s   [{seconds[0]:.2f} s]")
    print(f"  total: {total_clicks} clicks, {statistics.median(sum(s for _, _, s in w) for w in walks):.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    shot = sub.add_parser("screenshot", help="the README's release review screenshot")
    shot.add_argument("out", type=Path)
    shots = sub.add_parser("screenshots", help="every page and every slide at 1280x720 and 1024x600")
    shots.add_argument("out", type=Path)
    walk = sub.add_parser("engineer-path", help="clicks and seconds per step of the engineer's path")
    walk.add_argument("--repeats", type=int, default=3)
    review = sub.add_parser("reviewer-path", help="clicks and seconds per step of the reviewer's path")
    review.add_argument("--repeats", type=int, default=3)
    sub.add_parser("slides", help="each screen of the demo's slides against 1280x720 and 1024x600")
    args = parser.parse_args(argv)
    if args.command == "slides":
        slides()
        return 0
    if args.command == "screenshot":
        screenshot(args.out)
        return 0
    if args.command == "screenshots":
        screenshots(args.out)
        return 0
    if args.command == "reviewer-path":
        walks = []
        for _ in range(args.repeats):  # each on a new demo: the graded document leaves the queue
            with tempfile.TemporaryDirectory() as tmp, demo_server(Path(tmp), reviewer="timed") as url, \
                    browser() as chrome:
                walks.append(reviewer_path(url, chrome))
        report("reviewer's path", walks)
        return 0
    with tempfile.TemporaryDirectory() as tmp, demo_server(Path(tmp)) as url, browser() as chrome:
        report("engineer's path", [engineer_path(url, chrome) for _ in range(args.repeats)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
