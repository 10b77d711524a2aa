"""onegc_kit — the locked helper behind every task's ``prepare.py``. DO NOT EDIT.

It is copied read-only into each workspace beside ``prepare.py``. It provides:

- ``save_checkpoint(model, config, name, score=None)``: the one way to save a checkpoint
  (paper rule 7). Writes ``checkpoints/<name>.pt`` atomically (temp file + rename) holding
  ``state_dict``, ``config``, the script's file name and the self-reported score.
- ``data_dir()``: where the prepared arrays live (``data/`` beside ``prepare.py`` in a
  workspace; ``$ONEGC_DATA_DIR`` when set, as the harness does for scoring).
- ``fetch(...)``: download a raw file from its canonical URL (resuming a partial download) or
  take it from a local folder, and verify its pinned checksum.
- ``cli(task)``: the command line of a task's ``prepare.py``:
    python prepare.py [--from DIR] [--data-dir DIR] [--force]      prepare the data once
    python prepare.py --eval CKPT --code DIR_OR_SCRIPT [--split S]  score a checkpoint,
                                                                    printing one JSON line
                                                                    (predict and judge in one
                                                                    process: for people; the
                                                                    harness keeps them apart)

A task module (its ``prepare.py``) defines ``TASK``, ``VERSION``, ``METRIC``, ``SCORED_SPLIT``,
``RAW`` (file name -> url/sha256/md5/size), ``build(raw, out) -> {file: {split, private}}``
(optionally ``fetch_raw(cache, from_dir) -> {name: path}`` where the raw files have alternatives), and
its evaluation in three parts, so that the harness can run the model apart from the answers
(the agent's code never runs beside the metric):

- ``inputs(split) -> {name: numpy array}``: what the model is given for a split, and nothing
  of its targets (the harness makes these once, outside the agent's reach);
- ``predict(model, inputs, device) -> numpy array``: the model's predictions for those inputs
  (this runs the agent's code: the harness runs it in a sandboxed worker per checkpoint);
- ``judge(predictions, split) -> {"value": float, "n": int}``: checks the predictions (shape,
  dtype, finiteness; :func:`check_predictions`) and computes the metric against the split's
  targets (the harness runs it in its own, trusted process).

``evaluate(model, split, device)`` is ``judge(predict(model, inputs(split), device), split)``
(:func:`evaluate_split`): the same numbers in one call, for the agent's own validation.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import itertools
import json
import math
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType

CHECKPOINT_FORMAT = 1
MANIFEST = "manifest.json"
DOWNLOAD_CHUNK = 1 << 20  # 1 MiB: bounded memory whatever the archive size
COMPILE_PREFIX = "_orig_mod."  # what torch.compile puts in front of every state_dict key


class KitError(Exception):
    """A failure with a message that says what to do; printed as one line."""


# --------------------------------------------------------------------------- checkpoints
def checkpoint_dir() -> Path:
    return Path(os.environ.get("ONEGC_CHECKPOINT_DIR") or Path.cwd() / "checkpoints")


def _script_name() -> str:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return Path(path).name if path else "<interactive>"


def save_checkpoint(model, config: dict, name: str, score: float | None = None) -> Path:
    """Save ``model``'s weights and ``config`` as ``checkpoints/<name>.pt``, atomically.

    ``config`` must be what ``build_model(config)`` needs to rebuild the model (plain values:
    numbers, strings, lists, dicts). ``score`` is your own validation figure, for the record;
    the official score is computed again by the harness. The state dict is saved as given:
    a ``torch.compile``d model saves keys prefixed ``_orig_mod.``, which will NOT load into
    ``build_model(config)`` — save ``model._orig_mod`` (or the uncompiled model) instead.
    """
    import torch

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name)).strip(".")
    if not safe:
        raise KitError(f"checkpoint name {name!r} is empty after cleaning: use letters and digits")
    directory = checkpoint_dir()
    directory.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "config": dict(config),
        "script": _script_name(),
        "score": None if score is None else float(score),
        "saved_at": time.time(),
    }
    final = directory / f"{safe}.pt"
    tmp = directory / f".{safe}.pt.{os.getpid()}.tmp"  # hidden: watchers ignore it
    torch.save(payload, tmp)
    os.replace(tmp, final)
    return final


# --------------------------------------------------------------------------- data
def data_dir() -> Path:
    """The prepared data: ``$ONEGC_DATA_DIR`` if set, else ``data/`` beside ``prepare.py``."""
    env = os.environ.get("ONEGC_DATA_DIR")
    if env:
        return Path(env)
    task = sys.modules.get("prepare")
    base = Path(task.__file__).resolve().parent if task and getattr(task, "__file__", None) else Path.cwd()
    return base / "data"


def require(path: Path) -> Path:
    """``path`` if it exists, else a one-line error naming the fix."""
    if not path.exists():
        sealed = os.environ.get(SEALED_SPLIT_VAR)
        if sealed and path.name.startswith(f"{sealed}_"):
            raise KitError(f"{path.name} is not in this workspace: the {sealed} split's targets are sealed in this "
                           f"session; prepare.evaluate(model, {sealed!r}) is answered by the harness")
        raise KitError(f"{path} is missing: the data is not prepared (run 'onegc prepare' or 'python prepare.py')")
    return path


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def file_digest(path: Path, algo: str = "sha256") -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(DOWNLOAD_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _verify(path: Path, spec: dict, origin: str) -> None:
    if spec.get("size") is not None and path.stat().st_size != spec["size"]:
        raise KitError(
            f"{path.name} from {origin} has {path.stat().st_size} bytes, expected {spec['size']}: "
            "the file is truncated or not the original; fetch it again"
        )
    for algo in ("sha256", "md5"):
        want = spec.get(algo)
        if want:
            got = file_digest(path, algo)
            if got != want:
                raise KitError(
                    f"{path.name} from {origin} fails its {algo} check (got {got[:12]}…, expected "
                    f"{want[:12]}…): the file is corrupt or not the original; fetch it again"
                )


def find_local(name: str, from_dir: Path) -> Path | None:
    """``from_dir/name``, else the first file of that name below it."""
    direct = from_dir / name
    if direct.is_file():
        return direct
    hits = sorted(p for p in from_dir.rglob(name) if p.is_file())
    return hits[0] if hits else None


def fetch(name: str, spec: dict, cache: Path, from_dir: Path | None = None) -> Path:
    """Return a verified local copy of raw file ``name``.

    ``spec``: ``url`` (canonical), optional ``mirrors`` (tried in order after it), ``sha256``
    and/or ``md5``, ``size``. A partial download resumes where it stopped."""
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / name
    if dest.is_file():
        try:
            _verify(dest, spec, str(cache))
            return dest
        except KitError:
            dest.unlink()
    if from_dir is not None:
        src = find_local(name, from_dir)
        if src is None:
            raise KitError(f"{name} not found under {from_dir}: put the raw file there, or drop --from to download it")
        _verify(src, spec, str(from_dir))
        tmp = cache / f".{name}.copy"
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
        return dest
    part = cache / f"{name}.part"
    problems = []
    for url in [spec["url"], *spec.get("mirrors", [])]:  # canonical first; a partial file resumes
        try:
            _download(url, part, spec, name)
        except KitError as exc:
            problems.append(str(exc))
            continue
        try:
            _verify(part, spec, url)
        except KitError as exc:
            part.unlink(missing_ok=True)
            problems.append(str(exc))
            continue
        os.replace(part, dest)
        return dest
    raise KitError(problems[-1] if len(problems) == 1 else "; ".join(problems))


def _download(url: str, part: Path, spec: dict, name: str) -> None:
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "onegc-prepare"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            mode = "ab" if have and response.status == 206 else "wb"
            total = spec.get("size")
            done = have if mode == "ab" else 0
            with open(part, mode) as out:
                while chunk := response.read(DOWNLOAD_CHUNK):
                    out.write(chunk)
                    done += len(chunk)
                    if total:
                        print(f"progress: {name} {done}/{total}", file=sys.stderr, flush=True)
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise KitError(
            f"cannot download {name} from {url} ({exc}): check the network, or pass "
            f"--from DIR with the raw file already on disk (offline clusters)"
        ) from None


def prepare(task: ModuleType, out: Path, from_dir: Path | None = None, force: bool = False) -> Path:
    """Fetch the raw files and build the arrays once, atomically, into ``out``."""
    manifest = out / MANIFEST
    if manifest.is_file() and not force:
        meta = json.loads(manifest.read_text())
        if meta.get("version") == task.VERSION:
            print(f"{task.TASK}: already prepared in {out}", file=sys.stderr)
            return out
    cache = out.parent / "_downloads" / task.TASK
    fetch_raw = getattr(task, "fetch_raw", None)  # a task whose raw files have alternatives chooses them
    if fetch_raw is not None:
        raw = fetch_raw(cache, from_dir)
    else:
        raw = {name: fetch(name, spec, cache, from_dir) for name, spec in task.RAW.items()}
    staging = out.parent / f".{out.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        what = f"converting {', '.join(sorted(raw))} into arrays" if raw else "making the arrays"
        print(f"step: {what}", file=sys.stderr, flush=True)  # onegc prepare counts its seconds while it runs
        files = task.build(raw, staging)
        entries = {}
        for fname, info in files.items():
            path = staging / fname
            entries[fname] = {
                "split": info.get("split"),
                "private": bool(info.get("private", False)),
                "bytes": path.stat().st_size,
                "sha256": file_digest(path),
            }
        meta = {"task": task.TASK, "version": task.VERSION, "created": time.time(), "files": entries}
        (staging / MANIFEST).write_text(json.dumps(meta, indent=2))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    os.replace(staging, out)
    print(f"{task.TASK}: prepared {len(entries)} files in {out}", file=sys.stderr)
    sizes = split_sizes(out, entries)
    if sizes:
        print(f"{task.TASK}: split sizes " + ", ".join(f"{split} {n:,} ({name})" for split, (n, name) in sizes.items()),
              file=sys.stderr)
    return out


SPLIT_ORDER = ("train", "val", "test")


def split_sizes(out: Path, entries: dict[str, dict]) -> dict[str, tuple[int, str]]:
    """How many rows each split holds, and the file counted: its targets (``<split>_y.npy``), else
    its one array (``<split>.npy``: T1's characters, T6's hourly steps), else its first array
    (mapped: no array is read)."""
    import numpy as np

    by_split: dict[str, list[str]] = {}
    for name, info in entries.items():
        if info.get("split") in SPLIT_ORDER and name.endswith(".npy"):
            by_split.setdefault(info["split"], []).append(name)
    sizes = {}
    for split in SPLIT_ORDER:
        names = sorted(by_split.get(split, []))
        if not names:
            continue
        name = next((n for n in (f"{split}_y.npy", f"{split}.npy") if n in names), names[0])
        shape = np.load(out / name, mmap_mode="r").shape  # mapped, not read
        sizes[split] = (int(shape[0]) if shape else 1, name)
    return sizes


# --------------------------------------------------------------------------- evaluation
def _describe_mismatch(error: Exception, keys: list[str]) -> str:
    if any(k.startswith(COMPILE_PREFIX) for k in keys):
        return (
            f"state_dict keys are prefixed '{COMPILE_PREFIX}' (saved from a torch.compile'd model) and do "
            "not load strictly into build_model(config): save model._orig_mod.state_dict(), i.e. pass "
            "the uncompiled model to save_checkpoint"
        )
    first = str(error).strip().splitlines()
    return "state_dict does not load strictly into build_model(config): " + " ".join(first[:3])[:400]


def import_script(script: Path, task: ModuleType) -> ModuleType:
    """Import a run script without running its ``__main__`` block, against the pristine task."""
    sys.modules["prepare"] = task  # the script's `import prepare` must see the locked original
    sys.modules.setdefault("onegc_kit", sys.modules[__name__])
    sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location("onegc_scored_script", script)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # a crash at import time is the script's, reported as such
        raise KitError(f"importing {script.name} failed: {type(exc).__name__}: {exc}") from None
    return module


def load_model(ckpt_path: Path, code: Path, task: ModuleType):
    """Rebuild the model of a checkpoint from its code snapshot, loading weights strictly."""
    import torch

    try:
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise KitError(f"cannot read checkpoint {ckpt_path.name}: {type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt or "config" not in ckpt:
        raise KitError(f"{ckpt_path.name} was not written by prepare.save_checkpoint (no state_dict/config)")
    script = code / ckpt.get("script", "") if code.is_dir() else code
    if not script.is_file():
        raise KitError(f"script {ckpt.get('script')!r} named by {ckpt_path.name} is not in {code}")
    module = import_script(script, task)
    if not hasattr(module, "build_model"):
        raise KitError(f"{script.name} has no build_model(config): the checkpoint contract needs one")
    try:
        model = module.build_model(ckpt["config"])
    except Exception as exc:
        raise KitError(f"build_model(config) in {script.name} failed: {type(exc).__name__}: {exc}") from None
    state = ckpt["state_dict"]
    try:
        model.load_state_dict(state, strict=True)
    except Exception as exc:
        raise KitError(_describe_mismatch(exc, list(state))) from None
    return model, ckpt


class ExpectedPredictions(Exception):  # noqa: N818 - an answer carried by raise, not an error
    """What a judge accepts for a split, raised by :func:`check_predictions` when it is handed
    :data:`SHAPE_PROBE` instead of predictions: the runner learns so, once per split, how large
    an answer can honestly be (runner/scoring/scorer.py refuses a larger one unread)."""

    def __init__(self, shape: tuple, kinds: str):
        super().__init__(f"predictions of shape {shape}, dtype kinds {kinds!r}")
        self.shape = tuple(int(n) for n in shape)
        self.kinds = kinds


SHAPE_PROBE = object()  # judge(SHAPE_PROBE, split) raises ExpectedPredictions


def check_predictions(pred, shape: tuple, kinds: str, what: str):
    """``pred`` as a numpy array if it is exactly what a judge accepts, else a :class:`KitError`.

    ``shape``: the exact shape; ``kinds``: the dtype kinds allowed (``"iu"`` integers, ``"f"``
    floats, ``"b"`` booleans); floats must all be finite. No object arrays, no pickles."""
    import numpy as np

    if pred is SHAPE_PROBE:
        raise ExpectedPredictions(tuple(shape), kinds)
    if not isinstance(pred, np.ndarray):
        raise KitError(f"predict() must return a numpy array of {what}; got {type(pred).__name__}")
    if pred.dtype.kind not in kinds:
        raise KitError(f"predictions must be {what} (dtype kind {kinds!r}); got dtype {pred.dtype}")
    if tuple(pred.shape) != tuple(shape):
        raise KitError(f"predictions must have shape {tuple(shape)} ({what}); got {tuple(pred.shape)}")
    if pred.dtype.kind == "f" and not bool(np.isfinite(pred).all()):
        raise KitError("the model outputs NaN or inf")
    return pred


# --------------------------------------------------------------------------- time order
FORECAST_ITEM = 8  # a committed forecast travels as float64: exact for float32 and float64 models


class RowStream:
    """A series that the scorer's child receives row by row (the harness's side is
    runner/scoring/worker.py): the first ``lookback`` rows at once, then one more row each time a
    window's forecast is sent back. So no forecast can depend on a row it is asked to forecast: a
    row arrives only once every window whose horizon holds it has been forecast and committed (the
    harness keeps the forecasts as they are committed, not whatever the process says at its end).
    ``rows`` and ``cols`` are the series' shape, ``dtype`` its numpy dtype's name."""

    def __init__(self, fd: int, rows: int, cols: int, lookback: int, horizon: int, dtype: str):
        import numpy as np

        self.fd, self.rows, self.cols, self.lookback, self.horizon = fd, rows, cols, lookback, horizon
        self.dtype = np.dtype(dtype)
        self.shape = (rows, cols)

    def __len__(self) -> int:
        return self.rows

    def _recv_rows(self, n: int):
        import numpy as np

        want = n * self.cols * self.dtype.itemsize
        buf = bytearray()
        while len(buf) < want:
            chunk = os.read(self.fd, want - len(buf))
            if not chunk:
                raise KitError("the harness stopped sending the series' rows")
            buf += chunk
        return np.frombuffer(bytes(buf), dtype=self.dtype).reshape(n, self.cols)

    def forecasts(self, forecast) -> object:
        """Every window's forecast in time order, each committed before the next row arrives."""
        import numpy as np

        window = self._recv_rows(self.lookback)
        out = []
        for i in range(self.rows - self.lookback + 1):
            got = _one_forecast(forecast(window.copy()), self.horizon, self.cols)
            blob = np.ascontiguousarray(got, dtype=np.float64).tobytes()
            view = memoryview(blob)
            while view:
                view = view[os.write(self.fd, view):]
            out.append(got)
            if i + self.lookback < self.rows:
                window = np.concatenate([window[1:], self._recv_rows(1)])
        return np.stack(out)


