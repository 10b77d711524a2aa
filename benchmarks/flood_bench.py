"""Floods on purpose (issue 38 parts 3-5, INTEGRITY.md R2): the record, the post-session work, the
snapshots and the readers stay within their stated bounds whatever an agent does.

    python benchmarks/flood_bench.py                 # a few minutes on 2 cores
    python benchmarks/flood_bench.py --scale 5       # the issue's sizes: 500 MB of stdout, ...
    python benchmarks/flood_bench.py --only output,readers --json out.json

Four floods, each through the real runner (a sealed command agent on t0) or the real CLI:

- **output**: the agent prints ``100 MB × scale`` of 200-byte lines in a 60 s session. Figures:
  ``events.jsonl``'s transcript lines and ``agent.stdout.jsonl`` against their caps
  (runner/wire/record_caps.py), and ``onegc.db`` against the byte cap once the session is ingested.
- **checkpoints**: the agent saves ``300 × scale`` checkpoints at once in a 60 s session. Figure:
  the runner's time after the agent's last save until ``session_ended``, against its bound
  (the live scores' drain + the official phase's time bound + the margin a cut evaluation's
  answer gets, runner/scoring/official.py), and the re-evaluations made against the cap.
- **official** (issue 46 part 6; T6 on ETTh1 from ``--from``, default ``shared/data``): the
  hostile agent tests/integrity/hostile_flood.py in a 120 s session — ``copies``: one better
  checkpoint (``run_best``) among 100 byte-identical copies of a worse one whose model sleeps
  3 s on its first call; ``distinct``: 12 distinct checkpoints whose model hangs. Figures: whether
  ``run_best`` is the official result, the official phase's time against its bound, the
  re-evaluations, and the end after the agent's last act against drain + bound + margin.
- **snapshots**: a workspace of ``16 MiB × scale`` of code and 10 checkpoints with it unchanged.
  Figure: the snapshot objects' bytes against the copies a snapshot per checkpoint made
  (10 × the code), and against the session's cap.
- **readers**: a home flooded before the caps existed (``500 000 × scale`` transcript events in one
  session's ``events.jsonl``, as the issue's 5.2 M): the peak RSS of ``onegc reindex``,
  ``onegc export --format eval`` and ``--format sqlite``, ``onegc report`` and ``onegc history``
  over it, against the same command over one small session plus :data:`READER_ALLOWANCE_MB`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SECTIONS = ("output", "checkpoints", "snapshots", "readers", "official")
END_MARGIN_S = 30  # closing the scorer, the unofficial figure's bookkeeping, writing the record
READER_ALLOWANCE_MB = 200  # a reader over a flooded session may hold this much more than over a small one
ONEGC = [sys.executable, "-m", "onegc_tui.cli"]

OUTPUT_AGENT = """
import sys
line = "flood " + "x" * 193 + "\\n"
for _ in range(LINES):
    sys.stdout.write(line)
sys.stdout.flush()
"""

RUN_SCRIPT = '''
import prepare, time
from train import build_model


def save(name):
    config = {"hidden": 8}
    prepare.save_checkpoint(build_model(config), config, name)


if __name__ == "__main__":
    import os
    for i in range(CODE_FILES):
        os.makedirs("lib", exist_ok=True)
        with open(f"lib/blob_{i}.py", "w") as f:
            f.write(f"# file {i}" + chr(10) + ("x = 1  # padding to a megabyte of code" + chr(10)) * 27_000)
    for i in range(COUNT):
        save(f"c{i:04d}")
        time.sleep(PAUSE)
'''


def checkpoint_agent(count: int, code_files: int = 0, pause: float = 0.0) -> str:
    script = (RUN_SCRIPT.replace("CODE_FILES", str(code_files)).replace("COUNT", str(count))
              .replace("PAUSE", repr(pause)))
    return f"""
import subprocess, sys
open("run_flood.py", "w").write({script!r})
sys.exit(subprocess.run([sys.executable, "run_flood.py"]).returncode)
"""


def new_home(root: Path) -> Path:
    """A home with t0's data prepared (tasks/t0_demo/prepare.py, seconds)."""
    home = root / "home"
    home.mkdir()
    env = {**os.environ, "ONEGC_HOME": str(home)}
    subprocess.run([*ONEGC, "prepare", "t0"], env=env, check=True, capture_output=True)
    return home


