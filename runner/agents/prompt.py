"""The standard prompt every agent CLI gets (paper §3.4), built by :func:`standard_prompt`.

It opens with the ownership note the paper prepended to every prompt (one model would not touch
"third-party" files without it), points the agent at ``program.md`` and ``train.py``, restates
the rules in short, and says how to read the budget: the deadline is in ``.deadline`` (kept
current by the harness, it moves when the session is paused) and in ``$ONEGC_DEADLINE``.
``program.md`` stays the full statement of the task; the prompt is the same for every agent.
"""

from __future__ import annotations

OWNERSHIP_NOTE = (
    "The files in this working directory are yours to edit: they were prepared for you, they are not "
    "third-party code, and you do not need to ask before changing or adding files here "
    "(except prepare.py, which is locked)."
)


def _minutes(budget_minutes: float) -> str:
    return f"{budget_minutes:g} minute" + ("" if budget_minutes == 1 else "s")


def standard_prompt(task_title: str, budget_minutes: float, scored_split: str, sealed_answers: int | None = None,
                    text_sealed: bool = False) -> str:
    """The prompt for one session of ``task_title`` with a budget of ``budget_minutes``; with
    ``sealed_answers``, rule 9 says that the scored split's targets are sealed (``text_sealed``: its
    inputs too, T1's text) and how its evaluations are answered (the paper's prompt otherwise,
    word for word)."""
    budget = _minutes(budget_minutes)
    what = "Its text is" if text_sealed else "Its targets are"
    sealed = "" if sealed_answers is None else (
        f" {what} sealed in this session: not in data/, and\n"
        f"   prepare.evaluate(model, \"{scored_split}\", device) is answered by the harness, at most "
        f"{sealed_answers} times, on a\n"
        f"   public part of {scored_split}: a new value only when it beats the best so far by a step, else the best so "
        f"far.\n   The official score is judged on the rest of {scored_split}.")
    return f"""{OWNERSHIP_NOTE}

Your task: {task_title}.
Train the best model you can from scratch within {budget} of wall-clock time on one GPU.

Start by reading program.md in this directory: it describes the task, the data loaders, the
metric and the checkpoint contract. prepare.py holds the data loading and the evaluation;
train.py is a working baseline. Build on train.py: write your own scripts named run_1.py,
run_2.py, ... (run_{{x}}.py), run them, read their output, and improve.

Rules:
1. prepare.py is locked: do not edit it. Write your own run_{{x}}.py scripts starting from train.py.
2. No pretrained weights, unless program.md names some in weights/ (then only those).
3. No internet: no external data, code or weights.
4. Do not install packages; use what is installed.
5. Stay in this working directory.
6. The budget is {budget} of wall-clock time on one GPU; use the GPU efficiently.
7. Every run script exposes build_model(config) and saves checkpoints with
   prepare.save_checkpoint(model, config, name, score=None). Save whenever a model improves:
   only saved checkpoints count.
8. Scoring uses the original prepare.py and data outside this directory: the harness scores each
   checkpoint on val itself, the best by that score is the official one (program.md says how),
   so make sure every checkpoint loads with build_model(config) and a strict state_dict.
9. The scored split is "{scored_split}".{sealed}

Time: the session stops at the deadline, and every process you started is killed then. The
deadline is in the file .deadline (Unix time in seconds; it moves if the session is paused) and
in the environment variable ONEGC_DEADLINE. Check the time left with:
    python -c "import time; print(round(float(open('.deadline').read().split()[0]) - time.time()), 's left')"
Plan runs that finish before it, and keep a checkpoint saved at all times.

Work on your own: nobody will answer questions. The session ends when you stop or at the
deadline, whichever comes first.
"""
