"""The local launcher: a detached queue that runs one session per free GPU of this machine.

    python -m runner.launch.local HOME        # the queue daemon; `onegc study` starts it

State lives on disk, so the queue, its sessions and the command that filled it can each die
without the others losing track:

- ``runs/<id>/launcher.json``: ``{"kind": "local", "state": "queued"}`` until the daemon starts
  the session (``starting`` → ``running`` with ``gpu``, ``pid``, ``host``, ``boot_id``, ``start_ticks``), then
  ``ended`` (or ``cancelled`` if it left the queue before starting);
- ``runs/.queue.json``: the GPU slots to fill (``["0", "1"]``, or ``[null]`` on a CPU-only
  machine: one session at a time), written by whoever enqueues;
- ``runs/.queue.lock``: held by the one live daemon for its lifetime;
- ``runs/.queue.book.lock``: held around every state change, so a GPU is never booked twice;
- ``runs/.queue.log``: one line per decision.

The daemon also counts GPUs held by sessions it did not start (``onegc run --gpus``) as busy,
and exits once nothing is queued or running.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from runner.errors import ConfigError
from runner.launch.records import (
    has_started,
    is_attempt_folder,
    read_record,
    session_ended,
    update_record,
    write_record,
)
from runner.launch.spawn import child_env, start_recorded
from runner.wire.liveness import live_runner_pid, runner_alive
from runner.wire.paths import SessionPaths, runs_dir

TICK_S = 0.5  # queue latency: a freed GPU is refilled within this
IDLE_EXIT_S = 5.0  # the daemon leaves once nothing was queued or running for this long
LOCK_WAIT_S = 15.0  # a new daemon waits this long for an exiting one to let go of the lock
STARTING_STALE_S = 10.0  # a "starting" record this old with no runner output: its daemon died mid-start
KILL_AFTER_S = 10.0  # cancel: SIGTERM to the runner, SIGKILL if it is still there after this

QUEUE_FILE = ".queue.json"
DAEMON_LOCK = ".queue.lock"
BOOK_LOCK = ".queue.book.lock"
QUEUE_LOG = ".queue.log"
ACTIVE = ("starting", "running")


# ---------------------------------------------------------------------- GPUs
def visible_gpus() -> list[str]:
    """This machine's GPUs as CUDA_VISIBLE_DEVICES entries: that variable if set, else NVML's count."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None and env.strip():
        return [p.strip() for p in env.split(",") if p.strip()]
    from runner.session.gpu import gpu_count

    return [str(i) for i in range(gpu_count())]


def gpu_slots(spec: str | None = None) -> list[str | None]:
    """The slots to fill: ``"0,1"`` → ``["0", "1"]``; default every visible GPU; ``[None]`` without one."""
    if spec is not None and spec.strip():
        parts = [p.strip() for p in spec.split(",") if p.strip()]
        if not all(p.isdigit() or p.startswith(("GPU-", "MIG-")) for p in parts):
            raise ConfigError(f"--gpus {spec!r}: give GPU indices like 0,1 (or GPU UUIDs)")
        check_gpu_indices(parts, spec)
        return list(dict.fromkeys(parts))
    return list(visible_gpus()) or [None]


def check_gpu_indices(parts: list[str], spec: str) -> None:
    """Every index given is a GPU NVML sees on this machine (0 .. count-1); a session sent to a
    GPU that is not there would only fail later, in its training script. UUIDs are left to CUDA."""
    indices = [int(p) for p in parts if p.isdigit()]
    if not indices:
        return
    from runner.session.gpu import gpu_count

    count = gpu_count()
    missing = sorted({i for i in indices if i >= count})
    if not missing:
        return
    what = "GPU " + ", ".join(map(str, missing))
    if count == 0:
        raise ConfigError(f"--gpus {spec!r}: this machine has no GPU that NVML sees, so no {what}: "
                          "leave out --gpus to run on the CPU")
    have = "GPU 0" if count == 1 else f"GPUs 0-{count - 1}"
    raise ConfigError(f"--gpus {spec!r}: this machine has no {what} (NVML sees {have}): see nvidia-smi")


