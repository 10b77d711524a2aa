"""``onegc verify`` of flooded and capped sessions stays within its bounds (issue 48, docs/verify.md).

    python benchmarks/verify_bench.py                # a few minutes on 2 cores
    python benchmarks/verify_bench.py --scale 5      # a 500 MB output flood, 1 500 checkpoints
    python benchmarks/verify_bench.py --json out.json

Three real sessions through the real runner (a sealed command agent on t0, flood_bench.py's), then
``onegc verify`` of each in a subprocess, its peak RSS measured:

- **small**: 5 checkpoints, a minute apart's worth of training: the reference.
- **output**: 3 checkpoints, then ``100 MB × scale`` of stdout (its record capped,
  runner/wire/record_caps.py).
- **checkpoints**: ``300 × scale`` checkpoints at once, the session's checkpoint cap at 100 (the
  live queue thins its backlog, the official phase caps its re-evaluations).

Bounds (docs/verify.md): evaluations ≤ the session's own (live scores + official re-evaluations);
time ≤ the scorer's start-up + that many evaluations × the task's eval timeout (the bound of the
session's own official phase); peak RSS ≤ the small session's + :data:`ALLOWANCE_MB`. The time is
also given against the seconds the session's own evaluations took (their ``eval_s``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from flood_bench import OUTPUT_AGENT, checkpoint_agent, mb, new_home, report, row, run_session  # noqa: E402

ALLOWANCE_MB = 200  # verify over a flooded session may hold this much more than over a small one
ONEGC = [sys.executable, "-m", "onegc_tui.cli"]
PEAK = ("import resource, subprocess, sys, time; t = time.monotonic(); r = subprocess.run(sys.argv[1:], "
        "capture_output=True, text=True); print(r.stdout + r.stderr[-3000:]); print('RC', r.returncode); "
        "print('WALL', time.monotonic() - t); print('RSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)")


def checkpoints_then_output(count: int, lines: int) -> str:
    """A command agent that saves ``count`` checkpoints, then prints ``lines`` 200-byte lines."""
    saves = checkpoint_agent(count)
    last = 'sys.exit(subprocess.run([sys.executable, "run_flood.py"]).returncode)'
    assert last in saves, "flood_bench's checkpoint agent changed"
    return saves.replace(last, 'subprocess.run([sys.executable, "run_flood.py"])') + OUTPUT_AGENT.replace("LINES", str(lines))


def verify(home: Path, sid: str) -> dict:
    """``onegc verify SID`` over ``home``: its line, exit code, wall time and peak RSS."""
    done = subprocess.run([sys.executable, "-c", PEAK, *ONEGC, "verify", sid],
                          env={**os.environ, "ONEGC_HOME": str(home)}, capture_output=True, text=True, check=True)
    out = done.stdout
    return {"line": next((line for line in out.splitlines() if line.startswith(f"{sid}:")), out[-500:]),
            "rc": int(re.search(r"^RC (\d+)$", out, re.M).group(1)),  # type: ignore[union-attr]
            "wall": float(re.search(r"^WALL ([\d.]+)$", out, re.M).group(1)),  # type: ignore[union-attr]
            "rss": int(re.search(r"^RSS (\d+)$", out, re.M).group(1))}  # type: ignore[union-attr]


def recorded(folder: Path) -> tuple[int, float, int]:
    """(the session's evaluations, the seconds they took, the events.jsonl bytes)."""
    from runner.scoring.rescore import read_record
    from runner.wire.paths import SessionPaths

    record = read_record(SessionPaths(folder))
    seconds = sum(e.eval_s or 0.0 for e in (*record.live.values(), *record.official.values()))
    return record.evaluations, seconds, (folder / "events.jsonl").stat().st_size


def measure(home: Path, sid: str, base_rss: int | None, what: str) -> tuple[list[dict], int]:
    from runner.scoring.scorer import START_TIMEOUT_S
    from tasks import get_task

    folder = home / "runs" / sid
    evaluations, seconds, size = recorded(folder)
    found = verify(home, sid)
    made = int(m.group(1)) if (m := re.search(r"\((\d+) of \d+ evaluations", found["line"])) else -1
    bound_s = START_TIMEOUT_S + evaluations * get_task("t0").eval_timeout_s
    rows = [row(f"{what}: onegc verify says: {found['line'][len(sid) + 2:][:90]}", f"rc {found['rc']}", "rc 0",
                float(found["rc"]), found["rc"] == 0),
            row(f"  evaluations made vs the session's own ({mb(size)} of events.jsonl)", str(made), f"≤ {evaluations}",
                made / max(1, evaluations), 0 <= made <= evaluations),
            row(f"  wall time (the session's own evaluations took {seconds:.0f} s: × {found['wall'] / max(seconds, 1):.1f})",
                f"{found['wall']:.0f} s", f"≤ {bound_s:.0f} s", found["wall"] / bound_s, found["wall"] <= bound_s)]
    if base_rss is not None:
        bound = base_rss + ALLOWANCE_MB * 1e6
        rows.append(row("  peak RSS vs the small session's + allowance", mb(found["rss"]),
                        f"≤ {mb(bound)}", found["rss"] / bound, found["rss"] <= bound))
    else:
        rows.append(row("  peak RSS (the reference)", mb(found["rss"]), "-", 0.0, True))
    return rows, found["rss"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="flood sizes × this")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="onegc-verify-bench-"))
    rows: list[dict] = []
    try:
        t0 = time.monotonic()
        home = new_home(root)
        run_session(home, "small", checkpoint_agent(5, pause=1.0), 60)
        lines = int(500_000 * args.scale)
        run_session(home, "output", checkpoints_then_output(3, lines), 60)
        count = int(300 * args.scale)
        run_session(home, "ckpts", checkpoint_agent(count), 60, max_checkpoints=100)
        print(f"[sessions: {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}]", file=sys.stderr, flush=True)
        small, base = measure(home, "small", None, "small session (5 checkpoints)")
        rows += small
        rows += measure(home, "output", base, f"output flood ({mb(lines * 200)} of stdout, 3 checkpoints)")[0]
        rows += measure(home, "ckpts", base, f"checkpoint flood ({count} saved, the session's cap 100)")[0]
        print(f"[verify: {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}]", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return report(rows, args.json, bound_width=22)


if __name__ == "__main__":
    sys.exit(main())
