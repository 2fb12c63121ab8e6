"""The dashboard in use while the database changes under it, and the address it listens on.

A real `ragslice dashboard` serves a database written by the real refresh from a copy of the
seed-lab workspace; a real headless Chromium (Debian's /usr/bin/chromium) keeps the release review
open and keeps rerunning it while `ragslice refresh` replaces the file and `ragslice compare
--policy` records a verdict into it. The server is never restarted: the page keeps answering and
its next rerun shows the new data. Screenshots go to each test's tmp_path. The server, the browser and
the page helpers are the shared ones of tests/fixtures.py.

Expected values are hand arithmetic on the seed (chapter 04 of the seed text): run B's Support is
the macro mean over the three questions it answers with claims, launch 1/2, rollback 2/2, owner
1/1, region abstains (n/a): (0.5 + 1 + 1) / 3 = 0.833. State S1 makes B cite `archive` for owner's
claim `aurora`: `archive` is not labelled for owner, so owner's Support is 0/1 and B's Support is
(0.5 + 1 + 0) / 3 = 0.500.
"""
from __future__ import annotations

import ipaddress
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import duckdb
import pytest

from fixtures import (
    REPO, SEED_LAB, exceptions, healthy, new_tab, read_jsonl, running_dashboard, settle, tile, visit, write_jsonl,
)
from scoring.store.refresh import refresh

SEED = {"suite": "seed-lab", "baseline": "A", "candidate": "B", "metric": "support"}
S0_SUPPORT, S1_SUPPORT = "0.833", "0.500"
PASSING_POLICY = """name = "recall-gate"

[[gates]]
name = "R@k at least 0.9"
metric = "recall"
slice = "all"
aggregate = "macro"
min = 0.9
"""
"""B's R@k is 1 on launch, rollback and owner in both states (region is n/a): macro 1.0 >= 0.9, PASS."""


# -- the page -------------------------------------------------------------------------------------


def rerun(page, action: Callable[[], None], drawn, timeout: float = 60_000) -> None:
    """Do `action` (a widget change), then wait until the rerun it caused has drawn `drawn` (a locator
    of an element only that rerun draws; an exception drawn instead ends the wait too) and the app is
    idle. Elements are drawn in script order, so everything the script draws before `drawn` is that
    rerun's too.

    Not a change of the run-state attribute: when a short rerun's messages reach a busy page
    together (measured: the 77 messages of one rerun, its "running" state to its end, in 22 ms),
    Streamlit applies "running" and "finished" in one render, so the attribute never changes and a
    wait for that change never ends."""
    action()
    drawn.or_(page.locator('[data-testid="stException"]')).first.wait_for(timeout=timeout)
    settle(page, timeout)


def choose(page, label: str, option: str, drawn) -> None:
    """Pick `option` in the sidebar selectbox labelled `label`; wait for the rerun to draw `drawn`."""
    widget = page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_text(label, exact=True)).first
    box = widget.get_by_role("combobox")

    def pick() -> None:
        box.click()
        box.fill(option)
        page.get_by_role("option", name=option, exact=True).first.click()
        page.keyboard.press("Escape")

    rerun(page, pick, drawn)


def toggle_metric(page) -> str:
    """Rerun the release review by switching the sidebar metric between Support and R@k; returns the
    new one once the rerun has drawn its last heading, which names the metric."""
    current = page.locator('[data-testid="stSelectbox"]').filter(
        has=page.get_by_text("Metric", exact=True)).first.get_by_role("combobox").input_value()
    metric = "R@k" if current == "Support" else "Support"
    choose(page, "Metric", metric, page.get_by_role("heading", name=f"Worst regressions on {metric}", exact=True))
    return metric


# -- workspaces -------------------------------------------------------------------------------------


def set_owner_citation(ws: Path, doc: str) -> None:
    """Make run B cite `doc` for claim `aurora` of question `owner` (`owners`: S0, `archive`: S1)."""
    path = ws / "runs" / "B" / "records.jsonl"
    rows = read_jsonl(path)
    owner = next(r for r in rows if r["question_id"] == "owner")
    owner["claims"] = [{"id": "aurora", "citations": [doc]}]
    write_jsonl(path, rows)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`ragslice ARGS` as a separate process, from the checkout."""
    return subprocess.run([sys.executable, "-m", "scoring.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


class HealthWatch(threading.Thread):
    """Polls the health endpoint until stopped, 0.1 s apart; records every failed poll."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.polls, self.failures = url, 0, []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.polls += 1
            if not healthy(self.url, timeout=5):
                self.failures.append(time.monotonic())
            self.stopping.wait(0.1)

    def stop(self) -> "HealthWatch":
        self.stopping.set()
        self.join(timeout=30)
        return self


@pytest.fixture(scope="module")
def seed_server(tmp_path_factory):
    """(server, workspace, db): the dashboard over the seed-lab workspace refreshed in state S0."""
    root = tmp_path_factory.mktemp("concurrent")
    ws = root / "ws"
    shutil.copytree(SEED_LAB, ws)
    db = root / "ragslice.duckdb"
    refresh(ws, db)
    with running_dashboard(db, root / "server.log") as server:
        yield server, ws, db


