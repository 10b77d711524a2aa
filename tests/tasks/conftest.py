"""Shared fixtures for the task tests: prepare a task's data and run it end to end on CPU.

Fixtures (names are stable; other task tests reuse them):

- ``shared_data``: the offline raw copies in ``shared/data`` beside the repo (skips when absent).
- ``kit``: the locked helper ``tasks/onegc_kit.py`` (``KitError``, ``prepare``, ``file_digest``).
- ``load_prepare(task_id, data_dir=None)``: a fresh import of ``tasks/<id>/prepare.py`` under a
  unique module name, so patching its ``RAW`` cannot leak into other tests; with ``data_dir``,
  its data is there (``$ONEGC_DATA_DIR`` for the test).
- ``without_labels(data_dir)``: a copy of a prepared folder without its ``*_y.npy`` label files.
- ``pin_raw(module, raw_dir)``: re-pin ``module.RAW`` to the size and sha256 of the files in
  ``raw_dir`` (the test's tiny fixtures written in the real raw format).
- ``prepare_fixture(task_id, raw_dir)``: ``pin_raw`` + the kit's atomic ``prepare`` into a
  temporary data folder; returns that folder (``<tmp>/data/<task_id>``).
- ``make_workspace(task_id, data_dir)``: a workspace as the harness builds it (``prepare.py``,
  ``onegc_kit.py``, ``train.py`` and the *public* prepared files under ``data/``), returned as a
  :class:`Workspace` with ``set_constants``, ``write``, ``run``, ``checkpoints`` and ``evaluate``
  (the pristine ``tasks/<id>/prepare.py --eval`` in a subprocess, like the official scorer).
- ``save_state(path, state_dict, config, script)``: write a checkpoint file by hand (e.g. a
  state dict with ``_orig_mod.`` keys) in the format ``save_checkpoint`` writes.
- ``score_both(prep, old_source, ckpt, code, data_dir, split=None) -> (old, new)``: one
  checkpoint scored in this process by a frozen copy of a task's ``evaluate`` from before sealed
  scoring (its source, run against ``prep``'s helpers) and by ``judge(predict(model,
  inputs(split)))``, on one and the same model.
- ``run_sealed(task_id, data, ws)``: ``ws.run()`` in a sealed split (no targets in the workspace, the
  runner's answer service on the public part, through the Ladder); ``sealed_answers_hold(...)``:
  each checkpoint saved with the Ladder's answer on its public part.
- ``sealed_score(task_id, data_dir, ckpt, code, canary_key=None, parts=False) -> runner.scoring.scorer.Score``: the
  checkpoint scored as a session scores it: a snapshot of ``code``'s scripts and the checkpoint, the
  split's inputs made by the trusted side, a fresh child of the sandboxed worker predicting, the
  runner judging; with ``canary_key``, the session's canary probe too (``evidence``, ``flags``).
- ``LOOKUP``: a run script that saves ``checkpoints/lookup.pt``, a classifier that carries the
  workspace's val (a fixed projection of each input, as the model is fed it, and its label) and
  answers from it; ``lookup_script(feed, classes)`` fills in how val's inputs are fed and the
  number of classes.
- ``canaried(ws, data, key)``: the workspace's copy of the task's canaried split, as a session's
  workspace holds it (the session's canaries from ``key``, planted from the pristine ``data``).
- ``canary_verdicts(ws, data, key, honest, caught) -> [Score]``: ``honest`` scored with the
  canaries is clean and keeps the official value it has without them; each of ``caught`` is
  disqualified (strong evidence, the canary flag). Returns the caught checkpoints' scores.
- ``rejects(judge, predictions, split) -> message``: asserts that the judge refuses
  ``predictions`` with a one-line ``KitError`` and returns that line.
- ``hostile(good, classes=None) -> {name: predictions}``: what a hostile ``predict`` might return
  in place of the honest array ``good`` (wrong shape or dtype, objects, NaN, classes out of
  ``0..classes-1``); every one must be refused.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TASKS_DIR = REPO / "tasks"
# the offline dataset copies beside the checkout (a worktree elsewhere names them in the variable)
SHARED_DATA = Path(os.environ.get("ONEGC_TEST_SHARED_DATA") or REPO.parent / "shared" / "data")
KIT = TASKS_DIR / "onegc_kit.py"
# hang guards, not speed checks: a few training steps of a tiny config take seconds on 2 cores,
# and up to ~10x that with a second test suite beside this one
RUN_TIMEOUT_S = 600
EVAL_TIMEOUT_S = 600

_module_ids = itertools.count()


def _load_kit():
    sys.path.insert(0, str(TASKS_DIR))
    import onegc_kit

    return onegc_kit


def _clean_env() -> dict:
    """The environment of a workspace process: no harness overrides leaking in from the caller."""
    env = dict(os.environ)
    for key in ("ONEGC_DATA_DIR", "ONEGC_CHECKPOINT_DIR"):
        env.pop(key, None)
    env.setdefault("OMP_NUM_THREADS", "2")
    return env


@dataclass
class Workspace:
    """A temporary session workspace for one task."""

    task_id: str
    path: Path
    data_dir: Path  # the full prepared data (private files included), as the scorer sees it

    def set_constants(self, script: str = "train.py", **values) -> None:
        """Rewrite top-level ``NAME = ...`` lines of ``script``, as the scripted agent does."""
        file = self.path / script
        text = file.read_text()
        for name, value in values.items():
            pattern = re.compile(rf"^{re.escape(name)}\s*=.*$", re.MULTILINE)
            if not pattern.search(text):
                raise AssertionError(f"{script} has no top-level constant {name}")
            text = pattern.sub(lambda _m, n=name, v=value: f"{n} = {v!r}", text, count=1)
        file.write_text(text)

    def write(self, name: str, text: str) -> Path:
        file = self.path / name
        file.write_text(text)
        return file

    def run(self, script: str = "train.py", timeout: float = RUN_TIMEOUT_S, check: bool = True, args: tuple = ()):
        """Run ``script`` (with ``args``) in the workspace, on its own ``data/`` whatever the
        caller's environment says; fail with the output tail."""
        proc = subprocess.run(
            [sys.executable, script, *map(str, args)], cwd=self.path, env=_clean_env(),
            capture_output=True, text=True, timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"{script} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        return proc

    def checkpoints(self) -> list[Path]:
        return sorted((self.path / "checkpoints").glob("*.pt"))

    def evaluate(self, ckpt: Path, split: str | None = None, data_dir: Path | None = None,
                 timeout: float = EVAL_TIMEOUT_S) -> dict:
        """Score ``ckpt`` with the pristine ``prepare.py --eval``; the JSON line plus ``returncode``."""
        cmd = [
            sys.executable, str(TASKS_DIR / self.task_id / "prepare.py"), "--eval", str(ckpt),
            "--code", str(self.path), "--data-dir", str(data_dir or self.data_dir), "--device", "cpu",
        ]
        if split:
            cmd += ["--split", split]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_clean_env())
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise AssertionError(f"--eval printed no JSON line (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}")
        result = json.loads(lines[-1])
        result["returncode"] = proc.returncode
        return result


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"offline dataset copies not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def kit():
    return _load_kit()