def run_session(home: Path, sid: str, agent_body: str | None, budget_s: float, **fields) -> tuple[Path, float]:
    """A real session of the command agent (``agent_body``: its script; None: ``command`` and
    ``task`` are in ``fields``); returns its folder and its wall time."""
    from runner.launch.spawn import create_session, spawn_local
    from runner.wire.session_config import SessionConfig

    if agent_body is not None:
        agent = home.parent / f"{sid}.py"
        agent.write_text(textwrap.dedent(agent_body))
        fields = {"task": "t0", "command": [sys.executable, str(agent)], **fields}
    os.environ["ONEGC_HOME"] = str(home)
    paths = create_session(SessionConfig(session_id=sid, agent="command", budget_s=budget_s, **fields), home)
    t0 = time.monotonic()
    spawn_local(paths)
    deadline = t0 + budget_s + 1200
    while not paths.result.exists() or not _ended(paths.events):
        if time.monotonic() > deadline:
            raise SystemExit(f"{sid}: no session_ended after {deadline - t0:.0f} s")
        time.sleep(0.5)
    return paths.root, time.monotonic() - t0


def _ended(events: Path) -> bool:
    with open(events, "rb") as f:
        f.seek(max(0, os.path.getsize(events) - 65536))
        return b'"type":"session_ended"' in f.read()


def read_events(folder: Path) -> list[dict]:
    with open(folder / "events.jsonl", "rb") as f:
        return [json.loads(line) for line in f if b'"type":"transcript"' not in line]


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def row(what: str, figure: str, bound: str, ratio: float, met: bool) -> dict:
    return {"what": what, "figure": figure, "bound": bound, "ratio": round(ratio, 3), "met": met}


# ----------------------------------------------------------------------------- the floods
def output_flood(root: Path, scale: float) -> list[dict]:
    from runner.wire.record_caps import EVENTS_FILE_MULTIPLE, RecordCaps

    home = new_home(root)
    lines = int(500_000 * scale)  # 200 bytes each: 100 MB × scale
    folder, wall = run_session(home, "output", OUTPUT_AGENT.replace("LINES", str(lines)), 60)
    caps = RecordCaps.for_budget(60)
    transcript = 0
    with open(folder / "events.jsonl", "rb") as f:
        for line in f:
            if b'"type":"transcript"' in line:
                transcript += len(line)
    events_size = (folder / "events.jsonl").stat().st_size
    raw = (folder / "agent.stdout.jsonl").stat().st_size
    cut = [e for e in read_events(folder) if e["type"] == "truncated"]

    def dropped(stream: str) -> int:
        return sum(e["dropped"] for e in cut if e["stream"] == stream)
    subprocess.run([*ONEGC, "sessions", "--json"], env={**os.environ, "ONEGC_HOME": str(home)}, check=True,
                   capture_output=True)
    db = sum(p.stat().st_size for p in home.glob("onegc.db*"))
    whole_bound = EVENTS_FILE_MULTIPLE * caps.event_bytes + 1e6  # the runner's own events: a minute of them
    bound_db = 6 * caps.event_bytes  # stated: the store keeps each line, its transcript row and its search index
    printed = lines * 200
    return [
        row(f"output flood: {mb(printed)} of stdout in {wall:.0f} s; events.jsonl's transcript lines vs the byte cap",
            mb(transcript), f"≤ {EVENTS_FILE_MULTIPLE} × {mb(caps.event_bytes)}",
            transcript / (EVENTS_FILE_MULTIPLE * caps.event_bytes),
            transcript <= EVENTS_FILE_MULTIPLE * caps.event_bytes),
        row(f"  events.jsonl whole ({len(cut)} truncated events counting {dropped('transcript'):,} transcript events and "
            f"{dropped('stdout'):,} raw lines left out)",
            mb(events_size), f"≤ {EVENTS_FILE_MULTIPLE} × cap + 1 MB", events_size / whole_bound,
            events_size <= whole_bound),
        row("  agent.stdout.jsonl vs the raw byte cap", mb(raw), f"≤ {mb(caps.raw_bytes)}", raw / caps.raw_bytes,
            raw <= caps.raw_bytes),
        row("  onegc.db (+WAL) after ingest vs the byte cap", mb(db), f"≤ 6 × {mb(caps.event_bytes)}",
            db / bound_db, db <= bound_db),
    ]


def checkpoint_flood(root: Path, scale: float) -> list[dict]:
    from runner.scoring.live import LIVE_SCORE_DRAIN_S
    from runner.scoring.official import evaluation_cap, phase_seconds
    from runner.scoring.scorer import DEADLINE_MARGIN_S

    home = new_home(root)
    count = int(300 * scale)
    folder, wall = run_session(home, "ckpts", checkpoint_agent(count), 60)
    evs = read_events(folder)
    found = [e for e in evs if e["type"] == "checkpoint_found"]
    official = [e for e in evs if e["type"] == "checkpoint_scored" and e.get("official")]
    last_save = max(e["ts"] for e in found)
    delay = evs[-1]["ts"] - last_save
    cap = evaluation_cap(60)
    phase = phase_seconds(60)
    bound = LIVE_SCORE_DRAIN_S + phase + DEADLINE_MARGIN_S + END_MARGIN_S
    return [
        row(f"checkpoint flood: {len(found)} checkpoints found; the runner's time after the last until session_ended",
            f"{delay:.0f} s", f"≤ {bound:.0f} s (drain {LIVE_SCORE_DRAIN_S:.0f} + phase {phase:.0f} + margins)",
            delay / bound, delay <= bound),
        row("  official re-evaluations vs the post-session cap", str(len(official)), f"≤ {cap}", len(official) / cap,
            len(official) <= cap),
    ]


