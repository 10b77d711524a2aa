"""Start-up benchmark: ``onegc --help``, ``onegc sessions`` and ``onegc tasks`` against ``python -c pass``.

    python benchmarks/startup_bench.py [--runs 15] [--home DIR]

Each command runs ``--runs`` times as a user runs it (the installed ``onegc`` script of this
Python's environment), alternating with ``python -c pass`` so both see the same machine; the
figure is the median wall time, and its ratio to the median of ``python -c pass`` (the
interpreter's own start-up: a limit no command can beat). ``onegc sessions`` reads a home of 26
ended sessions and one running (tests/homes.py's crowd and home), already ingested, as
after the monitor or an earlier ``onegc sessions``: what it costs is its imports, the store and
the table. Target: under 300 ms each.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyc_files  # noqa: E402

TARGET_MS = 300.0
COMMANDS = (["--help"], ["sessions"], ["tasks"])


def onegc_script() -> list[str]:
    """The ``onegc`` console script beside this Python (what ``pip install`` made), else the module."""
    script = Path(sys.executable).with_name("onegc")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "onegc_tui.cli"]


def build_home(home: Path) -> Path:
    """The fixtures' crowd of ended sessions and a running one, ingested once (as the monitor leaves them)."""
    from tests.homes import build_crowd

    (home / "data").mkdir(parents=True, exist_ok=True)
    build_crowd(home, n_ended=26)
    return home


def wall_s(argv: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def measure(runs: int, home: Path) -> dict[str, list[float]]:
    """Wall times in seconds: ``"pass"`` and each command (``"--help"``, ``"sessions"``, ``"tasks"``)."""
    env = dict(os.environ, ONEGC_HOME=str(home), COLUMNS="120")
    onegc = onegc_script()
    out: dict[str, list[float]] = {"pass": []}
    for argv in COMMANDS:
        out[argv[0]] = []
    for argv in COMMANDS:  # once each, unmeasured: the page cache and the .pyc files
        wall_s(onegc + argv, env)
    for _ in range(runs):
        for argv in COMMANDS:
            out["pass"].append(wall_s([sys.executable, "-c", "pass"], env))
            out[argv[0]].append(wall_s(onegc + argv, env))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--home", type=Path, default=None, help="use this ONEGC_HOME instead of the fixtures' sessions")
    args = ap.parse_args()
    pyc_files.compile_sources()  # before anything is timed, as a user's first run writes them
    print(f"machine: {os.cpu_count()} CPUs · load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tmp = None
    if args.home is None:
        tmp = Path(tempfile.mkdtemp(prefix="onegc-startbench-"))
        home = build_home(tmp / "home")
    else:
        home = args.home
    try:
        times = measure(args.runs, home)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(times["pass"])
    print(f"python -c pass: median {base * 1000:.0f} ms")
    for name, xs in times.items():
        if name == "pass":
            continue
        med = statistics.median(xs)
        print(f"onegc {name}: median {med * 1000:.0f} ms, min {min(xs) * 1000:.0f} ms, "
              f"{med / base:.1f}× python -c pass (target < {TARGET_MS:.0f} ms: {'met' if med * 1000 < TARGET_MS else 'MISSED'})")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
