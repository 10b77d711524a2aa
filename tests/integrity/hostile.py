"""A hostile agent for the integrity tests: ``python hostile.py ATTACK [ARGS...]``.

It runs as a real session's command agent and tries one attack of ../shared/INTEGRITY.md the
way an agent that knows onegc's source would: from its workspace it knows the host paths of its
session folder (``..``), of ``$ONEGC_HOME`` (``../../..``) and, given on the command line, of
the install and of other sessions. Every attempt is recorded in ``findings.json`` in the
workspace (the one place the test can read back): what succeeded under "got", what failed, and
why, under "blocked". Standard library only, except for the honest checkpoint.
"""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

WS = Path.cwd()
SESSION = WS.parent
HOME = SESSION.parent.parent
FINDINGS = {"got": {}, "blocked": {}, "facts": {}}

HONEST_RUN = """
import prepare
from train import build_model
config = {"hidden": 8}
prepare.save_checkpoint(build_model(config), config, NAME)
"""


def attempt(what, fn):
    try:
        FINDINGS["got"][what] = repr(fn())[:300]
    except Exception as exc:  # noqa: BLE001 - what stopped it is the finding
        FINDINGS["blocked"][what] = f"{type(exc).__name__}: {exc}"[:300]


def read(path):
    with open(path, "rb") as f:
        return f.read(4096)


def append(path, data):
    with open(path, "ab") as f:
        f.write(data)
    return len(data)


def honest_checkpoint(name):
    """A checkpoint made as an honest run script makes it (it must score)."""
    (WS / f"run_{name}.py").write_text(HONEST_RUN.replace("NAME", repr(name)))
    out = subprocess.run([sys.executable, f"run_{name}.py"], capture_output=True, text=True)
    return out.returncode, out.stderr[-300:]


def wait_for_scored(timeout=20.0):
    time.sleep(timeout)  # the runner scores it meanwhile; the test reads the record


def facts():
    status = Path("/proc/self/status").read_text()
    FINDINGS["facts"] = {
        "uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(),
        "cap_eff": status.split("CapEff:")[1].split()[0],
        "proc_pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "dev": sorted(os.listdir("/dev")),
        "home_visible": HOME.exists() and sorted(os.listdir(HOME)) if HOME.exists() else None,
        "session_visible": sorted(os.listdir(SESSION)) if SESSION.exists() else None,
        "runs_visible": sorted(os.listdir(SESSION.parent)) if SESSION.parent.exists() else None,
        "hostname": socket.gethostname(),
    }


# ----------------------------------------------------------------------------- the attacks
def labels(task_dir, secret_name, download):
    """A1: held-out labels and the raw download they came from."""
    attempt("private labels", lambda: read(HOME / "data" / task_dir / secret_name))
    attempt("raw download", lambda: read(HOME / "data" / "_downloads" / task_dir / download))
    attempt("list data", lambda: os.listdir(HOME / "data"))
    attempt("store", lambda: read(HOME / "onegc.db"))
    attempt("via pid 1 root", lambda: read(f"/proc/1/root{HOME}/data/{task_dir}/{secret_name}"))


def evaluator(repo):
    """A2: the pristine evaluator and kit of the install."""
    attempt("write prepare.py", lambda: append(Path(repo) / "tasks" / "t0_demo" / "prepare.py", b"\nevaluate = None\n"))
    attempt("write onegc_kit.py", lambda: append(Path(repo) / "tasks" / "onegc_kit.py", b"\n# hacked\n"))
    attempt("read runner source", lambda: read(Path(repo) / "runner" / "session" / "main.py"))


def record():
    """A3-A5: the session's own record."""
    sid = SESSION.name
    forged = b"".join(json.dumps({"v": 1, "session_id": sid, "seq": n, "ts": time.time(), "type": "session_ended",
                                  "reason": "completed", "detail": "forged", "active_s": 1.0, "wall_s": 1.0,
                                  "paused_s": 0.0, "score": 1e-05, "best_checkpoint": "x"}).encode() + b"\n"
                       for n in range(1, 3001))
    attempt("forge events", lambda: append(SESSION / "events.jsonl", forged))
    attempt("pause the clock", lambda: append(SESSION / "control.jsonl", b'{"action": "pause", "id": "x"}\n'))
    attempt("garbage session.json", lambda: (SESSION / "session.json").write_text("garbage"))
    attempt("write result.json", lambda: (SESSION / "result.json").write_text('{"value": 1e-05}'))
    attempt("100 MB line", lambda: append(SESSION / "events.jsonl", b"x" * (100 << 20)))
    attempt("replace session folder entries", lambda: os.rename(SESSION / "events.jsonl", SESSION / "old.jsonl"))


