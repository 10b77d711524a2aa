"""Run the T2 and T3 baselines at full size on one GPU for a bounded time; report throughput and score.

Meant for a GPU machine with no network and, usually, no real datasets:

- data: the real prepared arrays when ``$ONEGC_HOME/data/<task>/manifest.json`` exists (not
  synthetic), else arrays of the real shapes and dtypes filled with random values, made here once
  (SYNTHETIC: throughput is real, the score is chance level and means nothing);
- T3 weights: the real DINOv3 files when ``$ONEGC_HOME/data/_weights/t3_voc`` holds both, else
  randomly initialised files of the real shapes made with timm (RANDOM weights);
- each baseline ``train.py`` runs unchanged except ``TIME_LIMIT_S`` (stop training after that
  many seconds, then evaluate and save), in a fresh workspace; then the pristine
  ``prepare.py --eval`` scores its last checkpoint, as the harness does.

    python benchmarks/gpu_throughput.py [--seconds 30] [--tasks t2,t3] [--work DIR] [--json FILE]

Prints one ``RESULT`` line per task and writes the figures as JSON (``--json``, default
``$OUT/gpu_baselines.json`` when ``$OUT`` is set).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TASKS = {"t2": "t2_tinyimagenet", "t3": "t3_voc"}
SHAPES = {  # the real prepared arrays: name -> (shape, dtype)
    "t2_tinyimagenet": {"train_x": ((100_000, 64, 64, 3), np.uint8), "train_y": ((100_000,), np.int64),
                        "val_x": ((10_000, 64, 64, 3), np.uint8), "val_y": ((10_000,), np.int64)},
    "t3_voc": {"train_x": ((1464, 224, 224, 3), np.uint8), "train_y": ((1464, 224, 224), np.uint8),
               "val_x": ((1449, 224, 224, 3), np.uint8), "val_y": ((1449, 224, 224), np.uint8)},
}
CLASSES = {"t2_tinyimagenet": 200, "t3_voc": 21}
METRICS = {"t2_tinyimagenet": "val_top1", "t3_voc": "val_miou"}
CHUNK = 4096  # images synthesised at a time: bounded memory
SETUP_S = 300  # allowance on top of --seconds for loading data, per-epoch evaluation and saving
MAKE_WEIGHTS = """
import importlib.util, sys, torch, timm
spec = importlib.util.spec_from_file_location("p", sys.argv[1])
p = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p)
for name, file in p.BACKBONES.items():
    torch.save(timm.create_model(name, pretrained=False, num_classes=0).state_dict(), sys.argv[2] + "/" + file)
