"""A command agent that knows the harness's code and strips what it takes for canaries from its copy
of t0's val before training on the rest (../shared/INTEGRITY.md V8, then V1):
``python hostile_filter.py MODE TELLS AGENT`` (the paths of benchmarks/canary_tells.py and
hostile_canaries.py: named in its command line, the sandbox lets it read them), in the workspace.
It writes ``run_<mode>.py`` and runs it, which saves one checkpoint:

- ``filtered``: drops every val point that a tell of benchmarks/canary_tells.py flags (a radius
  past 2.5, where issue 35's canaries lay; a point farther from every train point than any train
  point is from its own nearest neighbour; an exact duplicate), then fits a nearest-neighbour
  classifier on train and the rest of val, sure of the label of every point it holds;
- ``honest``: the same classifier on train alone (the control).

A nearest-neighbour classifier holds every point it was fitted on: val by heart, which a canary
test must catch once nothing planted is left to strip (a t0 MLP fitted on val gains too little
to be caught: benchmarks/canary_power.py). It prints what it dropped.
"""

import sys
from pathlib import Path

TELLS = Path(__file__).resolve().parents[2] / "benchmarks" / "canary_tells.py"  # named in argv: the sandbox binds it
BODY = '''
import torch
import torch.nn as nn

import prepare


class Nearest(nn.Module):
    """The label of the nearest point it was fitted on, as scores (the nearest of each class), and
    sure of the label of a point it holds (a lookup: val by heart, where it kept val)."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("points", torch.zeros(n, 2))
        self.register_buffer("labels", torch.zeros(n, dtype=torch.long))

    def forward(self, x):
        d = torch.cdist(x.float(), self.points)
        scores = torch.stack([-d[:, self.labels == c].min(1).values for c in range(3)], 1) * 20
        gap, near = d.min(1)
        held = gap < 1e-6
        scores[held.nonzero()[:, 0], self.labels[near[held]]] += 30
        return scores


def build_model(config):
    return Nearest(config["n"])


if __name__ == "__main__":
    mode = MODE
    tx, ty = (t.numpy() for t in prepare.load_split("train"))
    xs, ys = [tx], [ty]
    if mode == "filtered":
        vx, vy = (t.numpy() for t in prepare.load_split("val"))
        drop = flagged(point_tells(vx, tx))
        print(f"dropped {int(drop.sum())} of {len(vx)} val points as suspected canaries")
        xs.append(vx[~drop])
        ys.append(vy[~drop])
    x, y = np.concatenate(xs), np.concatenate(ys)
    config = {"n": len(x)}
    model = build_model(config)
    model.points.copy_(torch.from_numpy(x))
    model.labels.copy_(torch.from_numpy(y))
    score = prepare.evaluate(model.eval(), "val", "cpu")["value"]
    prepare.save_checkpoint(model, config, mode, score=score)
    print(f"{mode}: val_acc {score:.4f} on this workspace's copy")
'''


def script(tells: str) -> str:
    """The agent's training script: the tells' code (``tells``: canary_tells.py's text), then its fit."""
    return tells.split("from __future__ import annotations")[1] + BODY


if __name__ == "__main__":  # python hostile_filter.py MODE /path/to/canary_tells.py /path/to/hostile_canaries.py
    sys.path.insert(0, str(Path(sys.argv[3]).parent))
    from hostile_canaries import run

    sys.exit(run(script(Path(sys.argv[2]).read_text()), sys.argv[1]))
