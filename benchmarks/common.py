"""Shared helpers of the benchmark scripts: child processes measured for wall time and peak memory.

Every measured step runs in its own child process (`python benchmarks/tasks.py TASK ...`), so its
peak resident memory is its own (`os.wait4` rusage of that child) and no cache of a previous step
helps it. A task prints one JSON object on its last stdout line, with at least `seconds`: the time
of the measured work inside the process, interpreter start-up and imports excluded.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TASKS = HERE / "tasks.py"


def child_env() -> dict[str, str]:
    """The environment of measured children: this checkout's packages first, whatever checkout the
    installed (editable) package points to, so the code measured is the code beside the benchmark."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


@dataclass
class Measured:
    """One child process: wall time (start-up included), peak RSS, and what the task reported."""

    wall: float
    peak_mb: float
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        """The task's own time of the measured work (wall time when it reported none)."""
        return float(self.report.get("seconds", self.wall))


def run_child(argv: list[str], *, check: bool = True, cwd: Path | None = None) -> Measured:
    """Run `argv`, wait for it with `os.wait4`, and return wall time and peak RSS (MiB)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd, env=child_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    measured = Measured(wall, usage.ru_maxrss / 1024, proc.returncode, stdout, stderr)
    lines = [line for line in stdout.splitlines() if line.strip()]
    if lines and lines[-1].startswith("{"):
        try:
            measured.report = json.loads(lines[-1])
        except ValueError:
            pass
    if check and measured.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {measured.returncode}:\n{stderr[-3000:]}")
    return measured


def task(name: str, *args: object, check: bool = True) -> Measured:
    """Run one task of `benchmarks/tasks.py` in a child process."""
    return run_child([sys.executable, str(TASKS), name, *map(str, args)], check=check)


def best_of(times: int, name: str, *args: object) -> Measured:
    """The fastest of `times` runs of a cheap task (the floor): a busy machine only slows a run down,
    so the minimum is the figure least disturbed by other load, and ratios against it are conservative."""
    return min((task(name, *args) for _ in range(times)), key=lambda m: m.seconds)


def ragslice(*args: object, check: bool = True) -> Measured:
    """Run the `ragslice` command line (same interpreter) in a child process."""
    return run_child([sys.executable, "-m", "scoring.cli", *map(str, args)], check=check)


def machine() -> str:
    """One line naming the machine state the figures were measured in."""
    import duckdb

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{platform.python_implementation()} {platform.python_version()}, duckdb {duckdb.__version__}, "
            f"{os.cpu_count()} cores, load average {load}; code measured: {REPO}")


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


def row(label: str, *cells: str, width: int = 46) -> None:
    print(f"  {label:<{width}} " + "  ".join(f"{c:>14}" for c in cells).rstrip(), flush=True)


def note(text: str) -> None:
    print(f"    {text}", flush=True)


def secs(value: float) -> str:
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def mib(value: float) -> str:
    return f"{value:.0f} MiB" if value < 10_240 else f"{value / 1024:.1f} GiB"


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("holds" if ok else "MISSED")


def records_files(workspace: Path) -> list[str]:
    return sorted(str(p) for p in (workspace / "runs").glob("*/records.jsonl"))