def forecast_in_time_order(series, lookback: int, horizon: int, forecast):
    """The forecasts of every window of ``series`` ([rows, cols]; window i is rows
    ``[i, i + lookback)``), in time order, one window at a time: ``forecast(window) -> [horizon, cols]``.
    In the harness ``series`` is a :class:`RowStream` and each row arrives only once the forecasts
    that it holds a target of are committed; in your workspace it is the array itself."""
    import numpy as np

    if isinstance(series, RowStream):
        return series.forecasts(forecast)
    arr = np.asarray(series)
    cols = arr.shape[1]
    return np.stack([_one_forecast(forecast(np.ascontiguousarray(arr[i:i + lookback])), horizon, cols)
                     for i in range(len(arr) - lookback + 1)])


def _one_forecast(got, horizon: int, cols: int):
    import numpy as np

    got = np.asarray(got)
    if got.shape != (horizon, cols) or got.dtype.kind != "f":
        raise KitError(f"a window's forecast must be floats of shape ({horizon}, {cols}); got {got.dtype} {got.shape}")
    return got


def evaluate_split(task: ModuleType, model, split: str, dev: str) -> dict:
    """``judge(predict(model, inputs(split)))``: what a task's ``evaluate`` is. In a session whose
    scored split is sealed (``onegc run --scored-split sealed``: its targets are not in the
    workspace), the harness judges the predictions on that split: :func:`ask_harness`."""
    predictions = task.predict(model, task.inputs(split), dev)
    if os.environ.get(SEALED_SPLIT_VAR) == split:
        return ask_harness(predictions, split)
    return task.judge(predictions, split)


