"""A command agent whose run scripts attack the scorer (../shared/INTEGRITY.md S1-S5): ``python
hostile_scoring.py ATTACK SESSION_DIR``. It writes ``run_<attack>.py`` — an ordinary t0 run
script whose top level (what the scorer executes when it imports the script for
``build_model``) carries the attack — runs it to save a checkpoint, then saves an honest one
(``run_honest.py``) that must be scored as if the attack had never happened."""

import runpy
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
    # issue 28: the checkpoint's code switches the child's flag recorder off, then replaces the
    # judge and the evaluator (harmless: the runner judges; caught: the runner reads the code)
    "silenced": """
import gc, prepare
if __name__ != "__main__":
    for obj in gc.get_objects():
        if type(obj).__name__ == "Watch" and hasattr(obj, "armed"):
            obj.armed = False
            obj.flags.clear()
            obj.note = lambda flag: None  # what the child would note after the import, too
prepare.judge = lambda *a, **k: {"value": 1.0, "n": 1}
prepare.evaluate = lambda *a, **k: {"value": 1.0, "n": 1}
""",
    # honest, but noisy: a print at the top of the script must not cost the checkpoint its score
    "print": """
print("starting run_print.py: lr 0.01, batch 128")
""",
}

FAKE = "lambda *a, **k: {'value': 1.0, 'n': 1}"
# issue 46 part 5: spellings of `prepare.judge = f` that an agent who knows the code scan uses. The
# first five escaped the scan of main before it (issue 46); the scan now reads them, and the rest
# escape it still. Each replacement stands when the child answers: the zygote sees every one.
SPELLINGS = {
    "alias": f"import prepare\nj = prepare\nj.judge = {FAKE}\n",
    "from_import": f"from importlib import import_module as load\np = load('prepare')\np.judge = {FAKE}\n",
    "setattr_joined": f"import prepare\nsetattr(prepare, 'ju' + 'dge', {FAKE})\n",
    "parameter": f"import prepare\ndef patch(m):\n    m.judge = {FAKE}\npatch(prepare)\n",
    "sys_modules_get": f"import sys\nsys.modules.get('prepare').judge = {FAKE}\n",
    "vars_update": f"import prepare\nvars(prepare).update(judge={FAKE})\n",
    "code_object": f"import prepare\nprepare.judge.__code__ = ({FAKE}).__code__\n",
    "module_class": ("import prepare, types\nclass M(types.ModuleType):\n    def __getattribute__(self, name):\n"
                     f"        return ({FAKE}) if name == 'judge' else super().__getattribute__(name)\n"
                     "prepare.__class__ = M\n"),
    # out of the scan's reach: code run from a string, a module found through gc, an attribute of a class
    "exec_string": f'exec("import prepare; prepare.judge = {FAKE}")\n',
    "gc_found": ("import gc, types\nm = [o for o in gc.get_objects() if isinstance(o, types.ModuleType) and "
                 f"getattr(o, '__name__', '') == 'prepare'][0]\nm.judge = {FAKE}\n"),
    "class_attribute": f"import prepare\nclass H:\n    m = prepare\nH.m.judge = {FAKE}\n",
    "frame_globals": f"import sys\nsys._getframe().f_globals['prepare'].judge = {FAKE}\n",
}
# where behaviour cannot see, and the text can: a replacement undone before the child answers (the
# model's first call puts the pristine judge back), and one made only in the agent's own run
BLIND = {
    "restored": ("import prepare\n_pristine = prepare.judge\n"
                 f"prepare.judge = {FAKE}\n"
                 "import torch.nn as _nn\n_fwd = _nn.Module.__call__\n"
                 "def _call(self, *a, **k):\n    prepare.judge = _pristine\n    return _fwd(self, *a, **k)\n"
                 "_nn.Module.__call__ = _call\n"),
    "main_only": f"import prepare\nif __name__ == '__main__':\n    prepare.judge = {FAKE}\n",
}
ATTACKS.update(SPELLINGS)
ATTACKS.update(BLIND)

