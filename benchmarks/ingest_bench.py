"""Ingest benchmark: events/s into SQLite beside raw inserts, append-to-commit latency, reindex.

    python benchmarks/ingest_bench.py [--events 200000] [--reps 3] [--rate 2000] [--seconds 10]
                                      [--reindex-sessions 10000] [--reindex-events 10000000] [--skip-reindex]

Throughput: ``--events`` transcript/GPU events spread over 4 session folders are ingested from
scratch (batched, one transaction per batch). The machine's own limit, measured beside it in the
same run (alternating, ``--reps`` times): the same lines' event rows inserted with a raw
``executemany`` into the same schema, 1 000 rows per WAL transaction — the insert alone, with no
reading, parsing, derived tables, search index or summary. The ratio is ingest / raw.

Latency: a separate writer process appends events at ``--rate`` per second for ``--seconds``; the
live ingester (watchdog inotify observer, as in the monitor) commits them, and each event's
latency is commit time minus the time the writer stamped on it.

Reindex: ``onegc reindex`` (the real command, a process of its own) over ``--reindex-sessions``
session folders holding ``--reindex-events`` events in all (generated once, kept under the temp
folder), against the raw insert of the same rows. Targets: ingest >= 50 000 events/s and >= 35 %
of raw; p99 < 100 ms; reindex >= 35 % of raw.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyc_files  # noqa: E402

from onegc_tui.store import Store  # noqa: E402
from onegc_tui.store.ingest import Ingester  # noqa: E402
from onegc_tui.store.live import LiveIngest  # noqa: E402
from onegc_tui.store.parallel import from_scratch_in_two  # noqa: E402
from runner.launch.spawn import create_session  # noqa: E402
from runner.wire.jsonl import EventWriter  # noqa: E402
from runner.wire.session_config import SessionConfig  # noqa: E402

RAW_BATCH = 1_000  # rows per transaction of the raw insert (the limit the issue names)
EVENT_ROW = "INSERT INTO events (session_id, seq, ts, type, data) VALUES (?,?,?,?,?)"


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


def event_rows(paths: list[Path]):
    """The ``events`` rows of these files' lines, in batches (read and parsed outside any timing)."""
    batch = []
    for path in paths:
        with open(path, "rb") as f:
            for line in f:
                e = json.loads(line)
                batch.append((e["session_id"], e["seq"], e["ts"], e["type"], line.rstrip(b"\n").decode()))
                if len(batch) == 50 * RAW_BATCH:
                    yield batch
                    batch = []
    if batch:
        yield batch


def raw_insert(db: Path, paths: list[Path]) -> tuple[int, float]:
    """Rows inserted and seconds spent: plain ``executemany`` of the event rows into a fresh store
    (the same schema and pragmas), ``RAW_BATCH`` rows per transaction; only the inserts are timed."""
    store = Store(db)
    conn, n, spent = store.conn, 0, 0.0
    try:
        for rows in event_rows(paths):
            t0 = time.perf_counter()
            for i in range(0, len(rows), RAW_BATCH):
                with conn:
                    conn.executemany(EVENT_ROW, rows[i:i + RAW_BATCH])
            spent += time.perf_counter() - t0
            n += len(rows)
    finally:
        store.close()
    return n, spent