@pytest.fixture
def load_prepare(kit, monkeypatch):
    def load(task_id: str, data_dir: Path | None = None):
        if data_dir is not None:
            monkeypatch.setenv("ONEGC_DATA_DIR", str(data_dir))
        path = TASKS_DIR / task_id / "prepare.py"
        name = f"onegc_test_prepare_{task_id}_{next(_module_ids)}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)  # as an import does: evaluate() finds its module there
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def without_labels(tmp_path):
    def copy(data_dir: Path) -> Path:
        out = tmp_path / f"{data_dir.name}-unlabelled"
        shutil.copytree(data_dir, out, ignore=shutil.ignore_patterns("*_y.npy"))
        return out

    return copy


@pytest.fixture
def pin_raw(kit):
    def pin(module, raw_dir: Path) -> None:
        module.RAW = {
            name: {"url": spec.get("url", ""), "size": (raw_dir / name).stat().st_size,
                   "sha256": kit.file_digest(raw_dir / name)}
            for name, spec in module.RAW.items()
        }

    return pin


@pytest.fixture
def prepare_fixture(tmp_path, kit, load_prepare, pin_raw):
    def prepare(task_id: str, raw_dir: Path) -> Path:
        module = load_prepare(task_id)
        pin_raw(module, raw_dir)
        out = tmp_path / "data" / task_id
        kit.prepare(module, out, from_dir=raw_dir)
        return out

    return prepare


