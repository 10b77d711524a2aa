"""Ingest benchmark: events/s into SQLite, and append-to-commit latency while a session streams.

    python benchmarks/ingest_bench.py [--events 200000] [--rate 2000] [--seconds 10]

Throughput: ``--events`` transcript/GPU/heartbeat events spread over 4 session folders are
ingested from scratch (batched, one transaction per batch). Latency: a separate writer process
appends events at ``--rate`` per second for ``--seconds``; the live ingester (watchdog inotify
observer, as in the monitor) commits them, and each event's latency is commit time minus the
time the writer stamped on it.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from onegc_tui.ingest import Ingester, LiveIngest  # noqa: E402
from onegc_tui.store import Store  # noqa: E402
from runner.config import SessionConfig  # noqa: E402
from runner.jsonl import EventWriter  # noqa: E402
from runner.launch import create_session  # noqa: E402


def make_session(home: Path, sid: str) -> Path:
    return create_session(SessionConfig(session_id=sid, task="t0", agent="scripted", budget_s=3600), home).events


def write_events(path: Path, sid: str, n: int, rate: float = 0.0) -> None:
    w = EventWriter(path, sid)
    start = time.perf_counter()
    for i in range(n):
        if i % 10 == 9:
            w.emit("gpu", index=0, util_pct=i % 100, mem_used_mb=1000, mem_total_mb=80000)
        else:
            w.emit("transcript", role="tool", kind="tool_result", text=f"step {i} loss {1 / (i + 1):.5f} lr 3e-4")
        if rate:
            lag = start + (i + 1) / rate - time.perf_counter()
            if lag > 0:
                time.sleep(lag)
    w.close()


def throughput(n: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        per = n // 4
        for k in range(4):
            write_events(make_session(home, f"s{k}"), f"s{k}", per)
        store = Store.open(home)
        t0 = time.perf_counter()
        got = Ingester(home, store).ingest_all()
        dt = time.perf_counter() - t0
        assert got == per * 4, got
        store.close()
        return got / dt


def latency(rate: float, seconds: float) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        path = make_session(home, "live")
        lat: list[float] = []
        lock = threading.Lock()

        def on_events(sid, events):
            now = time.time()
            with lock:
                lat.extend(now - e.ts for e in events)

        live = LiveIngest(home, on_events=on_events)
        live.start()
        live.ready.wait(10)
        n = int(rate * seconds)
        writer = mp.Process(target=write_events, args=(path, "live", n, rate))
        writer.start()
        writer.join()
        deadline = time.time() + 10
        while len(lat) < n and time.time() < deadline:
            time.sleep(0.05)
        live.stop()
        return lat


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rate", type=float, default=2000)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {mp.cpu_count()} cores, Python {platform.python_version()}")
    eps = throughput(args.events)
    print(f"ingest throughput: {eps:,.0f} events/s ({args.events:,} events, 4 sessions, batched transactions)")
    lat = sorted(latency(args.rate, args.seconds))
    p50 = statistics.median(lat) * 1000
    p99 = lat[int(len(lat) * 0.99) - 1] * 1000
    print(f"append-to-commit latency at {args.rate:.0f} events/s for {args.seconds:.0f} s: "
          f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {lat[-1] * 1000:.1f} ms ({len(lat):,} events)")


if __name__ == "__main__":
    main()