# -- item 4: concurrent use -------------------------------------------------------------------------


RERUN_STAND_IN = """<div data-testid="stApp" data-test-script-state="notRunning">
  <h1>Release review</h1><h3>Worst regressions on Support</h3>
  <button onclick="setTimeout(() => { document.querySelector('h3').textContent = 'Worst regressions on R@k'; }, 1000)">
    R@k</button>
</div>"""
"""A page whose rerun (1 s after the click) is never drawn as running, as Streamlit draws a short rerun
whose messages arrive together."""


@pytest.mark.browser
def test_rerun_waits_for_what_the_rerun_draws_not_for_a_run_state_change(chrome):
    page = new_tab(chrome)
    page.set_content(RERUN_STAND_IN)
    settle(page)
    heading = page.get_by_role("heading", name="Worst regressions on R@k", exact=True)
    rerun(page, lambda: page.get_by_role("button").click(), heading, timeout=10_000)
    assert page.locator("h3").inner_text() == "Worst regressions on R@k"
    page.context.close()


@pytest.mark.browser
def test_a_refresh_while_the_page_reruns_succeeds_and_the_next_rerun_shows_it(seed_server, chrome, tmp_path):
    server, ws, db = seed_server
    pid = server.process.pid
    page = new_tab(chrome)
    visit(page, f"{server.url}/?{urlencode(SEED)}")
    assert page.locator("h1").first.inner_text() == "Release review"
    assert tile(page, "Support") == S0_SUPPORT
    page.screenshot(path=tmp_path / "s0.png")

    # Three refreshes in a row (S1, S0, S1), each a separate `ragslice refresh` process, while the
    # browser keeps rerunning the page by switching the metric and the health endpoint is polled.
    results: list[subprocess.CompletedProcess] = []

    def refreshes() -> None:
        for doc in ("archive", "owners", "archive"):
            set_owner_citation(ws, doc)
            results.append(cli("refresh", str(ws), "--db", str(db), "--quiet"))

    watch = HealthWatch(server.url)
    watch.start()
    refresher = threading.Thread(target=refreshes, daemon=True)
    refresher.start()
    shown: list[str] = []
    errors: list[list[str]] = []
    while True:
        toggle_metric(page)
        errors.append(exceptions(page))
        shown.append(tile(page, "Support"))
        if not refresher.is_alive():
            break
    refresher.join(timeout=300)
    watch.stop()
    page.screenshot(path=tmp_path / "during.png")

    assert [(r.returncode, r.stderr) for r in results] == [(0, "")] * 3
    assert all(e == [] for e in errors), errors
    assert watch.failures == [] and watch.polls > 5
    assert len(shown) >= 2 and set(shown) <= {S0_SUPPORT, S1_SUPPORT}, shown
    assert server.process.poll() is None and server.process.pid == pid  # never restarted

    # The refreshes are over (the file holds S1): the next rerun shows S1.
    toggle_metric(page)
    assert exceptions(page) == []
    assert tile(page, "Support") == S1_SUPPORT
    page.screenshot(path=tmp_path / "s1.png")
    # A reload (a new session on the same server) agrees.
    visit(page, f"{server.url}/?{urlencode(SEED)}")
    assert tile(page, "Support") == S1_SUPPORT
    assert page.dialogs == []
    (tmp_path / "shown.txt").write_text(f"{len(shown)} reruns during 3 refreshes: {shown}\n")


@pytest.mark.browser
def test_a_verdict_is_recorded_while_the_page_reruns_and_the_next_rerun_shows_it(seed_server, chrome, tmp_path):
    server, _, db = seed_server
    policy = tmp_path / "policy.toml"
    policy.write_text(PASSING_POLICY, encoding="utf-8")
    page = new_tab(chrome)
    visit(page, f"{server.url}/?{urlencode(SEED)}")
    # No policy is served and nothing is recorded yet: the verdict card says so first.
    card = page.locator(".st-key-verdict h2").first
    card.filter(has_text="Release verdict: none").wait_for(timeout=10_000)

    # `ragslice compare --policy` opens the live file for writing: it must not find it held by the
    # dashboard, which opens a read-only connection per query and closes it.
    results: list[subprocess.CompletedProcess] = []
    compare = threading.Thread(
        target=lambda: results.append(cli("compare", "A", "B", "--db", str(db), "--policy", str(policy))),
        daemon=True)
    watch = HealthWatch(server.url)
    watch.start()
    compare.start()
    reruns = 0
    while True:
        toggle_metric(page)
        assert exceptions(page) == []
        reruns += 1
        if not compare.is_alive():
            break
    compare.join(timeout=300)
    watch.stop()

    assert len(results) == 1 and results[0].returncode == 0, results[0].stderr if results else "no result"
    assert "VERDICT: PASS" in results[0].stdout
    assert watch.failures == []
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT baseline, candidate, policy_name, verdict FROM verdicts").fetchall() == [
            ("A", "B", "recall-gate", "pass")]

    toggle_metric(page)  # drawn in script order: the verdict panel comes before the heading it waits for
    assert card.inner_text().strip() == "Release verdict: check_circle PASS"  # the recorded verdict, first
    assert page.locator(".st-key-verdict").get_by_text("Recorded verdict.", exact=False).count() == 1
    assert page.get_by_text("Release verdict: none", exact=False).count() == 0
    assert exceptions(page) == [] and page.dialogs == []
    page.screenshot(path=tmp_path / "verdict.png")
    (tmp_path / "reruns.txt").write_text(f"{reruns} reruns while the verdict was recorded\n")


