"""T6 (ETTh1): preparation, the held-out test split, the baseline on CPU and the scorer (sealed:
inputs without targets, predict, judge; the same numbers as the evaluate it replaced)."""

import csv
import json
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta

import numpy as np
import pytest
import torch

from runner.sandbox.bwrap import status
from tasks import get_task
from tests.helpers import checks_of, events, start_session, wait_event, wait_for, write_agent

TASK = "t6_etth1"
COLUMNS = ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
# prepare.evaluate before sealed scoring (commit e5620db), verbatim: the reference that
# judge(predict(model, inputs(split))) must match to 1e-6 on every checkpoint.
OLD_EVALUATE = '''
def evaluate(model, split: str, device: str) -> dict:
    import torch

    x, y = windows(split)
    total = 0.0
    for i in range(0, len(x), EVAL_BATCH):
        pred = model(x[i : i + EVAL_BATCH].contiguous().to(device))
        target = y[i : i + EVAL_BATCH]
        if not isinstance(pred, torch.Tensor) or pred.shape != target.shape:
            got = tuple(pred.shape) if isinstance(pred, torch.Tensor) else type(pred).__name__
            raise kit.KitError(f"model(x) must return [B, {HORIZON}, {N_VARS}]; "
                               f"got {got} for x of shape {tuple(x[i:i+EVAL_BATCH].shape)}")
        total += float(((pred.detach().double().cpu() - target.double()) ** 2).sum())
    n = len(x)
    return {"value": total / (n * HORIZON * N_VARS), "n": n}
'''
ZERO_MODEL = '''
import torch
import torch.nn as nn


class Zero(nn.Module):
    def forward(self, x):
        return torch.zeros(x.shape[0], 96, 7)


def build_model(config):
    return Zero()
'''


FEW_STEPS_AGENT = """
import re, subprocess, sys
from pathlib import Path
text = Path("train.py").read_text()
for name, value in (("MAX_STEPS", "3"), ("EPOCHS", "2"), ("DEVICE", '"cpu"')):
    text = re.sub(rf"^{name}\\s*=.*$", f"{name} = {value}", text, count=1, flags=re.M)
Path("run_1.py").write_text(text)
subprocess.run([sys.executable, "run_1.py"], check=True)
"""


def write_etth1(path, rows=14_450, seed=0):
    """A synthetic file in ETTh1's exact layout (header, hourly dates, 7 float columns)."""
    rng = np.random.default_rng(seed)
    t = np.arange(rows)[:, None]
    values = 5 + 3 * np.sin(2 * np.pi * t / 24 + np.arange(7)) + 0.01 * t / 24 + rng.normal(0, 0.3, (rows, 7))
    start = datetime(2016, 7, 1)
    with open(path, "w", newline="") as f:
        f.write("date," + ",".join(COLUMNS) + "\n")
        for i in range(rows):
            stamp = (start + timedelta(hours=i)).strftime("%Y-%m-%d %H:%M:%S")
            f.write(stamp + "," + ",".join(f"{v:.3f}" for v in values[i]) + "\n")
    return values