def snapshot_flood(root: Path, scale: float) -> list[dict]:
    from runner.scoring.snapshots import SNAPSHOT_CAP_BYTES

    home = new_home(root)
    files = max(1, int(16 * scale))
    folder, wall = run_session(home, "snaps", checkpoint_agent(10, code_files=files, pause=0.5), 60)
    stored = sum(p.stat().st_size for p in (folder / "snapshots" / "objects").iterdir())
    code = sum(p.stat().st_size for p in (folder / "workspace" / "lib").iterdir())
    snaps = sum(1 for e in read_events(folder) if e["type"] == "checkpoint_found")
    naive = snaps * code
    return [
        row(f"snapshot flood: {snaps} checkpoints of a {mb(code)} workspace; snapshot objects vs a copy each",
            mb(stored), f"≤ 1 copy ({mb(code)}) + 2 MB; a copy each: {mb(naive)}", stored / (code + 2e6),
            stored <= code + 2e6),
        row("  snapshot objects vs the session's cap", mb(stored), f"≤ {mb(SNAPSHOT_CAP_BYTES)}",
            stored / SNAPSHOT_CAP_BYTES, stored <= SNAPSHOT_CAP_BYTES),
    ]


def flooded_home(root: Path, name: str, transcript_events: int) -> Path:
    """A home with one ended t0 session whose events.jsonl holds ``transcript_events`` transcript
    lines, written without caps (a home from before them), and a scored checkpoint."""
    from runner.launch.spawn import create_session
    from runner.wire.jsonl import EventWriter
    from runner.wire.session_config import SessionConfig

    home = root / name
    paths = create_session(SessionConfig(session_id="s1", task="t0", agent="command", budget_s=600,
                                         command=["true"]), home)
    clock = iter(range(10**9))
    w = EventWriter(paths.events, "s1", clock=lambda: 1.7e9 + next(clock) * 0.001)
    w.emit("session_started", task="t0", agent="command", budget_s=600, grace_s=30, contract={"sealed": True})
    w.emit("agent_started", pid=1, argv=["agent"], containment="bwrap")
    for i in range(transcript_events):
        kind = ("tool_call", "tool_result", "text")[i % 3]
        w.emit("transcript", role="assistant", kind=kind, text=f"line {i} " + "x" * 180, call_id=f"c{i // 3}",
               raw_line=i + 1)
    w.emit("checkpoint_found", name="a-1", path="snapshots/a-1/checkpoint.pt", snapshot="snapshots/a-1",
           budget_elapsed_s=10.0)
    w.emit("checkpoint_scored", name="a-1", value=0.9, metric="accuracy", split="val", budget_elapsed_s=10.0)
    w.emit("checkpoint_scored", name="a-1", value=0.9, metric="accuracy", split="val", budget_elapsed_s=10.0,
           official=True)
    w.emit("session_ended", reason="completed", active_s=600, wall_s=600, paused_s=0, score=0.9, best_checkpoint="a-1")
    w.close()
    paths.result.write_text(json.dumps({"end_reason": "completed"}))
    return home


READERS = {
    "reindex": ["reindex"],
    "export eval": ["export", "--format", "eval", "-o", "OUT.eval"],
    "export sqlite": ["export", "--format", "sqlite", "-o", "OUT.db"],
    "report": ["report", "-o", "OUT.html"],
    "history": ["history", "--demo", "--format", "json"],
}
PEAK = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
        "sys.stderr.write(r.stderr.decode()[-2000:]) if r.returncode else None; "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 if r.returncode == 0 else -1)")


def peak_rss(home: Path, args: list[str]) -> int:
    """The peak RSS (bytes) of one onegc command over ``home`` (its largest process)."""
    out = home.parent / f"out-{home.name}"
    argv = [a.replace("OUT", str(out)) for a in args]
    done = subprocess.run([sys.executable, "-c", PEAK, *ONEGC, *argv], env={**os.environ, "ONEGC_HOME": str(home)},
                          capture_output=True, text=True, check=True)
    value = int(done.stdout.strip().splitlines()[-1])
    if value < 0:
        raise SystemExit(f"onegc {' '.join(args)} failed over {home}: {done.stderr[-500:]}")
    return value


