"""The causality probes' power (INTEGRITY.md V3, V4; runner/integrity/causal.py): how many planted
read-ahead / read-across violations they catch, how many honest checkpoints they flag, and the noise.

    python benchmarks/causal_power.py [--from DIR] [--seed 0] [--json]

``--from``: the offline raw copies (``tinyshakespeare/input.txt``, ``etth1/ETTh1.csv``; default
``shared/data`` beside the repository). Every checkpoint is a real tiny CPU model, trained a few
steps on the task's train split (tests/integrity/causal_models.py), scored by a session's sealed
scorer as the official re-evaluation scores it (a fresh sandboxed child, the probe's children
beside it). Honest: T1 GPTs of several sizes, trained or not, dropout left on in evaluation; T6
DLinear and MLP heads, moving-average kernels, dropout left on; t0 MLPs (no probe applies: its
points are independent). Violations: T1 reading t+1 (no trained weight, two strengths), GPTs
without their causal mask (trained), read-ahead from a random position on; T6 copying the horizon
from the window 96 later in the batch (whole, or from a random horizon step on), from the
evaluator's frame, rewriting returned forecasts once a later batch shows their horizons, and
from the scorer's own inputs file. Targets: >= 95 % caught, <= 1 % of honest checkpoints flagged;
and every honest deterministic checkpoint's official value bit for bit as unprobed.

Prints one row per checkpoint, then the rates, the numerical floor and the measured noise.
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


def cases(rng) -> list[tuple[str, str, bool, str, dict, int]]:
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
    for name, cfg, steps in t1_honest:
        out.append(("t1_shakespeare", name, True, cm.GPT, cfg, steps))
    t6_honest: list[tuple[str, dict, int]] = [
        ("dlinear untrained", {}, 0), ("dlinear", {}, 30), ("dlinear kernel 13", {"kernel": 13}, 30),
        ("mlp 32", {"hidden": 32}, 30), ("mlp 64", {"hidden": 64}, 20),
        ("dlinear dropout 0.1 on", {"dropout": 0.1, "dropout_on": True}, 30),
        ("dlinear dropout 0.3 on", {"dropout": 0.3, "dropout_on": True}, 30),
        ("mlp 32 dropout 0.2 on", {"hidden": 32, "dropout": 0.2, "dropout_on": True}, 20),
        ("dlinear kernel 49", {"kernel": 49}, 30), ("dlinear dropout 0.2 off", {"dropout": 0.2}, 30),
    ]
    for name, cfg, steps in t6_honest:
        out.append(("t6_etth1", name, True, cm.DLINEAR, cfg, steps))
    for h in (8, 32, 64):
        out.append(("t0_demo", f"mlp {h}", True, cm.T0_MLP, {"hidden": h, "dropout": 0.3}, 0))
    out.append(("t1_shakespeare", "reads t+1", False, cm.NEXT, {}, 0))
    out.append(("t1_shakespeare", "reads t+1 (trained scale)", False, cm.NEXT, {}, 5))
    unmasked: list[tuple[str, dict]] = [("no causal mask d32", {**GPT, "causal": False}),
                                        ("no causal mask d16", {**GPT, "n_embd": 16, "causal": False}),
                                        ("no causal mask 2 layers", {**GPT, "n_layer": 2, "causal": False})]
    for name, cfg in unmasked:
        out.append(("t1_shakespeare", name, False, cm.GPT, cfg, 30))
    for offset in sorted(int(o) for o in rng.integers(1, 255, size=6)):
        out.append(("t1_shakespeare", f"reads ahead from position {offset}", False, cm.GPT, {**GPT, "leak_from": offset}, 10))
    out.append(("t6_etth1", "copies horizons from its batch", False, cm.COPY_BATCH, {}, 20))
    out.append(("t6_etth1", "copies horizons from its batch (mlp)", False, cm.COPY_BATCH, {"hidden": 32}, 20))
    for step in sorted(int(s) for s in rng.integers(1, 95, size=4)):
        out.append(("t6_etth1", f"copies horizon steps {step}-95 from its batch", False, cm.COPY_BATCH, {"from_step": step}, 20))
    out.append(("t6_etth1", "peeks the series in the evaluator's frame", False, cm.PEEK_SERIES, {}, 20))
    out.append(("t6_etth1", "rewrites returned forecasts (across batches)", False, cm.REWRITE_EARLIER, {}, 20))
    out.append(("t6_etth1", "reads the scorer's inputs file", False, cm.READ_INPUTS, {}, 20))
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
        benches: dict[str, cm.Bench] = {}
        try:
            for task, name, honest, source, config, steps in cases(rng):
                if task not in benches:
                    benches[task] = cm.Bench(task, data[task], home / "runs" / task)
                bench = benches[task]
                model = cm.build(source, config)
                batches = {"t1_shakespeare": cm.t1_batches, "t6_etth1": cm.t6_batches}.get(task)
                if batches is not None and steps:
                    cm.train(model, batches(data[task], seed=len(rows)), steps)
                started = time.perf_counter()
                score, outcome = bench.score(source, config, model)
                probe_s = time.perf_counter() - started
                plain, _ = bench.score(source, config, model, probe=False)
                flagged = bool(outcome and outcome.verdict)
                if task == "t6_etth1" and not honest:  # by construction: prevented when it scores its honest base
                    base = cm.build(cm.DLINEAR, {k: v for k, v in config.items() if k == "hidden"})
                    base.load_state_dict(model.state_dict())
                    honest_base, _ = bench.score(cm.DLINEAR, {k: v for k, v in config.items() if k == "hidden"}, base)
                    flagged = score.value is None or score.value == honest_base.value
                rows.append({
                    "task": task, "checkpoint": name, "honest": honest, "flagged": flagged,
                    "error": None if flagged else score.error, "value": score.value, "unprobed": plain.value,
                    "bit_exact": score.value == plain.value if honest else None,
                    "units": outcome.units if outcome else 0, "worst": outcome.worst if outcome else 0.0,
                    "floor": outcome.floor if outcome else 0.0, "noise": outcome.noise if outcome else None,
                    "s": round(probe_s, 1), "dropout_on": bool(config.get("dropout_on")),
                })
                if not args.json:
                    r = rows[-1]
                    verdict = ("FLAGGED" if flagged else "error: " + (r["error"] or "")[:60] if r["error"] else "passed")
                    print(f"{task:15} {'honest' if honest else 'VIOLATION':9} {name:46} {verdict:8} "
                          f"official {r['unprobed'] if r['unprobed'] is not None else float('nan'):.4f} "
                          f"worst {r['worst']:.3g} floor {r['floor']:.3g} "
                          f"noise {'-' if r['noise'] is None else format(r['noise'], '.3g')} {r['s']} s", flush=True)
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


def summarise(rows: list[dict]) -> dict:
    from runner.integrity.causal import NOISE_FACTOR

    probed = [r for r in rows if r["task"] != "t0_demo"]
    honest = [r for r in probed if r["honest"]]
    bad = [r for r in probed if not r["honest"]]
    deterministic = [r for r in honest if not r["dropout_on"]]
    noisy = [r for r in honest if r["noise"]]

    def threshold(r: dict) -> float:
        return NOISE_FACTOR * max(r["noise"] or 0.0, r["floor"]) if r["noise"] is not None else r["floor"]

    return {
        "honest": len(honest), "falsely_flagged": sum(r["flagged"] for r in honest),
        "honest_errors": sum(bool(r["error"]) for r in honest),
        "violations": len(bad), "caught": sum(r["flagged"] for r in bad),
        "t0_unchanged": sum(r["value"] == r["unprobed"] for r in rows if r["task"] == "t0_demo"),
        "t0": sum(r["task"] == "t0_demo" for r in rows),
        "bit_exact": sum(bool(r["bit_exact"]) for r in deterministic), "deterministic": len(deterministic),
        "deterministic_worst": max((r["worst"] for r in deterministic), default=0.0),
        "floor_min": min((r["floor"] for r in probed if r["floor"]), default=None),
        "dropout_worst_over_noise": max((r["worst"] / r["noise"] for r in noisy), default=None),
        "dropout_noise_max": max((r["noise"] for r in noisy), default=None),
        "noise_factor": NOISE_FACTOR,
        "violation_worst_over_threshold_min": min((r["worst"] / threshold(r) for r in bad if threshold(r)), default=None),
        "probe_s_median": sorted(r["s"] for r in probed)[len(probed) // 2] if probed else None,
    }


def report(s: dict) -> list[str]:
    honest, bad = max(1, s["honest"]), max(1, s["violations"])

    def g(x) -> str:
        return "-" if x is None else f"{x:.3g}"

    return [
        "",
        f"caught: {s['caught']}/{s['violations']} violations ({100 * s['caught'] / bad:.1f} %; target >= 95 %)",
        f"falsely flagged: {s['falsely_flagged']}/{s['honest']} honest checkpoints ({100 * s['falsely_flagged'] / honest:.1f} %;"
        f" target <= 1 %); honest checkpoints the probe failed to check: {s['honest_errors']}",
        f"official value bit for bit as unprobed: {s['bit_exact']}/{s['deterministic']} deterministic honest checkpoints;"
        f" t0 (no probe): {s['t0_unchanged']}/{s['t0']}",
        f"noise floor: deterministic honest predictions moved by at most {g(s['deterministic_worst'])} "
        f"(numerical floor >= {g(s['floor_min'])}); dropout left on: probe distance / run-to-run noise at most "
        f"{g(s['dropout_worst_over_noise'])} (flagged above {s['noise_factor']:g}), noise up to {g(s['dropout_noise_max'])}",
        f"violations moved at least {g(s['violation_worst_over_threshold_min'])} x their threshold; median probe time "
        f"{s['probe_s_median']} s per checkpoint (a loaded 2-core CPU)",
    ]


if __name__ == "__main__":
    sys.exit(main())
