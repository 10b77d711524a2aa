"""The defaults and limits of a session that every part reads without loading pydantic: the grace,
the stall window, the network policies, the id pattern and the agents that call a model API."""

from __future__ import annotations

import re
import secrets
import time
from typing import Literal

GRACE_S = 30.0  # paper §3.3: 30 s between the stop request and SIGKILL
# "Stalled", the one meaning every part shows (runner/session/stall.py; the monitor shows the runner's
# word, onegc_tui/alerts.py): 5 min without a model response while no tool runs. Silence alone is no
# stall (a 40-minute training run prints nothing and is work); a CLI retrying a failing endpoint in
# silence is, and 5 min is an eighth of the paper's shortest budget (40 min): time to act on it.
STALL_S = 300.0
SEALED_ANSWERS = 200  # a sealed scored split's answers per session (runner/integrity/sealed_split.py)
# (sealed is the default on t0, T1-T3 and T7: runner/launch/request.py resolves it; a session.json without the
# field is the paper's split, as every session before it was)


# after the agent, wherever sessions are named: how their scored split was held (never pooled: rows of their own).
# Only where the task leaves a choice (TaskSpec.sealable: t0, T1-T3, T7); T4-T6's scored split is never in the
# workspace, so their rows carry no mark (docs/numbers.md, "Sealed or paper")
SEALED_SPLIT_MARK = "[sealed split]"
PAPER_SPLIT_MARK = "[paper split]"  # the paper's workspace: the scored split's targets were the agent's to read
# each mark's short form, where a row's label is cut to fit (the history screen's Agent column at 80 columns)
SHORT_SPLIT_MARKS = {SEALED_SPLIT_MARK: "[sealed]", PAPER_SPLIT_MARK: "[paper]"}


def split_mark(sealed: bool, sealable: bool) -> str:
    """The mark after a session's agent: ``[sealed split]`` when its scored split was sealed,
    ``[paper split]`` when it was not on a task that could have sealed it (a session recorded
    before the choice existed held the paper's split), "" on a task that leaves no choice."""
    return SEALED_SPLIT_MARK if sealed else PAPER_SPLIT_MARK if sealable else ""


def without_split_mark(agent: str) -> str:
    """A row's agent without its split mark (``scripted [paper split]`` -> ``scripted``)."""
    for mark in SHORT_SPLIT_MARKS:
        if agent.endswith(f" {mark}"):
            return agent[:-len(mark) - 1]
    return agent


def scored_split_sealed(contract: object) -> bool:
    """Whether a session's contract says its scored split was sealed (``--scored-split sealed``;
    the key is absent under the paper's split)."""
    sealed = contract.get("scored_split") if isinstance(contract, dict) else None
    return isinstance(sealed, dict) and sealed.get("mode") == "sealed"


STALL_WARNING = "stall"  # the warning's code when a stall begins
STALL_CLEARED = "stall_cleared"  # the warning's code when it ends: a model response, or a tool at work
# the warnings that say a cap of the session stopped the agent (runner/sandbox/caps.py: its memory
# and process caps; runner/session/diskguard.py: the disk; runner/scoring/checkpoint_watcher.py: the checkpoints
# taken): its measurement ran with less than it asked for
NO_GPM = "no_gpm"  # the warning's code where the GPU reports no SM or tensor-core activity (runner/session/gpm.py)
CAP_WARNINGS = frozenset({"oom", "process_cap", "disk_full", "checkpoint_cap"})
NetworkPolicy = Literal["open", "api-only", "none"]
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def new_session_id(task_short: str, agent: str, repeat: int = 1) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{task_short}-{agent}-r{repeat}-{secrets.token_hex(2)}"
