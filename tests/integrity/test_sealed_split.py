"""A sealed scored split (issue 35, part 6; runner/integrity/sealed_split.py): a real t0 session whose
val targets never enter the workspace. A hostile command agent looks for them, tries to forge the
harness's answers and sends hostile requests; every request is answered with a reason or not at
all, the runner carries on, the honest model's evaluation through ``prepare.evaluate`` is its
official value, and the session's answers stop at the cap. History keeps the session in a row of
its own. T1 (its inputs are its targets) and T6 (its scored split is never in the workspace) are
refused with one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.integrity import sealed_split
from runner.sandbox.bwrap import status
from tests.helpers import ROOMY_BUDGET_S, events, start_session, verdicts_of, wait_event
from tests.integrity import hostile_sealed

AGENT = Path(hostile_sealed.__file__)
CAP = 12


@pytest.mark.slow
@pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")
def test_a_sealed_val_keeps_its_targets_out_and_answers_only_what_it_should(home: Path) -> None:
    from onegc_tui.cli.main import main

    paths = start_session(home, "sealed", agent="command", budget_s=ROOMY_BUDGET_S, scored_split="sealed",
                          sealed_answers=CAP, command=[sys.executable, str(AGENT)])
    ended = wait_event(paths, "session_ended", timeout=600)
    assert ended["reason"] == "completed", ended
    report = json.loads((paths.workspace / "report.json").read_text())
    result = json.loads(paths.result.read_text())

    # the targets are not there, and the loader says why
    assert report["val_y_in_workspace"] == []
    assert "sealed" in report["load_val"] and "answered by the harness" in report["load_val"]
    assert report["forged"] is not True  # the answers folder is read-only inside the sandbox
    # every hostile request got its reason, none a value
    why = {name: answer.get("error", "") for name, answer in report["hostile"].items()}
    assert "could not be opened" in why["link"], why
    assert "not a plain file" in why["fifo"], why
    assert "more than predictions" in why["big"], why
    assert "dtype" in why["objects"], why
    assert "shape" in why["shape"], why
    assert why["garbage"], why
    assert all("value" not in a for a in report["hostile"].values())
    # the honest model: the answer is its public part's figure through the Ladder (the first answer: a new
    # value, on the step's grid); the official value is its private part's, beside the whole split's
    assert result["checkpoint"] == "honest-1" and result["disqualified"] is None, result
    evaluated, parts = report["evaluated"], result["parts"]
    assert evaluated["sealed"] is True and evaluated["part"] == "public" and evaluated["new"] is True, evaluated
    assert evaluated["n"] == 450 and abs(evaluated["value"] - parts["public"]) <= 0.005 + 1e-9, (evaluated, parts)
    assert round(evaluated["value"] / 0.01) == round(evaluated["value"] * 100) and evaluated["value"] == round(
        evaluated["value"], 2)
    assert result["scored_split"] == "sealed" and result["value"] == parts["private"], result
    assert result["whole"] is not None and abs(0.3 * parts["public"] + 0.7 * parts["private"] - result["whole"]) < 1e-9
    assert result["answers"]["asked"] == CAP and result["answers"]["ladder"]["new_values"] == 1, result["answers"]
    # the cap: the hostile requests count, the kit is told when it is spent, the folder stays small
    assert report["answered_to_kit"] == CAP - len(report["hostile"])
    assert "spent" in report["spent"]
    answers = list(sealed_split.answers_dir(paths.root).iterdir())
    assert len(answers) <= CAP + 1
    events = [json.loads(line) for line in paths.events.read_text().splitlines()]
    warnings = [e for e in events if e["type"] == "warning" and e.get("code") == "sealed_split"]
    assert len(warnings) == 1 and "spent" in warnings[0]["message"], warnings
    started = next(e for e in events if e["type"] == "session_started")
    sealed = started["contract"]["scored_split"]
    assert {k: sealed[k] for k in ("mode", "split", "withheld", "answers_cap", "spacing_s", "answers")} == {
        "mode": "sealed", "split": "val", "withheld": ["val_y.npy"], "answers_cap": CAP,
        "spacing_s": sealed_split.SPACING_S, "answers": "predictions"}, sealed
    assert sealed["parts"] == {"public_fraction": 0.3, "blocks": 100, "public_rows": 450, "private_rows": 1050}
    assert sealed["ladder"]["step"] == 0.01 and sealed["ladder"]["bits_bound"] > 0, sealed
    assert started["contract"]["canaries"] == {"on": False}  # no targets in the workspace: nothing to plant
    # never pooled with the paper's split: a row of its own
    history = CliRunner().invoke(main, ["history", "--demo", "--no-paper"], catch_exceptions=False)
    assert "command [sealed split]" in history.output, history.output
    listed = CliRunner().invoke(main, ["sessions"], catch_exceptions=False)
    assert "command [sealed split]" in listed.output, listed.output
    from onegc_tui.views.transcript_view import event_words
    from runner.wire.events import parse_event

    said = event_words(parse_event(json.dumps(started)), "t0_demo")
    assert said is not None and "val SEALED" in said.words, said
    as_json = CliRunner().invoke(main, ["sessions", "--json"], catch_exceptions=False)
    assert json.loads(as_json.output)[0]["scored_split_sealed"] is True
    # the monitor's sessions table, from the store's summary row the CLI above ingested
    from onegc_tui.store import Store
    from onegc_tui.views.sessions_view import session_cells

    store = Store.open(home)
    try:
        assert session_cells(store.session(paths.root.name))["official"].endswith(" val sealed")
    finally:
        store.close()


@pytest.mark.parametrize(("task", "why"), [("t6", "sealed already"), ("t4", "sealed already")])
def test_a_split_that_need_not_be_sealed_is_one_line_and_exit_2(home: Path, task: str, why: str) -> None:
    from onegc_tui.cli.main import main

    out = CliRunner().invoke(main, ["run", task, "--agent", "scripted", "--scored-split", "sealed", "--detach"])
    assert out.exit_code == 2, out.output
    assert why in out.output and len(out.output.strip().splitlines()) == 1, out.output


def test_the_prompt_says_the_split_is_sealed_and_is_the_papers_otherwise() -> None:
    from runner.agents.prompt import standard_prompt

    paper = standard_prompt("Demo", 2, "val")
    assert '9. The scored split is "val".\n' in paper and "sealed" not in paper
    sealed = standard_prompt("Demo", 2, "val", 200)
    assert "Its targets are sealed in this session" in sealed and "at most 200 times" in sealed
    assert sealed.replace(sealed.split('9. The scored split is "val".')[1].split("\n\n")[0], "") == paper


@pytest.mark.slow
@pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")
def test_the_demo_agent_sealed_as_make_demo_runs_it_raises_no_look(home: Path) -> None:
    """``make demo``'s session: the scripted agent on t0, sealed (the default). Its train.py saves
    each checkpoint with the figure ``prepare.evaluate`` answered, which under the Ladder is the best
    public-part figure of the session so far, not that checkpoint's own: no checkpoint gets the
    self-report look for it (the first sealed demo did, on every run's first epochs), and the
    session is clean in every record."""
    paths = start_session(home, "demo-sealed", scored_split="sealed", budget_s=ROOMY_BUDGET_S)
    ended = wait_event(paths, "session_ended", timeout=600)
    assert ended["reason"] == "completed", ended
    scored = [e for e in events(paths) if e["type"] == "checkpoint_scored"]
    found = [e for e in events(paths) if e["type"] == "checkpoint_found"]
    # the Ladder's answers ran ahead of later runs' first checkpoints, which the look once flagged
    assert any(f["self_reported"] is not None and s["value"] is not None and f["self_reported"] > s["value"] + 0.1
               for f in found for s in scored if s["name"] == f["name"] and not s.get("official")), found
    assert all(not verdicts_of(e) for e in scored), [verdicts_of(e) for e in scored if verdicts_of(e)]
    result = json.loads(paths.result.read_text())
    assert result["disqualified"] is None and not result["verdicts"], result
