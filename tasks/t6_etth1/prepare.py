"""ETTh1 long-horizon forecasting (t6): from 336 hours, forecast the next 96 hours. LOCKED — do not edit.

Raw data: ETTh1.csv (Zhou et al., Informer, AAAI 2021): 17 420 hourly rows from 2016-07-01,
columns date, HUFL, HULL, MUFL, MULL, LUFL, LULL, OT. All 7 variables are both inputs and targets.

Splits (the usual LTSF borders, months of 30 days; each later split starts 336 rows early so
its first window has a full look-back; rows from 14 400 on are unused, as in LTSF):
    train  rows [0, 8640)        8 640 rows   8 209 windows
    val    rows [8304, 11520)    3 216 rows   2 785 windows
    test   rows [11184, 14400)   3 216 rows   2 785 windows  (held out: not in your workspace)
Every split is normalised with the per-variable mean and std (population std, as sklearn's
StandardScaler) of the train rows (see ``load_stats``). Windows slide with stride 1.

Loaders:
    load_series(split) -> float32 tensor [T, 7], the split's normalised rows in time order
    windows(split)     -> (x, y): x float32 [N, 336, 7] (look-back), y float32 [N, 96, 7]
                          (horizon); window i is rows [i, i+336) -> [i+336, i+432) of the split.
                          Both are views of load_series(split): index them, do not copy them all.
    load_stats()       -> {"columns": [7 names], "mean": [7], "std": [7], "borders": {...}}
    LOOKBACK, HORIZON, N_VARS = 336, 96, 7

Metric (scored split: test; lower is better): MSE on normalised values over all 7 variables ×
96 steps of every test window. ``evaluate(model, split, device)`` gives it in one call: score
yourself on "val"; the test split is scored by the harness after the session. ``evaluate`` is
``judge(predict(model, inputs(split), device), split)``, and the harness runs the parts apart
(``predict`` in a sandbox that holds no target, ``judge`` where none of your code runs):
    inputs(split)  -> {"series": float32 [T - 96, 7]}: the split's rows but the last 96, which
                      are only ever targets; they hold the look-backs of all N = T - 431 windows
    predict(model, inputs, device) -> float32 [N, 96, 7] (float64 if the model's output is):
                      calls ``model(x)`` with x float32 [1, 336, 7], one window at a time in time
                      order, which must return a float tensor [1, 96, 7]. In the harness the rows
                      arrive one by one: a row is shown only once every forecast it holds a target
                      of has been made (``onegc_kit.forecast_in_time_order``), so a model can never
                      see a window's horizon, in its batch or cached from an earlier one
    judge(predictions, split) -> {"value": mse, "n": N}: the exact shape, finite floats, the
                      squared errors summed in float64

Checkpoints (rule 7): your run script defines ``build_model(config)`` and saves with
    import prepare
    prepare.save_checkpoint(model, config, "run1_epoch3", score=val_mse)
which writes ``checkpoints/run1_epoch3.pt``. The harness rebuilds the model with
``build_model(config)``, loads the weights strictly and calls ``predict``. Save the plain
module, not a ``torch.compile``d one (its keys start with ``_orig_mod.`` and will not load).
"""

import json
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402  (beside this file in a workspace, in tasks/ in the repo)

TASK = "t6_etth1"
VERSION = "2"  # 2: windows forecast one at a time in time order (issue 46)
METRIC = "test_mse"
SCORED_SPLIT = "test"
RAW = {
    "ETTh1.csv": {
        "url": "https://raw.githubusercontent.com/zhouhaoyi/ETDataset/main/ETT-small/ETTh1.csv",
        "sha256": "f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066",
        "md5": "8381763947c85f4be6ac456c508460d6",  # pinned by darts 0.48.1 (ETTh1Dataset)
        "size": 2589657,
    }
}
COLUMNS = ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
LOOKBACK, HORIZON, N_VARS = 336, 96, len(COLUMNS)
MONTH = 30 * 24  # LTSF counts a month as 30 days of hourly rows
TRAIN_END, VAL_END, TEST_END = 12 * MONTH, 16 * MONTH, 20 * MONTH
BORDERS = {  # [start, end) rows of each split; later splits start LOOKBACK rows early
    "train": (0, TRAIN_END),
    "val": (TRAIN_END - LOOKBACK, VAL_END),
    "test": (VAL_END - LOOKBACK, TEST_END),
}
PRIVATE = {"test"}  # held-out labels: never copied into a workspace
EVAL_BATCH = 512  # windows per batch where the judge sums squared errors (the model sees one at a time)
# the harness streams these inputs row by row in time order (runner/scoring/worker.py): name -> (look-back, horizon)
TIME_ORDERED = {"series": (LOOKBACK, HORIZON)}
save_checkpoint = kit.save_checkpoint
data_dir = kit.data_dir


