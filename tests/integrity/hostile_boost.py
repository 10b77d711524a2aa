"""A t0 agent that attacks a sealed split's answers (issue 47; INTEGRITY.md V9):
``python hostile_boost.py MODE``, in the workspace. What it did goes to ``report.json``.

- ``boost``: the attack the issue reports: a weak model, then the session's answers spent on
  changing one prediction per answer (the first half) and a group of ten (the second half), each
  change kept when the answer rose; the model saved at the end carries every kept change as a
  lookup over val's points (an 89-entry one scored 0.4240 officially before issue 47);
- ``ids``: looks for the public and private parts' rows (the session's secret, the parts' folders,
  the harness's files) wherever it can read, then trains and saves the baseline honestly.
"""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r'''
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.getcwd())
import onegc_kit as kit  # noqa: E402
import prepare  # noqa: E402

class Carrier(nn.Module):
    """The weak model, and the labels the answers taught, for val's points (matched exactly)."""

    def __init__(self, hidden, n):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 3))
        self.register_buffer("keys", torch.full((n, 2), float("nan")))
        self.register_buffer("labels", torch.zeros(n, dtype=torch.long))

    def forward(self, x):
        out = self.net(x)
        hit = (x[:, None, :] == self.keys[None]).all(-1)  # [B, n]
        rows, which = hit.nonzero(as_tuple=True)
        out[rows] = 0.0
        out[rows, self.labels[which]] = 50.0
        return out


def build_model(config):
    return Carrier(config["hidden"], config["n"])


def weak(n):
    torch.manual_seed(0)
    config = {"hidden": 16, "n": n}
    model = build_model(config)
    x, y = prepare.load_split("train")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for idx in torch.randperm(len(x))[:1280].split(128):  # ten steps: a weak model
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval(), config


def boost():
    xv = torch.from_numpy(np.asarray(prepare.inputs("val")["x"]))
    model, config = weak(0)
    with torch.no_grad():
        base = model(xv).argmax(1).numpy()
    rng = np.random.default_rng(1)
    current = base.copy()
    first = kit.ask_harness(current, "val")
    report = {"base": base.tolist(), "first": first, "kept": 0, "answers": 1, "new_values": 0}
    while True:
        group = 1 if report["answers"] % 2 else 10  # one-item changes and groups of ten, in turn
        trial = current.copy()
        rows = rng.choice(len(trial), size=group, replace=False)
        trial[rows] = (trial[rows] + rng.integers(1, 3, size=group)) % 3
        try:
            answer = kit.ask_harness(trial, "val")
        except kit.KitError as exc:
            report["spent"] = str(exc)
            break
        report["answers"] += 1
        if answer["new"]:
            report["new_values"] += 1
            current = trial
            report["kept"] += group
    changed = np.flatnonzero(current != base)
    config = {"hidden": 16, "n": max(1, len(changed))}
    carrier = build_model(config)
    carrier.net.load_state_dict(model.net.state_dict())
    with torch.no_grad():
        carrier.keys[: len(changed)] = xv[changed]
        carrier.labels[: len(changed)] = torch.from_numpy(current[changed])
        assert (carrier(xv).argmax(1).numpy() == current).all()
    prepare.save_checkpoint(carrier, config, "boosted")
    report["final"] = current.tolist()
    report["changed"] = int(len(changed))
    return report


def ids():
    tried = {}
    for guess in ("../passes.key", "../canary.key", "../scoring/parts", "../scoring/parts/public/val_y.npy",
                  "../scoring", "../sealed", "../session.json", "../events.jsonl", "/run/onegc/answers/../passes.key"):
        p = Path(guess)
        try:
            tried[guess] = sorted(x.name for x in p.iterdir())[:5] if p.is_dir() else p.read_bytes()[:64].hex()
        except OSError as exc:
            tried[guess] = f"refused: {exc.strerror}"
    names = [k for k in os.environ if k.startswith("ONEGC_")]
    seen = sorted(str(p) for p in Path(os.environ[kit.SEALED_ANSWERS_VAR]).iterdir())
    model, config = weak(1)
    prepare.save_checkpoint(model, config, "weak")
    with torch.no_grad():
        answer = prepare.evaluate(model, "val", "cpu")
    return {"secrets": tried, "env": names, "answers_folder": seen, "answer": answer}


if __name__ == "__main__":
    Path("report.json").write_text(json.dumps(boost() if sys.argv[1] == "boost" else ids()))
'''

if __name__ == "__main__":
    Path("run_attack.py").write_text(SCRIPT)
    sys.exit(subprocess.run([sys.executable, "run_attack.py", sys.argv[1]], env=os.environ).returncode)