@pytest.fixture
def raw_dir(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    write_etth1(raw / "ETTh1.csv")
    return raw


@pytest.mark.slow
def test_fixture_prepare_train_and_score(raw_dir, prepare_fixture, make_workspace, save_state, load_prepare, score_both,
                                         sealed_score):
    data = prepare_fixture(TASK, raw_dir)
    ws = make_workspace(TASK, data)
    assert (data / "test.npy").exists() and not (ws.path / "data" / "test.npy").exists()
    ws.set_constants(MAX_STEPS=3, EPOCHS=2, DEVICE="cpu")
    out = ws.run()
    assert "val_mse:" in out.stdout
    ckpts = ws.checkpoints()
    assert [c.name for c in ckpts] == ["train_epoch1.pt"]
    first = ws.evaluate(ckpts[0])
    assert first["ok"] and first["split"] == "test" and first["n"] == 2785
    assert np.isfinite(first["value"]) and first["value"] > 0
    assert ws.evaluate(ckpts[0])["value"] == first["value"]  # deterministic on CPU

    old, new = score_both(load_prepare(TASK), OLD_EVALUATE, ckpts[0], ws.path, data)
    assert abs(old["value"] - new["value"]) <= 1e-6 and old["n"] == new["n"] == 2785
    assert first["value"] == pytest.approx(new["value"], abs=1e-6)
    sealed = sealed_score(TASK, data, ckpts[0], ws.path)  # a sandboxed worker predicts, the runner judges
    assert sealed.error is None and not sealed.verdicts and sealed.value == pytest.approx(new["value"], abs=1e-6), sealed

    state = torch.load(ckpts[0], weights_only=True)
    compiled = {f"_orig_mod.{k}": v for k, v in state["state_dict"].items()}
    bad = save_state(ws.path / "checkpoints" / "compiled.pt", compiled, state["config"])
    result = ws.evaluate(bad)
    assert result["returncode"] == 1 and not result["ok"] and "_orig_mod." in result["error"]


def test_fixture_splits_windows_and_scaling(raw_dir, prepare_fixture, load_prepare, monkeypatch):
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, data)
    sizes = {s: len(prepare.load_series(s)) for s in ("train", "val", "test")}
    assert sizes == {"train": 8640, "val": 3216, "test": 3216}
    train = prepare.load_series("train").double()
    assert torch.allclose(train.mean(0), torch.zeros(7, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(train.std(0, unbiased=False), torch.ones(7, dtype=torch.float64), atol=1e-4)
    assert len(prepare.windows("train")[0]) == 8209 and len(prepare.windows("test")[1]) == 2785
    x, y = prepare.windows("val")
    series = prepare.load_series("val")
    assert x.shape == (2785, 336, 7) and y.shape == (2785, 96, 7)
    assert torch.equal(x[5, 0], series[5]) and torch.equal(y[5, 0], series[5 + 336])
    assert torch.equal(y[-1, -1], series[-1])
    # val starts 336 rows before the end of train: its first look-back is train's last 336 rows
    assert torch.allclose(series[:336], train[-336:].float())

    monkeypatch.setenv("ONEGC_DATA_DIR", str(data.parent / "workspace_like"))
    with pytest.raises(prepare.kit.KitError, match="held out"):
        prepare.load_series("test")


def test_inputs_are_the_look_backs_and_nothing_after_them(raw_dir, prepare_fixture, load_prepare):
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, data)
    series = np.load(data / "test.npy")
    given = prepare.inputs("test")
    assert list(given) == ["series"] and given["series"].dtype == np.float32
    # every look-back [i, i + 336) of the 2 785 windows lies in rows [0, 3120); rows 3120..3215
    # are only ever targets and are not given
    assert given["series"].shape == (3216 - 96, 7) and np.array_equal(given["series"], series[:-96])
    x, _ = prepare.windows("test")
    assert len(x) == 2785 and torch.equal(x[-1], torch.from_numpy(series[2784 : 2784 + 336]))

    class Echo(torch.nn.Module):  # forecasts the last look-back row: sees exactly what predict feeds
        def forward(self, x):
            return x[:, -1:].expand(-1, 96, -1)

    pred = prepare.predict(Echo(), given, "cpu")
    assert pred.dtype == np.float32 and pred.shape == (2785, 96, 7)
    assert np.array_equal(pred[:, 0], series[335 : 335 + 2785])


def test_judge_refuses_what_no_model_returns(raw_dir, prepare_fixture, load_prepare, rejects, hostile):
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, data)
    _, y = prepare.windows("test")
    good = np.zeros((2785, 96, 7), dtype=np.float32)
    for name, bad in hostile(good).items():
        message = rejects(prepare.judge, bad, "test")
        assert ("NaN or inf" if name in ("NaN", "inf") else "forecast") in message, name
    zero = prepare.judge(good, "test")
    assert zero["n"] == 2785 and zero["value"] == pytest.approx(float((y.double() ** 2).mean()), rel=1e-12)
    assert prepare.judge(good.astype(np.float16), "test") == zero  # any float width, the same number
    assert prepare.judge(good.astype(np.float64)[::-1], "test") == zero  # any memory layout (negative strides)
    assert prepare.judge(y.numpy().copy(), "test")["value"] == 0.0  # the floor: what a perfect model gets


