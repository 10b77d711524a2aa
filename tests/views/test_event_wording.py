"""One wording per event kind (onegc_tui/views/transcript_view.py ``event_words``): the transcript
pane prints it behind the kind's mark, ``onegc run --plain`` behind the kind in words."""

from __future__ import annotations

import io

from onegc_tui.cli.plain import follow
from onegc_tui.views.transcript_view import EVENT_MARKS, event_line, event_words
from runner.wire.events import CheckpointScored, ControlEvent, ProcessEvent, SessionEnded, TranscriptEvent, Warning_
from tests.homes import T0, build_home

EVENTS = [
    Warning_(session_id="s", seq=1, ts=T0, code="network_blocked", count=3, message="blocked example.com:443"),
    CheckpointScored(session_id="s", seq=2, ts=T0, name="run_1-1", value=0.61, metric="val_acc", split="val",
                     budget_elapsed_s=10.0),
    CheckpointScored(session_id="s", seq=3, ts=T0, name="run_1-1", value=0.6, metric="val_acc", split="val",
                     budget_elapsed_s=10.0, official=True),
    CheckpointScored(session_id="s", seq=4, ts=T0, name="bad-1", error="keys differ", metric="val_acc", split="val",
                     budget_elapsed_s=12.0),
    ControlEvent(session_id="s", seq=5, ts=T0, action="pause", accepted=False, detail="not running", request_id="r1"),
    ProcessEvent(session_id="s", seq=6, ts=T0, action="ended", pid=7, script="run_1.py", cmdline="python run_1.py",
                 returncode=1),
    SessionEnded(session_id="s", seq=7, ts=T0, reason="completed", detail="done", active_s=1, wall_s=1, paused_s=0,
                 score=0.6),
]


def test_the_pane_and_plain_print_the_same_words_for_every_harness_event():
    for event in EVENTS:
        said = event_words(event)
        assert said is not None and event.type in EVENT_MARKS
        pane = event_line(event)
        assert pane is not None and pane.endswith(f" {EVENT_MARKS[event.type]} {said.words}"), (pane, said)
        assert said.line == f"{said.label} {said.words}" and not said.words.startswith(said.label)
    words = [event_words(e).words for e in EVENTS]  # type: ignore[union-attr]
    assert words == ["network_blocked (×3): blocked example.com:443", "run_1-1: val_acc 0.6100",
                     "run_1-1 (official): val_acc 0.6000", "bad-1: val_acc ERROR keys differ",
                     "pause: refused not running", "ended: run_1.py (exit 1)", "completed, score 0.6000 (done)"]


def test_an_agent_step_is_labelled_the_agents_in_plain_and_worded_as_in_the_pane():
    call = TranscriptEvent(session_id="s", seq=1, ts=T0, role="assistant", kind="tool_call", tool="bash",
                           text="ls -la\nwc -l x")
    said = event_words(call)
    assert said is not None and said.line == "agent tool_call: [bash] ls -la  (+1 lines)"
    assert event_line(call).endswith(" ▶ " + said.words)  # type: ignore[union-attr]


def test_plain_lines_are_the_words_behind_their_labels(tmp_path):
    home = build_home(tmp_path / "home")
    out = io.StringIO()
    follow(home, ["a-ended"], out=out)
    text = out.getvalue()
    for line in ("a-ended: script started: run_1.py", "a-ended: checkpoint run_1_epoch3-1: val_acc 0.9300",
                 "a-ended: agent tool_call: [bash] python run_1.py",
                 "a-ended: ended: completed, score 0.9300 (the agent finished)"):
        assert line in text, text
