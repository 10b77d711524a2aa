"""GPM (runner/session/gpm.py): the SM, tensor-core and DRAM-bandwidth activity of a GPU that has
it, recorded beside utilisation in every ``gpu`` event; a GPU without it says so once, and
nothing else changes (issue 50). Driven through the fake NVML's GPM calls (the real check is
benchmarks/device_check.sh, on a GPU machine)."""

from __future__ import annotations

import pytest

from runner.session import fake_nvml
from runner.session.gpm import METRICS, MIN_INTERVAL_S, GpmReader
from runner.session.gpu import GpuSampler
from tests.helpers import UNTIL_TOLD, events, let_go_after_gpu_samples, start_session, wait_event, write_agent


def test_a_gpu_with_gpm_gives_its_three_metrics_over_each_interval(monkeypatch):
    monkeypatch.setenv("ONEGC_FAKE_GPM", "61.5,33,20.25")
    reader = GpmReader(fake_nvml, [(0, 0), (1, 1)])
    assert reader.missing is None and set(reader.devices) == {0, 1}
    for dev in reader.devices.values():  # as if the tick came a period later (NVML wants samples 100 ms apart)
        dev.at -= MIN_INTERVAL_S
        dev.previous.at -= MIN_INTERVAL_S
    assert reader.read() == {0: {"sm_active_pct": 61.5, "tensor_active_pct": 33.0, "dram_bw_pct": 20.2},
                             1: {"sm_active_pct": 61.5, "tensor_active_pct": 33.0, "dram_bw_pct": 20.2}}
    assert reader.read() == {}  # at once again: under 100 ms since, left for the next tick
    samples = [s for d in reader.devices.values() for s in (d.previous, d.spare)]
    reader.close()
    assert all(s.freed for s in samples) and not reader.devices


def test_a_gpu_without_gpm_says_why_once_and_samples_as_before(monkeypatch):
    monkeypatch.setenv("ONEGC_NVML_MODULE", "runner.session.fake_nvml")
    monkeypatch.setenv("ONEGC_FAKE_GPM", "0")
    sampler = GpuSampler([0])
    assert sampler.gpm.missing is not None and sampler.gpm.missing.startswith("no GPM on GPU 0")
    (sample,) = sampler.sample()
    assert sample.util_pct >= 0 and sample.tensor_active_pct is None and sample.sm_active_pct is None


def test_an_nvml_without_the_gpm_calls_is_no_gpm_not_a_failure():
    class OldNvml:  # a pynvml (or driver) from before GPM
        def nvmlGpmQueryDeviceSupport(self, handle):
            raise AttributeError("nvmlGpmQueryDeviceSupport")

    reader = GpmReader(OldNvml(), [(0, 0)])
    assert reader.missing and reader.missing.startswith("no GPM: AttributeError") and reader.read() == {}


@pytest.mark.slow
@pytest.mark.parametrize("gpm", ["70,40,25", "0"], ids=["gpm", "no-gpm"])
def test_a_session_records_gpm_beside_utilisation_or_says_once_there_is_none(home, tmp_path, monkeypatch, gpm):
    monkeypatch.setenv("ONEGC_NVML_MODULE", "runner.session.fake_nvml")
    monkeypatch.setenv("ONEGC_FAKE_GPUS", "1")
    monkeypatch.setenv("ONEGC_FAKE_GPM", gpm)
    paths = start_session(home, f"gpm-{gpm[:1]}", agent="command", command=write_agent(tmp_path, "a.py", UNTIL_TOLD),
                          gpu="0", budget_s=300)
    let_go_after_gpu_samples(paths)
    wait_event(paths, "session_ended", timeout=120)
    record = events(paths)
    gpu = [e for e in record if e["type"] == "gpu"]
    said = [e for e in record if e["type"] == "warning" and e["code"] == "no_gpm"]
    assert gpu, "no GPU samples"
    if gpm == "0":
        assert len(said) == 1 and "Hopper" in said[0]["message"]
        assert not any(field in e for e in gpu for field in METRICS)
    else:
        assert said == []
        assert {(e["sm_active_pct"], e["tensor_active_pct"], e["dram_bw_pct"]) for e in gpu[1:]} == {(70.0, 40.0, 25.0)}


def test_the_fake_nvml_measures_between_two_samples(monkeypatch):
    monkeypatch.delenv("ONEGC_FAKE_GPM", raising=False)
    a, b = fake_nvml.nvmlGpmSampleAlloc(), fake_nvml.nvmlGpmSampleAlloc()
    fake_nvml.nvmlGpmSampleGet(0, a)
    b.at, b.busy = a.at + 1.0, a.busy  # a second later, no CPU time spent: an idle "GPU"
    request = fake_nvml.c_nvmlGpmMetricsGet_t()
    request.version, request.numMetrics, request.sample1, request.sample2 = 1, 3, a, b
    for i, metric in enumerate(METRICS.values()):
        request.metrics[i].metricId = metric
    fake_nvml.nvmlGpmMetricsGet(request)
    assert [(m.nvmlReturn, m.value) for m in request.metrics[:3]] == [(0, 0.0)] * 3
    b.at = a.at + 0.05
    with pytest.raises(fake_nvml.NVMLError):
        fake_nvml.nvmlGpmMetricsGet(request)  # as NVML: under 100 ms apart is no measure
