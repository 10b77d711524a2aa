"""Fixed session folders for the monitor's tests and snapshots: fixed clocks, no live runner."""

from __future__ import annotations

from pathlib import Path

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig

T0 = 1_790_000_000.0  # a fixed epoch: timestamps and countdowns render the same every run


class Clock:
    def __init__(self, start: float = T0):
        self.t = start

    def __call__(self):
        self.t += 1.0
        return self.t


def _session(home: Path, sid: str, agent: str, end: str | None, paused: bool, scores: list[float],
             gpu: list[float] = (), repeat: int = 1, start: float = T0, model: str | None = None,
             study: str | None = None) -> None:
    create_session(SessionConfig(session_id=sid, task="t0", agent=agent, model=model, budget_s=120, created=start,
                                 repeat=repeat, study=study), home)
    w = EventWriter(home / "runs" / sid / "events.jsonl", sid, clock=Clock(start))
    w.emit("session_started", task="t0_demo", agent=agent, model=model, repeat=repeat, study=study, budget_s=120,
           grace_s=30,
           contract={"task_hash": "h"})
    w.emit("budget", state="running", remaining_s=120, deadline=start + 120)
    if not gpu:
        w.emit("warning", code="no_gpu", message="no GPU visible: NVML unavailable")
    w.emit("transcript", role="assistant", kind="text", text=f"{sid}: I'll start by reading the task description.")
    w.emit("transcript", role="system", kind="usage", tokens_in=1200, tokens_out=300, cost_usd=0.02)
    w.emit("transcript", role="assistant", kind="tool_call", tool="bash", text="python run_1.py", call_id="c1")
    w.emit("process", action="started", pid=4242, script="run_1.py", cmdline="python run_1.py")
    for util in gpu:
        w.emit("gpu", index=0, util_pct=util, mem_used_mb=2048, mem_total_mb=81920, power_w=300, temp_c=60)
    for i, v in enumerate(scores, 1):
        w.emit("transcript", role="tool", kind="tool_result", text=f"epoch {i} val_acc {v:.4f}", call_id="c1")
        w.emit("checkpoint_found", name=f"run_1_epoch{i}-1", path="p", snapshot="s", script="run_1.py",
               self_reported=v, budget_elapsed_s=10.0 * i)
        w.emit("checkpoint_scored", name=f"run_1_epoch{i}-1", value=v, metric="val_acc", split="val", budget_elapsed_s=10.0 * i)
    w.emit("checkpoint_scored", name="bad-1", error="state_dict keys are prefixed '_orig_mod.'", metric="val_acc",
           split="val", budget_elapsed_s=45.0)
    if not scores and end:
        w.emit("transcript", role="assistant", kind="error", text="the agent CLI exited with status 1")
    w.emit("process", action="ended", pid=4242, script="run_1.py", cmdline="python run_1.py", returncode=0)
    w.emit("heartbeat", remaining_s=70, active_s=50, procs=1)
    if paused:
        w.emit("budget", state="paused", remaining_s=70, deadline=start + 200)
    if end:
        w.emit("session_ended", reason=end, detail="the agent finished" if scores else "the agent CLI exited with 1",
               active_s=60, wall_s=61, paused_s=0, score=max(scores) if scores else None,
               best_checkpoint=f"run_1_epoch{len(scores)}-1" if scores else None)
    w.close()


def build_home(home: Path, full: bool = False) -> Path:
    """An ended scripted session and a paused command one; with ``full`` (the monitor's tests) also a
    second scripted repeat that scored and a third that failed, for the matrix, replay and analytics."""
    _session(home, "a-ended", "scripted", "completed", False, [0.41, 0.77, 0.93], gpu=[0, 85, 90, 5, 95, 97, 0, 60])
    _session(home, "b-paused", "command", None, True, [0.38, 0.52, 0.60])
    if full:
        _session(home, "c-ended", "scripted", "budget_exhausted", False, [0.50, 0.81, 0.88], gpu=[70, 80, 0, 0, 90],
                 repeat=2)
        _session(home, "d-failed", "scripted", "agent_failed", False, [], repeat=3)
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    return home