def _fresh(db: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    return db


def throughput(n: int, reps: int = 1) -> dict:
    """Ingest from scratch and the raw insert of the same rows, alternating, ``reps`` times: the
    ingest in one process (``ingest``: the live ingest's path, ``Ingester.ingest_all``), and the
    catch-up into a store that has never seen the sessions (``catch_up``: on two processes where
    there are two cores and enough to read, onegc_tui/store/parallel.py).

    Returns events/s of each run (``ingest``, ``catch_up``, ``raw``) and each one's ratio to the raw
    insert beside it (``ratios``, ``catch_up_ratios``)."""
    out: dict[str, list[float]] = {"ingest": [], "catch_up": [], "raw": [], "ratios": [], "catch_up_ratios": [],
                                   "load": []}
    with tempfile.TemporaryDirectory(prefix="onegc-ingestbench-") as tmp:
        home = Path(tmp)
        per = n // 4
        paths = [make_session(home, f"s{k}") for k in range(4)]
        for k, path in enumerate(paths):
            write_events(path, f"s{k}", per)
        for rep in range(reps):
            runs = ("raw", "ingest", "catch_up") if rep % 2 == 0 else ("catch_up", "ingest", "raw")
            got: dict[str, float] = {}
            for kind in runs:
                if kind == "raw":
                    rows, spent = raw_insert(_fresh(home / "raw.db"), paths)
                    got["raw"] = rows / spent
                    continue
                store = Store(_fresh(home / "ingest.db"))
                t0 = time.perf_counter()
                ingester = Ingester(home, store)
                two = from_scratch_in_two(ingester) if kind == "catch_up" else None  # None: one process is the way
                stored = ingester.ingest_all() if two is None else two
                spent = time.perf_counter() - t0
                store.close()
                assert stored == per * 4, stored
                got[kind] = stored / spent
            for kind in ("ingest", "catch_up", "raw"):
                out[kind].append(got[kind])
            out["ratios"].append(got["ingest"] / got["raw"])
            out["catch_up_ratios"].append(got["catch_up"] / got["raw"])
            out["load"].append(os.getloadavg()[0])
    return out


def latency(rate: float, seconds: float) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        path = make_session(home, "live")
        lat: list[float] = []
        lock = threading.Lock()

        def on_events(sid, events):
            now = time.time()
            with lock:
                lat.extend(now - e["ts"] for e in events)

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


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(len(values) * q) - 1))]


# ----------------------------------------------------------------------------- reindex

# bytes of the temp folder a reindexed event needs (10 M events: 1.8 GiB of lines, a 3.9 GiB store):
# a first run writes its line (~190) and its row in the reindexed store (~410), then the raw insert's
# store beside it (~350, removed after); a later run builds a new store beside the one there (~410)
REINDEX_FIRST_BYTES, REINDEX_AGAIN_BYTES = 1_000, 450


def _reindex_home_path(n_sessions: int, n_events: int) -> Path:
    return Path(tempfile.gettempdir()) / f"onegc-reindexbench-{n_sessions}-{n_events}"


def reindex_room(n_sessions: int, n_events: int) -> int:
    """Bytes of the temp folder :func:`reindex` needs, with the session folders there or not."""
    built = (_reindex_home_path(n_sessions, n_events) / ".complete").exists()
    return n_events * (REINDEX_AGAIN_BYTES if built else REINDEX_FIRST_BYTES)


