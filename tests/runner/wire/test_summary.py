"""The one reducer from events to a session's summary (runner/wire/summary.py): its rules on records
and models alike, in memory (Summary) and in SQL (the store) the same."""

from __future__ import annotations

import pytest

from onegc_tui.store.records import parse_record
from runner.wire.events import EVENT_TYPES, dump_event
from runner.wire.summary import ADDED, Summary, end_state, fold

T0 = 1_000.0


class Events:
    """One session's events as the runner numbers them, as models."""

    def __init__(self, sid: str = "s1"):
        self.sid, self.seq = sid, 0

    def __call__(self, type_: str, ts: float | None = None, **fields):
        self.seq += 1
        return EVENT_TYPES[type_](session_id=self.sid, seq=self.seq, ts=T0 + self.seq if ts is None else ts, **fields)


def started(e: Events, task: str = "t0_demo", budget_s: float = 600.0):
    return e("session_started", task=task, agent="scripted", budget_s=budget_s, grace_s=30,
             contract={"gpu": [{"name": "H200", "driver": "1"}]})


def scored(e: Events, name: str, value: float | None, official: bool = False, flags=None, error=None, verdicts=()):
    return e("checkpoint_scored", name=name, value=value, error=error, metric="m", split="val", budget_elapsed_s=5,
             official=official, flags=None if flags is None else list(flags), verdicts=list(verdicts))


def summary_of(events) -> Summary:
    s = Summary()
    for event in events:
        s.see(event)
    return s


def test_a_warning_counts_as_many_as_it_stands_for():
    e = Events()
    events = [started(e), e("warning", code="network_blocked", message="blocked example.com:443"),
              e("warning", code="network_blocked", message="1499 more in 2 s", count=1499)]
    delta: dict = {}
    for event in events:
        fold(delta, event.__dict__)
    assert delta["warnings"] == 1500
    assert summary_of(events).warnings == 1500
    s = summary_of(events)
    s.apply({"warnings": 2})  # a later delta adds to what there is
    assert s.warnings == 1502


def test_paused_and_resumed_move_the_state_and_the_figure_left():
    e = Events()
    s = summary_of([started(e, budget_s=600)])
    assert (s.state, s.remaining_s, s.remaining_ts) == ("running", 600, T0 + 1)
    s.see(e("budget", state="paused", remaining_s=500.0, deadline=T0 + 600))
    assert (s.state, s.remaining_s, s.remaining_ts) == ("paused", 500.0, T0 + 2)
    s.see(e("heartbeat", remaining_s=500.0, active_s=100.0))  # a heartbeat does not change the state
    assert (s.state, s.active_s, s.remaining_ts) == ("paused", 100.0, T0 + 3)
    s.see(e("budget", state="resumed", remaining_s=500.0, deadline=T0 + 900))
    assert (s.state, s.remaining_s) == ("running", 500.0)
    s.see(e("budget", state="expired", remaining_s=0.0, deadline=T0 + 900))  # expiry: the figure, not the state
    assert (s.state, s.remaining_s) == ("running", 0.0)


def test_a_budget_event_after_session_ended_does_not_revive_the_session():
    e = Events()
    ended = e("session_ended", reason="aborted", detail="by request", active_s=120, wall_s=130, paused_s=10)
    late = e("budget", state="resumed", remaining_s=480.0, deadline=T0 + 600)
    events = [started(e), ended, late]
    delta: dict = {}
    for event in events:  # in one delta
        fold(delta, event.__dict__)
    assert (delta["state"], delta["end_reason"]) == ("ended", "aborted")
    s = summary_of(events)  # one delta each
    assert (s.state, s.end_reason, s.end_detail, s.ended_ts) == ("ended", "aborted", "by request", ended.ts)
    assert s.remaining_s == 480.0  # the figure is the event's; the state stays


