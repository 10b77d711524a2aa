"""GPM on a real GPU (runner/session/gpm.py), for benchmarks/device_check.sh: does the device report
SM, tensor-core and DRAM-bandwidth activity, what do they read under a tensor-core load (bf16
matmuls) and under a load without one (fp32 elementwise), and what does a read cost per GPU per
tick. One command, printing figures:

    python benchmarks/gpm_check.py [--gpu 0] [--seconds 4]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from runner.session.gpu import GpuSampler


def load(kind: str, stop: threading.Event, gpu: int) -> None:
    import torch

    dev = torch.device(f"cuda:{gpu}")
    if kind == "tensor":  # bf16 matmuls: the tensor cores
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        while not stop.is_set():
            for _ in range(20):
                a = (a @ a).clamp_(-1, 1)
            torch.cuda.synchronize(dev)
    else:  # fp32 elementwise: busy SMs and memory, no tensor core
        x = torch.randn(1 << 28, device=dev)
        while not stop.is_set():
            for _ in range(20):
                x.mul_(0.999).add_(0.001)
            torch.cuda.synchronize(dev)


def phase(sampler: GpuSampler, label: str, seconds: float, costs: list[float]) -> None:
    rows = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(1.0)  # the session's GPU rate
        began = time.perf_counter()
        gpm = sampler.gpm.read()
        costs.append((time.perf_counter() - began) * 1000 / max(1, len(sampler.handles)))
        util = sampler.nvml.nvmlDeviceGetUtilizationRates(sampler.handles[0][1]).gpu
        rows.append((util, *(gpm.get(sampler.handles[0][0], {}).get(k) for k in
                             ("sm_active_pct", "tensor_active_pct", "dram_bw_pct"))))
    for util, sm, tensor, dram in rows:
        print(f"  {label:<12} util {util:5.1f} %  SM {sm!s:>5} %  tensor {tensor!s:>5} %  DRAM {dram!s:>5} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    sampler = GpuSampler([args.gpu])
    print(f"device {sampler.info()[0].name}: GPM {'MISSING: ' + sampler.gpm.missing if sampler.gpm.missing else 'supported'}")
    if sampler.gpm.missing:
        sampler.close()
        return
    costs: list[float] = []
    phase(sampler, "idle", args.seconds, costs)
    for kind in ("tensor", "elementwise"):
        stop = threading.Event()
        worker = threading.Thread(target=load, args=(kind, stop, args.gpu), daemon=True)
        worker.start()
        time.sleep(2.0)  # the load warmed up
        phase(sampler, kind, args.seconds, costs)
        stop.set()
        worker.join()
    print(f"GPM read: median {statistics.median(costs):.2f} ms, max {max(costs):.2f} ms per GPU per tick "
          f"({len(costs)} reads; the issue's estimate: about 1.4 ms)")
    sampler.close()


if __name__ == "__main__":
    main()
