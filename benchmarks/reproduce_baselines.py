"""Reproduce a task's paper baseline with one command, and print our score beside the paper's.

    python benchmarks/reproduce_baselines.py TASK [--from DIR] [--device cpu|cuda] [--max-minutes M]
                                                  [--data-dir DIR] [--json FILE] [--keep]
                                                  [--seeds N] [--set NAME=VALUE ...] [--eval-timeout S]
    python benchmarks/reproduce_baselines.py TASK --table JSON [JSON ...]

It prepares the task's data with the pristine ``tasks/<id>/prepare.py`` (from DIR, or by
downloading), builds a fresh workspace the way a session gets one (prepare.py, onegc_kit.py,
train.py and only the public prepared files), runs the unmodified baseline ``train.py`` there,
then scores every checkpoint it saved with the pristine ``prepare.py --eval`` on val and on the
scored split, picks the official one as the harness does after a session (the best by val:
runner/scoring/official.py), and reports its score beside ``task.toml``'s ``baseline_score`` — and, for
T4-T6, what picking by the scored split itself would have reported (the selection bias the
harness avoids), with the training wall time, the best checkpoint's --eval wall time, the
device and the machine. ``--max-minutes`` stops training early (the figures are then marked
incomplete). Exit status: 0 when a checkpoint was scored, 1 when none was, 2 on a usage or data error.

``--seeds N`` runs the baseline N times (``SEED`` = 0 .. N-1, each in a fresh workspace) and ends
with one table: the mean ± sample std of the official (val-best) score, the test-best one beside
it, the paper's baseline and whether they agree within noise (benchmarks/seed_table.py says the
rule). ``--table JSON ...`` prints that table from runs already made with ``--json``, one seed
each (e.g. seeds run side by side as ``--set SEED=k``), and runs nothing. ``--set NAME=VALUE``
changes an UPPERCASE constant of train.py first (a Python literal), e.g. ``--set BATCH_SIZE=32
--set EPOCHS=10`` for LTSF-Linear's published recipe of the T6 baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from seed_table import summarise, table  # noqa: E402

from runner.scoring.official import Candidate, ranked  # noqa: E402
from tasks import KIT_FILE, UnknownTask, get_task  # noqa: E402
from tasks.script_edit import MissingConstant, set_constants  # noqa: E402

KILL_GRACE_S = 10  # after SIGTERM at --max-minutes, before SIGKILL


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def machine(device: str) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    text = f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}"
    if device == "cuda" and torch.cuda.is_available():
        text = f"{torch.cuda.get_device_name(0)}; {text}"
    return text


def prepare_data(task_id: str, data_dir: Path, from_dir: Path | None) -> None:
    cmd = [sys.executable, str(REPO / "tasks" / task_id / "prepare.py"), "--data-dir", str(data_dir)]
    if from_dir:
        cmd += ["--from", str(from_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        fail(f"preparing {task_id} failed: {lines[-1] if lines else proc.returncode}".replace("error: ", ""))


def parse_sets(items: list[str]) -> dict[str, object]:
    """``NAME=VALUE`` pairs (VALUE a Python literal) for train.py's UPPERCASE constants."""
    import ast

    values: dict[str, object] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            fail(f"--set {item!r}: write NAME=VALUE with an UPPERCASE constant name, e.g. --set EPOCHS=5")
        try:
            values[name] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            fail(f"--set {item!r}: VALUE must be a Python literal (a number, or a quoted string)")
    return values


def make_workspace(task_id: str, data_dir: Path, device: str | None, constants: dict[str, object] | None = None) -> Path:
    ws = Path(tempfile.mkdtemp(prefix=f"onegc-repro-{task_id}-"))
    for name in ("prepare.py", "train.py"):
        shutil.copy(REPO / "tasks" / task_id / name, ws / name)
    shutil.copy(KIT_FILE, ws / "onegc_kit.py")
    (ws / "checkpoints").mkdir()
    (ws / "data").mkdir()
    manifest = json.loads((data_dir / "manifest.json").read_text())
    for fname, info in [*manifest["files"].items(), ("manifest.json", {})]:
        if info.get("private"):
            continue  # held-out labels never enter a workspace
        try:
            os.link(data_dir / fname, ws / "data" / fname)
        except OSError:
            shutil.copy(data_dir / fname, ws / "data" / fname)
    if device:
        train = ws / "train.py"
        text, n = re.subn(r"^DEVICE\s*=.*$", f"DEVICE = {device!r}", train.read_text(), count=1, flags=re.MULTILINE)
        if not n:
            fail(f"tasks/{task_id}/train.py has no top-level DEVICE constant")
        train.write_text(text)
    if constants:
        train = ws / "train.py"
        try:
            text, _ = set_constants(train.read_text(), constants)
        except MissingConstant as exc:
            shutil.rmtree(ws, ignore_errors=True)
            fail(f"--set: tasks/{task_id}/train.py has {exc.args[0]}")
        train.write_text(text)
    return ws


