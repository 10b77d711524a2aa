"""What a sealed split's answers can teach, and what they cost (issue 47; runner/integrity/sealed_split.py).

    python benchmarks/sealed_split_bench.py [--sessions 8] [--answers 200] [--t1-seeds 2] [--skip-t1]

Everything in one process, as a session has it: the task's data prepared here (t0 made by its
prepare.py, T1 from ../shared/data/tinyshakespeare), the runner's pristine judge (``TaskJudge``)
with the session's public and private parts cut from a secret of its own (one per session), and
for the attacks the runner's answer service (:class:`SealedAnswers`: the Ladder, the probes) on a
workspace's ``.sealed/``, asked through the kit's own ``ask_harness`` (its 0.2 s spacing and 50 ms
poll set to nothing: what is measured is what an answer says, not how soon). Printed:

1. **Hostile agents on t0**, each spending a session's answers (``--answers``) from a weak model
   (ten SGD steps, ~0.36 on val): ``one-item`` (the issue's attack: change one prediction, keep it
   when the answer rose), ``group g`` (g predictions at a time), ``boosting`` (Blum and Hardt's, from
   the model: a tenth of its predictions redrawn at random, the per-point majority of those whose answer rose). For each, over
   ``--sessions`` sessions: what it gained on the official number (the private part's), on the
   public part and on the whole split, against the private figure's standard error; how often it
   was flagged (``answer_probing``, ``public_private_gap``); the bits its transcript carried. The
   same attacks with exact answers on the whole split (the service before issue 47) for comparison.
2. **Honest selection loops** (t0: the baseline and the scripted agent's three edits; T1: a tiny
   GPT, two configurations, ``--t1-seeds`` seeds): each epoch's check through the Ladder, the run
   keeping a checkpoint when its answer beats its best so far (T3's and T4's loop), the harness
   then taking the val-best of those kept; its official (private) figure against the same loop
   fed exact answers on the public part, and against keeping every epoch. False alarms of both
   verdicts on these honest sessions.
3. **The leak in bits** per session: the Ladder's bound for each task (``log2 C(cap + G, cap)``) and
   the transcripts measured above.
4. **The private figure's noise** per task: its standard error (t0 and T1 measured from the blocks
   of the honest checkpoints above; T2, T7 the binomial at Table 4's mean score; T3 measured by
   each session, no VOC here) beside the spread between agents in the paper's Table 4.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tasks"))

import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402

from runner.integrity import answer_probes, sealed_split, split_parts  # noqa: E402
from runner.integrity.ladder import Ladder, bits_bound, transcript_bits  # noqa: E402
from runner.scoring.scorer import TaskJudge  # noqa: E402
from tasks import get_task  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


class Events:
    """The session's event writer, as far as the answers use it: counted, not written."""

    def __init__(self) -> None:
        self.warnings = 0

    def emit(self, type_: str, **fields) -> None:
        self.warnings += type_ == "warning"


