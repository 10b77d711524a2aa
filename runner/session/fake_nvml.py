"""A stand-in for pynvml with the calls :mod:`runner.session.gpu` makes, for tests and demos on CPU.

Utilisation follows the CPU use of this machine's processes, so a training script visibly
"uses the GPU". ``ONEGC_FAKE_GPUS`` sets the device count (default 1).

For the contention guard (runner/session/contention.py), read at every call:

- ``ONEGC_FAKE_GPU_PROCS``: the running compute processes, comma-separated ``GPU:PID:MB`` (a
  process by id) or ``GPU:cmd=TEXT:MB`` (every live process whose command line contains TEXT);
  only live processes are listed, as NVML does;
- ``ONEGC_FAKE_GPU_MEM_MB``: memory in use (default: this machine's RAM use, scaled to 80 GB);
- ``ONEGC_FAKE_GPU_THROTTLE``: the clock throttle reasons bitmask (default 0);
- ``ONEGC_FAKE_GPU_CLOCK_MHZ``: the SM clock (default the maximum, 1980 MHz).

GPM (runner/session/gpm.py), as a Hopper GPU has it: ``ONEGC_FAKE_GPM`` ``0`` makes it an older GPU
without GPM; ``SM,TENSOR,DRAM`` (percentages, e.g. ``60,35,20``) fixes what every interval
measures; by default the SMs are as busy as this machine's CPUs over the interval, the tensor
cores half that and the DRAM bandwidth a third.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import psutil


class NVMLError(Exception):
    pass


_state = {"init": False}


def nvmlInit():
    _state["init"] = True


def nvmlShutdown():
    _state["init"] = False


def nvmlDeviceGetCount():
    return int(os.environ.get("ONEGC_FAKE_GPUS", "1"))


def nvmlDeviceGetHandleByIndex(i):
    if i >= nvmlDeviceGetCount():
        raise NVMLError("Invalid Argument")
    return i


def nvmlSystemGetDriverVersion():
    return "fake-1.0"


def nvmlDeviceGetName(h):
    return f"Fake GPU {h}"


def nvmlDeviceGetUUID(h):
    return f"GPU-fake-{h}"


def nvmlDeviceGetMinorNumber(h):
    return h


def nvmlDeviceGetUtilizationRates(h):
    return SimpleNamespace(gpu=min(100, int(psutil.cpu_percent(interval=None))), memory=0)


def nvmlDeviceGetMemoryInfo(h):
    total = 80 * 2**30
    fixed = os.environ.get("ONEGC_FAKE_GPU_MEM_MB")
    used = int(float(fixed) * 2**20) if fixed else int(total * psutil.virtual_memory().percent / 100)
    return SimpleNamespace(total=total, used=used, free=total - used)


MAX_SM_CLOCK_MHZ = 1980


def nvmlDeviceGetComputeRunningProcesses(h):
    out = []
    for entry in filter(None, os.environ.get("ONEGC_FAKE_GPU_PROCS", "").split(",")):
        gpu, who, mb = entry.split(":")
        if int(gpu) != h:
            continue
        used = int(float(mb) * 2**20)
        if who.startswith("cmd="):
            for p in psutil.process_iter(["pid", "cmdline"]):
                if who[4:] in " ".join(p.info["cmdline"] or []):
                    out.append(SimpleNamespace(pid=p.info["pid"], usedGpuMemory=used))
        elif psutil.pid_exists(int(who)):
            out.append(SimpleNamespace(pid=int(who), usedGpuMemory=used))
    return out


def nvmlDeviceGetGraphicsRunningProcesses(h):
    return []


def nvmlDeviceGetCurrentClocksThrottleReasons(h):
    return int(os.environ.get("ONEGC_FAKE_GPU_THROTTLE", "0"), 0)


def nvmlDeviceGetClockInfo(h, clock_type):
    return int(os.environ.get("ONEGC_FAKE_GPU_CLOCK_MHZ", str(MAX_SM_CLOCK_MHZ)))


def nvmlDeviceGetMaxClockInfo(h, clock_type):
    return MAX_SM_CLOCK_MHZ


def nvmlDeviceGetPowerUsage(h):
    return 100_000


def nvmlDeviceGetTemperature(h, sensor):
    return 40


# ----------------------------------------------------------------------------- GPM
NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_GPM_METRICS_GET_VERSION = 1
NVML_GPM_METRIC_SM_UTIL = 2
NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5
NVML_GPM_METRIC_DRAM_BW_UTIL = 10


def _gpm_setting() -> str:
    return os.environ.get("ONEGC_FAKE_GPM", "1")


def nvmlGpmQueryDeviceSupport(h):
    return SimpleNamespace(version=1, isSupportedDevice=0 if _gpm_setting() == "0" else 1)


def nvmlGpmSampleAlloc():
    return SimpleNamespace(at=None, busy=None, freed=False)


def nvmlGpmSampleFree(sample):
    sample.freed = True


def nvmlGpmSampleGet(h, sample):
    """The device's counters now: the time and this machine's CPU seconds spent busy."""
    if _gpm_setting() == "0":
        raise NVMLError("Not Supported")
    cpu = psutil.cpu_times()
    sample.at, sample.busy = time.monotonic(), cpu.user + cpu.system + getattr(cpu, "nice", 0.0)
    return sample


class _Metric:
    def __init__(self):
        self.metricId = 0
        self.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
        self.value = 0.0


class c_nvmlGpmMetricsGet_t:  # noqa: N801 - pynvml's name
    def __init__(self):
        self.version = 0
        self.numMetrics = 0
        self.sample1 = self.sample2 = None
        self.metrics = [_Metric() for _ in range(8)]


def nvmlGpmMetricsGet(request):
    """Each metric over the interval between the two samples (pynvml fills ``request`` in place)."""
    a, b = request.sample1, request.sample2
    if request.version != NVML_GPM_METRICS_GET_VERSION or a is None or b is None or a.at is None or b.at is None:
        raise NVMLError("Invalid Argument")
    if b.at - a.at < 0.1:  # as NVML: the samples must be at least 100 ms apart
        raise NVMLError("Invalid Argument")
    fixed = _gpm_setting()
    if "," in fixed:
        sm, tensor, dram = (float(v) for v in fixed.split(","))
    else:
        sm = min(100.0, max(0.0, 100.0 * (b.busy - a.busy) / ((b.at - a.at) * (psutil.cpu_count() or 1))))
        tensor, dram = sm / 2, sm / 3
    values = {NVML_GPM_METRIC_SM_UTIL: sm, NVML_GPM_METRIC_ANY_TENSOR_UTIL: tensor, NVML_GPM_METRIC_DRAM_BW_UTIL: dram}
    for metric in request.metrics[:request.numMetrics]:
        if metric.metricId in values:
            metric.value, metric.nvmlReturn = values[metric.metricId], NVML_SUCCESS
    return request