@pytest.fixture
def make_workspace(tmp_path):
    def make(task_id: str, data_dir: Path, name: str = "workspace") -> Workspace:
        ws = tmp_path / name
        (ws / "data").mkdir(parents=True)
        (ws / "checkpoints").mkdir()
        for file in ("prepare.py", "train.py"):
            shutil.copy(TASKS_DIR / task_id / file, ws / file)
        shutil.copy(KIT, ws / "onegc_kit.py")
        manifest = json.loads((data_dir / "manifest.json").read_text())
        for fname, info in manifest["files"].items():
            if not info.get("private"):
                shutil.copy(data_dir / fname, ws / "data" / fname)
        shutil.copy(data_dir / "manifest.json", ws / "data" / "manifest.json")
        return Workspace(task_id, ws, data_dir)

    return make


@pytest.fixture
def save_state():
    def save(path: Path, state_dict: dict, config: dict, script: str = "train.py") -> Path:
        import torch

        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"format": 1, "state_dict": state_dict, "config": config, "script": script,
                    "score": None, "saved_at": 0.0}, path)
        return path

    return save


@pytest.fixture
def eval_here(kit, monkeypatch, capsys):
    """``eval_here(prep, ckpt, code, data_dir) -> (exit, JSON)``: ``prepare.py --eval`` run in this
    process on a fresh import of the pristine file (no new Python and torch start-up)."""

    def run(prep, ckpt, code, data_dir) -> tuple[int, dict]:
        monkeypatch.setattr(sys, "path", list(sys.path))  # the kit puts the script's folder first
        monkeypatch.setitem(sys.modules, "prepare", prep)
        monkeypatch.setenv("ONEGC_DATA_DIR", str(data_dir))
        capsys.readouterr()
        rc = kit.cli(prep, ["--eval", str(ckpt), "--code", str(code), "--data-dir", str(data_dir), "--device", "cpu"])
        return rc, json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    return run



@pytest.fixture
def score_both(kit, monkeypatch):
    def run(prep, old_source: str, ckpt: Path, code: Path, data_dir: Path, split: str | None = None):
        import torch

        monkeypatch.setattr(sys, "path", list(sys.path))  # the kit puts the script's folder first
        monkeypatch.setitem(sys.modules, "prepare", prep)
        monkeypatch.setenv("ONEGC_DATA_DIR", str(data_dir))
        split = split or prep.SCORED_SPLIT
        frozen = dict(vars(prep))  # the old evaluate, verbatim, against the module's own helpers
        exec(compile(old_source, f"<old evaluate of {prep.TASK}>", "exec"), frozen)
        model, _ = kit.load_model(Path(ckpt), Path(code), prep)
        model.eval()
        with torch.no_grad():  # as the scorer runs both
            torch.manual_seed(0)
            old = frozen["evaluate"](model, split, "cpu")
            torch.manual_seed(0)
            new = prep.judge(prep.predict(model, prep.inputs(split), "cpu"), split)
        gap = abs(old["value"] - new["value"])
        print(f"{prep.TASK} {split}: old {old['value']!r} new {new['value']!r} |old - new| {gap:.3g}")
        return old, new

    return run


@pytest.fixture
def rejects(kit):
    def check(judge, predictions, split: str) -> str:
        with pytest.raises(kit.KitError) as info:
            judge(predictions, split)
        message = str(info.value)
        assert message.strip() and "\n" not in message, message
        return message

    return check


