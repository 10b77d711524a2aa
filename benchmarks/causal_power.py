"""Reading ahead and across examples (INTEGRITY.md V3, V4, V7): how many planted violations the scorer
catches or prevents, how many honest checkpoints it flags, and what a model that knows the code gets.

    python benchmarks/causal_power.py [--from DIR] [--seed 0] [--json]

``--from``: the offline raw copies (``tinyshakespeare/input.txt``, ``etth1/ETTh1.csv``; default
``shared/data`` beside the repository). Every checkpoint is a real tiny CPU model, trained a few steps
on the task's train split (tests/integrity/causal_models.py), scored by a session's sealed scorer as
the official re-evaluation scores it, and once more shown each split whole and alone (``probe=False``)
for comparison.

- T1 (its probe rides inside the official passes: runner/integrity/passes.py). Honest: GPTs of several
  sizes, trained or not, dropout left on in evaluation. Violations: reading t+1 (no trained weight),
  GPTs without their causal mask, read-ahead from a random position on; and readers that know the
  probe and hide by a tell: noise at a share of positions (0.05 % to 12.5 %: what hiding costs them in
  bpb), the call stack, the batch size, the inputs' folder, twins spotted by their train-text tails.
- T6 (by construction: rows streamed in time order). Honest: DLinear and MLP heads. Violations:
  horizons copied from the batch, the evaluator's frame, the inputs file, rewritten once shown, pulled
  early through the stream: *prevented* when the official value is its honest base's exactly (or an
  error).
- t0: no probe; its value as before.

Targets: >= 95 % of violations caught or prevented, <= 1 % of honest checkpoints flagged, every honest
deterministic checkpoint's official value bit for bit its whole-split value. Prints one row per
checkpoint, then the rates.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tasks")]

from tests.integrity import causal_models as cm  # noqa: E402

GPT = {"n_layer": 1, "n_head": 2, "n_embd": 32}


def cases(rng, train_grams: list[int]) -> list[tuple[str, str, bool, str, dict, int]]:
    """(task, name, honest, source, config, training steps)."""
    out: list[tuple[str, str, bool, str, dict, int]] = []
    t1_honest: list[tuple[str, dict, int]] = [
        ("gpt d32 untrained", GPT, 0), ("gpt d32", GPT, 20), ("gpt d16", {**GPT, "n_embd": 16}, 20),
        ("gpt d48 2 layers", {**GPT, "n_embd": 48, "n_layer": 2}, 10), ("gpt 4 heads", {**GPT, "n_head": 4}, 20),
        ("gpt dropout 0.1 on", {**GPT, "dropout": 0.1, "dropout_on": True}, 20),
        ("gpt dropout 0.3 on", {**GPT, "dropout": 0.3, "dropout_on": True}, 20),
        ("gpt d48 dropout 0.2 on", {**GPT, "n_embd": 48, "dropout": 0.2, "dropout_on": True}, 10),
        ("gpt dropout 0.1 off", {**GPT, "dropout": 0.1}, 20), ("gpt d24", {**GPT, "n_embd": 24}, 30),
    ]
    out += [("t1_shakespeare", name, True, cm.GPT, cfg, steps) for name, cfg, steps in t1_honest]
    t6_honest: list[tuple[str, dict, int]] = [("dlinear untrained", {}, 0), ("dlinear", {}, 30),
                                              ("dlinear kernel 13", {"kernel": 13}, 30), ("mlp 32", {"hidden": 32}, 30)]
    out += [("t6_etth1", name, True, cm.DLINEAR, cfg, steps) for name, cfg, steps in t6_honest]
    out += [("t0_demo", f"mlp {h}", True, cm.T0_MLP, {"hidden": h}, 0) for h in (8, 32)]
    out.append(("t1_shakespeare", "reads t+1", False, cm.NEXT, {}, 0))
    unmasked = (("no causal mask d32", {**GPT, "causal": False}),
                ("no causal mask 2 layers", {**GPT, "n_layer": 2, "causal": False}))
    out += [("t1_shakespeare", name, False, cm.GPT, cfg, 30) for name, cfg in unmasked]
    for offset in sorted(int(o) for o in rng.integers(1, 255, size=4)):
        out.append(("t1_shakespeare", f"reads ahead from position {offset}", False, cm.GPT, {**GPT, "leak_from": offset}, 10))
    for share in (0.0005, 0.01, 0.05, 0.125):
        out.append(("t1_shakespeare", f"reads t+1, noise at {share:.2%} of positions", False, cm.PROBE_AWARE,
                    {"tell": "noise", "share": share}, 0))
    for tell, what in (("stack", "the call stack"), ("batch", "the batch size"), ("part", "the inputs' folder")):
        out.append(("t1_shakespeare", f"reads t+1, hides by {what}", False, cm.PROBE_AWARE, {"tell": tell}, 0))
    out.append(("t1_shakespeare", "reads t+1, spots twins by train 8-grams", False, cm.PROBE_AWARE,
                {"tell": "twins", "train_grams": train_grams}, 0))
    for source, name in ((cm.COPY_BATCH, "copies horizons from its batch"), (cm.PEEK_SERIES, "peeks the evaluator's frame"),
                         (cm.REWRITE_EARLIER, "rewrites returned forecasts"), (cm.READ_INPUTS, "reads the inputs file"),
                         (cm.COMMIT_AHEAD, "pulls rows ahead through the stream")):
        out.append(("t6_etth1", name, False, source, {}, 20))
    return out


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="raw", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    args = parser.parse_args(argv)
    raw = {"t0_demo": None, "t1_shakespeare": args.raw / "tinyshakespeare", "t6_etth1": args.raw / "etth1"}
    for folder in raw.values():
        if folder is not None and not folder.is_dir():
            print(f"error: {folder} not found: pass --from DIR holding tinyshakespeare/ and etth1/", file=sys.stderr)
            return 2
    rng = np.random.default_rng(args.seed)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="onegc-causal-") as tmp:
        home = Path(tmp)
        data = {task: cm.prepare(task, home / "data" / task, folder) for task, folder in raw.items()}
        grams = cm.train_grams(np.load(data["t1_shakespeare"] / "train.npy", mmap_mode="r"))
        benches: dict[str, cm.Bench] = {}
        try:
            for task, name, honest, source, config, steps in cases(rng, grams):
                if task not in benches:
                    benches[task] = cm.Bench(task, data[task], home / "runs" / task)
                rows.append(one(benches[task], data[task], task, name, honest, source, config, steps, len(rows)))
                if not args.json:
                    r = rows[-1]
                    shown = "-" if r["value"] is None else f"{r['value']:.4f}"
                    print(f"{task:15} {'honest' if honest else 'VIOLATION':9} {name:44} {r['outcome']:10} official {shown} "
                          f"(whole {'-' if r['whole'] is None else format(r['whole'], '.4f')}) {r['s']} s", flush=True)
        finally:
            for bench in benches.values():
                bench.close()
    summary = summarise(rows)
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=1))
    else:
        for line in report(summary):
            print(line)
    return 0


def one(bench, data: Path, task: str, name: str, honest: bool, source: str, config: dict, steps: int, n: int) -> dict:
    model = cm.build(source, config)
    batches = {"t1_shakespeare": cm.t1_batches, "t6_etth1": cm.t6_batches}.get(task)
    if batches is not None and steps:
        cm.train(model, batches(data, seed=n), steps)
    started = time.perf_counter()
    score, outcome = bench.score(source, config, model)
    took = time.perf_counter() - started
    whole, _ = bench.score(source, config, model, probe=False)
    checks = {v.check: v.strength for v in score.verdicts}
    if task == "t6_etth1" and not honest:  # by construction: prevented when it scores its honest base exactly
        cfg = {k: v for k, v in config.items() if k == "hidden"}
        base = cm.build(cm.DLINEAR, cfg)
        base.load_state_dict(model.state_dict())
        honest_base, _ = bench.score(cm.DLINEAR, cfg, base)
        result = "prevented" if score.value is None or score.value == honest_base.value else "GAINED"
    elif checks.get("reads_ahead") == "disqualifies":
        result = "caught"
    elif not honest and score.value is not None and score.value > 5.9:  # log2(65): it read nothing
        result = "no gain"
    else:
        result = "look" if checks.get("reads_ahead") == "look" else "passed"
    return {"task": task, "checkpoint": name, "honest": honest, "outcome": result, "value": score.value,
            "whole": whole.value, "error": score.error if result == "passed" else None,
            "nondeterministic": "nondeterministic" in checks, "bit_exact": score.value == whole.value,
            "dropout_on": bool(config.get("dropout_on")), "p": outcome.p if outcome else None,
            "worst": outcome.worst if outcome else 0.0, "floor": outcome.floor if outcome else 0.0,
            "s": round(took, 1)}


def summarise(rows: list[dict]) -> dict:
    honest = [r for r in rows if r["honest"]]
    bad = [r for r in rows if not r["honest"]]
    deterministic = [r for r in honest if not r["dropout_on"]]
    return {
        "honest": len(honest), "falsely_flagged": sum(r["outcome"] in ("caught", "look") for r in honest),
        "honest_nondeterministic": sum(r["nondeterministic"] for r in honest),
        "honest_dropout_on": sum(r["dropout_on"] for r in honest),
        "violations": len(bad), "caught_or_prevented": sum(r["outcome"] in ("caught", "prevented", "no gain") for r in bad),
        "gained": [r["checkpoint"] for r in bad if r["outcome"] in ("passed", "look", "GAINED")],
        "bit_exact": sum(r["bit_exact"] for r in deterministic), "deterministic": len(deterministic),
        "noise_costs": {r["checkpoint"]: r["whole"] for r in bad if "noise at" in r["checkpoint"]},
        "score_s_median": sorted(r["s"] for r in rows)[len(rows) // 2] if rows else None,
    }


def report(s: dict) -> list[str]:
    honest, bad = max(1, s["honest"]), max(1, s["violations"])
    return [
        "",
        f"caught or prevented: {s['caught_or_prevented']}/{s['violations']} violations "
        f"({100 * s['caught_or_prevented'] / bad:.1f} %; target >= 95 %); got through: {s['gained'] or 'none'}",
        f"falsely flagged: {s['falsely_flagged']}/{s['honest']} honest checkpoints ({100 * s['falsely_flagged'] / honest:.1f} %;"
        f" target <= 1 %); nondeterministic: {s['honest_nondeterministic']} (dropout left on: {s['honest_dropout_on']})",
        f"official value bit for bit the whole split's: {s['bit_exact']}/{s['deterministic']} deterministic honest checkpoints",
        "what the noise costs a reader (its bpb were it not caught; honest tiny GPTs ~3-4, uniform 6.02): "
        + ", ".join(f"{k.split('noise at ')[1]}: {'-' if v is None else format(v, '.3f')}" for k, v in s["noise_costs"].items()),
        f"median score time {s['score_s_median']} s per checkpoint (a loaded 2-core CPU)",
    ]


if __name__ == "__main__":
    sys.exit(main())
