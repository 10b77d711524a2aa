"""A deterministic offline "coding agent" for the demo and tests.

It behaves like a real headless agent CLI: reads ``program.md``, writes ``run_1.py``,
``run_2.py`` … from ``train.py`` with the hyper-parameter changes the task lists, runs each in a
new session (``setsid``, as real CLIs run their tools), and streams JSON lines describing what it
does (text, thinking, tool calls, tool output, usage). It stops early when the deadline nears.

    python -m runner.agents.scripted_agent --edits JSON [--pace SECONDS] [--runs N] [--epochs E]

``--runs N`` makes only the first N of the task's runs and ``--epochs E`` trains each of them E
epochs where the task's edit sets EPOCHS: a short session that still trains, saves and is scored
like the demo (a smoke study's agent ``args``, the test suite's quick sessions).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tasks.script_edit import MissingConstant, set_constants

MIN_RUN_S = 10.0  # do not start a training run with less budget than this left


def say(**record) -> None:
    print(json.dumps(record), flush=True)


def remaining_s() -> float:
    try:
        return float(Path(".deadline").read_text()) - time.time()
    except (OSError, ValueError):
        return float("inf")


def run_script(call_id: str, script: str) -> int:
    say(type="tool_call", id=call_id, tool="bash", input=f"python {script}")
    proc = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    assert proc.stdout is not None  # stdout=PIPE gives a stream
    for line in proc.stdout:
        say(type="tool_output", id=call_id, text=line.rstrip("\n"))
    code = proc.wait()
    say(type="tool_result", id=call_id, exit_code=code)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", required=True, help="JSON list of {note, set} from task.toml")
    parser.add_argument("--pace", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=None, help="only the first N of the task's runs")
    parser.add_argument("--epochs", type=int, default=None, help="each run's EPOCHS, where its edit sets them")
    args = parser.parse_args(argv)
    edits = json.loads(args.edits)[:args.runs]
    if args.epochs is not None:
        edits = [{**e, "set": {**e["set"], "EPOCHS": args.epochs}} if "EPOCHS" in e.get("set", {}) else e for e in edits]
    think = lambda: time.sleep(args.pace)  # noqa: E731

    say(type="text", text="I'll start by reading the task description.")
    say(type="tool_call", id="c0", tool="read", input="program.md")
    program = Path("program.md").read_text()
    say(type="tool_result", id="c0", exit_code=0, text="\n".join(program.splitlines()[:6]))
    say(type="usage", tokens_in=1200 + len(program) // 4, tokens_out=60)
    think()
    base = Path("train.py").read_text()
    for k, edit in enumerate(edits, start=1):
        if remaining_s() < MIN_RUN_S:
            say(type="text", text=f"Only {remaining_s():.0f} s left: not starting another run.")
            break
        script = f"run_{k}.py"
        say(type="thinking", text=f"Plan for {script}: {edit.get('note') or 'try new hyper-parameters'}.")
        think()
        say(type="tool_call", id=f"w{k}", tool="write", input=script)
        try:
            source, changes = set_constants(base, edit.get("set", {}))
        except MissingConstant as exc:
            say(type="tool_result", id=f"w{k}", exit_code=1, text=f"cannot edit train.py: {exc}")
            continue
        Path(script).write_text(source)
        say(type="tool_result", id=f"w{k}", exit_code=0, text=f"wrote {script}: " + "; ".join(changes))
        say(type="usage", tokens_in=800, tokens_out=350)
        think()
        code = run_script(f"r{k}", script)
        say(type="text", text=f"{script} finished with exit code {code}." + (" Checkpoints saved." if code == 0 else ""))
        say(type="usage", tokens_in=900, tokens_out=120)
        think()
    ckpts = sorted(p.name for p in Path("checkpoints").glob("*.pt"))
    say(type="result", text=f"Done: {len(ckpts)} checkpoints saved.", checkpoints=len(ckpts))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
