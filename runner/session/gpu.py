"""GPU sampling through NVML, once a second (NVML's utilisation window is 1/6 s to 1 s), with the
SM, tensor-core and DRAM-bandwidth activity of GPM where the GPU has it (runner/session/gpm.py).

Without a GPU (or NVML) the sampler says so once and stops. ``ONEGC_NVML_MODULE`` names a module
with pynvml's API to use instead (tests use :mod:`runner.session.fake_nvml`).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

from runner.session.gpm import GpmReader

SAMPLE_PERIOD_S = 1.0  # faster adds nothing: NVML averages utilisation over up to 1 s


@dataclass(frozen=True)
class Sample:
    index: int
    util_pct: float
    mem_used_mb: float
    mem_total_mb: float
    power_w: float | None
    temp_c: float | None
    # what the GPU's units did since the last sample (runner/session/gpm.py; None where GPM is missing)
    sm_active_pct: float | None = None
    tensor_active_pct: float | None = None
    dram_bw_pct: float | None = None


@dataclass(frozen=True)
class GpuInfo:
    name: str
    driver: str
    index: int
    uuid: str | None = None
    minor: int | None = None  # /dev/nvidia<minor>: the node the sandbox shows (not always the NVML index)


class NoGpu(RuntimeError):
    """No GPU can be sampled; the message says why."""


def _nvml():
    return importlib.import_module(os.environ.get("ONEGC_NVML_MODULE") or "pynvml")


def visible_indices(cuda_visible: str | None) -> list[int]:
    """NVML indices of the GPUs a session may use (``CUDA_VISIBLE_DEVICES`` as integers)."""
    if cuda_visible is None or cuda_visible.strip() == "":
        return []
    out = []
    for part in cuda_visible.split(","):
        part = part.strip()
        if part.isdigit():
            out.append(int(part))
    return out


def gpu_count() -> int:
    """How many GPUs NVML sees (0 without NVML or a GPU)."""
    try:
        nvml = _nvml()
        nvml.nvmlInit()
        try:
            return int(nvml.nvmlDeviceGetCount())
        finally:
            nvml.nvmlShutdown()
    except Exception:  # no library, no driver, no device: all mean "no GPU"
        return 0


class GpuSampler:
    """Reads one sample per assigned GPU; raises :class:`NoGpu` when there is none to read."""

    def __init__(self, indices: list[int]):
        self.nvml = _nvml()
        try:
            self.nvml.nvmlInit()
        except self.nvml.NVMLError as exc:
            raise NoGpu(f"no GPU visible: NVML unavailable ({exc})") from None
        count = self.nvml.nvmlDeviceGetCount()
        if count == 0:
            raise NoGpu("no GPU visible: NVML found no device")
        if not indices:
            raise NoGpu("no GPU assigned to this session (run with --gpus to assign one)")
        bad = [i for i in indices if i >= count]
        if bad:
            raise NoGpu(f"GPU index {bad[0]} not present: this machine has {count} GPU(s)")
        self.handles = [(i, self.nvml.nvmlDeviceGetHandleByIndex(i)) for i in indices]
        self.gpm = GpmReader(self.nvml, self.handles)  # SM, tensor-core and DRAM activity where the GPU has GPM

    def info(self) -> list[GpuInfo]:
        driver = _text(self.nvml.nvmlSystemGetDriverVersion())
        out = []
        for i, h in self.handles:
            uuid = self._optional(lambda h=h: _text(self.nvml.nvmlDeviceGetUUID(h)))
            minor = self._optional(lambda h=h: int(self.nvml.nvmlDeviceGetMinorNumber(h)))
            out.append(GpuInfo(name=_text(self.nvml.nvmlDeviceGetName(h)), driver=driver, index=i, uuid=uuid, minor=minor))
        return out

    def sample(self) -> list[Sample]:
        out = []
        gpm = self.gpm.read()
        for i, h in self.handles:
            util = self.nvml.nvmlDeviceGetUtilizationRates(h)
            mem = self.nvml.nvmlDeviceGetMemoryInfo(h)
            out.append(
                Sample(
                    index=i,
                    util_pct=float(util.gpu),
                    mem_used_mb=mem.used / 2**20,
                    mem_total_mb=mem.total / 2**20,
                    power_w=self._optional(lambda h=h: self.nvml.nvmlDeviceGetPowerUsage(h) / 1000.0),
                    temp_c=self._optional(lambda h=h: float(self.nvml.nvmlDeviceGetTemperature(h, 0))),
                    **gpm.get(i, {}),
                )
            )
        return out

    def _optional(self, read):
        try:
            return read()
        except self.nvml.NVMLError:
            return None

    def close(self) -> None:
        self.gpm.close()
        try:
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError:
            pass


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def open_sampler(gpu: str | None) -> tuple[GpuSampler | None, list[dict], str | None]:
    """``(sampler, the GPUs' facts, why there is none)`` for a session's ``CUDA_VISIBLE_DEVICES``:
    no sampler, no facts and the reason where no GPU can be sampled (a broken NVML included: it
    must not stop the session)."""
    try:
        sampler = GpuSampler(visible_indices(gpu))
        return sampler, [vars(i) for i in sampler.info()], None
    except NoGpu as exc:
        return None, [], str(exc)
    except Exception as exc:
        return None, [], f"no GPU visible: {type(exc).__name__}: {exc}"