def test_a_liveness_verdict_gives_way_to_the_sessions_own_events():
    e = Events()
    s = summary_of([started(e)])
    s.end("harness_error", "the runner is gone")
    assert (s.state, s.end_reason, s.remaining_s) == ("failed", "harness_error", None)
    s.see(e("budget", state="running", remaining_s=300.0, deadline=T0 + 300))
    assert (s.state, s.end_reason, s.end_detail) == ("running", None, None)
    s.see(e("session_ended", reason="completed", active_s=300, wall_s=300, paused_s=0))
    s.end("harness_error", "too late")  # an ended session keeps how it ended
    assert (s.state, s.end_reason) == ("ended", "completed")


@pytest.mark.parametrize(("reason", "state"), [("completed", "ended"), ("budget_exhausted", "ended"),
                                               ("aborted", "ended"), ("agent_failed", "failed"),
                                               ("harness_error", "failed")])
def test_the_end_state_of_each_reason(reason, state):
    e = Events()
    assert end_state(reason) == state
    s = summary_of([started(e), e("session_ended", reason=reason, detail="d", active_s=60, wall_s=61, paused_s=1,
                                  score=0.5, best_checkpoint="c-1")])
    assert (s.state, s.end_reason, s.end_detail, s.score, s.best_checkpoint) == (state, reason, "d", 0.5, "c-1")
    assert (s.active_s, s.remaining_s) == (60, None)  # nothing left to run


def test_the_live_best_of_a_lower_is_better_task_is_the_lowest_and_ignores_official_scores():
    from tasks import direction_of

    assert direction_of("t6_etth1") == "lower"
    e = Events()
    events = [started(e, task="t6_etth1"), scored(e, "c-1", 0.40), scored(e, "c-2", 0.55), scored(e, "c-3", None,
                                                                                                   error="boom"),
              scored(e, "c-2", 0.10, official=True)]
    s = summary_of(events)
    assert s.best_live == 0.40
    s.see(scored(e, "c-4", 0.30))
    assert s.best_live == 0.30
    s.apply({"live_values": [0.35, 0.20, 0.25]})  # a delta's scores: their best, against the one there is
    assert s.best_live == 0.20
    higher = summary_of([started(Events(), task="t0_demo"), scored(e, "c-1", 0.40), scored(e, "c-2", 0.55)])
    assert higher.best_live == 0.55


def test_counts_first_checkpoint_flags_and_training_scripts():
    e = Events()
    found = [e("checkpoint_found", name=f"c-{k}", path="p", snapshot="s", budget_elapsed_s=10.0 * k) for k in (1, 2)]
    note = {"check": "scorer_observed", "strength": "note", "evidence": "wrote to stdout"}
    look = {"check": "code_unscanned", "strength": "look", "evidence": "run.py runs code from a string (exec)"}
    events = [started(e), *found, scored(e, "c-1", 0.5, flags=["read_labels"]),  # a record before typed verdicts
              scored(e, "c-2", 0.6, verdicts=[note]),  # a note flags nothing
              scored(e, "c-2", 0.6, official=True, verdicts=[note, look]),
              e("process", action="started", pid=7, script="run_1.py", cmdline="python run_1.py"),
              e("process", action="ended", pid=7, script="run_1.py", cmdline="python run_1.py", returncode=0),
              e("process", action="started", pid=8, script="nvidia-smi", cmdline="nvidia-smi", training=False)]
    s = summary_of(events)
    assert (s.n_checkpoints, s.first_checkpoint_s, s.flagged, s.scripts_launched) == (2, 10.0, 2, 1)
    s.apply({"n_checkpoints": 1, "first_checkpoint_s": 99.0})  # a later first checkpoint is not the first
    assert (s.n_checkpoints, s.first_checkpoint_s) == (3, 10.0)
    delta: dict = {}
    for event in events:
        fold(delta, event.__dict__)
    want = {"n_checkpoints": 2, "flagged": 2, "scripts_launched": 1, "warnings": 0, "truncated": 0, "truncated_bytes": 0,
            "caps_reached": 0}
    assert {k: delta.get(k, 0) for k in ADDED} == want


