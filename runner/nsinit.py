"""PID 1 of a session's PID namespace: forwards signals to the agent and reaps orphans.

The kernel drops SIGINT/SIGTERM sent from outside to a namespace's PID 1 unless it installed a
handler, so an agent CLI running as PID 1 (OpenCode has no handler) could only be SIGKILLed.
This tiny init runs the agent as its child, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, reaps
every re-parented process, and exits with the agent's status (the namespace dies with it).
Standard library only: it runs with ``python -I``.

    python -I nsinit.py -- AGENT ARGV...
"""

import os
import signal
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: nsinit.py -- ARGV...", file=sys.stderr)
        return 2
    child = os.fork()
    if child == 0:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"nsinit: cannot run {argv[0]}: {exc}", file=sys.stderr)
            os._exit(127)

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except ProcessLookupError:
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
