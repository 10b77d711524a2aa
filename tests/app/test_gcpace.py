"""The monitor's full garbage collections (onegc_tui/app/gcpace.py): Python's own are off while
it runs; one runs at a quiet moment once a minute (at once after five, keys or not) and freezes
what survives; cycles are still collected, frozen ones by the thawing pass every ten minutes;
after a burst of events it comes at the first quiet moment instead; Python's thresholds come
back when it stops."""

from __future__ import annotations

import gc
import weakref

from onegc_tui.app.gcpace import (
    BURST_EVENTS,
    BURST_GAP_S,
    BUSY_DRAIN,
    FULL_AT_MOST_S,
    FULL_EVERY_S,
    NEVER,
    QUIET_EVENTS_S,
    QUIET_INPUT_S,
    THAW_EVERY_S,
    FullCollections,
)


class Node:
    other: Node | None = None


def test_a_full_collection_waits_for_a_quiet_moment_and_a_minute():
    pace = FullCollections(now=0.0)
    assert not pace.due(FULL_EVERY_S - 1)
    assert pace.due(FULL_EVERY_S)
    pace.touched(FULL_EVERY_S - 0.5)  # a key just now: not under it
    assert not pace.due(FULL_EVERY_S)
    assert pace.due(FULL_EVERY_S - 0.5 + QUIET_INPUT_S)
    pace.touched(FULL_AT_MOST_S - 0.1)  # keys all the time: after FULL_AT_MOST_S anyway
    assert pace.due(FULL_AT_MOST_S)


def test_after_a_burst_the_next_full_collection_comes_at_the_first_quiet_moment():
    pace = FullCollections(now=0.0)
    t = BURST_GAP_S
    for _ in range(BURST_EVENTS // 1000):  # a stream: drains of 1 000 events
        pace.fed(t, 1000)
    assert not pace.due(t)  # still streaming
    assert not pace.due(t + QUIET_EVENTS_S - 0.1)
    pace.fed(t + 1, BUSY_DRAIN - 1)  # a trickle (GPU samples) is quiet
    assert pace.due(t + QUIET_EVENTS_S)
    pace.touched(t + QUIET_EVENTS_S)  # not under a key press, though
    assert not pace.due(t + QUIET_EVENTS_S + 0.1)
    assert pace.tick(t + QUIET_EVENTS_S + QUIET_INPUT_S)
    assert pace.since_full == 0 and not pace.due(t + QUIET_EVENTS_S + QUIET_INPUT_S + 1)  # a minute again


def test_a_burst_soon_after_a_full_collection_waits_for_the_gap_and_a_trickle_is_no_burst():
    pace = FullCollections(now=0.0)
    pace.fed(1.0, BURST_EVENTS)
    assert not pace.due(BURST_GAP_S - 0.1) and pace.due(BURST_GAP_S)
    calm = FullCollections(now=0.0)
    for k in range(100):
        calm.fed(float(k), BUSY_DRAIN - 1)
    assert not calm.due(FULL_EVERY_S - 1)


def test_python_s_own_full_collections_are_off_while_it_runs_and_cycles_are_still_collected():
    before = gc.get_threshold()
    pace = FullCollections(now=0.0)
    pace.start()
    try:
        assert gc.get_threshold() == (before[0], before[1], NEVER)
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only a collection frees it
        gone = weakref.ref(a)
        del a, b
        assert not pace.tick(1.0)  # (a young collection may free it before: that is fine too)
        assert pace.tick(FULL_EVERY_S + 1) and pace.runs == 1
        assert gone() is None
        assert not pace.tick(FULL_EVERY_S + 2)  # the next one a minute later
        # a cycle that was alive at that pass is frozen with it: the thawing pass collects it
        c, d = Node(), Node()
        c.other, d.other = d, c
        frozen = weakref.ref(c)
        assert pace.tick(2 * FULL_EVERY_S + 2)
        assert gc.get_freeze_count() > 0
        del c, d
        assert pace.tick(3 * FULL_EVERY_S + 3) and frozen() is not None  # frozen: not walked
        assert pace.tick(THAW_EVERY_S + 1) and frozen() is None
    finally:
        pace.stop()
    assert gc.get_threshold() == before
