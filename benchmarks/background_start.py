"""How often a background training start survives the group kill Codex gives a tool's shell.

    python benchmarks/background_start.py [--trials N]

Codex ends a command's whole process group the moment the command's shell exits. Each trial runs
a start line the way Codex runs a tool (``bash -c`` in a new process group), kills that group as
soon as the shell has exited, and counts whether the started process (a ``sleep`` with a marker
duration) is still alive. Two start lines: ``setsid nohup … &`` (the shell can exit before the
child has called setsid(), and the group kill takes it) and a start that returns only once the
child, in its new session, has written its pid (docs/agents.md). Prints one line per start line.
Only processes this script started are killed, by pid.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

MARK = "sleep 31.4159"  # the started process, found by its exact command line
STARTS = {
    "setsid nohup cmd &": f"setsid nohup {MARK} > /dev/null 2>&1 < /dev/null & echo started",
    "setsid, pid file written in the new session, shell waits for it": (
        f"setsid sh -c 'echo $$ > run.pid; exec {MARK}' > /dev/null 2>&1 < /dev/null &\n"
        "for i in $(seq 600); do [ -s run.pid ] && break; sleep 0.1; done; echo started"),
}
SETTLE_S = 0.3  # after the kill, before looking: a killed process is gone by then


def marked() -> set[int]:
    out = subprocess.run(["pgrep", "-xf", MARK], capture_output=True, text=True).stdout
    return {int(pid) for pid in out.split()}


def trial(start: str, cwd: str) -> bool:
    before = marked()
    shell = subprocess.Popen(["bash", "-c", start], cwd=cwd, start_new_session=True, stdout=subprocess.DEVNULL)
    shell.wait()
    try:
        os.killpg(shell.pid, signal.SIGKILL)  # what Codex does when the tool's shell exits
    except ProcessLookupError:
        pass
    time.sleep(SETTLE_S)
    started = marked() - before
    for pid in started:  # ours: started by this trial's shell and not there before it
        os.kill(pid, signal.SIGKILL)
    return bool(started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores, {args.trials} trials each")
    for name, start in STARTS.items():
        with tempfile.TemporaryDirectory() as cwd:
            alive = 0
            for _ in range(args.trials):
                Path(cwd, "run.pid").unlink(missing_ok=True)
                alive += trial(start, cwd)
        print(f"{name}: {alive} of {args.trials} survived the group kill", flush=True)


if __name__ == "__main__":
    main()
