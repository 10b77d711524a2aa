"""The agent's end (DESIGN.md: deadline → graceful signal → grace → SIGKILL of the whole tree): the
agent's graceful signal (SIGINT for the CLIs, so they save and say goodbye), SIGTERM to the whole
tree at a third of the grace, SIGKILL at its end. A paused tree is resumed first: a frozen process
cannot take a signal's hint."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

from runner.sandbox.proctree import ProcessTree

POLL_S = 0.1  # how often the tree is looked at during the grace


def stop_tree(tree: ProcessTree, graceful: int | None, grace_s: float, paused: bool,
              on_tick: Callable[[], None]) -> None:
    """Stop ``tree`` and reap it. ``graceful``: the signal the agent's root gets first (None:
    SIGTERM to all at once); ``on_tick``: called while the tree winds down and once at the end
    (the script scan sees every script end)."""
    if paused:
        tree.resume()
    if not tree.alive():
        tree.reap()
        return
    if graceful is not None:
        tree.interrupt_root(graceful)
    else:
        tree.signal_all(signal.SIGTERM)
    end = time.monotonic() + grace_s
    termed = graceful is None
    while time.monotonic() < end and tree.alive():
        if not termed and time.monotonic() >= end - grace_s * 2 / 3:
            tree.signal_all(signal.SIGTERM)
            termed = True
        on_tick()
        time.sleep(POLL_S)
    if tree.alive():
        tree.kill_all()
    tree.reap()
    on_tick()