def reindex_home(n_sessions: int, n_events: int) -> Path:
    """``n_sessions`` ended session folders with ``n_events`` events in all (most transcript lines,
    a GPU sample every tenth, a checkpoint and its score now and then), made once and kept."""
    home = _reindex_home_path(n_sessions, n_events)
    done = home / ".complete"
    if done.exists():
        return home
    rng = random.Random(0)
    per = max(4, n_events // n_sessions)
    for k in range(n_sessions):
        sid = f"r{k:06d}"
        root = home / "runs" / sid
        if not root.exists():
            create_session(SessionConfig(session_id=sid, task="t0", agent="scripted", budget_s=3600,
                                         created=1_700_000_000.0 + k), home)
        t = 1_700_000_000.0 + k * 3600
        lines = [json.dumps({"task": "t0_demo", "agent": "scripted", "model": None, "repeat": 1, "study": None,
                             "budget_s": 3600.0, "grace_s": 30.0, "contract": {"task_hash": "h"}, "v": 1,
                             "session_id": sid, "seq": 1, "ts": t, "type": "session_started"})]
        for seq in range(2, per):
            t += 0.25
            if seq % 10 == 0:
                e = {"index": 0, "util_pct": float(rng.randint(0, 100)), "mem_used_mb": 4000.0, "mem_total_mb": 81920.0,
                     "type": "gpu"}
            elif seq % 97 == 0:
                e = {"name": f"run_1_epoch{seq}-1", "path": "p", "snapshot": "s", "script": "run_1.py",
                     "self_reported": rng.random(), "budget_elapsed_s": seq / 4, "type": "checkpoint_found"}
            elif seq % 97 == 1:
                e = {"name": f"run_1_epoch{seq - 1}-1", "value": rng.random(), "metric": "val_acc", "split": "val",
                     "budget_elapsed_s": seq / 4, "eval_s": 0.2, "type": "checkpoint_scored"}
            else:
                e = {"role": "assistant", "kind": "text" if seq % 3 else "tool_result",
                     "text": f"step {seq}: epoch {seq % 50} loss {1 / (1 + seq % 97):.4f} val_acc {0.5 + (seq % 41) / 100:.4f}",
                     "type": "transcript"}
            lines.append(json.dumps({**e, "v": 1, "session_id": sid, "seq": seq, "ts": t}))
        lines.append(json.dumps({"reason": "completed", "detail": "", "active_s": 3000.0, "wall_s": 3001.0,
                                 "paused_s": 0.0, "score": 0.9, "best_checkpoint": None, "v": 1, "session_id": sid,
                                 "seq": per, "ts": t + 1, "type": "session_ended"}))
        (root / "events.jsonl").write_text("\n".join(lines) + "\n")
    done.write_text("")
    return home


def reindex(n_sessions: int, n_events: int) -> dict:
    """``onegc reindex`` over the generated home, and the raw insert of its rows, in that order."""
    home = reindex_home(n_sessions, n_events)
    files = sorted((home / "runs").glob("*/events.jsonl"))
    env = dict(os.environ, ONEGC_HOME=str(home))
    script = Path(sys.executable).with_name("onegc")
    argv = [str(script)] if script.is_file() else [sys.executable, "-m", "onegc_tui.cli"]
    t0 = time.perf_counter()
    out = subprocess.run(argv + ["reindex"], env=env, capture_output=True, text=True, check=True)
    spent = time.perf_counter() - t0
    load = os.getloadavg()[0]
    stored = int(out.stdout.split(" sessions, ")[1].split(" events")[0])
    size = (home / "onegc.db").stat().st_size
    with tempfile.TemporaryDirectory(prefix="onegc-rawbench-", dir=home) as tmp:
        rows, raw_spent = raw_insert(Path(tmp) / "raw.db", files)
    assert rows == stored, (rows, stored)
    return {"events": stored, "sessions": len(files), "reindex": stored / spent, "raw": rows / raw_spent,
            "ratio": (stored / spent) / (rows / raw_spent), "seconds": spent, "db_bytes": size, "load": load,
            "home": str(home)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=3, help="ingest / raw pairs")
    ap.add_argument("--rate", type=float, default=2000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--reindex-sessions", type=int, default=10_000)
    ap.add_argument("--reindex-events", type=int, default=10_000_000)
    ap.add_argument("--skip-reindex", action="store_true")
    args = ap.parse_args()
    pyc_files.compile_sources()  # before anything is timed, as a user's first run writes them
    print(f"machine: {platform.machine()}, {mp.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average at start {os.getloadavg()[0]:.2f}")
    t = throughput(args.events, args.reps)
    print(f"ingest throughput, one process: median {statistics.median(t['ingest']):,.0f} events/s ({args.events:,} "
          f"events, 4 sessions); raw executemany of the same rows: median {statistics.median(t['raw']):,.0f} rows/s; "
          f"ingest/raw median {statistics.median(t['ratios']):.0%} (runs: "
          + ", ".join(f"{r:.0%}" for r in t["ratios"]) + ")")
    print(f"catch-up from scratch (two processes where there are two cores): median "
          f"{statistics.median(t['catch_up']):,.0f} events/s; catch-up/raw median {statistics.median(t['catch_up_ratios']):.0%} "
          "(runs: " + ", ".join(f"{r:.0%}" for r in t["catch_up_ratios"]) + ")")
    lat = latency(args.rate, args.seconds)
    print(f"append-to-commit latency at {args.rate:.0f} events/s for {args.seconds:.0f} s: "
          f"p50 {statistics.median(lat) * 1000:.1f} ms, p99 {pct(lat, 0.99) * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms "
          f"({len(lat):,} events)")
    if not args.skip_reindex:
        r = reindex(args.reindex_sessions, args.reindex_events)
        print(f"onegc reindex: {r['events']:,} events of {r['sessions']:,} sessions in {r['seconds']:.1f} s, "
              f"{r['reindex']:,.0f} events/s ({r['db_bytes'] / 2**20:,.0f} MiB store); raw insert of the same rows "
              f"{r['raw']:,.0f} rows/s; reindex/raw {r['ratio']:.0%}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