CROWD_RUNNING = "20260901-093015-t0-claude-code-r1-7f3a"  # the one live session among the ended ones
CROWD_NOW = T0 + 100_000.0  # "now" for the crowd: the running session started 60 s before


def build_crowd(home: Path, n_ended: int = 20, running: bool = True) -> Path:
    """What a user attaches to after a day of work: ``n_ended`` finished sessions (ids as
    ``onegc run`` makes them, several started in the same second, a few FAILED) and (``running``)
    one running session, the most recent, started last. The store lists it last."""
    agents = [("scripted", None), ("claude-code", "claude-sonnet-4-6"), ("codex", "gpt-5")]
    for i in range(n_ended):
        agent, model = agents[(i // 2) % len(agents)]
        stamp = f"20260901-{8 + i // 12:02d}{(i // 2) % 6 * 10:02d}00"  # pairs, as from '--repeats 2': one second
        sid = f"{stamp}-t0-{agent}-r{1 + i % 2}-{i:02x}{'abcdef'[i % 6]}{i % 7}"
        failed = i % 7 == 3
        _session(home, sid, agent, "agent_failed" if failed else ("completed" if i % 3 else "budget_exhausted"), False,
                 [] if failed else [0.3 + 0.01 * i, 0.5 + 0.02 * i], gpu=[40, 80, 90] if i % 2 else (),
                 repeat=1 + i % 2, start=T0 + 1_000.0 * i, model=model)
    if running:
        _session(home, CROWD_RUNNING, "claude-code", None, False, [0.52, 0.61], gpu=[85, 90, 92],
                 start=CROWD_NOW - 60.0, model="claude-sonnet-4-6")
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    return home


def build_demo_study(home: Path) -> Path:
    """``examples/demo_study.toml`` as it ends: two configurations of the scripted agent (quick,
    steady) × t0 × 2 repeats, ids as the study makes them, means 0.9723 and 0.6793."""
    for label, scores in (("quick", (0.97, 0.9746)), ("steady", (0.70, 0.6586))):
        for k, score in enumerate(scores, 1):
            _session(home, f"demo--{label}--t0--r{k}", "scripted", "completed", False, [score / 2, score], repeat=k,
                     study="demo", start=T0 + 100.0 * k)
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    return home


async def settled(pilot) -> None:
    """Until the first frame is whole: the selected session's panes read and the footer built
    (a bounded number of passes through the app's queue, not a timer)."""
    from textual.widgets._footer import FooterKey

    app = pilot.app
    for _ in range(50):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.query(FooterKey) and app.dashboard.loaded_seq is not None:
            return


def add_events(home: Path, sid: str, events: list, on_events=None) -> None:
    """Append ``events`` to a session's ``events.jsonl`` and ingest them on a connection of their
    own, as another process would (``on_events``: a monitor's queue, as its own ingest feeds it)."""
    from runner.wire.events import dump_event

    with open(home / "runs" / sid / "events.jsonl", "a") as f:
        f.writelines(dump_event(e) + "\n" for e in events)
    store = Store.open(home)
    try:
        Ingester(home, store, on_events=on_events).ingest_all()
    finally:
        store.close()


T6_SESSION = "20260901-101500-t6-claude-code-r1-5c2e"  # a T6 session that ended: live val rows and official test ones
T0_SESSION = "20260901-100000-t0-scripted-r1-9a41"  # a t0 session that ended: its scored split is val


def _scored_session(home: Path, sid: str, task: str, agent: str, model: str | None, metric: str, scored: str,
                    live: list[tuple[str, float, float]], reevaluated: list[tuple[str, float, float]], best: str,
                    budget_s: float, start: float, gpu: list[float] = (), gpm: bool = False) -> None:
    """An ended session with live val scores (``live``: name, budget seconds, value) and the official
    phase's re-evaluations on ``scored`` (``reevaluated``: name, value, its val), ``best`` the chosen one."""
    create_session(SessionConfig(session_id=sid, task=task, agent=agent, model=model, budget_s=budget_s,
                                 created=start), home)
    w = EventWriter(home / "runs" / sid / "events.jsonl", sid, clock=Clock(start))
    w.emit("session_started", task=task, agent=agent, model=model, budget_s=budget_s, grace_s=30,
           contract={"task_hash": "h"})
    w.emit("budget", state="running", remaining_s=budget_s, deadline=start + budget_s)
    if not gpu:
        w.emit("warning", code="no_gpu", message="no GPU visible: NVML unavailable")
    for k, util in enumerate(gpu):  # with gpm: a GPU that reports its SMs', tensor cores' and DRAM's activity
        activity = {"sm_active_pct": util * 0.6, "tensor_active_pct": 20.0 + 5 * (k % 4),
                    "dram_bw_pct": util * 0.3} if gpm else {}
        w.emit("gpu", index=0, util_pct=util, mem_used_mb=20480, mem_total_mb=81920, power_w=310, temp_c=61, **activity)
    w.emit("transcript", role="assistant", kind="tool_call", tool="bash", text="python run_1.py", call_id="c1")
    for name, at, value in live:
        w.emit("checkpoint_found", name=name, path="p", snapshot="s", script=name.split("_epoch")[0] + ".py",
               budget_elapsed_s=at)
        w.emit("checkpoint_scored", name=name, value=value, metric=metric, split="val", budget_elapsed_s=at)
    at_of = {name: at for name, at, _ in live}
    for name, value, val in reevaluated:
        w.emit("checkpoint_scored", name=name, value=value, metric=metric, split=scored, budget_elapsed_s=at_of[name],
               official=True, val=val if scored != "val" else None)
    chosen = next(value for name, value, _ in reevaluated if name == best)
    w.emit("session_ended", reason="budget_exhausted", detail="the budget ran out", active_s=budget_s,
           wall_s=budget_s + 5, paused_s=0, score=chosen, best_checkpoint=best,
           val=next(val for name, _, val in reevaluated if name == best))
    w.close()


def build_numbers_home(home: Path) -> Path:
    """A T6 session (scored on test: live val rows, official and unofficial test rows) and a t0 one
    (scored on val: its re-evaluations are val too), both ended, for the screens that name each
    figure's split and role (docs/numbers.md)."""
    t6_live = [("run_1_epoch1-1", 300.0, 0.7071), ("run_1_epoch2-1", 600.0, 0.6782), ("run_1_epoch3-1", 900.0, 0.6738),
               ("run_2_epoch1-1", 1500.0, 0.6669), ("run_2_epoch2-1", 2100.0, 0.6533)]
    _scored_session(home, T6_SESSION, "t6_etth1", "claude-code", "claude-sonnet-4-6", "test_mse", "test", t6_live,
                    [("run_2_epoch2-1", 0.3818, 0.6533), ("run_1_epoch1-1", 0.4019, 0.7071),
                     ("run_2_epoch1-1", 0.3867, 0.6669)], best="run_2_epoch2-1", budget_s=2400.0, start=T0 + 5_000.0,
                    gpu=[92, 95, 97, 40, 96, 98, 99, 97], gpm=True)
    t0_live = [("run_1_epoch1-1", 20.0, 0.6130), ("run_1_epoch2-1", 40.0, 0.8870), ("run_2_epoch1-1", 70.0, 0.9320)]
    _scored_session(home, T0_SESSION, "t0_demo", "scripted", None, "val_acc", "val", t0_live,
                    [("run_2_epoch1-1", 0.9320, 0.9320), ("run_1_epoch2-1", 0.8870, 0.8870)], best="run_2_epoch1-1",
                    budget_s=120.0, start=T0 + 4_000.0)
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    return home