def readers(root: Path, scale: float) -> list[dict]:
    n = int(500_000 * scale)
    small, big = flooded_home(root, "small", 300), flooded_home(root, "big", n)
    size = (big / "runs" / "s1" / "events.jsonl").stat().st_size
    rows = []
    for name, args in READERS.items():
        base, flooded = peak_rss(small, args), peak_rss(big, args)
        bound = base + READER_ALLOWANCE_MB * 1e6
        rows.append(row(f"reader peak RSS over a pre-cap flood ({n:,} events, {mb(size)}): onegc {name}", mb(flooded),
                        f"≤ {mb(bound)} (small home {mb(base)} + {READER_ALLOWANCE_MB} MB)", flooded / bound,
                        flooded <= bound))
    return rows


def official_flood(root: Path, scale: float, raw: Path = REPO.parent / "shared" / "data") -> list[dict]:
    """The issue's flood of the official phase on T6 (see the module), and a flood of hanging models."""
    from runner.scoring.live import LIVE_SCORE_DRAIN_S
    from runner.scoring.scorer import DEADLINE_MARGIN_S
    from tests.integrity import causal_models, hostile_flood

    if not (raw / "etth1").is_dir():
        raise SystemExit(f"official: {raw / 'etth1'} not found: pass --from DIR holding etth1/ETTh1.csv")
    home = root / "home"
    causal_models.prepare("t6_etth1", home / "data" / "t6_etth1", raw / "etth1")
    rows = []
    for attack in ("copies", "distinct"):
        command = [sys.executable, hostile_flood.__file__, attack, causal_models.__file__]
        folder, wall = run_session(home, attack, None, 120, task="t6", grace_s=10, command=command)
        evs = read_events(folder)
        result = json.loads((folder / "result.json").read_text())
        phase = result["official_phase"]
        official = [e for e in evs if e["type"] == "checkpoint_scored" and e.get("official")]
        found = sum(e["type"] == "checkpoint_found" for e in evs)
        agent_gone = max(e["ts"] for e in evs if e["type"] in ("checkpoint_found", "process"))
        delay = evs[-1]["ts"] - agent_gone
        bound = LIVE_SCORE_DRAIN_S + phase["bound_s"] + DEADLINE_MARGIN_S + END_MARGIN_S
        left = result["not_reevaluated"]
        rows += [
            row(f"official flood ({attack}): {found} checkpoints; the official result", str(result["checkpoint"]),
                "run_best-1", 1.0 if result["checkpoint"] == "run_best-1" else 0.0, result["checkpoint"] == "run_best-1"),
            row(f"  the official phase's time ({len(official)} re-evaluations; {left['by_bounds']} left by its bounds)",
                f"{phase['took_s']:.0f} s", f"≤ {phase['bound_s'] + DEADLINE_MARGIN_S:.0f} s (bound + margin)",
                phase["took_s"] / (phase["bound_s"] + DEADLINE_MARGIN_S),
                phase["took_s"] <= phase["bound_s"] + DEADLINE_MARGIN_S),
            row("  the runner's time after the agent's last act until session_ended", f"{delay:.0f} s",
                f"≤ {bound:.0f} s (drain + bound + margins)", delay / bound, delay <= bound),
        ]
    return rows


RUNS = {"output": output_flood, "checkpoints": checkpoint_flood, "snapshots": snapshot_flood, "readers": readers,
        "official": official_flood}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="sizes × this (5: the issue's 500 MB output flood)")
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated: {', '.join(SECTIONS)}")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--from", dest="raw", type=Path, default=REPO.parent / "shared" / "data",
                    help="the offline raw copies (official: etth1/ETTh1.csv)")
    args = ap.parse_args()
    wanted = [s for s in args.only.split(",") if s]
    unknown = set(wanted) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))} (choose from {', '.join(SECTIONS)})")
    rows: list[dict] = []
    for section in wanted:
        root = Path(tempfile.mkdtemp(prefix=f"onegc-flood-{section}-"))
        try:
            t0 = time.monotonic()
            rows += official_flood(root, args.scale, args.raw) if section == "official" else RUNS[section](root, args.scale)
            print(f"[{section}: {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}]", file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return report(rows, args.json, bound_width=40)


def report(rows: list[dict], json_path: Path | None, bound_width: int) -> int:
    """Print each row (what, figure, bound, ratio, met), write them to ``json_path`` where given;
    the exit code: 0 when every bound is met (verify_bench.py prints its rows so too)."""
    width = max(len(r["what"]) for r in rows)
    for r in rows:
        print(f"{r['what']:<{width}}  {r['figure']:>10}  {r['bound']:<{bound_width}}  {r['ratio']:>6.2f}  "
              f"{'met' if r['met'] else 'MISSED'}")
    if json_path:
        json_path.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