def _read_csv(path: Path) -> np.ndarray:
    with open(path) as f:
        header = f.readline().strip().split(",")
    if header != ["date", *COLUMNS]:
        raise kit.KitError(f"{path.name}: header {header} is not date,{','.join(COLUMNS)}: not the ETTh1 file")
    values = np.loadtxt(path, delimiter=",", skiprows=1, usecols=range(1, 1 + N_VARS), dtype=np.float64, ndmin=2)
    if len(values) < TEST_END:
        raise kit.KitError(f"{path.name} has {len(values)} rows; the LTSF splits need {TEST_END}")
    return values


def build(raw: dict, out: Path) -> dict:
    values = _read_csv(raw["ETTh1.csv"])
    train = values[:TRAIN_END]
    mean, std = train.mean(axis=0), train.std(axis=0)
    files = {}
    for split, (start, end) in BORDERS.items():
        series = ((values[start:end] - mean) / std).astype(np.float32)
        np.save(out / f"{split}.npy", series)
        files[f"{split}.npy"] = {"split": split, "private": split in PRIVATE}
    stats = {"columns": COLUMNS, "mean": mean.tolist(), "std": std.tolist(), "borders": BORDERS,
             "lookback": LOOKBACK, "horizon": HORIZON}
    (out / "stats.json").write_text(json.dumps(stats, indent=2))
    files["stats.json"] = {"split": None}
    return files


def load_stats() -> dict:
    return json.loads(kit.require(data_dir() / "stats.json").read_text())


def _series_file(split: str) -> Path:
    if split not in BORDERS:
        raise kit.KitError(f"unknown split {split!r}: choose one of {', '.join(BORDERS)}")
    path = data_dir() / f"{split}.npy"
    if split in PRIVATE and not path.exists():
        raise kit.KitError(f"the {split} split is held out (scored by the harness after the session): use 'val'")
    return kit.require(path)


def load_series(split: str):
    import torch

    return torch.from_numpy(np.load(_series_file(split)))


def windows(split: str):
    series = load_series(split)
    w = series.unfold(0, LOOKBACK + HORIZON, 1).transpose(1, 2)  # [N, 432, 7], a view
    return w[:, :LOOKBACK], w[:, LOOKBACK:]


# --------------------------------------------------------------------------- evaluation
def inputs(split: str) -> dict:
    """What the model is given: the split's rows that some look-back holds (float32 [T - 96, 7]).

    Window i's look-back is rows [i, i + 336) of it; the last 96 rows of the split are only ever
    targets, so they are not here."""
    return {"series": np.load(_series_file(split), mmap_mode="r")[:-HORIZON]}


def predict(model, inputs: dict, device: str):
    """The forecast of every window, one at a time in time order: float32 [N, 96, 7] (float64 if
    the model's is). The windows' inputs are fed in time order and each forecast is final before
    the next row is shown (in the harness the series is a ``kit.RowStream``)."""
    import torch

    def forecast(window):  # float32 [336, 7]: one look-back
        x = torch.from_numpy(np.array(window, dtype=np.float32))[None].to(device)  # a copy: the window may be read-only
        pred = model(x)
        if not isinstance(pred, torch.Tensor) or pred.shape != (1, HORIZON, N_VARS):
            got = tuple(pred.shape) if isinstance(pred, torch.Tensor) else type(pred).__name__
            raise kit.KitError(f"model(x) must return [B, {HORIZON}, {N_VARS}]; got {got} for x of shape {tuple(x.shape)}")
        return (pred.cpu() if pred.dtype == torch.float64 else pred.float().cpu()).numpy()[0]

    with torch.no_grad():
        return kit.forecast_in_time_order(inputs["series"], LOOKBACK, HORIZON, forecast)


def judge(predictions, split: str) -> dict:
    """MSE of float [N, 96, 7] forecasts against the split's horizons, summed in float64."""
    import torch

    y = windows(split)[1]
    pred = kit.check_predictions(predictions, tuple(y.shape), "f", f"a float forecast [N, {HORIZON}, {N_VARS}] per window")
    total = 0.0
    for i in range(0, len(y), EVAL_BATCH):  # batch by batch, as the model ran: the same sums
        batch = torch.from_numpy(np.array(pred[i : i + EVAL_BATCH], dtype=np.float64))  # a copy: exact sums
        total += float(((batch - y[i : i + EVAL_BATCH].double()) ** 2).sum())
    n = len(y)
    return {"value": total / (n * HORIZON * N_VARS), "n": n}


def evaluate(model, split: str, device: str) -> dict:
    """The MSE of ``split`` in one call (what the harness computes in two processes)."""
    return kit.evaluate_split(sys.modules[__name__], model, split, device)


if __name__ == "__main__":
    sys.exit(kit.cli(sys.modules[__name__]))
