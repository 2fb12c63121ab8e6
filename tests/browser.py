"""Debian's Chromium for the real-browser tests: where it is, how it is launched, when to skip."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
"""Headless, no sandbox (root), and no calls to outside hosts, which this network refuses."""


def require_chromium() -> None:
    """Skip without Debian's Chromium, unless CI is set: then the browser tests must run."""
    if CHROMIUM.exists():
        return
    message = f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI is set, so the browser tests must run")
    pytest.skip(message)
