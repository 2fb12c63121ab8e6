"""`ragslice dashboard`: serve the installed Streamlit dashboard over one database file.

The dashboard only reads the file (read-only connections, one per query), so `ragslice refresh`
can replace it while the dashboard runs; the next rerun shows the new state. The server listens on
127.0.0.1 unless told otherwise; it has no authentication.
"""
from __future__ import annotations

import importlib.util
import ipaddress
import os
import signal
import subprocess
import sys
from pathlib import Path

from .errors import invalid

DB_ENV = "RAGSLICE_DB"
"""Environment variable the dashboard reads its database path from (also passed as `-- --db`)."""
POLICY_ENV = "RAGSLICE_POLICY"
"""Environment variable naming the acceptance policy the dashboard evaluates live (also `-- --policy`)."""
WORKSPACE_ENV = "RAGSLICE_WORKSPACE"
"""In review mode: the workspace whose suites' review files the dashboard appends decisions to."""
REVIEWER_ENV = "RAGSLICE_REVIEWER"
"""In review mode: the name decisions are recorded under (`suites/<suite>/reviews/<name>.jsonl`)."""


def is_loopback(address: str) -> bool:
    """Whether `address` (an IP address or `localhost`) reaches only this machine: 127.0.0.0/8, ::1."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def app_path() -> Path:
    """The installed dashboard's entry file (`dashboard/app.py`)."""
    spec = importlib.util.find_spec("dashboard")
    if spec is None or not spec.submodule_search_locations:
        raise invalid("the dashboard package is not installed; reinstall ragslice", "package", "dashboard")
    return Path(list(spec.submodule_search_locations)[0]) / "app.py"


def check_port(port: int) -> int:
    """`port`, when it is one a server can listen on (1-65535); ValidationError otherwise."""
    if not 1 <= port <= 65535:
        raise invalid("a port is a whole number from 1 to 65535", "port", str(port))
    return port


def streamlit_command(db: Path, *, port: int, address: str, policy: Path | None = None,
                      workspace: Path | None = None, reviewer: str | None = None) -> list[str]:
    """The `streamlit run` command line: headless, no usage statistics, no file watcher."""
    return [
        sys.executable, "-m", "streamlit", "run", str(app_path()),
        "--server.address", address,
        "--server.port", str(port),
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        "--client.toolbarMode", "viewer",
        "--", "--db", str(db),
        *(("--policy", str(policy)) if policy is not None else ()),
        *(("--workspace", str(workspace), "--reviewer", reviewer) if workspace is not None and reviewer else ()),
    ]


def serve_dashboard(db: Path, *, port: int, address: str, policy: Path | None = None,
                    workspace: Path | None = None, reviewer: str | None = None, remote_review: bool = False) -> int:
    """Start the dashboard on `address:port` over `db`, print its URL, and wait until it stops.

    With `policy` (an acceptance policy TOML, checked before the server starts) the release review
    evaluates the verdict live, without recording it. With `workspace` and `reviewer` the dashboard
    is in review mode: it records that reviewer's decisions into the workspace's review files and
    refreshes `db` after each; since anyone who reaches it writes under that name, it serves on a
    loopback address only, unless `remote_review` says otherwise explicitly.

    Returns the server's exit code (0 after Ctrl-C). SIGTERM is passed on to the server."""
    check_port(port)
    if (workspace is None) != (reviewer is None):
        raise invalid("review mode needs both --workspace and --reviewer", "reviewer" if reviewer is None else
                      "workspace", str(workspace if reviewer is None else reviewer))
    if workspace is not None:
        from .store.files import FOLDER_NAME

        if not (workspace / "suites").is_dir():
            raise invalid("not a workspace (no suites folder)", "workspace", str(workspace))
        if not FOLDER_NAME.fullmatch(str(reviewer)):
            raise invalid("a reviewer name is 1-64 of letters, digits, '.', '_', '-'", "reviewer", reviewer)
        if not is_loopback(address) and not remote_review:
            raise invalid(f"review mode records decisions under the name {reviewer!r} for anyone who reaches the "
                          f"dashboard, so it serves on this machine only (127.0.0.1); to serve it on {address}, "
                          "add --allow-remote-review", "address", address)
        workspace = workspace.resolve()
    if not db.is_file():
        raise invalid("no database here; create it with `ragslice refresh WORKSPACE --db FILE`", "db", str(db))
    db = db.resolve()
    if policy is not None:
        from .decide.policy import load_policy

        load_policy(policy)
        policy = policy.resolve()
    host = f"[{address}]" if ":" in address else address
    using = f"database {db}" + (f", policy {policy}" if policy is not None else "") + (
        f", reviewing as {reviewer} into {workspace}" if workspace is not None else "")
    print(f"ragslice dashboard: http://{host}:{port}/  ({using})", flush=True)
    if not is_loopback(address):
        print(f"warning: listening on {address}: anyone who can reach this address can read the database "
              "through the dashboard (there is no authentication).", file=sys.stderr, flush=True)
    # The server imports the same `dashboard` and `scoring` as this command, wherever they live.
    package_root = str(app_path().parent.parent)
    python_path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, DB_ENV: str(db), "PYTHONPATH": python_path}
    if policy is not None:
        env[POLICY_ENV] = str(policy)
    if workspace is not None:
        env[WORKSPACE_ENV], env[REVIEWER_ENV] = str(workspace), str(reviewer)
    server = subprocess.Popen(streamlit_command(db, port=port, address=address, policy=policy, workspace=workspace,
                                                reviewer=reviewer), env=env)

    def forward(signum: int, _frame: object) -> None:
        server.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        while True:
            try:
                return server.wait()
            except KeyboardInterrupt:
                # The terminal sent SIGINT to the whole process group; let the server finish stopping.
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    server.terminate()
                return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
