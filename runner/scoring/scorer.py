"""Sealed scoring (README "Threat model"): the agent's code never runs beside the metric, and each
checkpoint is judged alone. tests/integrity/test_sealed_scoring.py tries the attacks S1-S5 its tests
name (replace the evaluator, print a fake result, poison a later checkpoint, outlive the scorer,
fake a harness error).

Two sides, two processes:

- the **worker** (:mod:`runner.scoring.worker`) runs in a sandbox of its own: read-only Python,
  the checkpoint snapshots, the scored split's *inputs* and the pristine task module; no network,
  no writable storage but a small private tmpfs per checkpoint, no target anywhere. A warm zygote
  (torch imported once) forks a fresh child per checkpoint, in its own PID namespace, which
  imports the run script, builds the model and returns predictions on a pipe of its own;
- the **judge** (:class:`TaskJudge`, in the runner: trusted code only) checks the predictions
  (shape, dtype, count, finiteness) and computes the metric against the split's targets with the
  task's own ``judge``.

The inputs are made once per session by the trusted side (``task.inputs(split)``) into the
session's ``scoring/inputs/`` (hard links where an input is a whole prepared file), outside the
agent's reach. What the scored code did beyond predicting — it changed ``prepare``/``onegc_kit``,
registered ``atexit`` handlers, wrote to stdout, started processes, opened files outside its view,
used the network — comes back with each score as verdicts of strength ``note``
(runner/wire/verdicts.py): recorded, not blocking.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from runner.integrity import causal, evaluator_check, evaluator_memory, passes, split_parts
from runner.integrity.canaries import CanaryJudge, unjudged
from runner.integrity.checks import verdict
from runner.sandbox import bwrap as sandbox
from runner.wire import answer_check
from runner.wire.verdicts import Verdict, merged
from tasks import KIT_FILE, TaskSpec

WORKER = Path(__file__).with_name("worker.py")
EVALUATOR_MEMORY = Path(evaluator_memory.__file__)  # the zygote's look at each child (issue 46 part 5)
INSIDE = sandbox.INSIDE / "scorer"
START_TIMEOUT_S = 120.0  # the zygote imports torch and the task once (seconds on a cold disk)
ANSWER_MARGIN_S = 30.0  # past the evaluation's own timeout, for the transfer and the fork
DEADLINE_MARGIN_S = 5.0  # the same, for a child whose timeout was cut to the scorer's deadline
PAST_DEADLINE = "not evaluated: the scorer's time bound was spent"
MEMORY_FRACTION = 0.5  # a CPU evaluation may take this share of the machine's memory
MAX_HEADER_BYTES = 1 << 20
SELECTION_SPLIT = "val"  # checkpoints are ranked by their trusted score here (runner/scoring/official.py)
# the widest numpy dtype of each kind a judge may accept (float128 where the platform has it)
WIDEST_ITEM_BYTES = {"b": 1, "i": 8, "u": 8, "f": 16}
NOTHING = memoryview(b"")


def _rows(array: Any) -> int:
    """An input array's rows (items, windows, series rows); 1 for a scalar."""
    return int(array.shape[0]) if getattr(array, "ndim", 0) else 1


@dataclass(frozen=True)
class Score:
    value: float | None
    error: str | None
    eval_s: float | None = None
    verdicts: tuple[Verdict, ...] = ()  # what the integrity checks and the scorer found (runner/wire/verdicts.py)
    evidence: dict | None = None  # the canaries' (runner/integrity/canaries.py), where the split holds them
    # a sealed split's parts, from the same predictions (runner/integrity/split_parts.py): "public" and
    # "private" (the official number) beside ``value`` (the whole split's), and "gap" (the test between them)
    figures: dict | None = None