# --------------------------------------------------------------------------- a sealed scored split
SEALED_SPLIT_VAR, SEALED_REQUESTS_VAR, SEALED_ANSWERS_VAR = (
    "ONEGC_SEALED_SPLIT", "ONEGC_SEALED_REQUESTS", "ONEGC_SEALED_ANSWERS")  # set by runner/integrity/sealed_split.py
SEALED_SPENT = "_spent.json"
SEALED_WAIT_S = 600.0
_request_numbers = itertools.count(1)  # this process's requests, for their names


def ask_harness(predictions, split: str, wait_s: float = SEALED_WAIT_S) -> dict:
    """The metric of ``predictions`` on the sealed ``split``, judged by the harness: written to
    ``$ONEGC_SEALED_REQUESTS/<name>.npy``, answered in ``$ONEGC_SEALED_ANSWERS/<name>.json``.
    The session's answers are capped (its contract says how many); a refused request is a
    :class:`KitError` with the harness's reason."""
    import secrets

    import numpy as np

    requests, answers = os.environ.get(SEALED_REQUESTS_VAR), os.environ.get(SEALED_ANSWERS_VAR)
    if not requests or not answers:
        raise KitError(f"the {split} split is sealed in this session but the harness's folders are not set "
                       f"(${SEALED_REQUESTS_VAR}, ${SEALED_ANSWERS_VAR})")
    if not isinstance(predictions, np.ndarray):
        raise KitError(f"predict() must return a numpy array; got {type(predictions).__name__}")
    name = f"{os.getpid()}-{next(_request_numbers)}-{secrets.token_hex(4)}"
    folder = Path(requests)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{name}.tmp"
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(predictions), allow_pickle=False)
    os.replace(tmp, folder / f"{name}.npy")
    answer, spent = Path(answers) / f"{name}.json", Path(answers) / SEALED_SPENT
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for path in (answer, spent):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if record.get("error"):
                raise KitError(f"the harness refused the evaluation on the sealed {split} split: {record['error']}")
            return {"value": float(record["value"]), "n": record.get("n"), "sealed": True,
                    "answers_left": record.get("answers_left")}
        time.sleep(0.02)
    raise KitError(f"no answer from the harness on the sealed {split} split within {wait_s:.0f} s")


