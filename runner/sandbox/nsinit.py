"""PID 1 of a session's PID namespace: forwards signals to the agent and reaps orphans.

The kernel drops SIGINT/SIGTERM sent from outside to a namespace's PID 1 unless it installed a
handler, so an agent CLI running as PID 1 (OpenCode has no handler) could only be SIGKILLed.
This tiny init runs the agent as its child, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, reaps
every re-parented process, and exits with the agent's status (the namespace dies with it).
Standard library only: it runs with ``python -I``, inside the sandbox as well as outside.

    python -I nsinit.py [--uid U --gid G [--inner-id N]] -- AGENT ARGV...

With ``--uid``/``--gid`` (the sandbox of a runner that is root, runner/sandbox/bwrap.py) the agent's
process gives up root for good before it runs anything: no supplementary groups, real,
effective and saved ids ``U``/``G`` (which clears every capability), then a user namespace of
its own in which it is ``N`` (default 1000) and nothing else is mapped. This init stays uid 0
but drops every capability but CAP_KILL once the agent is forked: the agent (another uid, no
capabilities) can neither signal nor trace it, while bubblewrap, whose parent-death signal ties
this init to the runner, still may (a signal to another uid would need CAP_KILL, which bubblewrap
has dropped: an init that changed its own uid would outlive a runner killed with -9). CAP_KILL
is what lets this init forward a signal to the agent, another uid: without it every forward
failed (EPERM) and took the init down with a traceback. A forward that fails all the same is
dropped, never fatal: the runner stops the tree through its cgroup either way.
"""

import ctypes
import os
import signal
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
CLONE_NEWUSER = 0x10000000
PR_SET_DUMPABLE = 4
INNER_ID = 1000  # who the agent is inside its user namespace


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def drop_root(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` for good (every capability goes with root)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


CAP_KILL = 5  # linux/capability.h


def drop_capabilities(keep: tuple[int, ...] = ()) -> None:
    """Empty effective, permitted and inheritable sets but for ``keep`` (capability numbers),
    keeping the uid (capset(2), version 3: two 32-bit words per set)."""
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    for cap in keep:
        data[cap // 32].effective |= 1 << (cap % 32)
        data[cap // 32].permitted |= 1 << (cap % 32)
    _check(_libc().capset(ctypes.byref(header), data), "capset")


def enter_own_user_namespace(inner: int) -> None:
    """A new user namespace in which the outer uid/gid appear as ``inner``, and nothing else is mapped."""
    uid, gid = os.getuid(), os.getgid()
    libc = _libc()
    _check(libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    _check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(DUMPABLE)")  # our own maps are writable only so
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{inner} {uid} 1\n")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{inner} {gid} 1\n")


def parse(argv: list[str]) -> tuple[dict[str, int], list[str]]:
    opts: dict[str, int] = {}
    while argv and argv[0] != "--":
        if argv[0] in ("--uid", "--gid", "--inner-id") and len(argv) > 1:
            opts[argv[0][2:]] = int(argv[1])
            argv = argv[2:]
        else:
            raise SystemExit(f"nsinit: unknown option {argv[0]!r}")
    return opts, argv[1:]


def main() -> int:
    opts, argv = parse(sys.argv[1:])
    if not argv:
        print("usage: nsinit.py [--uid U --gid G] -- ARGV...", file=sys.stderr)
        return 2
    child = os.fork()
    if child == 0:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        try:
            if "uid" in opts:
                drop_root(opts["uid"], opts.get("gid", opts["uid"]))
                enter_own_user_namespace(opts.get("inner-id", INNER_ID))
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"nsinit: cannot run {argv[0]}: {exc}", file=sys.stderr)
            os._exit(127)
    if "uid" in opts:
        drop_capabilities(keep=(CAP_KILL,))  # to forward signals to the agent, which is another uid

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except (ProcessLookupError, PermissionError):  # gone, or not ours to signal: never fatal to the init
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    while True:
        try:
            pid, status = os.wait()  # reaps the agent and any orphan re-parented to us
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == child:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main())
