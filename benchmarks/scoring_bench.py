"""Sealed scoring's cost: how long after a checkpoint is saved its live score is on record, less
the evaluation itself; and the official re-evaluation per checkpoint.

    python benchmarks/scoring_bench.py [--task t0|t6] [--checkpoints 8] [--from DIR]

A real session (runner, sandboxed agent, sandboxed scorer) whose command agent saves
``--checkpoints`` checkpoints two seconds apart through ``prepare.save_checkpoint``. For each:
the overhead is ``checkpoint_scored.ts - saved_at - eval_s`` (``saved_at`` is written into the
checkpoint by the kit; ``eval_s`` is the runner's own measure, from its request to the scorer to
the judged score: the fork of a fresh sandboxed child, the import, predict, the transfer of the
predictions and the judge; the child's own timing is its word and not used, issue 28), i.e. the
watcher's notice, the copy and snapshot and the wait in the queue. Target: under 1 s. The
official phase is timed from the agent's end to
``session_ended``: the tree stopped, live scores drained, every candidate re-evaluated (by the
warm live scorer where the session's device is the CPU; a new one on the GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyc_files  # noqa: E402

from runner.launch.spawn import create_session, spawn_local  # noqa: E402
from runner.sandbox.bwrap import status  # noqa: E402
from runner.wire.session_config import SessionConfig  # noqa: E402

CONFIGS = {  # build_model(config) of each task's baseline train.py
    "t0": '{"hidden": 64}',
    "t6": '{"lookback": prepare.LOOKBACK, "horizon": prepare.HORIZON, "kernel": 25}',
}
TARGET_S = 1.0

AGENT = """
import subprocess, sys, time
from pathlib import Path
Path("run_bench.py").write_text('''
import sys, time
import torch
import prepare
from train import build_model
config = CONFIG
if __name__ == "__main__":
    for k in range(N):
        torch.manual_seed(k)
        prepare.save_checkpoint(build_model(config), config, f"bench{k}")
        time.sleep(2.0)
''')
subprocess.run([sys.executable, "run_bench.py"], check=True)
"""


def prepare_home(home: Path, task: str, raw: Path | None) -> None:
    args = [sys.executable, "-m", "onegc_tui.cli", "prepare", task] + (["--from", str(raw)] if raw else [])
    out = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, ONEGC_HOME=str(home)), cwd=REPO)
    if out.returncode != 0:
        raise SystemExit(f"cannot prepare {task}: {out.stderr.strip()}")


def run(task: str, n: int, raw: Path | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="onegc-scorebench-") as tmp:
        home = Path(os.environ.get("KEEP_HOME") or tmp)
        prepare_home(home, task, raw)
        agent = home / "agent.py"
        agent.write_text(textwrap.dedent(AGENT).replace("CONFIG", CONFIGS[task]).replace("N)", f"{n})"))
        config = SessionConfig(session_id="bench", task=task, agent="command", budget_s=600,
                               command=[sys.executable, str(agent)])
        paths = create_session(config, home)
        spawn_local(paths, env=dict(os.environ, ONEGC_HOME=str(home)))
        deadline = time.monotonic() + 900
        while not paths.result.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        events = [json.loads(line) for line in paths.events.read_text().splitlines()]
        import torch

        overheads, evals = [], []
        for e in events:
            if e["type"] == "checkpoint_scored" and not e["official"]:
                if e.get("value") is None:
                    raise SystemExit(f"{e['name']} did not score: {e.get('error')}")
                saved = torch.load(paths.snapshots / e["name"] / "checkpoint.pt", weights_only=True)["saved_at"]
                overheads.append(e["ts"] - saved - e["eval_s"])
                evals.append(e["eval_s"])
        official = [e for e in events if e["type"] == "checkpoint_scored" and e["official"]]
        first = next((i for i, e in enumerate(events) if e["type"] == "checkpoint_scored" and e["official"]), len(events))
        agent_end = events[first - 1]["ts"]  # the last thing the session did before its official phase
        ended = next(e for e in events if e["type"] == "session_ended")
        return {"overheads": overheads, "evals": evals, "official": official,
                "official_phase_s": ended["ts"] - agent_end, "n_official": len(official)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="t0", choices=sorted(CONFIGS))
    ap.add_argument("--checkpoints", type=int, default=8)
    ap.add_argument("--from", dest="raw", type=Path, default=None,
                    help="raw files (t6: ETTh1.csv; default ../shared/data/etth1 for t6)")
    args = ap.parse_args()
    pyc_files.compile_sources()  # before anything is timed, as a user's first run writes them
    if not status().ok:
        print(f"no sandbox here: {status().detail}", file=sys.stderr)
        return 2
    raw = args.raw or (REPO.parent / "shared" / "data" / "etth1" if args.task == "t6" else None)
    r = run(args.task, args.checkpoints, raw)
    o = sorted(r["overheads"])
    print(f"{args.task}: {len(o)} live scores on {os.cpu_count()} cores (load {os.getloadavg()[0]:.2f})")
    print(f"  live overhead (checkpoint saved -> score on record, less the evaluation): "
          f"median {statistics.median(o) * 1000:.0f} ms, max {o[-1] * 1000:.0f} ms; "
          f"target < {TARGET_S * 1000:.0f} ms: {'met' if o[-1] < TARGET_S else 'MISSED'}")
    print("  the evaluation itself (fork, import, predict, transfer, judge; measured by the runner): "
          f"median {statistics.median(r['evals']) * 1000:.0f} ms")
    per = r["official_phase_s"] / max(1, r["n_official"])
    print(f"  official phase: {r['official_phase_s']:.2f} s for {r['n_official']} re-evaluations "
          f"({per:.2f} s each, the stop of the agent's tree included); their evaluations: "
          + ", ".join(f"{e['eval_s'] * 1000:.0f} ms" for e in r["official"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
