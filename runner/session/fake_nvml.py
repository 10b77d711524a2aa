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
"""

from __future__ import annotations

import os
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