def test_truncated_counts_add_up_like_a_warnings_count():
    e = Events()
    cut = [e("truncated", stream="transcript", dropped=n, dropped_bytes=100 * n, limit_events=10, limit_bytes=1000)
           for n in (1, 40, 7)]
    s = summary_of([started(e), *cut])
    assert (s.truncated, s.truncated_bytes) == (48, 4800)


def test_the_bulk_kinds_change_nothing_here():
    e = Events()
    delta: dict = {}
    fold(delta, e("transcript", role="assistant", kind="usage", tokens_in=5).__dict__)
    fold(delta, e("gpu", index=0, util_pct=90, mem_used_mb=1, mem_total_mb=2).__dict__)
    fold(delta, e("control", action="pause", request_id="r", accepted=True).__dict__)
    assert delta == {}


def test_records_and_models_fold_alike():
    """The store's fast ingest folds the dicts of onegc_tui/store/records.py, the displays the models."""
    e = Events()
    events = [started(e), e("agent_started", pid=3, argv=["a"], containment="bwrap"),
              e("heartbeat", remaining_s=500.0, active_s=100.0, procs=2),
              e("budget", state="paused", remaining_s=500.0, deadline=T0 + 600),
              e("checkpoint_found", name="c-1", path="p", snapshot="s", budget_elapsed_s=4.0), scored(e, "c-1", 0.5),
              e("warning", code="w", message="m", count=3),
              e("session_ended", reason="agent_failed", detail="exit 1", active_s=100, wall_s=101, paused_s=1)]
    from_models: dict = {}
    from_records: dict = {}
    for event in events:
        fold(from_models, event.__dict__)
        fold(from_records, parse_record(dump_event(event)))
    assert from_records == from_models
    assert from_models["state"] == "failed" and from_models["containment"] == "bwrap"
    assert summary_of(events) == summary_of(parse_record(dump_event(ev)) for ev in events)


def test_the_store_keeps_the_summary_that_the_reducer_keeps(tmp_path):
    """The same deltas, applied in SQL by the store and in memory by Summary, give the same figures."""
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import IngestBatch, write_batch

    e = Events()
    batches = [
        [started(e, task="t6_etth1"), e("budget", state="paused", remaining_s=550.0, deadline=T0 + 600),
         e("checkpoint_found", name="c-1", path="p", snapshot="s", budget_elapsed_s=4.0), scored(e, "c-1", 0.5)],
        [e("budget", state="resumed", remaining_s=550.0, deadline=T0 + 650), scored(e, "c-2", 0.3),
         e("warning", code="w", message="m", count=7),
         e("checkpoint_found", name="c-2", path="p", snapshot="s", budget_elapsed_s=9.0)],
        [e("session_ended", reason="budget_exhausted", active_s=600, wall_s=650, paused_s=50, score=0.31),
         e("budget", state="running", remaining_s=0.0, deadline=T0 + 650)],
    ]
    store = Store(tmp_path / "onegc.db")
    store.register_session("s1", str(tmp_path), {"task": "t6_etth1", "budget_s": 600.0})
    s = Summary()
    for batch in batches:
        raws = [dump_event(ev) for ev in batch]
        write_batch(store, IngestBatch("events.jsonl", "s1", [parse_record(r) for r in raws], raws, 0, 0))
        delta: dict = {}
        for ev in batch:
            fold(delta, ev.__dict__)
        s.apply(delta)
    row = store.session("s1")
    store.close()
    assert s.state == "ended" and s.best_live == 0.3 and s.warnings == 7 and s.n_checkpoints == 2
    for key in ("state", "task", "budget_s", "remaining_s", "remaining_ts", "active_s", "started_ts", "ended_ts",
                "end_reason", "end_detail", "score", "best_checkpoint", "best_live", "n_checkpoints",
                "first_checkpoint_s", "warnings", "flagged", "scripts_launched"):
        assert row[key] == getattr(s, key), key