class TaskJudge:
    """The task's ``inputs`` and ``judge``, from its pristine ``prepare.py``, in this process."""

    def __init__(self, spec: TaskSpec, data_dir: Path, secret: str | None = None):
        self.spec = spec
        self.data_dir = data_dir
        self.module = load_task_module(spec, data_dir)
        self.splits = sorted({SELECTION_SPLIT, spec.scored_split})  # what checkpoints are judged on
        self.canaries: CanaryJudge | None = None  # the session's canaries, when it has them
        # the session's secret for the passes' order and T1's twins (runner/integrity/passes.py); None: drawn here
        self.secret = secret or os.urandom(32).hex()
        self._lock = threading.Lock()  # live and official scoring may judge at once
        self._answer_bytes: dict[str, int] = {}
        self._expected: dict[str, tuple[tuple[int, ...], str]] = {}  # what the judge accepts for a split
        self._rows: dict[str, int] = {}
        # a sealed session's public and private parts of the scored split (cut: runner/integrity/split_parts.py)
        self.partition: split_parts.Partition | None = None
        self.parts: dict[str, split_parts.Part] | None = None
        self._layouts: dict[str, passes.Layout | None] = {}

    def layout(self, split: str) -> passes.Layout | None:
        """How ``split`` is shown to a checkpoint: its passes with the checks' items inside
        (runner/integrity/passes.py), or None where it is shown whole and alone."""
        if split not in self._layouts:
            import numpy as np

            digest = hashlib.sha256(f"onegc passes {self.spec.id} {split} {self.secret}".encode()).digest()
            rng = np.random.default_rng(int.from_bytes(digest, "big"))
            out: passes.Layout | None = None
            kind = self.canaries.kind if self.canaries is not None and self.canaries.kind.split == split else None
            if self.spec.id in causal.SEQUENCE_TASKS:
                ids = self.module.load_split(split)
                spans = [(start, first, self.module.EVAL_WINDOW) for start, first in self.module.eval_windows(len(ids))]
                out = passes.sequence(split, np.asarray(self.module.inputs(split)["x"]), spans,
                                      np.asarray(self.module.inputs(causal.FOREIGN_SPLIT)["x"]), rng)
            elif kind is not None and not kind.in_split and self.canaries is not None:
                items = kind.probe(self.canaries.draw().items)
                out = passes.mixed(split, self._input_rows(split), items, rng)
            self._layouts[split] = out
        return self._layouts[split]

    def write_inputs(self, dest: Path) -> None:
        """Each judged split's inputs as ``dest/<split>/<name>.npy``, once per session."""
        import numpy as np

        done = self.splits
        try:
            if json.loads((dest / ".done").read_text()) == done:
                return
        except (OSError, ValueError):
            pass
        staging = dest.parent / f".{dest.name}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        for split in self.splits:
            (staging / split).mkdir(parents=True)
            for name, arr in self.module.inputs(split).items():
                target = staging / split / f"{name}.npy"
                source = _whole_npy_file(arr)
                if source is not None:
                    try:
                        os.link(source, target)
                        continue
                    except OSError:
                        pass  # another filesystem: a copy
                np.save(target, np.asarray(arr), allow_pickle=False)
        (staging / ".done").write_text(json.dumps(done))
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(staging, dest)

    def write_passes(self, split: str, root: Path) -> list[Path]:
        """Each pass of ``split``'s layout as ``root/<name>/<split>/<input>.npy`` (once per session):
        the folders a child is given in place of the split's inputs, each named by a token of the
        session's secret, so that no folder name says which pass it is."""
        import numpy as np

        layout = self.layout(split)
        assert layout is not None
        names = [hashlib.sha256(f"onegc pass {i} {split} {self.secret}".encode()).hexdigest()[:16]
                 for i in range(len(layout.passes))]
        folders = [root / name for name in names]
        if (root / ".done").is_file():
            return folders
        staging = root.parent / f".{root.name}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        real = self.module.inputs(split)
        for folder, p in zip(folders, layout.passes, strict=True):
            (staging / folder.name / split).mkdir(parents=True)
            for name, arr in layout.inputs(p, real).items():
                np.save(staging / folder.name / split / f"{name}.npy", np.ascontiguousarray(arr), allow_pickle=False)
        (staging / ".done").write_text("")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(staging, root)
        return folders

    def answer_bytes(self, split: str) -> int:
        """The most bytes an honest answer for ``split`` can have: the shape the task's judge
        accepts, in the widest dtype of the kinds it accepts, as an ``.npy`` with the largest
        header read (learnt once per split from ``onegc_kit.check_predictions``)."""
        if split not in self._answer_bytes:
            shape, kinds = self.expected(split)
            widest = max(WIDEST_ITEM_BYTES.get(k, 16) for k in kinds)
            self._answer_bytes[split] = math.prod(shape) * widest + answer_check.NPY_HEADER_BYTES
        return self._answer_bytes[split]

    def expected(self, split: str) -> tuple[tuple[int, ...], str]:
        """The shape and dtype kinds the task's judge accepts for ``split`` (its shape probe, once)."""
        if split not in self._expected:
            kit = sys.modules["onegc_kit"]
            try:
                with self._lock:
                    self.module.judge(kit.SHAPE_PROBE, split)
                raise RuntimeError(f"the judge of {self.spec.id} took no shape probe for {split}")
            except kit.ExpectedPredictions as expected:
                self._expected[split] = (expected.shape, expected.kinds)
        return self._expected[split]

    def cut(self, root: Path) -> None:
        """Cut the scored split into the session's public and private parts, their folders under
        ``root`` (a sealed session; runner/integrity/split_parts.py): items drawn into blocks, T1's
        windows in contiguous runs."""
        split = self.spec.scored_split
        spans, window = None, 0
        if self.spec.id in causal.SEQUENCE_TASKS:
            spans = list(self.module.eval_windows(len(self.module.load_split(split))))
            window, n = int(self.module.EVAL_WINDOW), len(spans)
        else:
            n = self._input_rows(split)
        self.partition = split_parts.partition(self.secret, self.spec.id, split, n, stream=spans is not None)
        self.parts = split_parts.write_parts(self.partition, self.data_dir, list(self.spec.scored_targets), root,
                                             spans, window)

    def write_part_inputs(self, split: str, name: str, root: Path) -> Path:
        """The inputs of part ``name``'s rows as ``root/<split>/<input>.npy`` (once): what a child
        predicting that part alone is shown; returns ``root``."""
        import numpy as np

        if (root / ".done").is_file():
            return root
        rows = self.part(name).rows
        staging = root.parent / f".{root.name}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        (staging / split).mkdir(parents=True)
        for key, arr in self.module.inputs(split).items():
            np.save(staging / split / f"{key}.npy", np.ascontiguousarray(np.asarray(arr)[rows]), allow_pickle=False)
        (staging / ".done").write_text("")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(staging, root)
        return root

    def part(self, name: str) -> split_parts.Part:
        assert self.parts is not None, "the scored split was not cut (TaskJudge.cut)"
        return self.parts[name]

    def figures(self, predictions, split: str) -> tuple[dict | None, tuple[Verdict, ...]]:
        """The public and private parts' figures and the gap between them, from ``predictions`` of
        the whole ``split``, and the gap's verdict where it is one (None, () where the split was not
        cut). Judged by the task's own judge on each part's folder; the gap on the blocks' values
        (runner/integrity/split_parts.py)."""
        if self.partition is None or self.parts is None or split != self.partition.split:
            return None, ()
        out: dict = {}
        for name in (split_parts.PUBLIC, split_parts.PRIVATE):
            part = self.parts[name]
            out[name] = self.judge(predictions[part.rows], split, part)[0]
        blocks = [self.judge(predictions[p.rows], split, p)[0]
                  for p in (self.parts[f"block-{i}"] for i in range(len(self.partition.blocks)))]
        gap = split_parts.gap_test(blocks, self.partition.is_public(), self.spec.higher_is_better)
        out["gap"] = gap.record()
        found = split_parts.gap_verdict(gap, self.spec.id)
        return out, (found,) if found else ()

    def probe_rows(self, folder: Path) -> int:
        """The rows of a pass's inputs (``folder/<name>.npy``, written by trusted code)."""
        import numpy as np

        return max((_rows(np.load(f, mmap_mode="r")) for f in folder.glob("*.npy")), default=0)

    def probe_bytes(self, folder: Path) -> int:
        """The most bytes an honest answer on a pass's inputs (``folder/<name>.npy``, written by
        trusted code) can have: its rows at the widest bytes per input row of the judged splits. A
        pass's rows are in the format of a split's inputs (one item, window or series row each), and
        no task's predictions grow faster than its rows."""
        rows = self.probe_rows(folder)
        per_row = max((self.answer_bytes(s) - answer_check.NPY_HEADER_BYTES) / max(1, self._input_rows(s))
                      for s in self.splits)
        return math.ceil(rows * per_row) + answer_check.NPY_HEADER_BYTES

    def _input_rows(self, split: str) -> int:
        if split not in self._rows:
            self._rows[split] = max((_rows(a) for a in self.module.inputs(split).values()), default=1)
        return self._rows[split]

    def judge(self, predictions, split: str, part: split_parts.Part | None = None) -> tuple[float, int | None]:
        """The metric of ``predictions`` on ``split``, or on ``part`` of it (``predictions`` then
        hold the part's rows, in its order): the task's own judge on each of the part's folders
        (``onegc_kit.data_at``, in this thread only), their values composed (split_parts.compose)."""
        if part is None:
            with self._lock:
                return self._value(self.module.judge(predictions, split))
        kit = sys.modules["onegc_kit"]
        if len(predictions) != len(part):
            raise kit.KitError(f"predictions for {len(predictions)} rows of the {part.name} part, which has {len(part)}")
        results = []
        for piece in part.pieces:
            with self._lock, kit.data_at(piece.folder):
                results.append(self._value(self.module.judge(predictions[piece.start:piece.stop], split)))
        return split_parts.compose(results)

    @staticmethod
    def _value(result) -> tuple[float, int | None]:
        kit = sys.modules["onegc_kit"]
        if not isinstance(result, dict):
            result = {"value": result}
        value = float(result["value"])
        if value != value or value in (float("inf"), float("-inf")):
            raise kit.KitError(f"the metric is {value}: the model outputs NaN or inf")
        return value, result.get("n")