def train(ws: Path, max_minutes: float | None) -> tuple[float, bool, int]:
    """Run train.py, echoing its output; returns (wall seconds, completed, exit code)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ONEGC_DATA_DIR", "ONEGC_CHECKPOINT_DIR")}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-u", "train.py"], cwd=ws, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = started + max_minutes * 60 if max_minutes else None
    timed_out = False

    def stop() -> None:
        nonlocal timed_out
        timed_out = True
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(deadline - time.perf_counter(), stop) if deadline else None
    if timer:
        timer.start()
    for line in proc.stdout:
        print(f"  | {line}", end="", flush=True)
    code = proc.wait()
    if timer:
        timer.cancel()
    return time.perf_counter() - started, not timed_out and code == 0, code


def score(task_id: str, ckpt: Path, ws: Path, data_dir: Path, split: str, device: str, timeout: float) -> dict:
    cmd = [sys.executable, str(REPO / "tasks" / task_id / "prepare.py"), "--eval", str(ckpt), "--code", str(ws),
           "--split", split, "--data-dir", str(data_dir), "--device", device]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"--eval took more than {timeout:.0f} s", "wall_s": timeout}
    wall = time.perf_counter() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {"ok": False, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    result["wall_s"] = round(wall, 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", help="task id or short name (t1 ... t7)")
    parser.add_argument("--from", dest="from_dir", type=Path, help="take the raw files from this folder instead of downloading")
    parser.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when present, else cpu")
    parser.add_argument("--max-minutes", type=float, help="stop training after this many minutes and score what was saved")
    parser.add_argument("--eval-timeout", type=float, metavar="S",
                        help="seconds one --eval may take (default: the task's eval_timeout_s; raise it on a loaded machine)")
    parser.add_argument("--data-dir", type=Path, help="where the prepared data lives (default $ONEGC_HOME/data/<task>)")
    parser.add_argument("--json", type=Path, help="also write the summary to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    parser.add_argument("--seeds", type=int, help="run SEED = 0 .. N-1 and print mean ± std as a table")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                        help="change a constant of train.py first (repeatable)")
    parser.add_argument("--table", nargs="+", type=Path, metavar="JSON",
                        help="print the seed table of single-seed runs saved with --json, and run nothing")
    args = parser.parse_args(argv)
    try:
        spec = get_task(args.task)
    except UnknownTask as exc:
        fail(str(exc))
    if args.table:
        print(table([summarise_saved(spec, args.table)]))
        return 0
    if args.seeds is not None and not 1 <= args.seeds <= 100:
        fail(f"--seeds {args.seeds}: give a number of seeds from 1 to 100")
    constants = parse_sets(args.sets)
    if args.seeds is not None and "SEED" in constants:
        fail("--seeds sets SEED itself: drop --set SEED=...")
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda but torch sees no GPU: use --device cpu")
    home = Path(os.environ.get("ONEGC_HOME") or Path.cwd())
    data_dir = (args.data_dir or home / "data" / spec.id).resolve()
    print(f"{spec.id}: preparing data in {data_dir}", flush=True)
    prepare_data(spec.id, data_dir, args.from_dir)
    if args.seeds is None:
        summary = run_once(spec, data_dir, device, args, constants)
        if args.json:
            args.json.write_text(json.dumps(summary, indent=2) + "\n")
        return 0 if summary["score"] is not None else 1
    runs = []
    for seed in range(args.seeds):
        print(f"\n{spec.id}: seed {seed}", flush=True)
        summary = run_once(spec, data_dir, device, args, {**constants, "SEED": seed})
        runs.append({**summary, "seed": seed})
    recipe = ", ".join(f"{k}={v!r}" for k, v in constants.items()) or "train.py as shipped"
    result = summarise(spec.id, spec.metric, recipe, runs, spec.baseline_score)
    print()
    print(table([result]))
    if args.json:
        args.json.write_text(json.dumps({"task": spec.id, "recipe": recipe, "device": device, "runs": runs,
                                         "val_best": result.val_best, "test_best": result.test_best,
                                         "paper_baseline": spec.baseline_score, "verdict": result.verdict},
                                        indent=2) + "\n")
    return 0 if result.n == args.seeds else 1


def summarise_saved(spec, files: list[Path]):
    """The seed summary of single-seed runs saved with ``--json`` (their ``constants`` name the
    seed and the recipe, which must be the same apart from SEED)."""
    runs, recipes = [], set()
    for path in files:
        try:
            run = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            fail(f"--table {path}: not a --json summary of reproduce_baselines.py ({exc})")
        if run.get("task") != spec.id or "runs" in run:
            fail(f"--table {path}: not a single-seed {spec.id} run (one --json of a run without --seeds)")
        constants = dict(run.get("constants") or {})
        runs.append({**run, "seed": constants.pop("SEED", 0)})
        recipes.add(", ".join(f"{k}={v!r}" for k, v in constants.items()) or "train.py as shipped")
    if len(recipes) != 1:
        fail(f"--table: the runs differ in more than SEED ({'; '.join(sorted(recipes))})")
    return summarise(spec.id, spec.metric, recipes.pop(), sorted(runs, key=lambda r: r["seed"]), spec.baseline_score)


def run_once(spec, data_dir: Path, device: str, args: argparse.Namespace, constants: dict[str, object]) -> dict:
    """One baseline run in a fresh workspace, every checkpoint scored; returns its summary."""
    ws = make_workspace(spec.id, data_dir, device, constants)
    print(f"{spec.id}: training the baseline in {ws} on {device}", flush=True)
    train_s, completed, code = train(ws, args.max_minutes)
    ckpts = sorted((ws / "checkpoints").glob("*.pt"), key=lambda p: p.stat().st_mtime)
    splits = ["val"] if spec.scored_split == "val" else ["val", spec.scored_split]
    print(f"{spec.id}: scoring {len(ckpts)} checkpoint(s) on {' and '.join(splits)} with the pristine prepare.py", flush=True)
    results = []
    for k, ckpt in enumerate(ckpts):
        timeout = args.eval_timeout or spec.eval_timeout_s
        r = score(spec.id, ckpt, ws, data_dir, spec.scored_split, device, timeout)
        val = r if spec.scored_split == "val" else score(spec.id, ckpt, ws, data_dir, "val", device, timeout)
        r["checkpoint"], r["val"], r["order"] = ckpt.name, val.get("value") if val.get("ok") else None, k
        results.append(r)
        shown = f"{r['value']:.4f}" if r.get("ok") else f"failed: {r.get('error')}"
        v = "" if spec.scored_split == "val" else (
            f"val {r['val']:.4f}  " if r["val"] is not None else f"val failed ({val.get('error')})  ")
        print(f"  {ckpt.name:<32} {v}{spec.metric} {shown}  (--eval {r['wall_s']:.1f} s)", flush=True)
    scored = [r for r in results if r.get("ok")]
    by_name = {r["checkpoint"]: r for r in scored}
    order = ranked([Candidate(r["checkpoint"], r["order"], r["val"]) for r in scored], spec.better)
    best = by_name[order[0].label] if order else None  # the harness's rule: the best by val
    by_scored = None  # the alternative it avoids on T4-T6: the best by the scored split itself
    for r in scored:
        if by_scored is None or spec.better(r["value"], by_scored["value"]):
            by_scored = r
    summary = {
        "task": spec.id,
        "metric": spec.metric,
        "direction": spec.direction,
        "split": spec.scored_split,
        "score": best["value"] if best else None,
        "best_checkpoint": best["checkpoint"] if best else None,
        "selection": "val-best",
        "val": best["val"] if best else None,
        "if_picked_by_scored_split": by_scored["value"] if by_scored else None,
        "selection_bias": round(by_scored["value"] - best["value"], 4) if best and by_scored else None,
        "paper_baseline": spec.baseline_score,
        "difference": round(best["value"] - spec.baseline_score, 4) if best and spec.baseline_score is not None else None,
        "checkpoints_scored": f"{len(scored)}/{len(results)}",
        "train_wall_s": round(train_s, 1),
        "train_completed": completed,
        "train_exit_code": code,
        "eval_wall_s": best["wall_s"] if best else None,  # the --eval process, start-up included
        "eval_s": best.get("eval_s") if best else None,  # model load + evaluate, as --eval reports it
        "device": device,
        "machine": machine(device),
        "max_minutes": args.max_minutes,
        "constants": {k: v for k, v in constants.items()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "all": [{k: r.get(k) for k in ("checkpoint", "val", "value", "wall_s", "error") if r.get(k) is not None}
                for r in results],
    }
    print()
    for key, value in summary.items():
        if key != "all":
            print(f"{key}: {value}")
    if not best:
        why = "training stopped before its first checkpoint" if not results else "every checkpoint failed --eval"
        print(f"error: no checkpoint was scored: {why}", file=sys.stderr)
    if args.keep:
        print(f"workspace kept: {ws}")
    else:
        shutil.rmtree(ws, ignore_errors=True)
    return summary


if __name__ == "__main__":
    sys.exit(main())
