"""A stand-in for pynvml with the calls :mod:`runner.session.gpu` makes, for tests and demos on CPU.

Utilisation follows the CPU use of this machine's processes, so a training script visibly
"uses the GPU". ``ONEGC_FAKE_GPUS`` sets the device count (default 1).
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
    return SimpleNamespace(total=total, used=int(total * psutil.virtual_memory().percent / 100), free=0)


def nvmlDeviceGetPowerUsage(h):
    return 100_000


def nvmlDeviceGetTemperature(h, sensor):
    return 40
