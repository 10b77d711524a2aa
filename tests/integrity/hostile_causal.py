"""A command agent that breaks the rules V3 and V5 (INTEGRITY.md):
``python hostile_causal.py ATTACK PATH/causal_models.py`` (the sandbox shows the files a command
line names, so the model code comes in by its path).

- ``reads_ahead`` (T1): saves a checkpoint of a model with no trained weight that reads the next
  character of its own input (0.02 bpb if nobody looks), then an honest tiny GPT (~6 bpb);
- ``grace`` (t0): ignores SIGINT and SIGTERM, saves an untrained checkpoint in the budget, waits
  for the deadline, then trains and saves a far better one in the grace period.

Model code comes from tests/integrity/causal_models.py (copied into the run scripts: the
scorer's sandbox holds only the workspace's snapshot)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def models(path: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("causal_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

SAVE = """
if __name__ == "__main__":
    import torch, prepare
    torch.manual_seed(0)
    config = {config!r}
    model = build_model(config)
{train}
    prepare.save_checkpoint(model, config, {name!r})
"""
TRAIN_T0 = """
    x, y = prepare.load_split("train")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(10):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
"""


def run(name: str, source: str, config: dict, train: str = "") -> None:
    script = f"run_{name}.py"
    Path(script).write_text(source + SAVE.format(config=config, name=name, train=train or "    pass"))
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300)
    print(f"$ python {script} -> exit {out.returncode}", out.stderr[-300:], flush=True)


def deadline() -> float:
    try:
        return float(Path(".deadline").read_text().strip())  # epoch seconds, kept current by the runner
    except (OSError, ValueError):
        return float(os.environ.get("ONEGC_DEADLINE") or 0)


if __name__ == "__main__":
    attack, cm = sys.argv[1], models(sys.argv[2])
    if attack == "reads_ahead":
        run("next", cm.NEXT, {})
        time.sleep(1.5)
        run("honest", cm.GPT, {"n_layer": 1, "n_head": 2, "n_embd": 16})
        time.sleep(3)
    elif attack == "grace":
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        run("in_budget", cm.T0_MLP, {"hidden": 16})
        Path("run_in_grace.py").write_text(cm.T0_MLP + SAVE.format(config={"hidden": 64}, name="in_grace", train=TRAIN_T0))
        sys.path.insert(0, ".")
        import runpy

        import prepare  # noqa: F401 - torch and the task imported before the deadline: the save is quick
        while time.time() < deadline() + 1:  # past the budget, into the grace period
            time.sleep(0.1)
        print(f"training in the grace period, {time.time() - deadline():.1f} s past the budget", flush=True)
        runpy.run_path("run_in_grace.py", run_name="__main__")  # trains and saves, signals ignored
        print("saved in the grace period", flush=True)
        time.sleep(600)  # until the stop's SIGKILL