def evaluate_checkpoint(task: ModuleType, ckpt_path: Path, code: Path, split: str, dev: str) -> dict:
    import torch

    torch.manual_seed(0)
    started = time.perf_counter()
    if dev.startswith("cuda") and not torch.cuda.is_available():
        raise KitError(f"device {dev} requested but CUDA is not available here: use --device cpu")
    model, ckpt = load_model(ckpt_path, code, task)
    try:
        model.to(dev).eval()
    except Exception as exc:
        raise KitError(f"moving the model to {dev} failed: {type(exc).__name__}: {str(exc)[:200]}") from None
    with torch.no_grad():
        try:
            result = task.evaluate(model, split, dev)
        except KitError:
            raise
        except Exception as exc:
            raise KitError(f"evaluation failed: {type(exc).__name__}: {str(exc)[:300]}") from None
    if not isinstance(result, dict):
        result = {"value": result}
    value = float(result["value"])
    if not math.isfinite(value):
        raise KitError(f"the metric is {value}: the model outputs NaN or inf")
    return {
        "ok": True,
        "task": task.TASK,
        "metric": task.METRIC,
        "split": split,
        "value": value,
        "n": result.get("n"),
        "script": ckpt.get("script"),
        "self_reported": ckpt.get("score"),
        "eval_s": round(time.perf_counter() - started, 3),
    }