def test_a_verdict_can_be_recorded_while_the_dashboard_computes_statistics(tmp_path, monkeypatch):
    """The dashboard's live statistics must not hold the file while they compute.

    Deterministic stand-in for a large suite: the dashboard's `scoring.decide.comparison.compare` is wrapped
    so that, after the real comparison, it keeps computing (sleeps) until `ragslice compare
    --policy`, run meanwhile as a separate process, has finished, 12 s at most. Measured without
    any stand-in, on `ragslice synth --questions 5000 --runs 2`: the dashboard's statistics took
    8.7 s and a `ragslice compare --policy` reaching its write 1 s into them exited 2 ("the
    database is held open by another connection")."""
    from scoring.decide import comparison
    from dashboard import data

    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    policy = tmp_path / "policy.toml"
    policy.write_text(PASSING_POLICY, encoding="utf-8")
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    real = comparison.compare
    computing, done = threading.Event(), threading.Event()

    def long_compare(*args, **kwargs):
        result = real(*args, **kwargs)
        computing.set()
        done.wait(timeout=12)
        return result

    monkeypatch.setattr(comparison, "compare", long_compare)
    monkeypatch.setattr(data, "compare", long_compare, raising=False)
    base, cand = data.Side("A", "run", ("A",)), data.Side("B", "run", ("B",))
    dashboard_side = threading.Thread(target=data.statistics, args=(base, cand), daemon=True)
    dashboard_side.start()
    try:
        assert computing.wait(timeout=60)
        recorded = cli("compare", "A", "B", "--db", str(db), "--policy", str(policy))
    finally:
        done.set()
        dashboard_side.join(timeout=60)
    assert recorded.returncode == 0, recorded.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT verdict FROM verdicts").fetchall() == [("pass",)]


# -- item 6: the address the dashboard listens on ---------------------------------------------------


def _decode(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address of /proc/net/tcp{,6}: 32-bit words in host (little-endian) byte order."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words)


def listening(port: int) -> set[str]:
    """Every local address with a TCP socket listening on `port` (IPv4 and IPv6)."""
    found = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(str(_decode(address)))
    return found


def own_addresses() -> list[str]:
    """This machine's global (non-loopback, non-link-local) addresses, read locally."""
    out = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, check=False).stdout \
        if shutil.which("ip") else ""
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[2] in ("inet", "inet6"):
            ip = ipaddress.ip_interface(parts[3]).ip
            if not (ip.is_loopback or ip.is_link_local):
                found.append(str(ip))
    return found


def refused(address: str, port: int) -> bool:
    """True when nothing accepts a TCP connection on `address:port` (an address of this machine)."""
    try:
        with socket.create_connection((address, port), timeout=2):
            return False
    except OSError:
        return True


def _require_proc() -> None:
    if not Path("/proc/net/tcp").exists():
        pytest.skip("reads the listening sockets from /proc/net/tcp (Linux)")


def test_the_dashboard_listens_on_127_0_0_1_only_by_default(seed_server):
    _require_proc()
    server = seed_server[0]
    assert listening(server.port) == {"127.0.0.1"}
    assert healthy(server.url)
    others = own_addresses()
    assert all(refused(address, server.port) for address in others), others
    log = server.log.read_text()
    assert f"ragslice dashboard: http://127.0.0.1:{server.port}/" in log
    assert "warning: listening on" not in log


def test_the_address_option_is_passed_to_the_server(tmp_path):
    _require_proc()
    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    with running_dashboard(db, tmp_path / "server.log", address="127.0.0.2") as server:
        assert listening(server.port) == {"127.0.0.2"}
        assert healthy(server.url)
        assert refused("127.0.0.1", server.port)
        assert f"ragslice dashboard: http://127.0.0.2:{server.port}/" in server.log.read_text()


def test_the_readme_says_how_to_expose_the_dashboard_and_what_that_means():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    heading = "## Serving the dashboard to others"
    assert heading in readme
    section = readme.split(heading, 1)[1].split("\n## ", 1)[0]
    flat = " ".join(section.split())
    assert "127.0.0.1" in flat                    # the default
    assert "--address" in flat                    # how
    assert "no login" in flat or "no authentication" in flat   # what it means
    assert "every question, answer" in flat       # what is exposed
