"""A command agent whose run scripts attack the scorer (INTEGRITY.md S1-S5): ``python
hostile_scoring.py ATTACK SESSION_DIR``. It writes ``run_<attack>.py`` — an ordinary t0 run
script whose top level (what the scorer executes when it imports the script for
``build_model``) carries the attack — runs it to save a checkpoint, then saves an honest one
(``run_honest.py``) that must be scored as if the attack had never happened."""

import subprocess
import sys
import time
from pathlib import Path

ATTACKS = {
    # S1: replace the evaluator and the kit's checks in the scorer
    "monkeypatch": """
import prepare, onegc_kit
prepare.evaluate = lambda *a, **k: {"value": 1.0, "n": 1}
prepare.judge = lambda *a, **k: {"value": 1.0, "n": 1}
onegc_kit.check_predictions = lambda pred, *a, **k: pred
onegc_kit.evaluate_split = lambda *a, **k: {"value": 1.0, "n": 1}
""",
    # S2: a fake result line from atexit, and JSON-looking lines at import
    "fake_lines": """
import atexit, json, sys
print(json.dumps({"ok": True, "value": 1.0, "eval_s": 0.1}), flush=True)
print(json.dumps({"ok": True, "value": 1.0}), file=sys.stderr, flush=True)
atexit.register(lambda: print(json.dumps({"ok": True, "value": 1.0}), flush=True))
""",
    # S3: leave state behind for the next checkpoint (the module, the files, the import system)
    "poison": """
import sys, prepare, builtins
prepare.predict = lambda model, inputs, device: __import__("numpy").zeros(len(inputs["x"]), dtype="int64")
builtins.POISON = True
open("/tmp/poison", "w").write("x")
sys.modules["train"] = None
""",
    # S4: a process that outlives the scorer and rewrites the record
    "daemon": """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    os.closerange(0, 3)  # a daemon: nothing holds the caller's pipes open
    if os.fork() == 0:
        session = SESSION
        for _ in range(600):
            for name, text in (("control.jsonl", '{"action": "pause", "id": "evil"}\\n'), ("result.json", '{"value": 1.0}')):
                try:
                    with open(session + "/" + name, "a") as f:
                        f.write(text)
                except OSError:
                    pass
            time.sleep(0.1)
        os._exit(0)
    os._exit(0)
time.sleep(0.5)
""",
    # S5: kill the scorer itself, so that the failure looks like the harness's
    "kill_scorer": """
import os, signal
if __name__ != "__main__":  # only where the scorer imports it
    for target in (os.getppid(), 1, -1, 0):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
""",
    # honest, but noisy: a print at the top of the script must not cost the checkpoint its score
    "print": """
print("starting run_print.py: lr 0.01, batch 128")
""",
}

HEAD = """
import prepare
from train import build_model
"""
MAIN = """
if __name__ == "__main__":
    import torch
    torch.manual_seed({seed})
    config = {{"hidden": 8}}
    prepare.save_checkpoint(build_model(config), config, {name!r})
"""


def write_run(name: str, attack: str, seed: int, session: str) -> str:
    script = f"run_{name}.py"
    Path(script).write_text(HEAD + attack.replace("SESSION", repr(session)) + MAIN.format(seed=seed, name=name))
    return script


if __name__ == "__main__":
    attack, session = sys.argv[1], sys.argv[2]
    alone = "--alone" in sys.argv[3:]  # no honest checkpoint after it: the attacking one is official
    for name, seed in ((attack, 1),) if alone else ((attack, 1), ("honest", 2)):
        script = write_run(name, ATTACKS.get(name, ""), seed, session)
        out = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120, start_new_session=True)
        print(f"$ python {script} -> exit {out.returncode}", out.stderr[-300:], flush=True)
        time.sleep(1.5)  # scored one after the other, as a real agent's checkpoints are
    time.sleep(6)
