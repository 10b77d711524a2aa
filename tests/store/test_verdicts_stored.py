"""Typed verdicts and the unchecked threat rows, from the events through the store to every reader
(runner/wire/verdicts.py): the checkpoints pane's row, the session's flag count, ``onegc sessions --json``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from runner.integrity.checks import verdict
from runner.wire.verdicts import read_json
from tests.store.test_store import fake_session


def test_verdicts_and_unchecked_rows_reach_the_store_and_the_sessions_json(home):
    w = fake_session(home)
    note = verdict("scorer_observed", "note", "wrote to stdout")
    look = verdict("code_unscanned", "look", "run.py runs code from a string (exec)")
    w.emit("checkpoint_found", name="b-1", path="p", snapshot="s", script="run_1.py", budget_elapsed_s=5)
    w.emit("checkpoint_scored", name="b-1", value=0.7, metric="val_acc", split="val", budget_elapsed_s=5,
           verdicts=[note])
    w.emit("checkpoint_scored", name="b-1", value=0.7, metric="val_acc", split="val", budget_elapsed_s=5,
           official=True, verdicts=[note, look])
    w.emit("session_ended", reason="completed", active_s=42, wall_s=43, paused_s=1, score=0.7, best_checkpoint="b-1",
           not_checked=["V1", "V2"])
    w.close()
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    row = store.session("s1")
    assert row["flagged"] == 1  # the official score's look; a note flags nothing
    stored = {(c["name"], c["official"]): read_json(c["verdicts"], c.get("flags")) for c in store.checkpoints("s1")}
    assert stored[("b-1", 1)] == [note, look] and stored[("b-1", 0)] == [note]
    store.close()
    out = CliRunner().invoke(main, ["sessions", "--json"], env={"ONEGC_HOME": str(home)})
    assert out.exit_code == 0, out.output
    (session,) = json.loads(out.output)
    assert session["not_checked"] == ["V1", "V2"] and session["flagged"] == 1