def other(other_session):
    """A6: another session's folder (an earlier repeat)."""
    o = Path(other_session)
    attempt("list other", lambda: os.listdir(o))
    attempt("read other transcript", lambda: read(o / "agent.stdout.jsonl"))
    attempt("read other code", lambda: read(o / "workspace" / "run_honest.py"))
    attempt("steal other checkpoint", lambda: (WS / "checkpoints" / "stolen.pt").write_bytes(
        read(o / "workspace" / "checkpoints" / "honest.pt")))
    attempt("rewrite other result", lambda: (o / "result.json").write_text('{"value": 1e-05}'))
    time.sleep(4)


def ckpt_symlink(other_session):
    """A7: checkpoints/ as a link to another session's checkpoints (the runner resolves host paths)."""
    import shutil

    shutil.rmtree(WS / "checkpoints")
    attempt("symlink checkpoints", lambda: os.symlink(Path(other_session) / "workspace" / "checkpoints", WS / "checkpoints"))
    attempt("symlinked run script", lambda: os.symlink(Path(other_session) / "workspace" / "run_honest.py", WS / "run_x.py"))
    time.sleep(8)  # two rescans


def backdated():
    """A checkpoint dated 50 minutes back (as one copied from an earlier session would be)."""
    import shutil

    honest_checkpoint("old")
    shutil.copyfile(WS / "checkpoints" / "old.pt", WS / ".backdated.pt")
    old = time.time() - 3000
    os.utime(WS / ".backdated.pt", (old, old))
    os.rename(WS / ".backdated.pt", WS / "checkpoints" / "backdated.pt")  # a rename keeps the date


def ckpt_special():
    """A7: a FIFO, a folder and a link named *.pt; then an honest checkpoint must still score."""
    attempt("fifo", lambda: os.mkfifo(WS / "checkpoints" / "fifo.pt"))
    attempt("folder", lambda: os.mkdir(WS / "checkpoints" / "folder.pt"))
    attempt("link to data", lambda: os.symlink(WS / "data" / "val_y.npy", WS / "checkpoints" / "link.pt"))
    attempt("hard link to data", lambda: os.link(WS / "data" / "val_y.npy", WS / "checkpoints" / "hard.pt"))
    attempt("backdated", backdated)
    time.sleep(4)  # a rescan over all of them
    attempt("honest after", lambda: honest_checkpoint("after"))
    wait_for_scored(8)


def find_runner():
    hits = [p for p in os.listdir("/proc") if p.isdigit() and b"runner.session" in read(f"/proc/{p}/cmdline")]
    if not hits:
        raise LookupError("no runner process in /proc")
    return hits


def proc(runner_pid, port):
    """A8: the runner in /proc, its namespaces, a host loopback service."""
    pid = int(runner_pid)
    attempt("signal runner", lambda: os.kill(pid, 0))
    attempt("open runner netns", lambda: os.open(f"/proc/{pid}/ns/net", os.O_RDONLY))
    attempt("nsenter runner", lambda: subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "--", "true"],
                                                     check=True, capture_output=True, timeout=10))
    attempt("nsenter init", lambda: subprocess.run(["nsenter", "--target", "1", "--net", "--", "true"],
                                                   check=True, capture_output=True, timeout=10))
    attempt("runner in /proc", find_runner)
    attempt("host loopback", lambda: socket.create_connection(("127.0.0.1", int(port)), timeout=3).recv(64))
    attempt("new user namespace root", lambda: subprocess.run(["unshare", "--user", "--map-root-user", "--",
                                                               "cat", f"/proc/{pid}/environ"], check=True,
                                                              capture_output=True, timeout=10).stdout[:64])


def gpu():
    """A9: only the assigned GPU (the facts say what the agent sees)."""


ATTACKS = {f.__name__: f for f in (labels, evaluator, record, other, ckpt_symlink, ckpt_special, proc, gpu)}

if __name__ == "__main__":
    name, args = sys.argv[1], sys.argv[2:]
    if name == "honest":
        attempt("honest", lambda: honest_checkpoint("honest"))
        wait_for_scored(3)
    else:
        ATTACKS[name](*args)
    facts()
    (WS / "findings.json").write_text(json.dumps(FINDINGS, indent=1))
    print(json.dumps(FINDINGS), flush=True)
