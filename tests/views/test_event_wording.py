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
    # a scored checkpoint and the end keep the pane's own form, its figure first (a narrow pane cuts the
    # name: issue 37, docs/numbers.md); every other harness line is the same words in both
    own_form = {(e.seq) for e in EVENTS if (e.type == "checkpoint_scored" and e.value is not None)
                or e.type == "session_ended"}
    for event in EVENTS:
        said = event_words(event)
        assert said is not None and event.type in EVENT_MARKS
        pane = event_line(event)
        assert pane is not None and said.line == f"{said.label} {said.words}"
        if event.seq not in own_form:
            assert pane.endswith(f" {EVENT_MARKS[event.type]} {said.words}"), (pane, said)
    words = [event_words(e, "t0").words for e in EVENTS]  # type: ignore[union-attr]
    assert words[0] == "network_blocked (×3): blocked example.com:443"
    assert words[1] == "run_1-1: live val accuracy 0.6100"
    assert words[2].startswith("run_1-1: val accuracy 0.6000")
    assert words[3:6] == ["bad-1: ERROR keys differ", "pause: refused not running", "ended: run_1.py (exit 1)"]
    assert words[6].startswith("completed, official val accuracy 0.6000")


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
    for line in ("a-ended: script started: run_1.py", "a-ended: checkpoint run_1_epoch3-1: live val accuracy 0.9300",
                 "a-ended: agent tool_call: [bash] python run_1.py",
                 "a-ended: ended: completed, official val accuracy 0.9300 (run_1_epoch3-1) (the agent finished)"):
        assert line in text, text


def test_a_copy_scored_once_and_the_checkpoints_the_official_phase_left_are_said():
    """Issue 46 part 6: a byte-identical snapshot's live score names the one it was scored as, and
    the end says how many checkpoints the official phase's bounds left without a re-evaluation."""
    copy = CheckpointScored(session_id="s", seq=8, ts=T0, name="copy007-1", value=0.5, metric="val_acc", split="val",
                            budget_elapsed_s=20.0, same_as="slow-1")
    assert "(byte-identical to slow-1: scored once)" in event_words(copy).words
    ended = SessionEnded(session_id="s", seq=9, ts=T0, reason="completed", detail="done", active_s=1, wall_s=1,
                         paused_s=0, score=0.6, not_reevaluated=5)
    assert event_words(ended).words.endswith("(done); 5 checkpoints not re-evaluated within the official phase's bounds")
    assert "not re-evaluated" not in event_words(EVENTS[-1]).words  # none left: nothing said