def load_task_module(spec: TaskSpec, data_dir: Path) -> ModuleType:
    """Import ``tasks/<id>/prepare.py`` under a name of its own, its data at ``data_dir``."""
    os.environ["ONEGC_DATA_DIR"] = str(data_dir)  # the kit's data_dir(); the runner serves one task
    saved = list(sys.path)
    try:
        mod_spec = importlib.util.spec_from_file_location(f"onegc_task_{spec.id}", spec.folder / "prepare.py")
        if mod_spec is None or mod_spec.loader is None:
            raise ImportError(f"cannot import {spec.folder / 'prepare.py'}")
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved  # prepare.py puts its folders first; the runner's imports stay its own
    return module


def _whole_npy_file(arr) -> str | None:
    """The ``.npy`` file ``arr`` maps whole (np.load(..., mmap_mode="r")), if it is one."""
    import numpy as np

    name = getattr(arr, "filename", None)
    if not isinstance(arr, np.memmap) or not name or not str(name).endswith(".npy"):
        return None
    whole = np.load(name, mmap_mode="r")
    return str(name) if whole.shape == arr.shape and whole.dtype == arr.dtype and arr.base is not None else None


@dataclass
class WorkerPlan:
    """Where one session's scorer runs."""

    judge: TaskJudge
    inputs: Path  # runs/<id>/scoring/inputs
    snapshots: Path
    private: Path  # runs/<id>/scoring/<device>
    home: Path  # $ONEGC_HOME: never shown
    session_id: str
    device: str = "cpu"
    gpu_minors: tuple[int, ...] = ()
    gpu_uuids: tuple[str | None, ...] = ()
    timeout_s: float = 600.0
    threads: int = field(default_factory=lambda: max(1, (os.cpu_count() or 2) // 2))

    @property
    def probes(self) -> Path:
        """runs/<id>/scoring/probes: the causality probes' inputs (runner/integrity/causal.py)."""
        return self.inputs.parent / "probes"


class SealedScorer:
    """One warm worker per session and device; :meth:`score` is one fresh child per checkpoint."""

    def __init__(self, plan: WorkerPlan):
        self.plan = plan
        self.proc: subprocess.Popen | None = None
        self._owner: threading.Thread | None = None  # the thread that launched the worker: it dies with it
        self.sock: socket.socket | None = None
        self._buf = bytearray()
        self.ready = False
        self.sealed = False
        self._waited = 0.0  # seconds the last answer took, measured here
        self.note: str | None = None  # a degradation worth one warning (no sandbox for the scorer)
        self.last_probe: causal.Outcome | None = None  # what the last score's causality probe measured
        # time.monotonic() past which no child starts and none runs on (the official phase's bound,
        # runner/scoring/official_phase.py; a closed live queue's): a child's timeout is cut to it
        self.deadline: float | None = None

    # ------------------------------------------------------------------ the worker
    def start(self) -> None:
        """Launch the worker and wait until it is warm."""
        self.launch()
        self.await_ready()

    def launch(self) -> None:
        """Start the worker without waiting for it (it imports torch meanwhile). Call this from
        the thread that lives longest: the worker's sandbox dies with the thread that made it
        (bubblewrap's parent-death signal is per thread)."""
        plan = self.plan
        plan.private.mkdir(parents=True, exist_ok=True)
        plan.probes.mkdir(parents=True, exist_ok=True)
        plan.judge.write_inputs(plan.inputs)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        task_py = INSIDE / "task" / "prepare.py"
        argv = [sys.executable, "-I", str(INSIDE / "score_worker.py"), "--task", str(task_py), "--inputs",
                str(INSIDE / "inputs"), "--fd", str(theirs.fileno()), "--evaluator", str(INSIDE / EVALUATOR_MEMORY.name)]
        env = self._env()
        status = sandbox.status()
        self.sealed = status.ok
        if status.ok:
            argv = sandbox.wrap(self._sandbox_plan(), argv, status.bwrap or "bwrap")
            env = sandbox.sandbox_env(env, self._sandbox_plan(), plan.gpu_uuids)
            env["HOME"] = "/tmp"
        else:  # the pristine files, where they are; per-checkpoint namespaces only where root
            argv = [sys.executable, "-I", str(WORKER), "--task", str(plan.judge.spec.folder / "prepare.py"),
                    "--inputs", str(plan.inputs), "--fd", str(theirs.fileno()), "--evaluator", str(EVALUATOR_MEMORY)]
            self.note = f"the scorer runs without its sandbox: {status.detail}"
        self._owner = threading.current_thread()
        with open(plan.private / "worker.log", "ab") as log:
            self.proc = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=log, cwd=plan.inputs,
                                         preexec_fn=_lower_priority, start_new_session=True)
        theirs.close()
        self.sock = ours
        self._buf = bytearray()
        self.ready = False

    def await_ready(self) -> None:
        if self.ready:
            return
        try:
            answer = self._read_header(START_TIMEOUT_S)
        except (OSError, ValueError):
            answer = None
        if not answer or not answer.get("ready"):
            tail = _tail(self.plan.private / "worker.log")
            self.close()
            raise RuntimeError(f"the scorer did not start: {tail or 'no answer'}")
        self.ready = True

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ONEGC_")}
        env.update(PYTHONDONTWRITEBYTECODE="1", OPENBLAS_NUM_THREADS="1", TMPDIR="/tmp")
        if self.plan.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        weights = self._weights()
        if weights is not None:
            env["ONEGC_WEIGHTS_DIR"] = str(INSIDE / "weights" if sandbox.status().ok else weights)
        return env

    def _seen_as(self, path: Path) -> Path:
        """A snapshot path as the worker sees it."""
        return INSIDE / "snapshots" / path.relative_to(self.plan.snapshots) if self.sealed else path

    def _probe_seen_as(self, path: Path) -> Path:
        """A probe's inputs folder as the worker sees it."""
        return INSIDE / "probes" / path.relative_to(self.plan.probes) if self.sealed else path

    def _weights(self) -> Path | None:
        spec = self.plan.judge.spec
        if not spec.pretrained_weights:
            return None
        folder = self.plan.judge.data_dir.parent / "_weights" / spec.id
        return folder if folder.is_dir() else None

    def _sandbox_plan(self) -> sandbox.SandboxPlan:
        p = self.plan
        spec = p.judge.spec
        weights = self._weights()
        # everything at fixed places of its own, none under /tmp: each checkpoint gets a fresh /tmp
        return sandbox.SandboxPlan(
            workspace=INSIDE / "inputs", agent_home=INSIDE / "inputs", private=p.private / "sandbox", protected=(p.home,),
            writable=(),
            mounts=((WORKER, INSIDE / "score_worker.py"), (EVALUATOR_MEMORY, INSIDE / EVALUATOR_MEMORY.name),
                    (spec.folder / "prepare.py", INSIDE / "task" / "prepare.py"),
                    (KIT_FILE, INSIDE / "task" / KIT_FILE.name), (p.inputs, INSIDE / "inputs"),
                    (p.snapshots, INSIDE / "snapshots"), (p.probes, INSIDE / "probes"),
                    *([(weights, INSIDE / "weights")] if weights else [])),
            network=False, inner_root=True, gpu_minors=p.gpu_minors if p.device.startswith("cuda") else (),
            ids=sandbox.agent_ids(f"{p.session_id}/scorer"), hostname="onegc-scorer")

    def alive(self) -> bool:
        """The worker runs and will go on running: once the thread that launched it has ended, its
        parent-death signal is on its way (the live queue relaunches a worker that an answer broke,
        and that queue's thread ends before the official phase), and the next score launches anew."""
        return self.proc is not None and self.proc.poll() is None and self._owner is not None and \
            self._owner.is_alive()

    # ------------------------------------------------------------------ one checkpoint
    def score(self, ckpt: Path, code: Path, splits: list[str] | None = None, probe: bool = True,
              parts: bool = False) -> dict[str, Score]:
        """Predictions on each of ``splits`` (default: the selection split), each judged here. A split
        whose checks ride inside its evaluation (``TaskJudge.layout``: canary items mixed among its
        rows, T1's twins) is predicted pass by pass, a fresh child each, and judged on the passes
        together: its metric on its own rows, the canaries' test and the causality probe on the
        same predictions; the others come from one fresh child together. Never raises: whatever the
        child's answer is, or whatever goes wrong judging it, is that checkpoint's error
        (runner/wire/answer_check.py). A model that reads ahead is its error with the disqualifying
        verdict. ``probe=False`` shows every split whole and alone (benchmarks compare the two).
        ``parts``: a sealed split's public and private figures too, from the same predictions
        (``Score.figures``; TaskJudge.figures)."""
        splits = splits or [SELECTION_SPLIT]
        judge = self.plan.judge
        self.last_probe = None
        try:
            laid = {s: layout for s in splits if probe and (layout := judge.layout(s)) is not None}
            whole = [s for s in splits if s not in laid]
            out: dict[str, Score] = {}
            if whole:
                # a split that is its canaries' own rows, of a kind judged on the model's scores (t0, T2,
                # T7): those scores come back for it, its metric from their argmax (worker.predict_scores)
                scored = [s for s in whole if self._in_split(s) and judge.canaries is not None and judge.canaries.kind.scores]
                header, payload, failed = self._predict(ckpt, code, whole, scores=scored)
                if failed is not None or header is None:
                    failed = failed or Score(None, "the scorer gave no answer", verdicts=(INVALID,))
                    out.update({split: failed for split in whole})
                else:
                    out.update(self._judge_parts(header, payload, whole, parts, scored))
            for split, layout in laid.items():
                out[split] = self._score_passes(ckpt, code, split, layout, parts)
            return {split: out[split] for split in splits}
        except Exception as exc:  # noqa: BLE001 - agent bytes never end the session
            error = f"judging failed: {type(exc).__name__}: {answer_check.text(exc, 200)}"
            return {split: Score(None, error, verdicts=(INVALID,)) for split in splits}

    def _score_passes(self, ckpt: Path, code: Path, split: str, layout: passes.Layout, parts: bool = False) -> Score:
        """``split`` predicted pass by pass and judged whole (see :meth:`score`)."""

        judge = self.plan.judge
        kit = sys.modules["onegc_kit"]
        task = judge.spec.id
        scores_wanted = layout.items is not None and judge.canaries is not None and judge.canaries.kind.scores
        folders = judge.write_passes(split, self.plan.probes / f"passes-{split}")
        answers: list = [None] * len(folders)
        notes: tuple[Verdict, ...] = ()
        waited = 0.0
        order = sorted(range(len(folders)), key=lambda _: os.urandom(4))  # asked in an order of no use to the model
        for i in order:
            folder = folders[i]
            header, payload, failed = self._predict(ckpt, code, [split], probe=folder,
                                                    scores=[split] if scores_wanted else ())
            waited += self._waited if failed is None else (failed.eval_s or 0.0)
            if failed is not None or header is None:
                failed = failed or Score(None, "the scorer gave no answer", verdicts=(INVALID,))
                return replace(failed, eval_s=round(waited, 3), verdicts=merged(notes, failed.verdicts))
            notes = merged(notes, _notes(header))
            try:
                answers[i] = answer_check.npy_array(answer_check.split_payload(header.parts, payload)[split])
            except answer_check.InvalidAnswer as exc:
                return Score(None, str(exc), round(waited, 3), (INVALID, *notes))
        try:
            got = layout.assemble(answers)
        except ValueError as exc:
            return Score(None, f"predictions unusable: {answer_check.text(exc, 200)}", round(waited, 3), (INVALID, *notes))
        real = got.real
        if scores_wanted and real.ndim == 2 and real.dtype.kind == "f":  # the scores behind the predictions
            real = real.argmax(axis=1)
        started = time.perf_counter()
        try:
            value, _ = judge.judge(real, split)
            figures, split_found = judge.figures(real, split) if parts else (None, ())
        except kit.KitError as exc:  # the task's own refusal: a wrong shape, NaN or inf
            return Score(None, str(exc), round(waited, 3), notes)
        except Exception as exc:  # noqa: BLE001 - predictions the judge could not take
            return Score(None, f"predictions unusable: {type(exc).__name__}: {answer_check.text(exc, 200)}",
                         round(waited, 3), (INVALID, *notes))
        found, evidence = self._canary_verdicts(split, got.items if layout.items is not None else got.real)
        outcome = causal.judge(layout, got, task)
        self.last_probe = outcome
        verdicts = merged(notes, found, outcome.verdicts, split_found)
        eval_s = round(waited + time.perf_counter() - started, 3)
        if outcome.error:
            unchecked = verdict("causality_unchecked", "look", outcome.error, task)
            return Score(None, f"causality not checked: {outcome.error}", eval_s, (*verdicts, unchecked), evidence)
        moved = outcome.verdict
        if moved is not None and moved.strength == "disqualifies":
            return Score(None, f"{PROBE_ERRORS[moved.check]}: {moved.evidence}", eval_s, verdicts, evidence)
        return Score(value, None, eval_s, verdicts, evidence, figures)

    def predict_part(self, request: Path, code: Path, split: str, part: str):
        """A handed-over model's predictions on the rows of one part of ``split`` (T1 sealed: the
        agent's evaluation, answered on the public part), from a fresh child shown that part's
        inputs only; raises ``ValueError`` with the reason where there are none."""
        folder = self.plan.judge.write_part_inputs(split, part, self.plan.probes / f"part-{part}")
        header, payload, failed = self._predict(request, code, [split], probe=folder, handed=True)
        if failed is not None or header is None:
            raise ValueError((failed.error if failed else None) or "the scorer gave no answer")
        try:
            return answer_check.npy_array(answer_check.split_payload(header.parts, payload)[split])
        except answer_check.InvalidAnswer as exc:
            raise ValueError(str(exc)) from None

    def _canary_verdicts(self, split: str, predictions) -> tuple[tuple[Verdict, ...], dict | None]:
        """The canaries' verdict and evidence from ``predictions`` on their items (those mixed in a
        pass, or, for a kind whose items are the split's own first rows, the split's predictions)."""
        canaries = self.plan.judge.canaries
        if canaries is None or canaries.kind.split != split:
            return (), None
        try:
            items = predictions[:len(canaries.draw().is_canary)] if canaries.kind.in_split else predictions
            ev, found = canaries.judge(items)
        except Exception as exc:  # noqa: BLE001 - predictions of the wrong shape: the canaries' error, asked about
            return (unjudged(canaries.kind.task, answer_check.text(exc, 120)),), None
        return ((found,) if found else ()), ev.record()

    def _predict(self, ckpt: Path, code: Path, splits: list[str], probe: Path | None = None,
                 timeout_s: float | None = None, seed: int = 0, scores: Sequence[str] = (),
                 handed: bool = False) -> tuple[answer_check.Header | None, memoryview, Score | None]:
        """One fresh child's answer on ``splits`` (from ``probe``, a pass's folder, in place of the
        split's inputs where given; ``scores``: the splits of them on which the model's scores behind
        its predictions are asked for, where it can give them: worker.predict_scores; ``handed``:
        ``ckpt`` is a model an evaluation handed over, onegc_kit.load_handed_model)."""
        timeout_s = self.plan.timeout_s if timeout_s is None else timeout_s
        margin = ANSWER_MARGIN_S
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return None, NOTHING, Score(None, PAST_DEADLINE)
            timeout_s, margin = min(timeout_s, left), min(margin, DEADLINE_MARGIN_S)
        try:
            if not self.alive():
                self.close()
                self.launch()
            self.await_ready()
        except (OSError, RuntimeError) as exc:
            return None, NOTHING, Score(None, f"could not start the scorer: {exc}")
        bounds = self._part_bounds(splits, probe, scores)
        bound = min(answer_check.MAX_PAYLOAD_BYTES, sum(bounds.values()))
        # an id the child cannot count on: which request of a checkpoint's passes it answers is not its to know
        req = {"id": os.urandom(8).hex(), "ckpt": str(self._seen_as(ckpt)), "code": str(self._seen_as(code)),
               "splits": splits, "device": self.plan.device,
               "timeout_s": timeout_s, "threads": self.plan.threads, "max_bytes": bound,
               "cpu_s": timeout_s * self.plan.threads, "mem_bytes": _memory_cap(self.plan.device)}
        if probe is not None:
            req.update(probe_inputs=str(self._probe_seen_as(probe)), seed=seed)
        if scores:
            req["scores"] = list(scores)  # the model's scores behind its predictions (worker.predict_scores)
        if handed:
            req["handed"] = True
        started = time.monotonic()
        try:
            self._buf = bytearray()  # nothing the worker sent before this request counts
            self._channel().sendall(json.dumps(req).encode() + b"\n")
            message = self._read_header(timeout_s + margin)
            # larger than the predictions can ever be: refused before a byte of it is read
            payload = self._read_exact(answer_check.payload_size(message, bound)) if message is not None else NOTHING
            if message is not None and (message.get("id") != req["id"] or self._buf):
                raise answer_check.InvalidAnswer("the scorer sent more than one answer")
        except answer_check.InvalidAnswer as exc:
            self.close()  # the stream is out of step: the next checkpoint gets a fresh worker
            return None, NOTHING, Score(None, str(exc), round(time.monotonic() - started, 3), (INVALID,))
        except (OSError, ValueError) as exc:
            self.close()
            return None, NOTHING, Score(None, f"the scorer failed: {exc}", verdicts=(INVALID,))
        if message is None:
            self.close()
            return None, NOTHING, Score(None, f"evaluation timed out after {timeout_s:.0f} s",
                                    round(time.monotonic() - started, 3), (INVALID, _observed("timed out")))
        waited = round(time.monotonic() - started, 3)  # measured here: the child's eval_s is its own claim
        try:
            header = answer_check.read_header(message, splits, len(payload), bounds)
        except answer_check.InvalidAnswer as exc:
            return None, NOTHING, Score(None, str(exc), waited, (INVALID, *_child_said(message)))
        self._waited = waited
        if not header.ok:
            error = header.error or "unknown error"
            out = header.stdout.strip()
            if out and "printed" not in error:
                error += f" (the script printed: {answer_check.text(out.splitlines()[-1], 160)})"
            # no answer came (the child died or hung): the worker saw it, and no answer is an invalid one
            silent = any(o.startswith(("no answer", "timed out")) for o in header.observed)
            return header, NOTHING, Score(None, error, waited,
                                      (INVALID,) * silent + _notes(header))
        return header, payload, None

    def _judge_parts(self, header: answer_check.Header, payload: memoryview, splits: list[str],
                     parts: bool = False, scored: Sequence[str] = ()) -> dict[str, Score]:
        """Each split's answer judged: its metric, a sealed split's parts, and where the split is its
        canaries' own rows their test (on the model's scores for the splits in ``scored``, whose
        metric is then on their argmax: the predictions the task's ``predict`` gave)."""
        kit = sys.modules["onegc_kit"]
        notes = _notes(header)
        waited = self._waited
        blobs = answer_check.split_payload(header.parts, payload)
        arrays = {}
        try:
            for split in splits:
                arrays[split] = answer_check.npy_array(blobs[split])
        except answer_check.InvalidAnswer as exc:
            return {split: Score(None, str(exc), waited, (INVALID, *notes)) for split in splits}
        out: dict[str, Score] = {}
        for split in splits:
            started = time.perf_counter()
            answer = predicted = arrays[split]
            if split in scored and answer.ndim == 2 and answer.dtype.kind == "f":  # the scores behind them
                predicted = answer.argmax(axis=1)
            try:
                value, _ = self.plan.judge.judge(predicted, split)
                figures, split_found = self.plan.judge.figures(predicted, split) if parts else (None, ())
                canary = self._canary_verdicts(split, answer) if self._in_split(split) else ((), None)
                out[split] = Score(value, None, round(waited + time.perf_counter() - started, 3),
                                   merged(notes, canary[0], split_found), canary[1], figures)
            except kit.KitError as exc:  # the task's own refusal: a wrong shape, NaN or inf
                out[split] = Score(None, str(exc), waited, notes)
            except Exception as exc:  # noqa: BLE001 - predictions the judge could not take
                out[split] = Score(None, f"predictions unusable: {type(exc).__name__}: {answer_check.text(exc, 200)}",
                                   waited, (INVALID, *notes))
        return out

    def _in_split(self, split: str) -> bool:
        """Whether the session's canaries are rows of ``split`` itself (the held-back rows of every kind
        planted in sessions: runner/integrity/canary_kinds.py)."""
        canaries = self.plan.judge.canaries
        return canaries is not None and canaries.kind.in_split and canaries.kind.split == split

    def _read_header(self, timeout_s: float) -> dict | None:
        """The next JSON line from the worker; None when none came within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            if len(self._buf) > MAX_HEADER_BYTES:
                raise ValueError("the scorer's answer has no header line")
            if not self._recv(deadline):
                return None
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise answer_check.InvalidAnswer("the scorer's answer is not a JSON object")
        return message

    def _part_bounds(self, splits: list[str], probe: Path | None, scores: Sequence[str] = ()) -> dict[str, int]:
        """The most bytes an honest answer can have for each part asked: a split's from the task's
        judge, a pass's from its inputs' rows (issue 38: the bound holds whatever a pass holds), wider
        where the model's scores are asked for (a canary kind's ``answer_bytes``)."""
        judge = self.plan.judge
        out = {}
        for split in splits:
            try:
                out[split] = judge.probe_bytes(probe / split) if probe is not None else judge.answer_bytes(split)
                if split in scores and judge.canaries is not None:
                    rows = judge.probe_rows(probe / split) if probe is not None else judge._input_rows(split)
                    out[split] = max(out[split], judge.canaries.kind.answer_bytes(rows) + answer_check.NPY_HEADER_BYTES)
            except Exception:  # noqa: BLE001 - a task whose judge cannot say: the worker's own bound
                out[split] = answer_check.MAX_PAYLOAD_BYTES
        return out

    def _read_exact(self, n: int, timeout_s: float = ANSWER_MARGIN_S) -> memoryview:
        """``n`` bytes of payload, read into one buffer of that size (``n`` was checked against
        the answer's bound): the answer is held once, never copied whole."""
        deadline = time.monotonic() + timeout_s
        data = bytearray(n)
        view = memoryview(data)
        got = min(n, len(self._buf))
        view[:got] = self._buf[:got]
        del self._buf[:got]
        sock = self._channel()
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OSError("the scorer's answer was cut short")
            sock.settimeout(min(left, 1.0))
            try:
                k = sock.recv_into(view[got:], min(n - got, 1 << 20))
            except TimeoutError:
                if not self.alive():
                    raise OSError("the scorer exited") from None
                continue
            if not k:
                raise OSError("the scorer exited")
            got += k
        return view.toreadonly()

    def _channel(self) -> socket.socket:
        if self.sock is None:
            raise OSError("the scorer is not running")
        return self.sock

    def _recv(self, deadline: float) -> bool:
        """One read into the buffer; False once the deadline passed with nothing read."""
        sock = self._channel()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            sock.settimeout(min(left, 1.0))
            try:
                chunk = sock.recv(1 << 20)
            except TimeoutError:
                if not self.alive():
                    raise OSError("the scorer exited") from None
                continue
            if not chunk:
                raise OSError("the scorer exited")
            self._buf += chunk
            return True

    def kill(self) -> None:
        self.close()

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()  # bubblewrap's --die-with-parent takes the worker and its children
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self.proc = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
            self._buf = bytearray()


# A self-reported score this much better than the harness's (relative, plus a floor for metrics
# near zero) is flagged: an honest run reports its own validation figure, which is close.
CLAIM_RELATIVE = 0.10
CLAIM_ABSOLUTE = 0.02


def self_report_gap(spec: TaskSpec, reported: float | None, value: float | None) -> Verdict | None:
    """A look when the agent's own score is far better than the harness's (the two may be of
    different splits on T4-T6, where the harness scores test: a large gap is still worth a look)."""
    if reported is None or value is None or reported != reported:
        return None
    if spec.better(reported, value) and abs(reported - value) > CLAIM_RELATIVE * abs(value) + CLAIM_ABSOLUTE:
        return verdict("self_report_gap", "look", f"self-reported {reported:.4g} is far better than the harness's "
                       f"{value:.4g}", spec.id, statistic=reported - value)
    return None


# the harness got no valid answer for the checkpoint: a record, never held against it
INVALID = verdict("invalid_answer", "note", "the scorer's child gave no valid answer for this checkpoint")
# how a score's error names what the causality probe found
PROBE_ERRORS = {"reads_ahead": "reads ahead"}


def _observed(what: str) -> Verdict:
    return verdict("scorer_observed", "note", what)


def _notes(header: answer_check.Header) -> tuple[Verdict, ...]:
    """What the worker saw from outside the child (its look at the child's evaluation functions
    included: runner/integrity/evaluator_check.py), then what the child said about itself."""
    return (*evaluator_check.verdicts(header.looked), *(_observed(o) for o in header.observed),
            *(verdict("child_report", "note", f) for f in header.self_reported))


def _child_said(message: dict) -> tuple[Verdict, ...]:
    """The child's own flags from an answer that failed its checks, where readable."""
    flags = message.get("flags")
    if not isinstance(flags, list):
        return ()
    return tuple(verdict("child_report", "note", answer_check.text(f, 200)) for f in flags[:answer_check.MAX_FLAGS]
                 if isinstance(f, str))


def _lower_priority() -> None:
    os.nice(5)  # live scoring must not slow the training the budget is paying for


def _memory_cap(device: str) -> int | None:
    """RLIMIT_AS for a CPU evaluation; none on CUDA (its driver reserves terabytes of address space)."""
    if device != "cpu":
        return None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None
    return int(total * MEMORY_FRACTION)


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""
