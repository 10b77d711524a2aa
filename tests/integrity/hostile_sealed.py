"""A t0 agent in a session whose scored split is sealed (``--scored-split sealed``, issue 35 part 6):
``python hostile_sealed.py``, in the workspace. It looks for val's targets, tries to forge the
harness's answers, sends it hostile requests (a link, a FIFO, an oversized file, an object array,
the wrong shape, bytes that are no ``.npy``, a flood of other names), then trains the baseline
model honestly, evaluates it through ``prepare.evaluate`` (the harness answers), saves it, and
asks again until the session's answers are spent. What it saw goes to ``report.json``.
"""

import subprocess
import sys
from pathlib import Path

SCRIPT = r'''
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.getcwd())
import onegc_kit as kit  # noqa: E402
import prepare  # noqa: E402

HOSTILE = ("link", "fifo", "big", "objects", "shape", "garbage")


def build_model(config):
    import torch.nn as nn

    h = config["hidden"]
    return nn.Sequential(nn.Linear(2, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 3))


def wait_answer(answers: Path, name: str) -> dict:
    """The harness's answer, once it is there (the session's budget bounds the wait)."""
    while True:
        try:
            return json.loads((answers / f"{name}.json").read_text())
        except (OSError, ValueError):
            time.sleep(0.05)


def main() -> None:
    ws = Path.cwd()
    report: dict = {"val_y_in_workspace": [str(p) for p in ws.rglob("*_y.npy") if p.name.startswith("val")]}
    try:
        prepare.load_split("val")
        report["load_val"] = "loaded"
    except kit.KitError as exc:
        report["load_val"] = str(exc)
    answers, requests = Path(os.environ[kit.SEALED_ANSWERS_VAR]), Path(os.environ[kit.SEALED_REQUESTS_VAR])
    try:
        (answers / "forged.json").write_text(json.dumps({"value": 1.0}))
        report["forged"] = True
    except OSError as exc:
        report["forged"] = exc.strerror
    requests.mkdir(exist_ok=True)
    for i in range(3000):  # names the harness must skip, cheaply
        (requests / f"junk{i}.txt").write_bytes(b"x")
    os.symlink("/etc/passwd", requests / "link.npy")
    os.mkfifo(requests / "fifo.npy")
    (requests / "big.npy").write_bytes(b"\0" * (8 << 20))
    np.save(requests / "objects.npy", np.array([{"a": 1}] * 1500, dtype=object), allow_pickle=True)
    np.save(requests / "shape.npy", np.zeros(7, dtype=np.int64))
    (requests / "garbage.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    report["hostile"] = {name: wait_answer(answers, name) for name in HOSTILE}

    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    config = {"hidden": 64}
    model = build_model(config)
    x, y = prepare.load_split("train")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(4):
        for idx in torch.randperm(len(x)).split(128):
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        first = prepare.evaluate(model, "val", "cpu")
    report["evaluated"] = first
    prepare.save_checkpoint(model, config, "honest", score=first["value"])
    asked, refused = 1, None
    while refused is None and asked < 1000:
        try:
            with torch.no_grad():
                prepare.evaluate(model, "val", "cpu")
            asked += 1
        except kit.KitError as exc:
            refused = str(exc)
    report["answered_to_kit"], report["spent"] = asked, refused
    Path("report.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    Path("run_sealed.py").write_text(SCRIPT)
    sys.exit(subprocess.run([sys.executable, "run_sealed.py"]).returncode)