# issue 28: the checkpoint's code writes its own answer on the scorer child's answer pipe (found
# through the interpreter's frames) and leaves, so the child's real answer never comes
FORGE = """
import json, os, sys, time
def npy(descr, shape, data=b""):
    h = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    h += b" " * (63 - (len(h) + 10) % 64) + b"\\n"
    return b"\\x93NUMPY\\x01\\x00" + len(h).to_bytes(2, "little") + h + data
def each(splits, blob, extra=()):
    names = list(splits) + list(extra)
    parts = [{"split": s, "bytes": len(blob)} for s in names]
    return {"ok": True, "parts": parts, "bytes": len(blob) * len(names)}, blob * len(names)
def forge(make):
    f = sys._getframe()
    while f is not None and "result_fd" not in f.f_locals:
        f = f.f_back
    if f is None:
        return  # the agent's own run, not the scorer
    fd, req, inputs = f.f_locals["result_fd"], f.f_locals["req"], f.f_locals["inputs"]
    header, payload = make(req["splits"], len(inputs[req["splits"][0]]["x"]))
    os.write(fd, (json.dumps(header).encode() + b"\\n" if header is not None else b"") + payload)
    os._exit(0)
"""
FORGED = {
    "empty_part": "lambda s, n: ({'ok': True, 'parts': [{'split': x, 'bytes': 0} for x in s], 'bytes': 0}, b'')",
    "huge_header": "lambda s, n: each(s, npy('<f8', (2**43,)))",
    "no_split": "lambda s, n: ({'ok': True, 'parts': [{'bytes': 0}], 'bytes': 0}, b'')",
    "text_size": "lambda s, n: ({'ok': True, 'parts': [{'split': x, 'bytes': '0'} for x in s], 'bytes': 0}, b'')",
    "parts_not_list": "lambda s, n: ({'ok': True, 'parts': 'all', 'bytes': 0}, b'')",
    "object_dtype": "lambda s, n: each(s, npy('|O', (n,), bytes(8 * n)))",
    "structured_dtype": "lambda s, n: each(s, npy([('a', '<i8')], (n,), bytes(8 * n)))",
    "nan": "lambda s, n: each(s, npy('<f8', (n,), b'\\x00\\x00\\x00\\x00\\x00\\x00\\xf8\\x7f' * n))",
    "forged_zeros": "lambda s, n: each(s, npy('<i8', (n,), bytes(8 * n)))",  # an honest-looking all-zero answer
    "duplicate_part": "lambda s, n: each(s + s, npy('<i8', (n,), bytes(8 * n)))",
    "extra_part": "lambda s, n: each(s, npy('<i8', (n,), bytes(8 * n)), ['train'])",
    "second_answer": "lambda s, n: (lambda h, p: (h, p + json.dumps(h).encode() + b'\\n' + p))"
                     "(*each(s, npy('<i8', (n,), bytes(8 * n))))",
    "close_pipe": "lambda s, n: (None, b'')",
    # issue 38: an answer far larger than the split's predictions can be (40 MB for t0's 22 kB)
    "flood": "lambda s, n: each(s, npy('<i8', (n * 4096,), bytes(8 * n * 4096)))",
    "hang": "lambda s, n: (time.sleep(3600), b'')",
}
for _name, _make in FORGED.items():
    ATTACKS[_name] = 'if __name__ != "__main__":\n' + "\n".join("    " + line for line in FORGE.strip().splitlines()) \
        + f"\n    forge({_make})\n"

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
    attacks, session = sys.argv[1].split(","), sys.argv[2]  # several: one checkpoint each, in order
    alone = "--alone" in sys.argv[3:]  # no honest checkpoint after it: the attacking one is official
    runs = [(name, k) for k, name in enumerate(attacks, 1)] + ([] if alone else [("honest", len(attacks) + 1)])
    for name, seed in runs:
        script = write_run(name, ATTACKS.get(name, ""), seed, session)
        if len(attacks) > 1:  # the forged answers act in the scorer only: one process saves them all, fast
            sys.path.insert(0, ".")
            runpy.run_path(script, run_name="__main__")
            print(f"ran {script}", flush=True)
            time.sleep(0.5)
            continue
        # the session's folder on the command line names this test's processes (another suite may run the same test)
        out = subprocess.run([sys.executable, script, session], capture_output=True, text=True, timeout=120,
                             start_new_session=True)
        print(f"$ python {script} -> exit {out.returncode}", out.stderr[-300:], flush=True)
        time.sleep(1.5)  # scored one after the other, as a real agent's checkpoints are
    time.sleep(6)