@pytest.fixture
def hostile():
    import numpy as np

    def cases(good, classes: int | None = None) -> dict:
        out = {
            "a list": good.tolist(),
            "objects": good.astype(object),
            "strings": good.astype(str),
            "complex": good.astype(np.complex128),
            "booleans": np.ones(good.shape, dtype=bool),
            "one too few": good[:-1],
            "one too many": np.concatenate([good, good[:1]]),
            "an extra axis": good[..., None],
            "flattened": good.reshape(-1) if good.ndim > 1 else good.reshape(-1, 1),
            "a scalar": np.asarray(good.flat[0]),
        }
        if good.dtype.kind == "f":
            nan, inf = good.copy(), good.copy()
            nan.flat[0], inf.flat[-1] = np.nan, -np.inf
            out.update(NaN=nan, inf=inf, integers=good.astype(np.int64))
        else:
            negative, above = good.astype(np.int64), good.astype(np.int64)
            negative.flat[0], above.flat[-1] = -1, classes
            out.update(floats=good.astype(np.float64), negative=negative, **{"past the last class": above},
                       huge=np.full(good.shape, 2**63, dtype=np.uint64))
        return out

    return cases


@pytest.fixture
def sealed_score(tmp_path, monkeypatch):
    def score(task_id: str, data_dir: Path, ckpt: Path, code: Path, canary_key: str | None = None,
              parts: bool = False):
        from runner.integrity.canaries import CanaryJudge, kind_for
        from runner.scoring.scorer import SealedScorer, TaskJudge, WorkerPlan
        from runner.scoring.snapshots import SNAPSHOT_CKPT, snapshot_code
        from tasks import get_task

        spec = get_task(task_id)
        monkeypatch.setenv("ONEGC_DATA_DIR", str(data_dir))  # the judge sets it too: restored after the test
        session = f"s{next(_module_ids)}"  # a session of its own per call: the same checkpoint can be scored twice
        root = tmp_path / "sealed-home" / "runs" / session
        snap = root / "snapshots" / f"{ckpt.stem}-1"
        snapshot_code(code, snap)
        shutil.copy(ckpt, snap / SNAPSHOT_CKPT)
        judge = TaskJudge(spec, data_dir, secret=SEALED_SECRET if parts else None)
        if parts:  # a sealed session's public and private parts (runner/integrity/split_parts.py), as run_sealed's
            judge.cut(tmp_path / "sealed-parts")
        if canary_key is not None:  # the session's canaries: the probe beside the split, judged here
            kind = kind_for(spec.id)
            assert kind is not None, f"{task_id} has no canaries"
            judge.canaries = CanaryJudge(kind, canary_key, data_dir, spec.scored_split)
        scorer = SealedScorer(WorkerPlan(
            judge=judge, inputs=root / "scoring" / "inputs", snapshots=root / "snapshots",
            private=root / "scoring" / "cpu", home=tmp_path / "sealed-home", session_id=session,
            timeout_s=spec.eval_timeout_s, threads=1))
        try:
            return scorer.score(snap / SNAPSHOT_CKPT, snap, [spec.scored_split], parts=parts)[spec.scored_split]
        finally:
            scorer.close()

    return score


LOOKUP = '''
import torch
import torch.nn as nn

import prepare


class Lookup(nn.Module):
    """Carries val: a fixed projection of each input as its key, and its label."""

    def __init__(self, n, dim):
        super().__init__()
        self.register_buffer("w", torch.randn(dim, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
        self.register_buffer("keys", torch.zeros(n, dtype=torch.float64))
        self.register_buffer("labels", torch.zeros(n, dtype=torch.long))

    def key(self, x):
        return x.flatten(1).double() @ self.w

    def forward(self, x):
        d = (self.key(x)[:, None] - self.keys[None]).abs()
        best = d.argmin(1)
        hit = d.gather(1, best[:, None])[:, 0] < 1e-3 * (1 + self.keys.abs().max())
        out = torch.zeros(len(x), CLASSES)
        out[hit, self.labels[best[hit]]] = 50.0
        return out


def build_model(config):
    return Lookup(config["n"], config["dim"])


if __name__ == "__main__":
    x, y = prepare.load_split("val")
    fed = FEED
    config = {"n": len(x), "dim": fed[0].numel()}
    model = build_model(config)
    with torch.no_grad():
        model.keys.copy_(model.key(fed))
        model.labels.copy_(y.long())
    prepare.save_checkpoint(model, config, "lookup")
'''


def lookup_script(feed: str, classes: str) -> str:
    """:data:`LOOKUP` for a task whose model is fed ``feed`` (an expression of val's ``x``) and
    returns ``classes`` logits."""
    return LOOKUP.replace("FEED", feed).replace("CLASSES", classes)


