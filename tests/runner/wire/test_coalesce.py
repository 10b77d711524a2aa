"""Warnings coalesced per cause, with counts (issue 13, "A warning flood": 1 500 DNS names gave
3 012 network_blocked events in 2 s, and the monitor spent 30 s on notifications)."""

from __future__ import annotations

import pytest

from onegc_tui.store.ingest import Ingester
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter, read_all_events
from runner.wire.session_config import SessionConfig
from tests.helpers import events, start_session, wait_event, write_agent


class Steps:
    """A clock that moves by ``step`` seconds at each reading."""

    def __init__(self, step: float, t: float = 1_000.0):
        self.t, self.step = t, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def flood(home, n: int, seconds: float) -> list:
    """``n`` blocked-name warnings over ``seconds`` through the runner's writer, then the end."""
    from runner.wire.coalesce import WarningFolder

    paths = create_session(SessionConfig(session_id="flood", task="t0", agent="scripted", budget_s=60), home)
    w = EventWriter(paths.events, "flood", clock=Steps(seconds / n), fold=WarningFolder())
    w.emit("session_started", task="t0", agent="scripted", budget_s=60, grace_s=30)
    for i in range(n):
        w.emit("warning", code="network_blocked", message=f"blocked h{i // 2}.example:53 (DNS lookup refused)")
    w.emit("warning", code="stall", message="no model response for 5 min")  # another cause: not folded in
    w.emit("session_ended", reason="completed", active_s=1, wall_s=1, paused_s=0)
    w.close()
    found, bad = read_all_events(paths.events)
    assert not bad
    return found


def test_a_flood_of_one_cause_is_a_few_events_whose_counts_add_up(home, store):
    from runner.wire.coalesce import BURST

    found = flood(home, 3012, 2.0)
    blocked = [e for e in found if e.type == "warning" and e.code == "network_blocked"]
    # per 2 s window: the first BURST one by one, then one summary; the rest drained before session_ended
    assert len(blocked) <= 2 * (BURST + 1)
    assert sum(e.count for e in blocked) == 3012
    assert [e.count for e in blocked[:BURST]] == [1] * BURST
    assert "h0.example:53" in blocked[0].message and "h4.example:53" in blocked[BURST - 1].message
    assert "h1505.example:53" in blocked[-1].message and f"{blocked[-1].count} more network_blocked" in blocked[-1].message
    stall = [e for e in found if e.type == "warning" and e.code == "stall"]
    assert [e.count for e in stall] == [1]
    assert found[-1].type == "session_ended" and found[-2].type == "warning"  # nothing is held past the end
    Ingester(home, store).ingest_all()
    assert store.session("flood")["warnings"] == 3012 + 1  # the store counts warnings, not events


def test_a_flood_that_goes_on_is_one_summary_per_window_after_its_first_burst(home):
    """1 000 warnings a second for 30 s: the first window's burst, then one summary a window (a
    burst every window kept the monitor near its 5 % budget: benchmarks/warning_flood_bench.py)."""
    from runner.wire.coalesce import BURST, FOLD_S

    found = flood(home, 30_000, 30.0)
    blocked = [e for e in found if e.type == "warning" and e.code == "network_blocked"]
    assert sum(e.count for e in blocked) == 30_000
    assert [e.count for e in blocked[:BURST]] == [1] * BURST and all(e.count > 1 for e in blocked[BURST:])
    assert len(blocked) <= BURST + 30.0 / FOLD_S + 1  # + the one drained before session_ended


def test_a_few_warnings_of_a_cause_are_each_written_at_once():
    from runner.wire.coalesce import BURST, FOLD_S, WarningFolder

    folder = WarningFolder()
    assert all(folder.admit("checkpoint", f"m{i}", 100.0) for i in range(BURST))  # a handful stay distinct
    assert all(folder.admit("checkpoint", f"n{i}", 100.0 + (i + 1) * (FOLD_S + 0.1)) for i in range(3 * BURST))
    assert folder.drain() == []


def test_a_pending_summary_goes_out_with_the_next_event_once_its_window_has_passed():
    from runner.wire.coalesce import FOLD_S, WarningFolder

    folder = WarningFolder(burst=1)
    assert folder.admit("x", "first", 0.0)
    assert not folder.admit("x", "second", 0.5) and not folder.admit("x", "third", 1.0)
    assert folder.due(1.5) == []
    ((code, message, count),) = folder.due(FOLD_S + 0.1)
    assert (code, count) == ("x", 2) and message.endswith("the latest: third")
    assert folder.due(10.0) == [] and folder.drain() == []


@pytest.mark.slow
def test_a_real_session_resolving_1500_names_under_network_none_writes_a_handful_of_warnings(home, tmp_path, store):
    from runner.sandbox.network import namespaces_available

    ok, why = namespaces_available()
    if not ok:
        pytest.skip(f"network namespaces unavailable here: {why}")
    cmd = write_agent(tmp_path, "names.py", """
        import socket
        for i in range(1500):
            try:
                socket.getaddrinfo(f"h{i}.example.com", 443, type=socket.SOCK_STREAM)
            except OSError:
                pass
        print("resolved nothing", flush=True)
    """)
    paths = start_session(home, "names", agent="command", command=cmd, budget_s=120, network="none")
    ended = wait_event(paths, "session_ended", timeout=180)
    assert ended["reason"] == "completed"
    blocked = [e for e in events(paths) if e["type"] == "warning" and e["code"] == "network_blocked"]
    elapsed = ended["wall_s"]
    windows = elapsed / 2.0 + 2  # FOLD_S is 2 s; and the last window drained at the end
    assert len(blocked) <= windows * 11, (len(blocked), elapsed)  # BURST (10) one by one and a summary per window
    total = sum(e.get("count", 1) for e in blocked)
    assert total >= 1500  # every name was refused, and counted
    Ingester(home, store).ingest_all()
    assert store.session("names")["warnings"] == sum(e.get("count", 1) for e in events(paths) if e["type"] == "warning")