def load(task_id: str, name: str):
    """``tasks/<task>/<name>.py`` as a module of its own."""
    spec = importlib.util.spec_from_file_location(f"bench_{task_id}_{name}", get_task(task_id).folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepared(task_id: str, root: Path, raw: Path | None = None) -> Path:
    out = root / "data" / get_task(task_id).id
    sys.modules["onegc_kit"].prepare(load(task_id, "prepare"), out, from_dir=raw)
    return out


def judge_for(task_id: str, data: Path, secret: str, root: Path) -> TaskJudge:
    judge = TaskJudge(get_task(task_id), data, secret=secret)
    judge.cut(root / f"parts-{secret}")
    return judge


def figure(judge: TaskJudge, pred: np.ndarray, name: str) -> float:
    if name == split_parts.WHOLE:
        return judge.judge(pred, "val")[0]
    part = judge.part(name)
    return judge.judge(pred[part.rows], "val", part)[0]


def gap_flagged(judge: TaskJudge, pred: np.ndarray) -> tuple[bool, float]:
    figures, found = judge.figures(pred, "val")
    assert figures is not None
    return bool(found), figures["gap"]["private_se"]


# ----------------------------------------------------------------------------- t0 models
def t0_weak(seed: int = 0) -> np.ndarray:
    import torch
    import torch.nn as nn

    prep = sys.modules["prepare"]
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
    x, y = prep.load_split("train")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for idx in torch.randperm(len(x))[:1280].split(128):
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return model(torch.from_numpy(np.asarray(prep.inputs("val")["x"]))).argmax(1).numpy()


def t0_epochs(config: dict, seed: int) -> list[np.ndarray]:
    """The baseline's (train.py, with ``config``'s constants) predictions on val after each epoch."""
    import torch
    import torch.nn as nn

    prep = sys.modules["prepare"]
    torch.manual_seed(seed)
    h = config.get("HIDDEN", 64)
    model = nn.Sequential(nn.Linear(2, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 3))
    opt = (torch.optim.Adam if config.get("OPTIMIZER", "sgd") == "adam" else torch.optim.SGD)(
        model.parameters(), lr=config.get("LR", 0.05))
    x, y = prep.load_split("train")
    xv = torch.from_numpy(np.asarray(prep.inputs("val")["x"]))
    out = []
    for _ in range(config.get("EPOCHS", 6)):
        for idx in torch.randperm(len(x)).split(128):
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            out.append(model(xv).argmax(1).numpy())
    return out


# ----------------------------------------------------------------------------- attacks
@dataclass
class Outcome:
    official_gain: list[float] = field(default_factory=list)
    public_gain: list[float] = field(default_factory=list)
    whole_gain: list[float] = field(default_factory=list)
    se: list[float] = field(default_factory=list)
    flagged: list[bool] = field(default_factory=list)
    probing: list[bool] = field(default_factory=list)
    gap: list[bool] = field(default_factory=list)
    bits: list[float] = field(default_factory=list)


def attack(name: str, ask, base: np.ndarray, answers: int, rng: np.random.Generator) -> np.ndarray:
    """Spend ``answers`` answers (``ask(pred) -> (value, new)``) from ``base``; the predictions carried."""
    current = base.copy()
    best, _ = ask(current)
    if name == "boosting":  # Blum and Hardt's, from the model: random redraws of a tenth of its predictions,
        # the per-point majority of those whose answer rose (the model's own vote breaks ties). Without
        # information it gives the model back; drawn from scratch, a weak model below chance would "gain".
        votes = np.zeros((len(base), 3))
        votes[np.arange(len(base)), base] += 1.5
        for _ in range(answers - 1):
            trial = current.copy()
            rows = rng.random(len(base)) < 0.1
            trial[rows] = rng.integers(0, 3, int(rows.sum()))
            value, new = ask(trial)
            if new or value > best:
                votes[np.arange(len(base)), trial] += 1
                best = max(best, value)
        return votes.argmax(1)
    g = 1 if name == "one-item" else int(name.split()[1])
    for _ in range(answers - 1):
        trial = current.copy()
        rows = rng.choice(len(trial), size=g, replace=False)
        trial[rows] = (trial[rows] + rng.integers(1, 3, size=g)) % 3
        value, new = ask(trial)
        if new or value > best:  # the Ladder's "new"; exact answers: any rise
            current, best = trial, max(best, value)
    return current


def t0_attacks(data: Path, root: Path, sessions: int, answers: int) -> dict[str, dict[str, Outcome]]:
    sealed_split.SPACING_S = 0.0
    sealed_split.POLL_S = 0.002
    kinds = ("one-item", "group 5", "group 20", "boosting")
    out: dict[str, dict[str, Outcome]] = {"ladder, public part (issue 47)": {k: Outcome() for k in kinds},
                                          "exact answers on the whole split (before; no checks)": {k: Outcome() for k in kinds}}
    spec = get_task("t0")
    for s in range(sessions):
        secret = f"bench-{s}"
        judge = judge_for("t0", data, secret, root)
        base = t0_weak(s)
        for kind in kinds:
            # the answer service as a session runs it
            ws, answers_dir = root / f"ws-{s}-{kind}", root / f"answers-{s}-{kind}"
            ws.mkdir()
            service = sealed_split.SealedAnswers(judge, "val", ws, answers_dir, Events(), cap=answers,
                                                 ladder=sealed_split.ladder_for(spec)).start()
            os.environ.update(sealed_split.agent_vars(spec, ws, answers_dir))

            def ask(pred: np.ndarray) -> tuple[float, bool]:
                got = kit.ask_harness(pred, "val", wait_s=60)
                return got["value"], bool(got["new"])

            try:
                final = attack(kind, ask, base, answers, np.random.default_rng(1000 + s))
            finally:
                service.stop()
            record(out["ladder, public part (issue 47)"][kind], judge, base, final, service.verdicts(),
                   service.ladder.record(answers)["transcript_bits"])
            # before issue 47: exact answers on the whole split
            final = attack(kind, lambda p, j=judge: (figure(j, p, split_parts.WHOLE), False), base, answers,
                           np.random.default_rng(1000 + s))
            record(out["exact answers on the whole split (before; no checks)"][kind], judge, base, final, [],
                   answers * math.log2(len(base) + 1))
    return out


def record(o: Outcome, judge: TaskJudge, base: np.ndarray, final: np.ndarray, verdicts: list, bits: float) -> None:
    o.official_gain.append(figure(judge, final, split_parts.PRIVATE) - figure(judge, base, split_parts.PRIVATE))
    o.public_gain.append(figure(judge, final, split_parts.PUBLIC) - figure(judge, base, split_parts.PUBLIC))
    o.whole_gain.append(figure(judge, final, split_parts.WHOLE) - figure(judge, base, split_parts.WHOLE))
    gap, se = gap_flagged(judge, final)
    o.se.append(se)
    o.probing.append(bool(verdicts))
    o.gap.append(gap)
    o.flagged.append(bool(verdicts) or gap)
    o.bits.append(bits)


# ----------------------------------------------------------------------------- honest loops
@dataclass
class Loop:
    ladder: list[float] = field(default_factory=list)  # the official (private) figure of the harness's pick
    exact: list[float] = field(default_factory=list)
    every: list[float] = field(default_factory=list)
    gap_alarms: int = 0
    checkpoints: int = 0
    probing_alarms: int = 0
    sessions: int = 0
    bits: list[float] = field(default_factory=list)
    se: list[float] = field(default_factory=list)


def honest_session(judge: TaskJudge, runs: list[list[np.ndarray]], higher: bool, spec, loop: Loop) -> None:
    """One session of ``runs`` (each a list of per-epoch predictions) through the three answer rules."""
    better = (lambda a, b: a > b) if higher else (lambda a, b: a < b)
    worst = -math.inf if higher else math.inf
    lo, hi = spec.metric_range
    ladder, probes = Ladder(spec.ladder_step, lo, hi, higher), answer_probes.AnswerProbes()
    kept: dict[str, list[np.ndarray]] = {"ladder": [], "exact": []}
    every = [p for run in runs for p in run]
    for run in runs:
        best = {"ladder": worst, "exact": worst}
        for pred in run:
            public = figure(judge, pred, split_parts.PUBLIC)
            part = judge.part(split_parts.PUBLIC)
            probes.see(pred[part.rows])
            said = {"ladder": ladder.answer(public)[0], "exact": public}
            for rule, value in said.items():
                if better(value, best[rule]):  # the run keeps a checkpoint whose answer beats its best so far
                    best[rule] = value
                    kept[rule].append(pred)
    for rule, preds in (*kept.items(), ("every", every)):
        wholes = [figure(judge, p, split_parts.WHOLE) for p in preds]  # the harness's own val-best
        pick = preds[int(np.argmax(wholes) if higher else np.argmin(wholes))]
        getattr(loop, rule).append(figure(judge, pick, split_parts.PRIVATE))
    for pred in every:
        gap, se = gap_flagged(judge, pred)
        loop.gap_alarms += gap
        loop.checkpoints += 1
        loop.se.append(se)
    loop.probing_alarms += probes.verdict(spec.id) is not None
    loop.sessions += 1
    loop.bits.append(transcript_bits(ladder.answered, ladder.new_values, ladder.step, lo, hi))


T0_CONFIGS = [{}, *({k: v for k, v in e.set.items()} for e in get_task("t0").scripted_edits)]


def t0_honest(data: Path, root: Path, sessions: int) -> Loop:
    loop = Loop()
    spec = get_task("t0")
    for s in range(sessions):
        judge = judge_for("t0", data, f"honest-{s}", root)
        runs = [t0_epochs(config, seed=100 * s + i) for i, config in enumerate(T0_CONFIGS)]
        honest_session(judge, runs, True, spec, loop)
    return loop


def t1_epochs(prep, config: dict, seed: int, epochs: int) -> list[np.ndarray]:
    """A tiny GPT of T1's baseline (its own classes and schedule, train.py), its val logits per epoch."""
    import torch
    import torch.nn.functional as F

    train_py = load("t1", "train")
    for k, v in config.items():
        setattr(train_py, k, v)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    data = torch.from_numpy(prep.load_split("train").astype(np.int64))
    model = train_py.build_model({"vocab_size": len(prep.vocab()), "block_size": 256, "n_layer": config["N_LAYER"],
                                  "n_head": config["N_HEAD"], "n_embd": config["N_EMBD"], "dropout": 0.0})
    opt = torch.optim.AdamW(model.parameters(), lr=config["LR"], betas=(0.9, 0.95), weight_decay=0.1)
    total, step, out = epochs * (len(data) // (64 * 256)), 0, []
    inputs = prep.inputs("val")
    for _ in range(epochs):
        model.train()
        for x, y in train_py.epoch_batches(data, rng):
            for group in opt.param_groups:
                group["lr"] = train_py.lr_at(step, total)
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
        model.eval()
        out.append(prep.predict(model, inputs, "cpu"))
    return out


T1_CONFIGS = [{"N_LAYER": 1, "N_HEAD": 2, "N_EMBD": 32, "LR": 3e-3, "MIN_LR": 3e-4, "WARMUP_STEPS": 20},
              {"N_LAYER": 2, "N_HEAD": 2, "N_EMBD": 48, "LR": 3e-3, "MIN_LR": 3e-4, "WARMUP_STEPS": 20}]


def t1_honest(data: Path, root: Path, seeds: int, epochs: int) -> Loop:
    loop = Loop()
    spec = get_task("t1")
    prep = sys.modules["t1_prepare"]
    os.environ["ONEGC_DATA_DIR"] = str(data)
    for s in range(seeds):
        judge = judge_for("t1", data, f"honest-t1-{s}", root)
        runs = [t1_epochs(prep, config, seed=10 * s + i, epochs=epochs) for i, config in enumerate(T1_CONFIGS)]
        honest_session(judge, runs, False, spec, loop)
    return loop


# ----------------------------------------------------------------------------- printing
def mean_sd(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"{statistics.mean(xs):+.4f} ± {statistics.stdev(xs):.4f}" if len(xs) > 1 else f"{xs[0]:+.4f}"


def table4_spread(task: str) -> float | None:
    means = [p.mean for p in get_task(task).paper if p.mean is not None]
    return statistics.stdev(means) if len(means) > 1 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=8, help="t0 sessions (secrets) per attack and for the honest loop")
    parser.add_argument("--answers", type=int, default=200, help="answers a session spends (the cap)")
    parser.add_argument("--t1-seeds", type=int, default=2)
    parser.add_argument("--t1-epochs", type=int, default=3)
    parser.add_argument("--skip-t1", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(max(1, args.threads))  # tiny models: more threads only contend on a shared machine
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="sealed-bench-") as tmp:
        root = Path(tmp)
        t0_data = prepared("t0", root)
        os.environ["ONEGC_DATA_DIR"] = str(t0_data)
        sys.modules["prepare"] = load("t0", "prepare")
        print(f"t0: {args.sessions} sessions of {args.answers} answers each; public part 450 of val's 1 500 points, "
              f"Ladder step {get_task('t0').ladder_step}")
        attacks = t0_attacks(t0_data, root, args.sessions, args.answers)
        for rule, table in attacks.items():
            print(f"\n  {rule}: gain on the official (private part), public, whole; private SE; flagged; bits")
            for kind, o in table.items():
                flags = f"{sum(o.flagged)}/{len(o.flagged)} (probing {sum(o.probing)}, gap {sum(o.gap)})"
                print(f"  {kind:<10} official {mean_sd(o.official_gain)}  public {mean_sd(o.public_gain)}  "
                      f"whole {mean_sd(o.whole_gain)}  SE {statistics.mean(o.se):.4f}  flagged {flags}  "
                      f"bits {statistics.mean(o.bits):.0f}")
        t0 = t0_honest(t0_data, root, args.sessions)
        loops = {"t0": t0}
        if not args.skip_t1 and (SHARED / "tinyshakespeare").is_dir():
            t1_data = prepared("t1", root, SHARED / "tinyshakespeare")
            os.environ["ONEGC_DATA_DIR"] = str(t1_data)
            sys.modules["t1_prepare"] = load("t1", "prepare")
            loops["t1"] = t1_honest(t1_data, root, args.t1_seeds, args.t1_epochs)
        print("\nhonest selection loops: the official (private) figure of the harness's val-best among the checkpoints "
              "the loop kept")
        for task, loop in loops.items():
            diff = [a - b for a, b in zip(loop.ladder, loop.exact, strict=True)]
            print(f"  {task}: {loop.sessions} sessions; ladder {statistics.mean(loop.ladder):.4f}, exact public "
                  f"{statistics.mean(loop.exact):.4f}, every epoch kept {statistics.mean(loop.every):.4f}; "
                  f"ladder - exact {mean_sd(diff)}; private SE {statistics.mean(loop.se):.4f}; false alarms: gap "
                  f"{loop.gap_alarms}/{loop.checkpoints} checkpoints, probing {loop.probing_alarms}/{loop.sessions} "
                  f"sessions; transcript bits {statistics.mean(loop.bits):.0f}")
        print(f"\nthe leak: at most log2 C(cap + G, cap) bits a session (cap {args.answers}), all about the public part")
        for short in ("t0", "t1", "t2", "t3", "t7"):
            spec = get_task(short)
            lo, hi = spec.metric_range
            print(f"  {short}: step {spec.ladder_step}, range [{lo}, {hi}], bound "
                  f"{bits_bound(args.answers, spec.ladder_step, lo, hi):.0f} bits; exact answers on the whole split "
                  "(before): unbounded by the split's size")
        print("\nthe private figure's standard error, beside the spread between agents' means in Table 4 (std)")
        measured = {task: statistics.mean(loop.se) for task, loop in loops.items()}
        for short, n_val in (("t0", 1500), ("t1", 436), ("t2", 10000), ("t3", 1449), ("t7", 7600)):
            spread = table4_spread(short)
            n_priv = n_val - round(n_val * split_parts.PUBLIC_FRACTION)
            if short in measured:
                se, how = measured[short], "measured from the blocks of the honest checkpoints above"
            elif short in ("t2", "t7"):
                p = statistics.mean(r.mean for r in get_task(short).paper if r.mean is not None)
                se, how = math.sqrt(p * (1 - p) / n_priv), f"binomial at Table 4's mean {p:.3f}, {n_priv} private items"
            else:
                se, how = None, "each session measures it from its blocks (result.json parts.gap.private_se)"
            ratio = f"; spread / SE {spread / se:.1f}" if se and spread else ""
            print(f"  {short}: SE {'-' if se is None else f'{se:.4f}'} ({how}); Table 4 spread "
                  f"{'-' if spread is None else f'{spread:.4f}'}{ratio}")
    print(f"\n({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
