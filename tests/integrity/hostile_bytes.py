"""A command agent that sends the runner bytes and types it does not expect (../shared/INTEGRITY.md
R1, issue 38): ``python hostile_bytes.py ATTACK``.

Each run saves an honest checkpoint (``first``), makes its attack, then saves another honest one
(``after``): the runner must have scored ``first`` before the attack, must survive it, and must
score ``after`` and end the session in order. The attacks:

- ``bad_name``: a valid checkpoint copied to a file whose name is not valid UTF-8;
- ``bad_argv``: a training script launched through ``python`` with an argument that is not UTF-8;
- ``int_script``: a checkpoint whose ``script`` field is an integer;
- ``surrogate_error``: a run script whose ``build_model`` raises, in the scorer's child, an
  exception whose text holds a lone surrogate;
- ``long_line``: one stdout line of 12 MiB, not valid UTF-8 (issue 38 part 2).
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HONEST = """
import sys
import prepare
from train import build_model
config = {"hidden": 8}
prepare.save_checkpoint(build_model(config), config, NAME)
"""
# build_model raises where the scorer imports the script; the agent's own run saves the checkpoint
SURROGATE = """
import prepare, train
def build_model(config):
    if __name__ != "__main__":
        raise RuntimeError("model broke: \\ud800 \\udcff end")
    return train.build_model(config)
if __name__ == "__main__":
    config = {"hidden": 8}
    prepare.save_checkpoint(build_model(config), config, "surrogate")
"""
INT_SCRIPT = """
import torch, prepare
from train import build_model
config = {"hidden": 8}
path = prepare.save_checkpoint(build_model(config), config, "tmp")
data = torch.load(path, weights_only=True)
data["script"] = 12345
torch.save(data, path.with_name(".int.tmp"))
path.unlink()
path.with_name(".int.tmp").rename(path.with_name("int_script.pt"))
"""


def run(name: str, source: str, *args: bytes) -> None:
    Path(f"run_{name}.py").write_text(source.replace("NAME", repr(name)))
    # through PATH: the runner's launch shim sees every argument as the agent typed it
    out = subprocess.run([b"python", f"run_{name}.py".encode(), *args], capture_output=True, timeout=120)
    print(f"$ python run_{name}.py -> exit {out.returncode}", out.stderr[-300:], flush=True)


def attack(which: str) -> None:
    if which == "bad_name":
        run("named", HONEST)
        ckpts = Path("checkpoints")
        shutil.copyfile(ckpts / "named.pt", os.fsencode(ckpts) + b"/bad\xff\xfename.pt")
        (ckpts / "named.pt").unlink()
    elif which == "bad_argv":
        run("argv", HONEST, b"--tag=\xff\xfe", b"\xed\xa0\x80")
    elif which == "int_script":
        run("int_script", INT_SCRIPT)
    elif which == "surrogate_error":
        run("surrogate", SURROGATE)
    elif which == "long_line":  # R2: one stdout line of 12 MiB, three times the runner's line bound
        sys.stdout.buffer.write(b'{"type": "text", "text": "' + b"\xff" * (12 << 20) + b'"}\n')
        sys.stdout.flush()


if __name__ == "__main__":
    run("first", HONEST)
    time.sleep(4)  # scored before the attack
    attack(sys.argv[1])
    time.sleep(4)
    run("after", HONEST)
    time.sleep(4)
