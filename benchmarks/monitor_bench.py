"""Monitor benchmark: input latency under load, history over 10 000 sessions, idle CPU.

    python benchmarks/monitor_bench.py [--sessions 8] [--rate 200] [--presses 60]
                                       [--history-sessions 10000] [--history-events 10000000]
                                       [--idle-seconds 20] [--skip-history]

1. Input latency. ``--sessions`` writer processes each append ``--rate`` transcript lines/s (plus a
   GPU sample a second and a heartbeat every 5 s) to their ``events.jsonl`` with
   ``runner.wire.jsonl.EventWriter`` — scripted-like sessions without training, so the figure is the
   monitor's. The real ``onegc monitor`` runs in a pseudo-terminal (160×45); a reader thread drains
   the terminal output. Each sample presses Down or Up (changing the selected session) and times
   until the header line with the newly selected session id has been written to the terminal.
2. CPU. psutil measures the monitor's CPU while they stream; then the writers stop streaming
   (they stay alive, so the sessions stay "running", with their countdowns) and it is measured
   over ``--idle-seconds`` once with no events at all, once with each session sending 1 Hz GPU
   samples and a heartbeat every 5 s. The limit beside them: an idle Textual app with one
   ``Static`` in the same kind of terminal, measured in the same run.
3. History. A store of ``--history-sessions`` finished sessions (7 agents × the 7 tasks × repeats)
   and ``--history-events`` event rows is generated directly in SQLite: the summary rows with
   ``executemany``, the events with one ``INSERT … SELECT`` joining the sessions to a counter
   table (C speed: no Python per row). It is cached under the temp folder and reused. Timed: the
   query plus matrix build (``monitor_data.outcomes`` + ``build_matrix``), and in the app, ``h``
   pressed → the matrix drawn (Pilot, headless).

Targets: latency p99 < 100 ms, history < 300 ms, idle monitor < 2 % of one core. The machine's
load average is printed beside the figures: other work on the machine shows up in them.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import random
import re
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyc_files  # noqa: E402

COLS, ROWS = 160, 45
ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>78]|\x1b\][^\x07]*\x07")
KEYS = {"down": b"\x1b[B", "up": b"\x1b[A", "escape": b"\x1b"}
PRESS_TIMEOUT_S = 5.0  # a press not shown within this counts as this long


# ----------------------------------------------------------------------------- writer processes

SESSIONS_PER_WRITER = 16  # one writer process streams this many sessions (105 processes of their own
# would measure the machine's scheduler, not the monitor: 2 cores here)


def sid_of(i: int) -> str:
    """Zero-padded, so that no id is the prefix of another (the header needle of bench-10 must not
    match bench-104)."""
    return f"bench-{i:03d}"


def writer(home: Path, sids: list[str], rate: float) -> None:
    """Fake live sessions: stream ``rate`` transcript lines/s into each of ``sids`` while
    ``home/phase`` says so, with a GPU sample a second and a heartbeat every 5 s."""
    from runner.wire.jsonl import EventWriter
    from runner.wire.liveness import RunnerLock
    from runner.wire.paths import SessionPaths

    budget = 3600.0
    writers, claims = [], []
    for sid in sids:  # started one after the other: running, newest first, the table shows the last first
        paths = SessionPaths(home / "runs" / sid)
        claims.append(RunnerLock.take(paths))  # alive to every liveness check, as a runner is (runner/wire/liveness.py)
        w = EventWriter(paths.events, sid)
        w.emit("session_started", task="t0_demo", agent="scripted", budget_s=budget, grace_s=30, contract={})
        w.emit("budget", state="running", remaining_s=budget, deadline=time.time() + budget)
        writers.append(w)
        time.sleep(0.02)
    start, n, last_gpu, last_hb = time.time(), 0, 0.0, 0.0
    tick = 0.05
    owed, last = 0.0, time.time()  # lines per session due but not yet written (by the clock: a slow pass owes more)
    while True:
        phase = (home / "phase").read_text().strip() if (home / "phase").exists() else "stream"
        now = time.time()
        if phase == "stop":
            return
        if phase == "stream":
            owed += rate * (now - last)
            for _ in range(int(owed)):
                n += 1
                for w in writers:
                    w.emit("transcript", role="assistant", kind="text" if n % 3 else "tool_result",
                           text=f"step {n}: epoch {n % 50} loss {1 / (1 + n % 97):.4f} val_acc {0.5 + (n % 41) / 100:.4f}")
            owed -= int(owed)
        last = now
        if phase in ("stream", "tick"):
            if now - last_gpu >= 1.0:
                for w in writers:
                    w.emit("gpu", index=0, util_pct=float(n % 100), mem_used_mb=4000, mem_total_mb=81920)
                last_gpu = now
            if now - last_hb >= 5.0:
                for w in writers:
                    w.emit("heartbeat", remaining_s=budget - (now - start), active_s=now - start, procs=2)
                last_hb = now
        time.sleep(tick)


def start_writers(home: Path, n: int, rate: float) -> list[subprocess.Popen]:
    from runner.launch.spawn import create_session
    from runner.wire.session_config import SessionConfig

    procs = []
    for first in range(0, n, SESSIONS_PER_WRITER):
        sids = [sid_of(i) for i in range(first, min(n, first + SESSIONS_PER_WRITER))]
        for sid in sids:
            create_session(SessionConfig(session_id=sid, task="t0", agent="scripted", budget_s=3600), home)
        procs.append(subprocess.Popen([sys.executable, __file__, "--writer", str(home), str(rate), ",".join(sids)]))
        events = home / "runs" / sids[-1] / "events.jsonl"
        deadline = time.monotonic() + 60
        while not (events.exists() and events.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.02)  # the next writer's sessions start after this one's
        time.sleep(0.05)
    return procs


# ----------------------------------------------------------------------------- the monitor in a pty

MONITOR = "from onegc_tui.cli.main import main; main(['monitor'])"
# the machine's own limit for the monitor's CPU: a Textual app that shows one Static and does nothing
STATIC_APP = ("from textual.app import App\nfrom textual.widgets import Static\n"
              "class Idle(App):\n    def compose(self):\n        yield Static('monitor — idle')\n"
              "Idle().run()")


class Terminal:
    """``onegc monitor`` (or another Textual app) in a pseudo-terminal; the output is drained and
    kept as plain text."""

    def __init__(self, home: Path, code: str = MONITOR):
        pid, fd = pty.fork()
        if pid == 0:  # the terminal has its size before the app starts, as a real one does (set from
            # the parent after the fork, it came as a resize after the first frame: a second layout)
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
            os.environ.update(ONEGC_HOME=str(home), TERM="xterm-256color", PYTHONPATH=str(REPO))
            os.execv(sys.executable, [sys.executable, "-c", code])
        self.pid, self.fd = pid, fd
        self.text = bytearray()
        self.cond = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        carry = b""  # an escape sequence cut by the read: stripped with the next chunk
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunk, carry = carry + chunk, b""
            cut = chunk.rfind(b"\x1b")
            if cut >= 0 and not ANSI.match(chunk, cut):
                chunk, carry = chunk[:cut], chunk[cut:]
            with self.cond:
                self.text += ANSI.sub(b"", chunk)
                self.cond.notify_all()

    def mark(self) -> int:
        with self.cond:
            return len(self.text)

    def wait_for(self, needle: bytes, since: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while needle not in self.text[since:]:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def press(self, key: str) -> None:
        os.write(self.fd, KEYS.get(key, key.encode()))

    def close(self) -> None:
        try:
            os.write(self.fd, b"q")
            for _ in range(50):
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    return
                time.sleep(0.1)
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass


def header(sid: str) -> bytes:
    return f"monitor — {sid}".encode()


def latency(term: Terminal, order: list[str], presses: int) -> list[float]:
    """Down through the sessions and back up, timing each press until the new header is written."""
    out, i, step = [], 0, 1
    for _ in range(presses):
        if not 0 <= i + step < len(order):
            step = -step
        i += step
        since = term.mark()
        t0 = time.perf_counter()
        term.press("down" if step > 0 else "up")
        ok = term.wait_for(header(order[i]), since, PRESS_TIMEOUT_S)
        out.append(time.perf_counter() - t0 if ok else PRESS_TIMEOUT_S)
        if not ok:
            shown = re.findall(re.escape(header("")) + rb"[\w-]+", bytes(term.text[since:]))
            print(f"press {len(out)} ({'down' if step > 0 else 'up'} to {order[i]}) not shown within "
                  f"{PRESS_TIMEOUT_S:.0f} s; headers written since: {[h.decode() for h in shown][-3:]}")
        time.sleep(0.15)  # a person's pace between presses
    return out


def cpu_percent(pid: int, seconds: float) -> float:
    import psutil

    proc = psutil.Process(pid)
    proc.cpu_percent(None)
    time.sleep(seconds)
    return proc.cpu_percent(None)


# ----------------------------------------------------------------------------- history store

AGENTS = ["claude-code (sonnet-4-6)", "claude-code (opus-4-7)", "codex (gpt-5.5)", "opencode (kimi-k2.6)",
          "opencode (qwen-3.6)", "codex (gpt-5.4)", "claude-code (opus-4-6)"]


def build_history_store(home: Path, n_sessions: int, n_events: int) -> tuple[float, int]:
    """The summary rows and ``n_events`` event rows, straight into SQLite; returns (seconds, events)."""
    from onegc_tui.store import Store
    from tasks import benchmark_tasks

    built = _history_built(home, n_sessions)
    store = Store.open(home)
    if built:
        events = store.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        store.close()
        return 0.0, events
    t0 = time.perf_counter()
    rng = random.Random(0)
    tasks = benchmark_tasks()
    rows = []
    for k in range(n_sessions):
        spec = tasks[k % len(tasks)]
        agent, _, model = AGENTS[(k // len(tasks)) % len(AGENTS)].partition(" (")
        base = spec.baseline_score or 1.0
        failed = rng.random() < 0.1
        score = None if failed else base * (1 + rng.uniform(-0.05, 0.2) * (1 if spec.higher_is_better else -1))
        started = 1_700_000_000 + k * 60.0
        rows.append((f"h{k:06d}", f"/nonexistent/h{k:06d}", "bench", spec.id, agent, model.rstrip(")"),
                     1 + k // (len(tasks) * len(AGENTS)), "ended", spec.budget_minutes * 60, 30.0, None,
                     spec.budget_minutes * 60 * rng.uniform(0.5, 1.0), started, started + 3600, started + 3600,
                     n_events // n_sessions, "agent_failed" if failed else "completed", score, score,
                     rng.randint(1, 12), rng.uniform(300, 1800), rng.randint(1, 30), "h" * 12))
    with store.conn:
        store.conn.executemany(
            "INSERT INTO sessions (session_id, folder, study, task, agent, model, repeat, state, budget_s, grace_s,"
            " remaining_s, active_s, started_ts, ended_ts, last_ts, last_seq, end_reason, score, best_live,"
            " n_checkpoints, first_checkpoint_s, scripts_launched, contract_hash)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        store.conn.execute("INSERT OR IGNORE INTO studies (name, created) VALUES ('bench', 0)")
    per = max(1, n_events // n_sessions)
    with store.conn:
        store.conn.execute("CREATE TEMP TABLE counter (i INTEGER PRIMARY KEY)")
        store.conn.execute(f"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {per})"
                           " INSERT INTO counter SELECT i FROM c")
        # valid event lines (json_object, in SQLite): every 10th a GPU sample, the rest transcript text
        store.conn.execute(
            "INSERT INTO events (session_id, seq, ts, type, data) SELECT s.session_id, c.i, s.started_ts + c.i,"
            " CASE WHEN c.i % 10 = 0 THEN 'gpu' ELSE 'transcript' END,"
            " CASE WHEN c.i % 10 = 0 THEN json_object('v', 1, 'session_id', s.session_id, 'seq', c.i,"
            "   'ts', s.started_ts + c.i, 'type', 'gpu', 'index', 0, 'util_pct', c.i % 100, 'mem_used_mb', 1000,"
            "   'mem_total_mb', 80000)"
            " ELSE json_object('v', 1, 'session_id', s.session_id, 'seq', c.i, 'ts', s.started_ts + c.i,"
            "   'type', 'transcript', 'role', 'assistant', 'kind', 'text', 'text', 'step ' || c.i) END"
            " FROM sessions s, counter c WHERE s.study = 'bench' ORDER BY s.session_id, c.i")
    events = store.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    store.close()
    return time.perf_counter() - t0, events


def history_direct(home: Path) -> list[float]:
    """The matrix alone: ``monitor_data.outcomes`` + ``build_matrix``, five times."""
    from onegc_tui.results.matrix import build_matrix, paper_matrix
    from onegc_tui.store import Store
    from onegc_tui.views import monitor_data

    paper_matrix()  # the task registry is read once per process
    out = []
    for _ in range(5):
        t0 = time.perf_counter()
        store = Store.open(home)
        matrix = build_matrix(monitor_data.outcomes(store, None), study="ours")
        store.close()
        out.append(time.perf_counter() - t0)
    assert matrix.rows, "the generated store gave an empty matrix"
    return out


HISTORY_DRAWN = b"paper rows: its Table 4/6"  # the history summary line, written with the matrix


def history_in_monitor(home: Path, reopens: int) -> tuple[float, float, list[float]]:
    """The real monitor over the big store: (start → dashboard drawn, first h → matrix drawn, reopens)."""
    t0 = time.perf_counter()
    term = Terminal(home)
    try:
        if not term.wait_for(header("h0"), 0, 120):
            sys.exit("the monitor did not show the dashboard within 120 s")
        started = time.perf_counter() - t0
        times = []
        for _ in range(1 + reopens):
            since = term.mark()
            t0 = time.perf_counter()
            term.press("h")
            if not term.wait_for(HISTORY_DRAWN, since, 30):
                sys.exit("the history matrix was not drawn within 30 s")
            times.append(time.perf_counter() - t0)
            time.sleep(0.5)
            since = term.mark()
            term.press("escape")
            term.wait_for(header("h0"), since, 10)
            time.sleep(0.5)
        return started, times[0], times[1:]
    finally:
        term.close()


def static_app_cpu(seconds: float) -> float:
    """CPU of an idle Textual app with one Static, in the same kind of terminal (% of one core)."""
    with tempfile.TemporaryDirectory(prefix="onegc-static-") as tmp:
        term = Terminal(Path(tmp), STATIC_APP)
        try:
            if not term.wait_for(b"monitor \xe2\x80\x94 idle", 0, 60):
                sys.exit("the idle Textual app did not draw within 60 s")
            time.sleep(3)
            return cpu_percent(term.pid, seconds)
        finally:
            term.close()


def live_figures(sessions: int, rate: float, presses: int, idle_seconds: float) -> dict:
    """The monitor over ``sessions`` streaming writers: key presses timed (``latency``, seconds),
    CPU while they stream (``busy``), while they are quiet (``quiet``) and while they send only
    GPU samples and heartbeats (``tick``), beside an idle one-Static app (``static``), in % of one
    core; ``load_*``: the load average as each was measured."""
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="onegc-monbench-") as tmp:
        home = Path(tmp)
        (home / "phase").write_text("stream")
        writers = start_writers(home, sessions, rate)
        term = Terminal(home)
        try:
            order = [sid_of(i) for i in reversed(range(sessions))]  # all running: newest first
            if not term.wait_for(header(order[0]), 0, 60):
                sys.exit("the monitor did not show the first session within 60 s")
            time.sleep(3)  # let the ingest catch up with the streams
            out["latency"] = latency(term, order, presses)
            out["load_latency"] = os.getloadavg()[0]
            out["busy"] = cpu_percent(term.pid, max(5.0, idle_seconds / 2))
            out["load_busy"] = os.getloadavg()[0]
            (home / "phase").write_text("quiet")
            time.sleep(5)  # drain what is in flight
            out["quiet"] = cpu_percent(term.pid, idle_seconds)
            out["load_quiet"] = os.getloadavg()[0]
            (home / "phase").write_text("tick")
            time.sleep(3)
            out["tick"] = cpu_percent(term.pid, idle_seconds)
            out["load_tick"] = os.getloadavg()[0]
        finally:
            (home / "phase").write_text("stop")
            term.close()
            for w in writers:
                try:
                    w.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    w.kill()
    out["static"] = static_app_cpu(idle_seconds)
    out["load_static"] = os.getloadavg()[0]
    return out


HISTORY_BYTES_PER_EVENT = 250  # the history store, written once (10 M events: 2.0 GiB)


def _history_home(n_sessions: int, n_events: int) -> Path:
    return Path(tempfile.gettempdir()) / f"onegc-histbench-{n_sessions}-{n_events}"


def history_room(n_sessions: int, n_events: int) -> int:
    """Bytes of the temp folder :func:`history_figures` needs: its store, where it is not built yet."""
    return 0 if _history_built(_history_home(n_sessions, n_events), n_sessions) else n_events * HISTORY_BYTES_PER_EVENT


def _history_built(home: Path, n_sessions: int) -> bool:
    db = home / "onegc.db"
    if not db.exists():
        return False
    from onegc_tui.store import Store

    store = Store(db)
    try:
        return store.conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == n_sessions
    finally:
        store.close()


def history_figures(n_sessions: int, n_events: int) -> dict:
    """The history screen over a generated store of ``n_sessions`` finished sessions and ``n_events``
    event rows: query + matrix build (``direct``, seconds, five times), and in the real monitor the
    dashboard drawn after start (``started``), ``h`` → matrix drawn (``first``, ``again``)."""
    home = _history_home(n_sessions, n_events)
    (home / "runs").mkdir(parents=True, exist_ok=True)
    built, events = build_history_store(home, n_sessions, n_events)
    direct = history_direct(home)
    started, first, again = history_in_monitor(home, reopens=5)
    return {"home": home, "built_s": built, "events": events, "db_bytes": (home / "onegc.db").stat().st_size,
            "direct": direct, "started": started, "first": first, "again": again, "load": os.getloadavg()[0]}


# ----------------------------------------------------------------------------- main

def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--rate", type=float, default=200.0, help="transcript lines/s per session")
    ap.add_argument("--presses", type=int, default=60)
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    ap.add_argument("--history-sessions", type=int, default=10_000)
    ap.add_argument("--history-events", type=int, default=10_000_000)
    ap.add_argument("--skip-history", action="store_true")
    ap.add_argument("--skip-live", action="store_true")
    args = ap.parse_args()
    pyc_files.compile_sources()  # before anything is timed, as a user's first run writes them
    print(f"machine: {os.cpu_count()} CPUs · load average at start {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")

    if not args.skip_live:
        live = live_figures(args.sessions, args.rate, args.presses, args.idle_seconds)
        lat = live["latency"]
        print(f"input latency, {args.sessions} sessions × {args.rate:.0f} lines/s: "
              f"p50 {pct(lat, 0.5) * 1000:.0f} ms · p90 {pct(lat, 0.9) * 1000:.0f} ms · "
              f"p99 {pct(lat, 0.99) * 1000:.0f} ms · max {max(lat) * 1000:.0f} ms "
              f"({len(lat)} presses; target p99 < 100 ms) · load {live['load_latency']:.2f}")
        print(f"monitor CPU while streaming: {live['busy']:.1f} % of one core · load {live['load_busy']:.2f}")
        print(f"idle monitor, {args.sessions} running sessions, no events: {live['quiet']:.2f} % of one core "
              f"over {args.idle_seconds:.0f} s · load {live['load_quiet']:.2f}")
        print(f"idle monitor, {args.sessions} sessions with 1 Hz GPU samples + 5 s heartbeats: "
              f"{live['tick']:.2f} % of one core (target < 2 %) · load {live['load_tick']:.2f}")
        print(f"an idle Textual app with one Static (the limit): {live['static']:.2f} % of one core · "
              f"load {live['load_static']:.2f}")

    if not args.skip_history:
        h = history_figures(args.history_sessions, args.history_events)
        built = f"built in {h['built_s']:.0f} s" if h["built_s"] else "cached"
        print(f"history store: {args.history_sessions} sessions, {h['events']} events, {h['db_bytes'] / 2**30:.2f} GiB "
              f"({built}; {h['home']})")
        print(f"history matrix, query + build: median {statistics.median(h['direct']) * 1000:.0f} ms · "
              f"max {max(h['direct']) * 1000:.0f} ms")
        print(f"monitor over that store: dashboard drawn {h['started']:.1f} s after start; h pressed at once → "
              f"matrix drawn {h['first'] * 1000:.0f} ms, reopened median {statistics.median(h['again']) * 1000:.0f} ms · "
              f"max {max(h['again']) * 1000:.0f} ms (target < 300 ms) · load {h['load']:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        writer(Path(sys.argv[2]), sys.argv[4].split(","), float(sys.argv[3]))
    else:
        main()