def test_predict_reports_a_wrong_forecast_shape(load_prepare):
    prepare = load_prepare(TASK)

    class Short(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(x.shape[0], 24, 7)

    with pytest.raises(prepare.kit.KitError, match=r"must return \[B, 96, 7\]; got \(1, 24, 7\) for x of shape \(1, 336, 7\)"):
        prepare.predict(Short(), {"series": np.zeros((1000, 7), np.float32)}, "cpu")


@pytest.mark.slow
@pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")
def test_real_session_scores_as_prepare_eval_does(raw_dir, prepare_fixture, home, tmp_path):
    """A real runner and its sealed scorer (a sandboxed worker predicts, the runner judges): the
    live and the official score of the session's checkpoint are what ``prepare.py --eval`` gives."""
    data = home / "data" / TASK
    shutil.copytree(prepare_fixture(TASK, raw_dir), data)
    cmd = write_agent(tmp_path, "few_steps_agent.py", FEW_STEPS_AGENT)
    paths = start_session(home, "t6sealed", task="t6", agent="command", command=cmd, budget_s=240)
    ended = wait_event(paths, "session_ended", timeout=400)
    assert ended["reason"] == "completed", ended
    scored = [e for e in events(paths) if e["type"] == "checkpoint_scored"]
    live = [e for e in scored if not e.get("official")]
    official = [e for e in scored if e.get("official")]
    assert len(live) == len(official) == 1 and live[0]["name"] == official[0]["name"], scored
    assert live[0].get("error") is None and official[0].get("error") is None, scored
    # the worker noted nothing odd (the synthetic series' val is easier than its test: the
    # runner's self-report flag may fire, which is about the numbers, not the code)
    assert {check for check, _ in checks_of(live[0]) | checks_of(official[0])} <= {"self_report_gap"}, scored

    ckpt = paths.workspace / "checkpoints" / "run_1_epoch1.pt"
    by_hand = {split: eval_by_hand(ckpt, paths.workspace, data, split) for split in ("val", "test")}
    assert by_hand["test"]["n"] == 2785, by_hand
    # live: the trusted validation score, which ranks checkpoints; official: the test score
    assert live[0]["split"] == "val" and live[0]["value"] == pytest.approx(by_hand["val"]["value"], abs=1e-6)
    assert official[0]["split"] == "test" and official[0]["value"] == pytest.approx(by_hand["test"]["value"], abs=1e-6)
    assert official[0]["val"] == pytest.approx(by_hand["val"]["value"], abs=1e-6)
    assert json.loads(paths.result.read_text())["value"] == official[0]["value"]
    print(f"t6 session: live val {live[0]['value']!r} official {official[0]['value']!r} --eval {by_hand!r}")


def eval_by_hand(ckpt, code, data, split="test") -> dict:
    proc = subprocess.run([sys.executable, str(get_task(TASK).folder / "prepare.py"), "--eval", str(ckpt),
                           "--code", str(code), "--data-dir", str(data), "--device", "cpu", "--split", split],
                          capture_output=True, text=True, timeout=120)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ok"], out
    return out


CONST_SCRIPT = '''
import json, sys
from pathlib import Path

import torch
import torch.nn as nn
import prepare

GATE = Path(__file__).with_name("gate")  # beside the checkpoint's snapshot of this script


class Const(nn.Module):  # forecasts one value everywhere
    def __init__(self, c):
        super().__init__()
        self.c = nn.Parameter(torch.tensor(float(c)))

    def forward(self, x):
        return self.c.expand(x.shape[0], prepare.HORIZON, x.shape[2]).clone()


def build_model(config):
    if config["gated"] and not GATE.exists():  # stands in for a model that runs only on the GPU
        raise RuntimeError("this model needs CUDA (simulated)")
    return Const(config["c"])


if __name__ == "__main__":
    for name, c, gated in json.loads(sys.argv[1]):
        prepare.save_checkpoint(Const(c), {"c": c, "gated": gated}, name)
'''

# Saves the checkpoints, then ends when the test says so (a file "go" in the workspace), at most
# after 200 s of the 240 s budget: the end, and the official scoring after it, wait for events.
CONSTANT_AGENT = f"""
import json, subprocess, sys, time
from pathlib import Path
Path("run_const.py").write_text({CONST_SCRIPT!r})
subprocess.run([sys.executable, "run_const.py", sys.argv[1]], check=True)
deadline = time.monotonic() + 200
while not Path("go").exists() and time.monotonic() < deadline:
    time.sleep(0.2)
"""


def constant_fits(home) -> tuple[float, float]:
    """Constant forecasts fitted to val's and to test's targets (the fixture's series drifts, so
    val and test rank the two constant models in opposite orders)."""
    import importlib.util
    import os

    os.environ["ONEGC_DATA_DIR"] = str(home / "data" / TASK)
    try:
        spec = importlib.util.spec_from_file_location("t6_fits", get_task(TASK).folder / "prepare.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return float(module.windows("val")[1].mean()), float(module.windows("test")[1].mean())
    finally:
        os.environ.pop("ONEGC_DATA_DIR", None)


def selection_session(home, raw_dir, prepare_fixture, tmp_path, sid, fit_val_gated: bool):
    """fit_val and fit_test saved; once both live scores are in (fit_val's failed when gated),
    fit_val's snapshot gets its gate (its model builds from then on) and the agent ends."""
    shutil.copytree(prepare_fixture(TASK, raw_dir), home / "data" / TASK)
    c_val, c_test = constant_fits(home)
    plan = [["fit_val", c_val, fit_val_gated], ["fit_test", c_test, False]]
    cmd = write_agent(tmp_path, "constant_agent.py", CONSTANT_AGENT) + [json.dumps(plan)]
    paths = start_session(home, sid, task="t6", agent="command", command=cmd, budget_s=240)
    live = lambda: {e["name"] for e in events(paths) if e["type"] == "checkpoint_scored" and not e["official"]}  # noqa: E731
    wait_for(lambda: live() >= {"fit_val-1", "fit_test-1"}, 200, "the live scores of both checkpoints")
    (paths.snapshots / "fit_val-1" / "gate").touch()
    (paths.workspace / "go").touch()
    ended = wait_event(paths, "session_ended", timeout=400)
    assert ended["reason"] == "completed", ended
    data = home / "data" / TASK
    snaps = {name: paths.snapshots / f"{name}-1" for name in ("fit_val", "fit_test")}
    by_hand = {name: {split: eval_by_hand(snap / "checkpoint.pt", snap, data, split)["value"] for split in ("val", "test")}
               for name, snap in snaps.items()}
    return paths, json.loads(paths.result.read_text()), by_hand


@pytest.mark.slow
def test_the_val_best_checkpoint_is_official_although_another_has_the_better_test_score(
        raw_dir, prepare_fixture, home, tmp_path):
    paths, result, by_hand = selection_session(home, raw_dir, prepare_fixture, tmp_path, "sel1", False)
    assert by_hand["fit_val"]["val"] < by_hand["fit_test"]["val"]  # val prefers fit_val...
    assert by_hand["fit_test"]["test"] < by_hand["fit_val"]["test"]  # ...test prefers fit_test
    assert result["checkpoint"] == "fit_val-1" and result["selection"] == "val-best"
    assert result["value"] == pytest.approx(by_hand["fit_val"]["test"], abs=1e-6)  # its test score: the worse one
    assert result["val"] == pytest.approx(by_hand["fit_val"]["val"], abs=1e-6)
    started = next(e for e in events(paths) if e["type"] == "session_started")
    assert started["contract"]["selection"] == "val-best"


@pytest.mark.slow
def test_a_best_checkpoint_whose_live_scoring_failed_still_gets_its_official_score(
        raw_dir, prepare_fixture, home, tmp_path):
    paths, result, by_hand = selection_session(home, raw_dir, prepare_fixture, tmp_path, "sel2", True)
    live = {e["name"]: e for e in events(paths) if e["type"] == "checkpoint_scored" and not e["official"]}
    assert live["fit_val-1"].get("value") is None and "needs CUDA" in live["fit_val-1"]["error"]
    assert live["fit_test-1"]["value"] is not None
    assert result["checkpoint"] == "fit_val-1"  # judged again after the session, on the session's device
    assert result["value"] == pytest.approx(by_hand["fit_val"]["test"], abs=1e-6)


def test_corrupt_fixture_fails_checksum_and_leaves_nothing(raw_dir, tmp_path, kit, load_prepare, pin_raw):
    prepare = load_prepare(TASK)
    pin_raw(prepare, raw_dir)
    raw = raw_dir / "ETTh1.csv"
    body = bytearray(raw.read_bytes())
    body[5000] = ord("9") if body[5000] != ord("9") else ord("8")  # same size, one digit changed
    raw.write_bytes(bytes(body))
    out = tmp_path / "data" / TASK
    with pytest.raises(kit.KitError, match="sha256 check"):
        kit.prepare(prepare, out, from_dir=raw_dir)
    assert not out.exists()
    assert not list((tmp_path / "data").glob(".*partial*"))


def test_malformed_file_fails_cleanly(tmp_path, kit, load_prepare, pin_raw):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "ETTh1.csv").write_text("date,HUFL,OT\n2016-07-01 00:00:00,1.0,2.0\n")
    prepare = load_prepare(TASK)
    pin_raw(prepare, raw)
    with pytest.raises(kit.KitError, match="header"):
        kit.prepare(prepare, tmp_path / "data" / TASK, from_dir=raw)
    assert not (tmp_path / "data" / TASK).exists()


def test_train_script_defines_the_edited_constants():
    text = (get_task(TASK).folder / "train.py").read_text()
    names = {n for edit in get_task(TASK).scripted_edits for n in edit.set} | {"MAX_STEPS", "DEVICE"}
    missing = [n for n in names if not re.search(rf"^{n}\s*=", text, re.MULTILINE)]
    assert not missing


# --------------------------------------------------------------------------- the real file
def test_real_file_checksum(shared_data, kit, load_prepare):
    prepare = load_prepare(TASK)
    path = shared_data / "etth1" / "ETTh1.csv"
    spec = prepare.RAW["ETTh1.csv"]
    assert path.stat().st_size == spec["size"]
    assert kit.file_digest(path) == spec["sha256"]
    assert kit.file_digest(path, "md5") == spec["md5"]


def _prepare_real(shared_data, tmp_path):
    data = tmp_path / "data" / TASK
    proc = subprocess.run(
        [sys.executable, str(get_task(TASK).folder / "prepare.py"), "--from", str(shared_data / "etth1"),
         "--data-dir", str(data)],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return data


@pytest.mark.slow
def test_real_splits_and_zero_forecast_mse(shared_data, tmp_path, make_workspace, save_state, load_prepare, score_both):
    data = _prepare_real(shared_data, tmp_path)
    assert {s: len(np.load(data / f"{s}.npy")) for s in ("train", "val", "test")} == {"train": 8640, "val": 3216, "test": 3216}

    # the zero forecast's MSE, computed here from the CSV alone
    with open(shared_data / "etth1" / "ETTh1.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["date", *COLUMNS] and len(rows) == 17_421
    values = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    mean, std = values[:8640].mean(0), values[:8640].std(0)
    test = (values[11_520 - 336 : 14_400] - mean) / std
    targets = np.stack([test[i + 336 : i + 432] for i in range(len(test) - 432 + 1)])
    assert targets.shape == (2785, 96, 7)
    expected = float((targets**2).mean())

    ws = make_workspace(TASK, data)
    ws.write("zero.py", ZERO_MODEL)
    ckpt = save_state(ws.path / "checkpoints" / "zero.pt", {}, {}, script="zero.py")
    result = ws.evaluate(ckpt)
    assert result["ok"] and result["n"] == 2785
    assert result["value"] == pytest.approx(expected, rel=1e-6)
    old, new = score_both(load_prepare(TASK), OLD_EVALUATE, ckpt, ws.path, data)
    assert old == new and new["value"] == result["value"]


@pytest.mark.slow
def test_real_truncated_file_fails_on_the_command_line(shared_data, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(shared_data / "etth1" / "ETTh1.csv", raw / "ETTh1.csv")
    with open(raw / "ETTh1.csv", "r+b") as f:
        f.truncate(1_000_000)
    data = tmp_path / "data" / TASK
    proc = subprocess.run(
        [sys.executable, str(get_task(TASK).folder / "prepare.py"), "--from", str(raw), "--data-dir", str(data)],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "ETTh1.csv" in lines[0] and "truncated" in lines[0]
    assert not data.exists()
