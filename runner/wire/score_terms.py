"""What a score is called, in every view: its role, its split, then what it measures.

Every number a person reads names the split it was measured on and the part it plays:

- ``live``: the sealed scorer's score of a checkpoint on the **val** split, while the session
  runs. It ranks the checkpoints (the paper's selection); it is never the result.
- ``official``: the session's result (paper step 5): the val-best checkpoint re-evaluated by the
  pristine evaluator on the task's **scored split** (val for T1–T3 and T7, test for T4–T6).
- ``unofficial``: a scored-split score of a checkpoint that was not selected (the best of each
  5-minute window, re-evaluated for the trajectory). It tells how selection fared; it is never
  the result.

"Best" means one thing everywhere: the best **live val** score so far (what selection ranks by),
always written "best live val …". The result is written "official …", never "best".
docs/numbers.md says the same for readers.
"""

from __future__ import annotations

from typing import Literal

Role = Literal["live", "official", "unofficial"]
SPLITS = ("val", "test")


def measure(metric_label: str) -> str:
    """What a task's metric measures, without the split its label names: "test MSE" → "MSE"."""
    first, _, rest = metric_label.partition(" ")
    return rest if first in SPLITS and rest else metric_label


def score_name(metric_label: str, split: str, role: Role) -> str:
    """The name of a score: "live val MSE", "official test MSE", "unofficial test MSE"."""
    return f"{role} {split} {measure(metric_label)}"


def best_name(metric_label: str) -> str:
    """The one meaning of "best": the best live val score so far."""
    return f"best {score_name(metric_label, 'val', 'live')}"


# A score's role and split in a column of each width (the checkpoints pane): the words where there
# is room, else marks that keep both: the split's name (or letter), ★ on the official one, the
# unofficial one in parentheses (it never counts); a live one is the bare split.
ROLE_WIDTHS = (15, 6, 3)  # "unofficial test", "(test)", "(t)"


def role_mark(split: str, role: Role, width: int) -> str:
    """``split`` and ``role`` in at most ``width`` cells (one of :data:`ROLE_WIDTHS`):
    "live val" / "official test" / "unofficial test"; "val" / "test★" / "(test)"; "v" / "t★" / "(t)"."""
    if width >= ROLE_WIDTHS[0]:
        return f"{role} {split}"
    word = split if width >= ROLE_WIDTHS[1] else split[:1]
    return {"live": word, "official": f"{word}★", "unofficial": f"({word})"}[role]


def role_legend(scored_split: str, width: int) -> str:
    """What the marks of :func:`role_mark` at ``width`` mean, for a pane's title or the help (the
    official and unofficial marks first: a narrow title is cut at its end, and a bare split is live)."""
    if width >= ROLE_WIDTHS[0]:
        return f"live on val, official on {scored_split}"
    marks: tuple[tuple[str, Role], ...] = ((scored_split, "official"), (scored_split, "unofficial"), ("val", "live"))
    return " · ".join(f"{role_mark(split, role, width)} {role}" for split, role in marks)
