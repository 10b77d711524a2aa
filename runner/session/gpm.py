"""What the GPU's units do, beside its utilisation: NVML's GPM metrics (Hopper and later).

NVML's utilisation is the share of time *any* kernel ran: a GPU can read 100 % while its SMs and
tensor cores sit mostly idle, and for a benchmark of training efficiency that is the difference
that matters. GPM (GPU Performance Monitoring) measures, between two samples of the device's
counters, the share of SMs that were busy (``SM_UTIL``), of time any tensor core worked
(``ANY_TENSOR_UTIL``) and of the DRAM bandwidth used (``DRAM_BW_UTIL``).

:class:`GpmReader` keeps two samples per GPU and at each of the session's GPU ticks takes a new
one and reads the three metrics over the interval since the last (at least
:data:`MIN_INTERVAL_S` apart, as NVML requires; about 1.4 ms per GPU per tick). A GPU without GPM
(older than Hopper, or a driver without the calls) gives no metrics, and :attr:`GpmReader.missing`
says why, once; nothing else changes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MIN_INTERVAL_S = 0.1  # NVML: two GPM samples must be at least 100 ms apart for a metric
# the event's field for each metric, and its GPM id (nvml.h: NVML_GPM_METRIC_*)
METRICS = {"sm_active_pct": 2, "tensor_active_pct": 5, "dram_bw_pct": 10}  # SM_UTIL, ANY_TENSOR_UTIL, DRAM_BW_UTIL


@dataclass
class _Device:
    handle: object
    previous: object  # the last GPM sample
    spare: object  # the one the next tick fills
    at: float  # when the last one was taken (monotonic seconds)


class GpmReader:
    """GPM metrics of the session's GPUs (``handles``: (NVML index, handle)), through ``nvml``
    (pynvml, or runner.session.fake_nvml)."""

    def __init__(self, nvml, handles: list[tuple[int, object]]):
        self.nvml = nvml
        self.devices: dict[int, _Device] = {}
        self.missing: str | None = None  # why there are no GPM metrics, where there are none
        unsupported = []
        for index, handle in handles:
            try:
                support = nvml.nvmlGpmQueryDeviceSupport(handle)
                if not getattr(support, "isSupportedDevice", 0):
                    unsupported.append(index)
                    continue
                first, spare = nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()
                nvml.nvmlGpmSampleGet(handle, first)
                self.devices[index] = _Device(handle, first, spare, time.monotonic())
            except Exception as exc:  # an NVML without the calls, a driver that refuses them
                self.missing = f"no GPM: {type(exc).__name__}: {exc}"[:200]
                self.close()
                return
        if unsupported and not self.devices:
            self.missing = (f"no GPM on GPU {', '.join(map(str, unsupported))}: NVML reports no SM, tensor-core or "
                            "memory-bandwidth activity for it (Hopper and later GPUs do)")

    def read(self) -> dict[int, dict[str, float]]:
        """Each GPU's metrics since the previous read (the first read primes only, in ``__init__``);
        a GPU read sooner than :data:`MIN_INTERVAL_S` after the last is left for the next tick."""
        out: dict[int, dict[str, float]] = {}
        now = time.monotonic()
        for index, dev in list(self.devices.items()):
            if now - dev.at < MIN_INTERVAL_S:
                continue
            try:
                self.nvml.nvmlGpmSampleGet(dev.handle, dev.spare)
                request = self.nvml.c_nvmlGpmMetricsGet_t()
                request.version = self.nvml.NVML_GPM_METRICS_GET_VERSION
                request.numMetrics = len(METRICS)
                request.sample1, request.sample2 = dev.previous, dev.spare
                for i, metric in enumerate(METRICS.values()):
                    request.metrics[i].metricId = metric
                self.nvml.nvmlGpmMetricsGet(request)
            except Exception as exc:  # the device stopped answering: said once, no more GPM for it
                self.missing = f"GPM stopped on GPU {index}: {type(exc).__name__}: {exc}"[:200]
                self._free(self.devices.pop(index))
                continue
            dev.previous, dev.spare, dev.at = dev.spare, dev.previous, now
            values = {}
            for i, field in enumerate(METRICS):
                metric = request.metrics[i]
                if metric.nvmlReturn == 0 and metric.value == metric.value:  # NVML_SUCCESS, and not NaN
                    values[field] = round(min(100.0, max(0.0, float(metric.value))), 1)
            if values:
                out[index] = values
        return out

    def _free(self, dev: _Device) -> None:
        for sample in (dev.previous, dev.spare):
            try:
                self.nvml.nvmlGpmSampleFree(sample)
            except Exception:  # noqa: BLE001 - freeing at the end: nothing to tell
                pass

    def close(self) -> None:
        for dev in self.devices.values():
            self._free(dev)
        self.devices.clear()
