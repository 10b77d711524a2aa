"""The harness's own memory under an agent's floods (issue 38 part 2, INTEGRITY.md R2).

    python benchmarks/memory_flood_bench.py [--answer-mib 768] [--line-mib 512]

Three real t0 sessions of the command agent, each run by a real runner (``runner.launch.spawn``):

- ``honest``: one honest checkpoint; the runner's and the scorer worker's peak RSS with nothing
  hostile, the base of the two below;
- ``answer``: a checkpoint whose run script, imported by the scorer's child, writes an answer of
  ``--answer-mib`` MiB on the child's answer pipe (issue 38: 768 MiB grew the harness by 3.4 GiB);
- ``line``: the agent prints one stdout line of ``--line-mib`` MiB (issue 38: 512 MiB grew the
  runner by 2 GiB).

Peak RSS is each process's ``VmHWM`` (/proc/PID/status), read until it exits: the runner, and the
scorer's worker (the zygote that reads the child's answer; harness code, in the scorer's sandbox).
Each flood's growth over ``honest`` is printed beside its stated bound:

- an answer: the runner reads at most the largest honest answer for the parts asked, each part
  bounded on its own (``TaskJudge.answer_bytes``: t0's val is 22 012 bytes; ``probe_bytes``: the
  canaries' probe of a default session, 13 284), plus its header line (1 MiB at most) and one
  read (1 MiB); the worker stops the child past that answer plus a 64 KiB header. Bound: 2 MiB +
  the answer's bound, for each of the two processes;
- a line: the runner holds ``runner.wire.lines.LINE_LIMIT`` (4 MiB) of one line; the bound stated
  is 5 × that (the bytes, the pipe's read buffer, their decode, the adapter's copy of the text,
  the event's clip), 20 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

AGENT = r'''
import os, subprocess, sys, time
from pathlib import Path
FLOOD, MIB = sys.argv[1], int(sys.argv[2])
HONEST = """
import prepare
from train import build_model
config = {"hidden": 8}
prepare.save_checkpoint(build_model(config), config, NAME)
"""
# the scorer's child finds its answer pipe through the interpreter's frames and floods it
FORGE = """
import json, os, sys
def build_model(config):
    f = sys._getframe()
    while f is not None and "result_fd" not in f.f_locals:
        f = f.f_back
    if f is not None:
        fd, n = f.f_locals["result_fd"], MIB << 20
        os.write(fd, json.dumps({"ok": True, "parts": [{"split": "val", "bytes": n}], "bytes": n}).encode() + b"\\n")
        chunk = bytes(8 << 20)
        for _ in range(n // len(chunk)):
            os.write(fd, chunk)
        os._exit(0)
    import train
    return train.build_model(config)
if __name__ == "__main__":
    import prepare
    config = {"hidden": 8}
    prepare.save_checkpoint(build_model(config), config, "flood")
"""
def run(name, source):
    Path(f"run_{name}.py").write_text(source.replace("NAME", repr(name)).replace("MIB", str(MIB)))
    subprocess.run([sys.executable, f"run_{name}.py"], check=True)
run("honest", HONEST)
if FLOOD == "answer":
    run("flood", FORGE)
elif FLOOD == "line":
    chunk = b"x" * (1 << 20)
    for _ in range(MIB):
        sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()
time.sleep(15)  # scored before the end
'''


def hwm_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def workers(runner_pid: int) -> list[int]:
    import psutil

    try:
        kids = psutil.Process(runner_pid).children(recursive=True)
    except psutil.Error:
        return []
    out = []
    for p in kids:
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        if any(a.endswith("score_worker.py") for a in cmd) and "--fd" in cmd:
            out.append(p.pid)
    return out


def session(home: Path, flood: str, mib: int) -> dict:
    from runner.launch.spawn import create_session, spawn_local
    from runner.wire.session_config import SessionConfig

    agent = home / "agent.py"
    agent.write_text(AGENT)
    config = SessionConfig(session_id=f"mem-{flood}", task="t0", agent="command", budget_s=300, pace_s=0.0,
                           command=[sys.executable, str(agent), flood, str(mib)])
    paths = create_session(config, home)
    spawn_local(paths)
    peaks = {"runner": 0, "worker": 0}
    runner_pid = None
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if runner_pid is None and paths.runner_info.exists():
            try:
                runner_pid = int(json.loads(paths.runner_info.read_text())["pid"])
            except (ValueError, KeyError):
                pass
        if runner_pid is not None:
            peaks["runner"] = max(peaks["runner"], hwm_kib(runner_pid) or 0)
            for w in workers(runner_pid):
                peaks["worker"] = max(peaks["worker"], hwm_kib(w) or 0)
            if hwm_kib(runner_pid) is None and paths.result.exists():
                break
        time.sleep(0.05)
    record = [json.loads(line) for line in paths.events.read_text().splitlines()]
    ended = record[-1]
    scored = [e for e in record if e["type"] == "checkpoint_scored" and not e.get("official")]
    return {"peaks_kib": peaks, "end": ended.get("reason"),
            "flood_error": next((e.get("error") for e in scored if e["name"].startswith("flood")), None),
            "line_cut": sum(e.get("count", 1) for e in record if e["type"] == "warning" and e["code"] == "line_cut")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answer-mib", type=int, default=768)
    ap.add_argument("--line-mib", type=int, default=512)
    args = ap.parse_args()
    from runner.integrity.canaries import session_judge
    from runner.scoring.scorer import TaskJudge
    from runner.wire.lines import LINE_LIMIT
    from tasks import get_task

    with tempfile.TemporaryDirectory(prefix="onegc-mem-") as tmp:
        home = Path(tmp) / "home"
        data = home / "data" / "t0_demo"
        subprocess.run([sys.executable, str(REPO / "tasks/t0_demo/prepare.py"), "--data-dir", str(data)], check=True,
                       capture_output=True)
        os.environ["ONEGC_HOME"] = str(home)
        # a default session shows val with its canaries mixed in, in one pass: the model's scores, bounded
        judge = TaskJudge(get_task("t0"), data)
        judge.canaries = session_judge("t0_demo", "val", Path(tmp), data, on=True)
        (folder,) = judge.write_passes("val", Path(tmp) / "passes-val")
        answer_bound = judge.canaries.kind.answer_bytes(judge.probe_rows(folder / "val")) + (2 << 20)
        line_bound = 5 * LINE_LIMIT
        runs = {name: session(home, name, mib) for name, mib in
                (("honest", 0), ("answer", args.answer_mib), ("line", args.line_mib))}
        shutil.rmtree(home / "runs", ignore_errors=True)
    base = runs["honest"]["peaks_kib"]
    print(f"{'flood':<8} {'process':<7} {'peak RSS':>10} {'growth':>9} {'bound':>9} {'ratio':>6}  end / what it says")
    for name, bound in (("honest", None), ("answer", answer_bound), ("line", line_bound)):
        r = runs[name]
        for proc in ("runner", "worker"):
            peak = r["peaks_kib"][proc]
            growth = max(0, peak - base[proc]) << 10
            ratio = f"{growth / bound:.2f}" if bound else "-"
            said = r["flood_error"] if name == "answer" else (f"{r['line_cut']} line_cut warning" if name == "line" else "")
            print(f"{name:<8} {proc:<7} {peak / 1024:>8.0f} MiB {growth / 2**20:>7.1f} MiB "
                  f"{(bound or 0) / 2**20:>7.1f} MiB {ratio:>6}  {r['end']}: {(said or '')[:70]}")


if __name__ == "__main__":
    main()