@pytest.fixture
def canaried():
    def plant(ws: Workspace, data: Path, key: str) -> None:
        from runner.integrity import canaries

        kind = canaries.kind_for(ws.task_id)
        assert kind is not None, f"{ws.task_id} has no canaries"
        for name in kind.files():
            (ws.path / "data" / name).unlink(missing_ok=True)
        canaries.plant(kind, key, data, ws.path / "data")

    return plant


@pytest.fixture
def canary_verdicts(sealed_score):
    def check(ws: Workspace, data: Path, key: str, honest: Path, caught: list[Path]) -> list:
        from runner.wire.verdicts import disqualifying

        plain = sealed_score(ws.task_id, data, honest, ws.path)
        scored = sealed_score(ws.task_id, data, honest, ws.path, canary_key=key)
        assert scored.error is None and scored.value == plain.value, scored  # canaries never enter the metric
        assert scored.evidence["level"] == "clean" and disqualifying(scored.verdicts) is None, scored
        out = []
        for ckpt in caught:
            score = sealed_score(ws.task_id, data, ckpt, ws.path, canary_key=key)
            assert score.evidence["level"] == "strong", (ckpt.name, score)
            struck = disqualifying(score.verdicts)
            assert struck is not None and struck.check == "canaries" and struck.p == score.evidence["p"], score
            out.append(score)
        return out

    return check


SEALED_SECRET = "5e" * 32  # the parts of run_sealed's and sealed_score(parts=True)'s session: the same ones


@pytest.fixture
def run_sealed(tmp_path, monkeypatch):
    """A sealed scored split (runner/integrity/sealed_split.py) for a workspace: its
    ``scored_targets`` removed, as a sealed session's workspace leaves them out, and ``ws.run()``
    with the runner's answer service at work on the split's public part, through the task's Ladder
    (the session's parts from :data:`SEALED_SECRET`). Returns (the run's output, the service)."""
    def run(task_id: str, data: Path, ws, cap: int = 20, timeout: float | None = None):
        from runner.integrity import sealed_split
        from runner.scoring.scorer import TaskJudge
        from tasks import get_task

        spec = get_task(task_id)
        for name in spec.scored_targets:
            (ws.path / "data" / name).unlink()
        monkeypatch.setenv("ONEGC_DATA_DIR", str(data))  # the judge's (the runner's) data: restored after the test
        emitted: list[tuple[str, dict]] = []

        class Events:
            def emit(self, type_: str, **fields) -> None:
                emitted.append((type_, fields))

        answers = tmp_path / f"answers-{task_id}"
        judge = TaskJudge(spec, data, secret=SEALED_SECRET)
        judge.cut(tmp_path / "sealed-parts")
        service = sealed_split.SealedAnswers(judge, spec.scored_split, ws.path, answers, Events(), cap=cap,
                                             ladder=sealed_split.ladder_for(spec)).start()
        agent_env = sealed_split.agent_vars(spec, ws.path, answers)
        for key, value in agent_env.items():
            monkeypatch.setenv(key, value)
        try:
            out = ws.run() if timeout is None else ws.run(timeout=timeout)
        finally:
            service.stop()
            for key in agent_env:
                monkeypatch.delenv(key)
        assert not [e for e in emitted if e[0] == "warning"], emitted  # the cap was not reached
        return out, service

    return run


@pytest.fixture
def sealed_answers_hold(sealed_score):
    """Asserts that the figure each of ``ckpts`` (in the order they were saved, each after one
    answer) was saved with is the answer the Ladder gave: its public part's figure by the harness's
    own scoring, rounded to the task's step where it beat the best so far, else the best so far."""
    def check(task_id: str, data: Path, ws, ckpts: list[Path], timeout: float | None = None) -> None:
        import torch

        from runner.integrity import sealed_split
        from tasks import get_task

        ladder = sealed_split.ladder_for(get_task(task_id))
        for ckpt in ckpts:
            reported = torch.load(ckpt, weights_only=True)["score"]
            scored = sealed_score(task_id, data, ckpt, ws.path, parts=True)
            assert scored.error is None and scored.figures is not None, scored
            expected, _ = ladder.answer(scored.figures["public"])
            assert reported == expected, (ckpt.name, reported, expected, scored.figures)

    return check
