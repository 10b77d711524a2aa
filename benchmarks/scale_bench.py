"""Scale benchmark: a home of 1 000 sessions beside one of 100 000, each figure as the ratio of the two.

    python benchmarks/scale_bench.py [--json FILE] [--sizes 1000,100000] [--events-per-session 10]
                                     [--runs 3] [--presses 40] [--skip-monitor]

Each home is made with the project's own generator (``monitor_bench.build_history_store``: finished
sessions of 7 agents × the 7 tasks, their summary rows and ``--events-per-session`` event rows each,
written straight into SQLite; cached under the temp folder). For each size, measured:

- ``history_s``: ``onegc history --format json`` in a new process (median of ``--runs``), once the
  history's cells are current (``history_first_s``: the first run after the home was made, which
  computes every cell the generator's rows marked, as the first reader after an ingest does);
- ``sessions_s``: ``onegc sessions --json`` in a new process (median of ``--runs``); its output is
  one object per session, so it grows with the home by construction;
- ``rss_mb``: the most memory (max RSS) either command held once the cells are current
  (``history_first_rss_mb``: the first history's, which computes them all; ``monitor_rss_mb``: the
  monitor's, after the key presses);
- ``first_frame_s``: ``onegc monitor`` in a pseudo-terminal (160×45), start to the dashboard's
  header drawn; ``key_p99_ms``: a Down or Up press to the new selection's header, 99th percentile
  of ``--presses`` (the monitor's virtual sessions table is issue 49's phase 2: both are measured
  on the monitor as it is).

It prints each figure for each size and the ratio of the largest size to the smallest (target: every
ratio ≤ 2, the first frame over 100 000 sessions under 1 s), and with ``--json`` writes
``{"first_frame_s": {"1000": …, "100000": …}, "history_s": {…}, "sessions_s": {…}, "key_p99_ms": {…},
"rss_mb": {…}, "history_first_s": {…}, "history_first_rss_mb": {…}, "monitor_rss_mb": {…}, "ratios": {…},
"load": …}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import monitor_bench  # noqa: E402
import pyc_files  # noqa: E402

FIGURES = ("first_frame_s", "history_s", "sessions_s", "key_p99_ms", "rss_mb")
FIRST_FRAME_TIMEOUT_S = 300


def home_of(n_sessions: int, per_session: int) -> Path:
    """The generated home of ``n_sessions`` finished sessions (made once, kept under the temp folder),
    with every session marked for the history's cells, as an ingest of the whole home leaves it."""
    import sqlite3

    home = Path(tempfile.gettempdir()) / f"onegc-scalebench-{n_sessions}-{per_session}"
    (home / "runs").mkdir(parents=True, exist_ok=True)
    monitor_bench.build_history_store(home, n_sessions, n_sessions * per_session)
    conn = sqlite3.connect(home / "onegc.db")
    with conn:
        conn.execute("DELETE FROM history_cells")
        conn.execute("DELETE FROM history_members")
        conn.execute("INSERT OR IGNORE INTO history_dirty SELECT session_id FROM sessions")
    conn.close()
    return home


def onegc(home: Path, *args: str) -> tuple[float, float]:
    """One ``onegc`` command in a new process, its output thrown away: (seconds, max RSS in MiB)."""
    script = Path(sys.executable).with_name("onegc")
    argv = [str(script)] if script.is_file() else [sys.executable, "-m", "onegc_tui.cli"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv + list(args), env=dict(os.environ, ONEGC_HOME=str(home)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    spent = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"onegc {' '.join(args)} failed ({proc.returncode}): {err[-500:]}")
    return spent, usage.ru_maxrss / 1024


def monitor(home: Path, presses: int) -> tuple[float, float, float]:
    """``onegc monitor`` over ``home``: (start → first frame, key → screen p99 in ms, its RSS in MiB)."""
    import psutil

    order = [r[0] for r in _session_order(home)]
    t0 = time.perf_counter()
    term = monitor_bench.Terminal(home)
    try:
        if not term.wait_for(monitor_bench.header(order[0]), 0, FIRST_FRAME_TIMEOUT_S):
            sys.exit(f"the monitor did not draw its first frame within {FIRST_FRAME_TIMEOUT_S} s")
        first = time.perf_counter() - t0
        lat = monitor_bench.latency(term, order[:presses + 1], presses)
        rss = psutil.Process(term.pid).memory_info().rss / 2**20
        return first, monitor_bench.pct(lat, 0.99) * 1000, rss
    finally:
        term.close()


def _session_order(home: Path) -> list[tuple[str]]:
    """The sessions as the monitor's table first lists them (newest first)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{home / 'onegc.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT session_id FROM sessions ORDER BY started_ts DESC, session_id DESC LIMIT 200").fetchall()
    finally:
        conn.close()


def measure(n_sessions: int, per_session: int, runs: int, presses: int, skip_monitor: bool) -> dict[str, float]:
    home = home_of(n_sessions, per_session)
    out: dict[str, float] = {}
    out["history_first_s"], rss_first = onegc(home, "history", "--format", "json")
    history = [onegc(home, "history", "--format", "json") for _ in range(runs)]
    sessions = [onegc(home, "sessions", "--json") for _ in range(runs)]
    out["history_s"] = statistics.median(t for t, _ in history)
    out["sessions_s"] = statistics.median(t for t, _ in sessions)
    out["rss_mb"] = max([*(r for _, r in history), *(r for _, r in sessions)])
    out["history_first_rss_mb"] = rss_first
    if not skip_monitor:
        out["first_frame_s"], out["key_p99_ms"], out["monitor_rss_mb"] = monitor(home, presses)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None, help="write the figures to this file")
    ap.add_argument("--sizes", default="1000,100000", help="session counts, comma-separated (the first is the base)")
    ap.add_argument("--events-per-session", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--presses", type=int, default=40)
    ap.add_argument("--skip-monitor", action="store_true", help="leave out the first frame and the key presses")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    pyc_files.compile_sources()  # before anything is timed, as a user's first run writes them
    print(f"machine: {os.cpu_count()} CPUs · load average at start {os.getloadavg()[0]:.2f}")
    figures: dict[str, dict[str, float]] = {}
    for n in sizes:
        got = measure(n, args.events_per_session, args.runs, args.presses, args.skip_monitor)
        for name, value in got.items():
            figures.setdefault(name, {})[str(n)] = value
        print(f"{n:,} sessions: " + " · ".join(f"{name} {value:.3g}" for name, value in got.items()))
    base, top = str(sizes[0]), str(sizes[-1])
    ratios = {name: by[top] / by[base] for name, by in figures.items() if base in by and top in by and by[base]}
    for name in (*FIGURES, "history_first_s", "history_first_rss_mb", "monitor_rss_mb"):
        if name in ratios:
            target = " (target ≤ 2)" if name in FIGURES else ""
            print(f"{name}: {figures[name][base]:.3g} → {figures[name][top]:.3g}, ratio {ratios[name]:.2f}{target}")
    if "first_frame_s" in figures:
        print(f"first frame over {int(top):,} sessions: {figures['first_frame_s'][top]:.2f} s (target < 1 s)")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps({**figures, "ratios": ratios, "load": os.getloadavg()[0]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
