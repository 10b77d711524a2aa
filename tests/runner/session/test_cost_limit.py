"""The cost limit beside the time budget (runner/session/cost_limit.py): the meter's rule, and a real
runner that ends, in order, a session whose model calls reach it."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from runner.session.cost_limit import CostMeter
from runner.wire.events import TranscriptFields
from tests.helpers import events, start_session, tree_pids, wait_event


def item(kind: str, cost: float | None = None, tokens_in: int | None = None) -> TranscriptFields:
    return TranscriptFields(role="system", kind=kind, cost_usd=cost, tokens_in=tokens_in)


def test_usage_adds_a_result_total_replaces_and_an_unpriced_increment_is_noted():
    meter = CostMeter(1.0)
    meter.add(item("usage", 0.4))
    meter.add(item("text"))
    meter.add(item("usage", 0.3))
    assert meter.spent_usd == pytest.approx(0.7) and not meter.reached
    meter.add(item("result", 1.05))  # the CLI's own total replaces the running sum
    assert meter.spent_usd == 1.05 and meter.reached and "$1.00 cost limit" in meter.detail()
    meter.add(item("usage", float("nan")))
    assert meter.spent_usd == 1.05
    unpriced = CostMeter(5.0)
    unpriced.add(item("usage", None, tokens_in=1000))
    assert unpriced.unpriced and not unpriced.reached and "prices.toml" in unpriced.unpriced_warning()
    assert not CostMeter(None).reached


# A stand-in for Claude Code's CLI: stream-json lines as 2.1.332 writes them (tests/runner/agents/fixtures),
# one expensive model response after another (100k prompt tokens of claude-sonnet-4-5: $0.315 each),
# and never a final result: only the cost limit can end it before the budget does.
FAKE_CLAUDE = """\
#!{python}
import json, sys, time
if "--version" in sys.argv:
    print("2.1.332 (Claude Code)")
    sys.exit(0)
print(json.dumps({{"type": "system", "subtype": "init", "model": "claude-sonnet-4-5", "session_id": "s",
                  "tools": [], "claude_code_version": "2.1.332"}}), flush=True)
for i in range(10_000):
    print(json.dumps({{"type": "assistant", "session_id": "s", "parent_tool_use_id": None, "message": {{
        "id": f"msg_{{i}}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{{"type": "text", "text": f"thinking hard, response {{i}}"}}], "stop_reason": None,
        "usage": {{"input_tokens": 100000, "output_tokens": 1000, "cache_creation_input_tokens": 0,
                   "cache_read_input_tokens": 0}}}}}}), flush=True)
    time.sleep(0.3)
"""


@pytest.mark.slow
def test_a_session_whose_model_calls_reach_the_cost_limit_ends_in_order(home, tmp_path, monkeypatch):
    prefix = tmp_path / "agents"
    exe = prefix / "node_modules" / ".bin" / "claude"
    exe.parent.mkdir(parents=True)
    exe.write_text(textwrap.dedent(FAKE_CLAUDE.format(python=sys.executable)))
    exe.chmod(0o755)
    monkeypatch.setenv("ONEGC_AGENTS_PREFIX", str(prefix))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    paths = start_session(home, "cost1", agent="claude-code", budget_s=300, grace_s=2, cost_limit_usd=1.0,
                         sealed=False, network="open")
    ended = wait_event(paths, "session_ended", timeout=120)
    assert ended["reason"] == "cost_limit", ended
    assert "$1.00 cost limit" in ended["detail"] and ended["active_s"] < 60
    usage = [e for e in events(paths) if e["type"] == "transcript" and e["kind"] == "usage"]
    spent = sum(e.get("cost_usd") or 0.0 for e in usage)
    assert 1.0 <= spent < 1.0 + 3 * 0.315  # stopped within a tick of the response that reached it
    result = json.loads(paths.result.read_text())
    assert result["end_reason"] == "cost_limit" and result["failure"] == "no checkpoint was saved"
    assert not tree_pids(paths)
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester

    store = Store.open(home)
    Ingester(home, store).ingest_all()
    row = store.session("cost1")
    assert row["state"] == "ended" and row["end_reason"] == "cost_limit" and row["cost_usd"] == pytest.approx(spent)
    store.close()


def test_a_study_files_cost_limit_reaches_every_session_and_a_bad_one_is_refused(tmp_path):
    from runner.launch.study import StudyError, load_study, plan

    body = '''name = "priced"\ntasks = ["t0"]\nrepeats = 2\n[budget]\nminutes = 1\ncost_usd = {cost}\n
[[agents]]\nlabel = "q"\nadapter = "scripted"\n'''
    path = tmp_path / "s.toml"
    path.write_text(body.format(cost="2.5"))
    assert {p.config.cost_limit_usd for p in plan(load_study(path))} == {2.5}
    path.write_text(body.format(cost="-1"))
    with pytest.raises(StudyError, match="cost_usd"):
        load_study(path)