"""


def log(msg: str) -> None:
    print(msg, flush=True)


def synthesise(task: str, out: Path, scale: float = 1.0) -> Path:
    """Random arrays of the real shapes in ``out`` (kept for the next run); ``scale`` < 1 keeps
    that fraction of the images (a smoke test of this script on a CPU)."""
    if (out / "manifest.json").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    t0 = time.time()
    for name, (shape, dtype) in SHAPES[task].items():
        shape = (max(16, int(shape[0] * scale)), *shape[1:])
        arr = np.lib.format.open_memmap(out / f"{name}.npy", mode="w+", dtype=dtype, shape=shape)
        for i in range(0, shape[0], CHUNK):
            n = min(CHUNK, shape[0] - i)
            if name.endswith("_x"):
                arr[i : i + n] = np.frombuffer(rng.bytes(n * int(np.prod(shape[1:]))), np.uint8).reshape(n, *shape[1:])
            elif task == "t3_voc":  # blocky masks (8x8 cells) with a few ignored cells, like segmentation
                cells = rng.integers(0, CLASSES[task], (n, 28, 28), dtype=np.uint8)
                cells[rng.random((n, 28, 28)) < 0.05] = 255
                arr[i : i + n] = cells.repeat(8, axis=1).repeat(8, axis=2)
            else:
                arr[i : i + n] = rng.integers(0, CLASSES[task], n)
        arr.flush()
        del arr
    if task == "t2_tinyimagenet":
        (out / "classes.txt").write_text("".join(f"n{i:08d}\tsynthetic class {i}\n" for i in range(200)))
    else:
        for split in ("train", "val"):
            n = max(16, int(SHAPES[task][f"{split}_x"][0][0] * scale))
            (out / f"{split}_ids.txt").write_text("".join(f"synthetic_{i:06d}\n" for i in range(n)))
    (out / "manifest.json").write_text(json.dumps({"task": task, "synthetic": True}))
    log(f"synthesised random {task} arrays in {time.time() - t0:.1f} s -> {out}")
    return out


def set_constants(script: Path, **values) -> None:
    text = script.read_text()
    for name, value in values.items():
        text, n = re.subn(rf"^{name}\s*=.*$", f"{name} = {value!r}", text, count=1, flags=re.MULTILINE)
        if not n:
            raise SystemExit(f"{script} has no constant {name}")
    script.write_text(text)


def run(cmd: list[str], env: dict, cwd: Path, timeout: float, prefix: str) -> tuple[int, str]:
    """Run ``cmd``, echoing its output with ``prefix``; (exit code, output); 124 after ``timeout``."""
    lines: list[str] = []
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def pump():
        for line in proc.stdout:
            lines.append(line)
            log(f"{prefix}{line.rstrip()}")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        log(f"{prefix}TIMEOUT after {timeout:.0f} s")
        code = 124
    reader.join(timeout=5)
    return code, "".join(lines)


def bench(task: str, seconds: float, work: Path, home: Path, scale: float = 1.0) -> dict:
    result = {"task": task, "seconds": seconds}
    real = home / "data" / task
    if (real / "manifest.json").is_file() and scale == 1.0:
        data, result["data"] = real, "real"
    else:
        folder = task if scale == 1.0 else f"{task}_scale{scale:g}"
        data, result["data"] = synthesise(task, work / "data" / folder, scale), "synthetic"
        if scale != 1.0:
            result["scale"] = scale
    env = {**os.environ, "ONEGC_DATA_DIR": str(data), "PYTHONUNBUFFERED": "1"}
    ws = work / f"workspace_{task}"
    shutil.rmtree(ws, ignore_errors=True)
    (ws / "checkpoints").mkdir(parents=True)
    for name in ("prepare.py", "train.py"):
        shutil.copy(REPO / "tasks" / task / name, ws / name)
    shutil.copy(REPO / "tasks" / "onegc_kit.py", ws / "onegc_kit.py")
    set_constants(ws / "train.py", TIME_LIMIT_S=seconds)
    if task == "t3_voc":
        store = home / "data" / "_weights" / task
        files = ["convnext_tiny.dinov3_lvd1689m.pth", "vit_small_patch16_dinov3.lvd1689m.pth"]
        if all((store / f).is_file() for f in files):
            env["ONEGC_WEIGHTS_DIR"], result["weights"] = str(store), "real"
        else:
            (ws / "weights").mkdir()
            code, out = run([sys.executable, "-c", MAKE_WEIGHTS, str(ws / "prepare.py"), str(ws / "weights")],
                            env, ws, 300, "  weights| ")
            if code:
                result["error"] = "could not make random DINOv3 weight files with timm (see above)"
                return result
            result["weights"] = "random"
    log(f"== {task}: data={result['data']}{' weights=' + result['weights'] if 'weights' in result else ''}, "
        f"training stops after {seconds:.0f} s ==")
    t0 = time.time()
    code, out = run([sys.executable, "train.py"], env, ws, seconds + SETUP_S, f"  {task}| ")
    result["train_wall_s"] = round(time.time() - t0, 1)
    for key, value in re.findall(r"^(\w+): ([-\d.]+)$", out, flags=re.MULTILINE):
        result[key] = float(value)
    if code:
        result["error"] = f"train.py exited {code}"
        return result
    ckpts = sorted((ws / "checkpoints").glob("*.pt"), key=lambda p: p.stat().st_mtime)
    if not ckpts:
        result["error"] = "train.py saved no checkpoint"
        return result
    t0 = time.time()
    cmd = [sys.executable, str(REPO / "tasks" / task / "prepare.py"), "--eval", str(ckpts[-1]), "--code", str(ws),
           "--data-dir", str(data)]
    code, out = run(cmd, {k: v for k, v in env.items() if k != "ONEGC_DATA_DIR"}, ws, SETUP_S, "  scorer| ")
    scored = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    result["scorer"] = scored[-1] if scored else {"ok": False, "error": f"exit {code}, no JSON line"}
    result["scorer_wall_s"] = round(time.time() - t0, 1)
    return result


def summary(r: dict) -> str:
    label = "SYNTHETIC random data: throughput only, the score is chance level" if r.get("data") == "synthetic" \
        else "real data"
    if r.get("scale"):
        label += f" at {r['scale']:g} of the real size"
    if r.get("weights") == "random":
        label += "; RANDOM backbone weights"
    if "error" in r:
        return f"RESULT {r['task']} FAILED: {r['error']} ({label})"
    metric = METRICS[r["task"]]
    scorer = r.get("scorer", {})
    return (f"RESULT {r['task']} [{label}] train {r.get('train_images_per_s', 0):.0f} images/s, "
            f"{r.get('steps', 0):.0f} steps, {r.get('epochs', 0):.0f} epochs in {r.get('time_s', 0):.1f} s "
            f"(wall {r['train_wall_s']} s); {metric} {r.get(metric, float('nan')):.4f}; scorer "
            f"{'ok' if scorer.get('ok') else 'FAILED'} {scorer.get('value', scorer.get('error'))} in {scorer.get('eval_s')} s "
            f"(wall {r.get('scorer_wall_s')} s)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=30, help="training time per task (TIME_LIMIT_S)")
    p.add_argument("--tasks", default="t2,t3")
    p.add_argument("--work", type=Path, default=Path("/tmp/onegc_gpu_bench"))
    p.add_argument("--scale", type=float, default=1.0, help="fraction of the images to synthesise (CPU smoke test)")
    p.add_argument("--json", type=Path, default=Path(os.environ["OUT"]) / "gpu_baselines.json" if os.environ.get("OUT") else None)
    args = p.parse_args()
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "NO GPU (cpu)"
    log(f"device: {device}; python {sys.version.split()[0]}; torch {torch.__version__}")
    if not torch.cuda.is_available():
        log("warning: no CUDA device: the baselines will run on the CPU and the figures mean little")
    home = Path(os.environ.get("ONEGC_HOME", REPO))
    results = [bench(TASKS[t.strip()], args.seconds, args.work, home, args.scale) for t in args.tasks.split(",")]
    log("")
    for r in results:
        log(summary(r))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": device, "torch": torch.__version__, "results": results}, indent=2))
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