# --------------------------------------------------------------------------- command line
def cli(task: ModuleType, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="prepare.py", description=(task.__doc__ or "").split("\n")[0])
    parser.add_argument("--from", dest="from_dir", type=Path, help="take raw files from this folder instead of downloading")
    parser.add_argument("--data-dir", type=Path, help="where the prepared arrays live (default: data/ beside prepare.py)")
    parser.add_argument("--force", action="store_true", help="prepare again even if already prepared")
    parser.add_argument("--eval", dest="ckpt", type=Path, help="score this checkpoint and print one JSON line")
    parser.add_argument("--code", type=Path, help="the folder (or script) holding the checkpoint's run script")
    parser.add_argument("--split", default=task.SCORED_SPLIT, help=f"split to score (default {task.SCORED_SPLIT})")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    args = parser.parse_args(argv)
    if args.data_dir:
        os.environ["ONEGC_DATA_DIR"] = str(args.data_dir.resolve())
    sys.modules["prepare"] = task
    if args.ckpt is None:
        try:
            prepare(task, data_dir(), args.from_dir, args.force)
        except KitError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        code = args.code or args.ckpt.parent
        out = evaluate_checkpoint(task, args.ckpt, code, args.split, args.device or device())
        print(json.dumps(out), flush=True)
        return 0
    except KitError as exc:
        print(json.dumps({"ok": False, "error": str(exc)}), flush=True)
        return 1