# ---------------------------------------------------------------------- locks and files
@contextmanager
def book_lock(runs: Path) -> Iterator[None]:
    """Held around every launcher.json state change of the local queue."""
    runs.mkdir(parents=True, exist_ok=True)
    with open(runs / BOOK_LOCK, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def write_slots(runs: Path, slots: list[str | None]) -> None:
    runs.mkdir(parents=True, exist_ok=True)
    tmp = runs / f".queue.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"slots": slots, "updated": time.time()}))
    os.replace(tmp, runs / QUEUE_FILE)


def read_slots(runs: Path) -> list[str | None]:
    try:
        return list(json.loads((runs / QUEUE_FILE).read_text())["slots"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return gpu_slots()


def daemon_info(runs: Path) -> dict | None:
    """The live daemon's ``{pid, host, started, slots}``, or None when no daemon holds the queue."""
    try:
        with open(runs / DAEMON_LOCK, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                try:
                    return json.loads(f.read() or "{}")
                except ValueError:
                    return {}
            fcntl.flock(f, fcntl.LOCK_UN)
            return None
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------------- enqueue / cancel
def enqueue(paths: SessionPaths, **extra) -> None:
    """Mark a created session as waiting for a GPU of the local queue."""
    write_record(paths, {"kind": "local", "state": "queued", "queued_at": time.time(), **extra})


def start_daemon(home: Path, slots: list[str | None] | None = None) -> int:
    """Write the slots and start a queue daemon detached; it exits at once if one already runs."""
    runs = runs_dir(home)
    if slots is not None:
        write_slots(runs, slots)
    with open(runs / QUEUE_LOG, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "runner.launch.local", str(home)], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True, env=child_env(), cwd=home)
    return proc.pid


def cancel(paths: SessionPaths) -> str:
    """Take a queued session off the queue, or stop a running runner (SIGTERM, then SIGKILL)."""
    with book_lock(paths.root.parent):
        record = read_record(paths) or {}
        if record.get("state") == "queued" or (record.get("state") == "starting" and not has_started(paths)):
            update_record(paths, state="cancelled", ended_at=time.time())
            return f"{paths.session_id}: removed from the queue"
    proc = _runner_process(paths)
    if proc is None:
        return f"{paths.session_id}: no live runner on this host"
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(KILL_AFTER_S)
        return f"{paths.session_id}: runner {proc.pid} stopped with SIGTERM"
    except psutil.TimeoutExpired:
        proc.kill()
        return f"{paths.session_id}: runner {proc.pid} killed (SIGKILL)"


def _runner_process(paths: SessionPaths) -> psutil.Process | None:
    pid = live_runner_pid(paths)
    try:
        return psutil.Process(pid) if pid is not None else None
    except psutil.NoSuchProcess:
        return None


# ---------------------------------------------------------------------- the daemon
class QueueDaemon:
    """Fills free GPU slots with queued sessions, oldest first, and frees a slot when its runner ends."""

    def __init__(self, home: Path):
        self.home = home
        self.runs = runs_dir(home)
        self.children: dict[str, subprocess.Popen] = {}
        self.host = socket.gethostname()

    def log(self, message: str) -> None:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} queue[{os.getpid()}]: {message}", flush=True)

    def run(self) -> int:
        self.runs.mkdir(parents=True, exist_ok=True)
        with open(self.runs / DAEMON_LOCK, "a+") as lock:
            if not _acquire(lock, LOCK_WAIT_S):
                return 0  # another daemon serves this queue
            lock.seek(0)
            lock.truncate()
            lock.write(json.dumps({"pid": os.getpid(), "host": self.host, "started": time.time(),
                                   "slots": read_slots(self.runs)}))
            lock.flush()
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the sessions live on without us
            self.log(f"serving {self.runs} with slots {read_slots(self.runs)}")
            idle_since = None
            while True:
                busy = self.tick()
                if busy:
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since >= IDLE_EXIT_S:
                    self.log("nothing queued or running: exiting")
                    return 0
                time.sleep(TICK_S)

    def tick(self) -> int:
        """One pass: settle ended runners, start queued sessions on free slots; returns how many
        sessions are queued or running."""
        slots = read_slots(self.runs)
        with book_lock(self.runs):
            queued: list[tuple[float, str, SessionPaths, dict]] = []
            busy: set[str | None] = set()
            active = 0
            for folder in self._folders():
                paths = SessionPaths(folder)
                record = read_record(paths)
                if record is None or record.get("kind", "local") != "local":
                    continue
                state = record.get("state")
                if state == "queued":
                    queued.append((float(record.get("queued_at", 0)), folder.name, paths, record))
                elif state in ACTIVE:
                    if self._settle(paths, record):
                        continue
                    busy.update(_gpu_set(record.get("gpu")))
                    active += 1
                elif state is None and not paths.result.exists() and runner_alive(paths):
                    busy.update(_gpu_set(_config_gpu(paths)))  # started outside the queue (onegc run)
            free = [s for s in slots if not (_gpu_set(s) & busy)]
            queued.sort(key=lambda q: (q[0], q[1]))
            waiting = len(queued)
            for _, _, paths, record in queued:
                if not free:
                    break
                waiting -= 1
                if self._start(paths, record, free[0]):
                    free.pop(0)
                    active += 1
            return active + waiting

    def _folders(self) -> Iterator[Path]:
        try:
            entries = sorted(self.runs.iterdir())
        except FileNotFoundError:
            return
        for folder in entries:
            if folder.is_dir() and not folder.name.startswith(".") and not is_attempt_folder(folder):
                yield folder

    def _settle(self, paths: SessionPaths, record: dict) -> bool:
        """Mark an active session ended if its runner is gone; True when it was."""
        sid = paths.session_id
        child = self.children.get(sid)
        if child is not None:
            if child.poll() is None:
                return False
            del self.children[sid]
            update_record(paths, state="ended", ended_at=time.time(), exit_code=child.returncode)
            self.log(f"{sid} ended (exit {child.returncode}); GPU {record.get('gpu')} is free")
            return True
        if record.get("state") == "starting" and not has_started(paths):
            if time.time() - float(record.get("starting_at", 0)) > STARTING_STALE_S:
                update_record(paths, state="queued")  # its daemon died between booking and starting it
                self.log(f"{sid} was left half-started: queued again")
                return True
            return False
        alive = runner_alive(paths)
        if alive is False or (alive is None and record.get("host", self.host) == self.host):
            update_record(paths, state="ended", ended_at=time.time(), exit_code=None)
            ended = "with session_ended" if session_ended(paths) else "without session_ended"
            self.log(f"{sid}: runner gone ({ended}); GPU {record.get('gpu')} is free")
            return True
        return False

    def _start(self, paths: SessionPaths, record: dict, gpu: str | None) -> bool:
        sid = paths.session_id
        try:
            config = paths.read_config()
        except ConfigError as exc:
            update_record(paths, state="cancelled", ended_at=time.time(), error=str(exc))
            self.log(f"{sid}: cannot start: {exc}")
            return False
        if config.gpu != gpu:  # not started yet, so the config may still change
            paths.write_config(config.model_copy(update={"gpu": gpu}), new=False)
        record.update(state="starting", gpu=gpu, host=self.host, starting_at=time.time())
        write_record(paths, record)  # booked: a daemon that dies now leaves it to be queued again (_settle)
        proc = start_recorded(paths, {**record, "state": "running", "started_at": time.time()})
        self.children[sid] = proc
        self.log(f"started {sid} on {'GPU ' + gpu if gpu is not None else 'the CPU'} (pid {proc.pid})")
        return True


def _acquire(lock_file, wait_s: float) -> bool:
    end = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= end:
                return False
            time.sleep(0.2)


def _gpu_set(gpu: str | None) -> set[str | None]:
    if gpu is None:
        return {None}
    return {p.strip() for p in str(gpu).split(",") if p.strip()}


def _config_gpu(paths: SessionPaths) -> str | None:
    try:
        return paths.read_config().gpu
    except ConfigError:
        return None


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: python -m runner.launch.local HOME", file=sys.stderr)
        return 2
    return QueueDaemon(Path(args[0]).resolve()).run()


if __name__ == "__main__":
    sys.exit(main())
