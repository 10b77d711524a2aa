"""Every Python launch of an agent's tree, however short: a PATH shim and a runner-owned socket.

The paper's "scripts launched" (Table 5) counts the training scripts an agent runs. A scan of the
process tree misses what lives shorter than its period (three instant ``python run_2.py`` counted
1, or 0). So the runner puts a folder of shims first on the agent's ``PATH``: ``python``,
``python3`` and ``python3.N``. Each is a two-line ``sh`` script that runs a stdlib-only helper
with the runner's interpreter (``python -I -S``); the helper sends one datagram (the command line
and working folder) to a socket the runner listens on, then ``exec``s the interpreter that
``PATH`` names after the shim folder, with the same arguments, so the launched process keeps its
PID, its signals, its stdio and a normal ``sys.executable``. The runner gets the sender's PID from
the kernel (``SO_PASSCRED``: an ``SCM_CREDENTIALS`` PID is translated into the receiver's PID
namespace), so a record names the process as the runner sees it, whatever PID namespace or
sandbox the tree runs in. A record is sent before the ``exec``: it is there before the script can
even start.

Why this and not the alternatives: a faster scan, or polling a cgroup's member list, only
narrows the window; the proc connector and fanotify need root (CAP_NET_ADMIN/CAP_SYS_ADMIN in the
initial namespace) and still race to read the command line; ptrace slows every process; a
``sitecustomize``/``.pth`` hook would change the interpreter that the agent's own scripts run
in and is skipped by ``python -I``/``-S``. The shim changes nothing for the launched script.

Its limits: a launch that names an interpreter by absolute path (``/usr/bin/python3 x.py``, a
script's ``subprocess.run([sys.executable, ...])``) bypasses ``PATH``; the runner's scan of the
tree still sees those that live through one scan.

In the agent's sandbox (runner/sandbox/bwrap.py) the folder is mounted read-only wherever ``seen_at``
says (a socket on a read-only mount still takes datagrams); the shims find their folder from
their own path, so nothing in them names the host path. The socket belongs to the agent's uid
with mode 600: nobody else on the machine can add a launch. It is reached through
``/proc/self/fd/N/`` so its path length never hits the 108-byte limit of Unix socket addresses.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import socket
import stat
import struct
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from runner.wire.untrusted import optional_number, optional_text, text_list, text_of_bytes

SOCKET_NAME = "launches.sock"
HELPER_NAME = "shim.py"
RECORD_LIMIT = 16_000  # bytes of one record; longer command lines are cut (the script comes first)
ARG_LIMIT = 4096  # characters of one argument or of the working folder (PATH_MAX)
UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
RECV_BUFFER = 1 << 20  # the socket's receive buffer: a burst of launches waits here, not in the shim
SEND_TIMEOUT_S = 5.0  # a shim waits at most this long for room in the queue; then it runs unrecorded


@dataclass(frozen=True)
class Launch:
    """One interpreter launch through the shim."""

    pid: int  # as the runner sees it
    argv: tuple[str, ...]  # as the agent typed it (argv[0] is the name it called: python, python3, ...)
    cwd: str
    ts: float

    @property
    def cmdline(self) -> str:
        return shlex.join(self.argv)


def shim_names() -> tuple[str, ...]:
    return ("python", "python3", f"python3.{sys.version_info.minor}")


# The helper: stdlib only, run with -I -S (no site, no environment): it must work for any agent.
# Its folder is where it lies (the sandbox shows the folder elsewhere than the host).
HELPER = r'''
import json, os, socket, sys, time
FOLDER, LIMIT, TIMEOUT = os.path.dirname(os.path.abspath(__file__)), {limit}, {timeout}

def target(name):
    here = os.path.realpath(os.path.join(FOLDER, "bin"))
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or os.path.realpath(entry) == here:
            continue
        path = os.path.join(entry, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None

def report(argv):
    record = json.dumps({{"argv": argv, "cwd": os.getcwd(), "ts": time.time()}}).encode()
    while len(record) > LIMIT and len(argv) > 2:
        argv = argv[:-1]
        record = json.dumps({{"argv": argv + ["..."], "cwd": os.getcwd(), "ts": time.time()}}).encode()
    fd = os.open(FOLDER, os.O_PATH)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.settimeout(TIMEOUT)
        s.sendto(record[:LIMIT], "/proc/self/fd/%d/{socket}" % fd)
        s.close()
    finally:
        os.close(fd)

name, args = os.path.basename(sys.argv[1]), sys.argv[2:]
path = target(name)
if path is None:
    sys.stderr.write("%s: command not found\n" % name)
    sys.exit(127)
try:
    report([name] + args)
except (OSError, ValueError):
    pass  # the runner is gone or busy: run the script anyway, uncounted
os.execv(path, [path] + args)
'''


class ExecLog:
    """The shim folder and the socket behind it; ``start()``, then ``drain()`` as often as needed."""

    def __init__(self, folder: Path, seen_at: Path | None = None, interpreter: str = sys.executable):
        self.folder = folder
        self.seen_at = seen_at or folder  # where the agent sees the folder
        self.interpreter = interpreter
        self.bin_dir = folder / "bin"
        self._sock: socket.socket | None = None
        self._dir_fd: int | None = None
        self._queue: queue.SimpleQueue[Launch] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._receive, name="execlog", daemon=True)

    def start(self, owner: tuple[int, int] | None = None) -> ExecLog:
        """Write the shims and listen. ``owner``: the uid and gid the agent runs as, when not ours."""
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        helper = self.folder / HELPER_NAME
        helper.write_text(HELPER.format(limit=RECORD_LIMIT, timeout=SEND_TIMEOUT_S, socket=SOCKET_NAME))
        for name in shim_names():
            shim = self.bin_dir / name
            # "${0%/bin/*}": this shim's folder, as the agent sees it
            shim.write_text(f'#!/bin/sh\nexec {shlex.quote(self.interpreter)} -I -S "${{0%/bin/*}}/{HELPER_NAME}" '
                            f'"$0" "$@"\n')  # fmt: skip
            shim.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        self._dir_fd = os.open(self.folder, os.O_PATH)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            os.unlink(self.folder / SOCKET_NAME)
        except FileNotFoundError:
            pass
        sock.bind(f"/proc/self/fd/{self._dir_fd}/{SOCKET_NAME}")
        os.chmod(self.folder / SOCKET_NAME, stat.S_IRUSR | stat.S_IWUSR)
        if owner is not None:
            os.chown(self.folder / SOCKET_NAME, *owner)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
        self._sock = sock
        self._thread.start()
        return self

    def path_with_shims(self, path: str) -> str:
        """``PATH`` for the agent: the shims first."""
        return str(self.seen_at / "bin") + (os.pathsep + path if path else "")

    def mount(self) -> tuple[Path, Path]:
        """(host folder, where the agent sees it): a read-only mount of the agent's sandbox."""
        return self.folder, self.seen_at

    def drain(self) -> list[Launch]:
        """The launches received since the last call, in arrival order."""
        out = []
        while True:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                return out

    def close(self) -> None:
        """Stop listening; every record sent before is then in :meth:`drain`'s hands."""
        if self._sock is not None:
            self._read_pending()
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            if self._thread.is_alive():
                self._thread.join(timeout=2)  # it may hold one record it read last
            self._sock.close()
            self._sock = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    def _receive(self) -> None:
        sock = self._sock
        assert sock is not None
        while self._take(sock, 0):
            pass

    def _read_pending(self) -> None:
        """Read what the socket holds now, beside the receiving thread (each datagram goes to one reader)."""
        assert self._sock is not None
        while self._take(self._sock, socket.MSG_DONTWAIT):
            pass

    def _take(self, sock: socket.socket, flags: int) -> bool:
        """One datagram into the queue; False once the socket is empty (non-blocking) or shut."""
        try:
            data, ancdata, _flags, _addr = sock.recvmsg(RECORD_LIMIT + 1024, socket.CMSG_SPACE(UCRED.size), flags)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return False  # closed
        if not data and not ancdata:
            return False  # shut down
        launch = _launch(data, ancdata)
        if launch is not None:
            self._queue.put(launch)
        return True


def _launch(data: bytes, ancdata: list) -> Launch | None:
    pid = next((UCRED.unpack(d[: UCRED.size])[0] for level, kind, d in ancdata
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(d) >= UCRED.size), 0)  # fmt: skip
    try:  # the agent can send any datagram here: each field typed, decoded and bounded (runner/wire/untrusted.py)
        record = json.loads(text_of_bytes(data, RECORD_LIMIT))
        if not isinstance(record, dict):
            return None
        argv = text_list(record.get("argv"), "argv", ARG_LIMIT, RECORD_LIMIT)
        cwd = optional_text(record.get("cwd"), "cwd", ARG_LIMIT) or ""
        return Launch(pid=pid, argv=argv, cwd=cwd, ts=optional_number(record.get("ts"), "ts") or 0.0)
    except ValueError:  # Untrusted too: not a shim's record, ignored (the socket is only reachable from the session)
        return None
