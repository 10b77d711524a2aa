"""Warning flood: the monitor's CPU while a session's agent sets off 1 000 warnings a second.

    python benchmarks/warning_flood_bench.py [--rate 1000] [--seconds 30] [--unfolded]

One writer process stands in for a runner whose agent resolves names under ``--network none``:
``--rate`` ``network_blocked`` warnings a second, each for another host, through the runner's own
``runner.wire.jsonl.EventWriter`` with its warning folder (runner/wire/coalesce.py), plus the 1 Hz GPU
sample and 5 s heartbeat of a live session. The real ``onegc monitor`` runs in a pseudo-terminal
(benchmarks/monitor_bench.py's); psutil measures its CPU over ``--seconds``, and its RSS. ``--unfolded``
writes every warning as its own event, as the runner did before (issue 13: 3 012 events in 2 s
kept the monitor at 70–96 % of a core for 30 s). Target: under 5 % of one core.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.monitor_bench import Terminal, cpu_percent, header  # noqa: E402

SID = "flood-0"


def writer(home: Path, rate: float, folded: bool) -> None:
    from runner.wire.coalesce import WarningFolder
    from runner.wire.jsonl import EventWriter
    from runner.wire.liveness import RunnerLock
    from runner.wire.paths import SessionPaths

    paths = SessionPaths(home / "runs" / SID)
    _claim = RunnerLock.take(paths)  # a live runner to every liveness check
    w = EventWriter(paths.events, SID, fold=WarningFolder() if folded else None)
    w.emit("session_started", task="t0_demo", agent="command", budget_s=3600, grace_s=30, contract={})
    w.emit("budget", state="running", remaining_s=3600, deadline=time.time() + 3600)
    start, n, last_gpu, last_hb, tick = time.time(), 0, 0.0, 0.0, 0.01
    while (home / "phase").read_text().strip() != "stop":
        now = time.time()
        due = int((now - start) * rate) if (home / "phase").read_text().strip() == "flood" else n
        for _ in range(max(0, due - n)):
            n += 1
            w.emit("warning", code="network_blocked", message=f"blocked h{n}.example.com:53 (DNS lookup refused by "
                                                              "the network policy (type 1))")
        if now - last_gpu >= 1.0:
            w.emit("gpu", index=0, util_pct=50.0, mem_used_mb=4000, mem_total_mb=81920)
            last_gpu = now
        if now - last_hb >= 5.0:
            w.emit("heartbeat", remaining_s=3600 - (now - start), active_s=now - start, procs=1)
            last_hb = now
        time.sleep(tick)
    (home / "warnings").write_text(str(n))


def rss_mb(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=1000.0, help="warnings per second")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--unfolded", action="store_true", help="one event per warning, as before issue 13")
    args = ap.parse_args()
    from runner.launch.spawn import create_session
    from runner.wire.session_config import SessionConfig

    print(f"machine: {os.cpu_count()} CPUs · load average at start {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="onegc-floodbench-") as tmp:
        home = Path(tmp)
        (home / "phase").write_text("quiet")
        create_session(SessionConfig(session_id=SID, task="t0", agent="command", command=["x"], budget_s=3600), home)
        proc = subprocess.Popen([sys.executable, __file__, "--writer", str(home), str(args.rate),
                                 "unfolded" if args.unfolded else "folded"])
        term = Terminal(home)
        try:
            if not term.wait_for(header(SID), 0, 60):
                sys.exit("the monitor did not show the session within 60 s")
            time.sleep(3)
            quiet = cpu_percent(term.pid, 5.0)
            rss_before = rss_mb(term.pid)
            events = home / "runs" / SID / "events.jsonl"
            lines_before = len(events.read_bytes().splitlines())
            (home / "phase").write_text("flood")
            busy = cpu_percent(term.pid, args.seconds)
            rss_after = rss_mb(term.pid)
            lines = len(events.read_bytes().splitlines()) - lines_before
        finally:
            (home / "phase").write_text("stop")
            term.close()
            proc.wait(timeout=30)
        warned = int((home / "warnings").read_text())
        how = "one event each (--unfolded)" if args.unfolded else "coalesced per cause (runner/wire/coalesce.py)"
        print(f"{warned} warnings in about {args.seconds:.0f} s, {how}: {lines} events written "
              f"({lines / args.seconds:.1f}/s, GPU samples and heartbeats included)")
        print(f"monitor CPU: {quiet:.1f} % of one core before the flood, {busy:.1f} % during it "
              f"(target < 5 %) · load {os.getloadavg()[0]:.2f}")
        print(f"monitor RSS: {rss_before:.0f} MB before the flood, {rss_after:.0f} MB after it")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        writer(Path(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "folded")
    else:
        main()
