"""Refreshes asked for while the dashboard runs (after a review decision), one at a time per database.

The refresh runs as its own `ragslice refresh` process: the dashboard never writes the database. A
request while one runs is remembered and run once that one ends, so the last decision is always
scored; requests coming faster than refreshes collapse into one.
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Status:
    """Where the refreshes of one database stand: `running` since `started` (monotonic seconds), a
    request `pending` behind it, and the last one's outcome (`ok` None before any ended) and message."""

    running: bool
    pending: bool
    started: float | None
    ok: bool | None
    message: str
    finished: int
    """How many refreshes have ended (a page compares it to know that a new one landed)."""


class Refresher:
    """Runs `ragslice refresh WORKSPACE --db DB` when asked (see the module docstring)."""

    def __init__(self, workspace: Path, db: Path):
        self.workspace, self.db = Path(workspace), Path(db)
        self._lock = threading.Lock()
        self._running: subprocess.Popen | None = None
        self._pending = False
        self._started: float | None = None
        self._ok: bool | None = None
        self._message = ""
        self._finished = 0

    def request(self) -> Status:
        """Start a refresh now, or once the running one ends."""
        with self._lock:
            if self._running is None:
                self._start()
            else:
                self._pending = True
            return self._status()

    def status(self) -> Status:
        with self._lock:
            return self._status()

    def wait(self, timeout: float) -> Status:
        """Wait until no refresh runs or is pending (or `timeout` seconds pass)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.status()
            if not found.running and not found.pending:
                return found
            time.sleep(0.05)
        return self.status()

    def _status(self) -> Status:
        return Status(self._running is not None, self._pending, self._started, self._ok, self._message,
                      self._finished)

    def _start(self) -> None:  # holding the lock
        command = [sys.executable, "-m", "scoring.cli", "refresh", str(self.workspace), "--db", str(self.db),
                   "--quiet"]
        self._running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._started = time.monotonic()
        self._pending = False
        threading.Thread(target=self._watch, args=(self._running,), daemon=True).start()

    def _watch(self, process: subprocess.Popen) -> None:
        out, err = process.communicate()
        with self._lock:
            self._ok = process.returncode == 0
            self._message = (out if self._ok else err or out).strip()
            self._finished += 1
            self._running = None
            if self._pending:
                self._start()


_REFRESHERS: dict[tuple[str, str], Refresher] = {}
_GUARD = threading.Lock()


def refresher(workspace: Path, db: Path) -> Refresher:
    """The process's one `Refresher` of this workspace and database."""
    key = (str(Path(workspace).resolve()), str(Path(db).resolve()))
    with _GUARD:
        if key not in _REFRESHERS:
            _REFRESHERS[key] = Refresher(Path(key[0]), Path(key[1]))
        return _REFRESHERS[key]


__all__ = ["Refresher", "Status", "refresher"]
