"""A command agent that floods the official phase on T6 (issue 46 part 6, INTEGRITY.md R2):
``python hostile_flood.py ATTACK PATH/causal_models.py`` (the sandbox shows the files a command
line names, so the model code comes in by its path).

- ``copies``: trains ``run_best`` (DLinear, 40 steps) and saves it; then saves one worse
  checkpoint (2 steps) whose model sleeps 3 s on its first call, and copies its file 100 times,
  byte for byte, under newer names. Each copy claims a far better score than run_best's own.
- ``distinct``: ``run_best`` as above, then 12 worse checkpoints saved one after the other (each its own bytes),
  each claiming the best score, whose model hangs on its first call (past the task's evaluation
  timeout): only the official phase's time bound ends their evaluations.
- ``every_step``: an honest agent that saves every step of one training run (24 checkpoints, a
  learning rate that overshoots from step 14 on, so the best is in the middle), each with its own
  val figure.

Each writes ``flood.jsonl``: a line per checkpoint saved, with the val figure it measured.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

TRAIN = """
import prepare


def val_mse(model):  # the agent's own val figure, batched (the task's evaluate forecasts a window at a time: slow)
    import torch
    x, y = prepare.windows("val")
    with torch.no_grad():
        out = torch.cat([model(x[i:i + 512].contiguous()) for i in range(0, len(x), 512)])
    return float(((out.double() - y.double()) ** 2).mean())


def saved(record):  # one line per checkpoint, written as it is saved: a session cut short keeps its record
    with open("flood.jsonl", "a") as f:
        f.write(json.dumps(record) + "\\n")


if __name__ == "__main__":
    import torch
    torch.manual_seed(0)
    config = {{"kernel": 25}}
    model = build_model(config)
    x, y = prepare.windows("train")
    opt = torch.optim.Adam(model.parameters(), lr={lr})
    g = torch.Generator().manual_seed(0)
    for step in range({steps}):
        idx = torch.randint(0, len(x), (64,), generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[idx].contiguous()), y[idx]).backward()
        opt.step()
        if {every_step}:
            if step == SWITCH:
                for group in opt.param_groups:
                    group["lr"] = 0.5  # overshoots: the later steps are worse
            val = val_mse(model)
            prepare.save_checkpoint(model, config, f"step{{step:03d}}", score=val)
            saved({{"name": f"step{{step:03d}}", "val": val}})
    if not {every_step}:
        val = val_mse(model)
        for name in [f"{{NAME}}{{i:02d}}" for i in range(COPIES)] if COPIES else [NAME]:
            prepare.save_checkpoint(model, config, name, score=CLAIM if CLAIM is not None else val)
            saved({{"name": name, "val": val}})
"""

SLOW = """
import time

STALLS = __name__ != "__main__"  # in the scorer, which imports this script; never in the agent's own run


class Slow(DLinear):
    \"""DLinear that stalls on its first call in each scorer child (every evaluation is a fresh one).\"""

    def forward(self, x):
        if STALLS and not getattr(self, "_woke", False):
            self._woke = True
            time.sleep(SLEEP_S)
        return self.forecast(x)


def build_model(config):
    return Slow(**config)
"""


def models(path: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("causal_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(script: str, source: str, name: str = "", claim: float | None = None, steps: int = 40, lr: float = 0.005,
        every_step: bool = False, copies: int = 0) -> None:
    """Write and run one training script; ``copies``: saves of the trained model under NAME00, NAME01, ...
    (each its own bytes: the kit stamps every save), else one under NAME."""
    body = (source + "\nimport json\nNAME = " + repr(name) + "\nCLAIM = " + repr(claim)
            + "\nCOPIES = " + repr(copies) + "\nSWITCH = 14\n")
    Path(script).write_text(body + TRAIN.format(steps=steps, lr=lr, every_step=every_step))
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=600)
    print(f"$ python {script} -> exit {out.returncode}", out.stderr[-500:], flush=True)


def copy_in(source: Path, name: str) -> None:
    """A byte-for-byte copy into checkpoints/, renamed in whole (as save_checkpoint does)."""
    tmp = source.parent / f".{name}.tmp"
    shutil.copyfile(source, tmp)
    os.replace(tmp, source.parent / f"{name}.pt")


def copy_saved(source: str, copies: int) -> None:
    record = [json.loads(line) for line in Path("flood.jsonl").read_text().splitlines() if line.strip()]
    val = next(r["val"] for r in record if r["name"] == source)
    with open("flood.jsonl", "a") as f:
        for i in range(copies):
            copy_in(Path(f"checkpoints/{source}.pt"), f"copy{i:03d}")
            f.write(json.dumps({"name": f"copy{i:03d}", "val": val}) + "\n")


if __name__ == "__main__":
    attack, cm = sys.argv[1], models(sys.argv[2])
    if attack in ("copies", "distinct"):
        run("run_best.py", cm.DLINEAR, "run_best", steps=40)
        time.sleep(2)  # scored live meanwhile, as a real agent's first checkpoint is
        slow = cm.DLINEAR + SLOW.replace("SLEEP_S", "3" if attack == "copies" else "3600")
        if attack == "copies":
            run("run_slow.py", slow, "slow", claim=0.01, steps=2)
            copy_saved("slow", 100)
        else:
            run("run_hang.py", slow, "hang", claim=0.01, steps=2, copies=12)
    elif attack == "every_step":
        run("run_steps.py", cm.DLINEAR, steps=24, lr=0.002, every_step=True)
    time.sleep(3)
