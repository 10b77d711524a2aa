#!/usr/bin/env bash
# The T2 (TinyImageNet) and T3 (Pascal VOC) baselines at full size on one GPU, each for a bounded
# time: prints the device, training throughput (images/s) and the score reached, then the
# official scorer's figure for the last checkpoint (benchmarks/gpu_throughput.py does the work).
#
# Needs no network and no real data: without prepared arrays under $ONEGC_HOME/data it trains on
# random arrays of the real shapes and says so (SYNTHETIC: throughput only, chance-level score);
# without the DINOv3 files it makes randomly initialised ones with timm (RANDOM weights).
#
#   bash benchmarks/gpu_baselines.sh                 # 30 s of training per task, about 2.5-3 min in all
#   BENCH_SECONDS=90 bash benchmarks/gpu_baselines.sh --tasks t3
#
# T3 needs timm >= 1.0.20 (the DINOv3 models) beside torch and torchvision. If the machine's timm
# may be older, carry a wheel (pure Python, 2.5 MB): `pip download --no-deps timm==1.0.31 -d .whl`
# here (.whl/ is git-ignored) and name .whl in the run's carry; this script installs any
# .whl/*.whl into /tmp/onegc_site first and puts it ahead on PYTHONPATH.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SECS=${BENCH_SECONDS:-30}
export PYTHONUNBUFFERED=1

echo "== onegc GPU baselines: $(date -u +%FT%TZ), ${SECS} s of training per task =="
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/onegc_site .whl/*.whl
  export PYTHONPATH=/tmp/onegc_site${PYTHONPATH:+:$PYTHONPATH}
fi
"$PY" -c "import timm; print('timm', timm.__version__, 'DINOv3:', bool(timm.list_pretrained('convnext_tiny.dinov3_lvd1689m')))" \
  || echo "timm: not importable (T3 will fail)"

# Hard bound on the whole run: training time per task plus generous set-up and scoring time.
timeout $(( 2 * SECS + 360 )) "$PY" benchmarks/gpu_throughput.py --seconds "$SECS" "$@"
