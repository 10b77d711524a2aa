"""``onegc history`` shows what each matrix row spent: sessions, tokens in and out, cost
(issue 29: it showed no tokens or cost)."""

from __future__ import annotations

from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.results.usage_table import usage_rows, usage_table
from onegc_tui.views.outcomes import SessionOutcome
from tests.homes import build_home


def outcome(sid: str, agent: str, model: str | None = None, study: str | None = None,
            label: str | None = None) -> SessionOutcome:
    return SessionOutcome(session_id=sid, study=study, agent=agent, model=model, task="t1", repeat=1, score=1.0,
                          end_reason="completed", contract_hash="h", budget_s=60.0, label=label)


def test_usage_rows_follow_the_matrix_rows_and_add_up():
    outcomes = [outcome("a", "claude-code", "sonnet"), outcome("b", "claude-code", "sonnet"),
                outcome("c", "codex", "gpt"), outcome("d", "codex", "gpt", study="st", label="fast")]
    usage = {"a": (1000, 200, 0.0021), "b": (3000, 800, 0.0100), "c": (2_000_000, 10_000, 1.5)}
    rows = usage_rows(outcomes, usage)  # d: nothing known of its usage, it still counts as a session
    assert [(r.label, r.sessions, r.tokens_in, r.tokens_out, round(r.cost_usd, 6)) for r in rows] == [
        ("claude-code [paper split] (sonnet)", 2, 4000, 1000, 0.0121), ("codex [paper split] (gpt)", 1, 2_000_000, 10_000, 1.5),
        ("fast (codex [paper split], gpt)", 1, 0, 0, 0.0)]  # T1's paper split
    lines = usage_table(rows, "ours")
    assert lines[0] == "ours: tokens and cost of 4 sessions (total $1.51)"
    assert lines[1].split() == ["agent", "sessions", "tokens", "in", "tokens", "out", "cost", "per", "session"]
    assert lines[2].split() == ["claude-code", "[paper", "split]", "(sonnet)", "2", "4k", "1k", "$0.012", "$0.0060"]
    assert lines[3].split() == ["codex", "[paper", "split]", "(gpt)", "1", "2.0M", "10k", "$1.50", "$1.50"]
    assert lines[4].split()[-2:] == ["-", "-"]


def test_history_prints_tokens_and_cost_per_row(home):
    build_home(home, full=True)
    r = CliRunner().invoke(main, ["history", "--demo"])
    assert r.exit_code == 0, r.output
    at = r.output.index("ours (demo tasks): tokens and cost of")
    table = r.output[at:].splitlines()
    assert table[1].split()[:3] == ["agent", "sessions", "tokens"]
    scripted = next(line for line in table if line.startswith("scripted"))
    assert scripted.split()[-2:] == ["$0.06", "$0.02"]  # three sessions at $0.02 each (fixtures.py)
    r = CliRunner().invoke(main, ["history", "--demo", "--format", "csv"])  # data formats as they were
    assert "tokens and cost" not in r.output


def test_the_history_screens_cell_says_its_tokens_and_cost():
    from onegc_tui.results.usage_table import usage_line

    assert usage_line([(1000, 200, 0.0021), (3000, 800, 0.0101)], 2) == (
        "tokens 4k in, 1k out · cost $0.012 ($0.0061 a session)")
    assert usage_line([], 0) == "tokens - in, - out · cost - (- a session)"


def test_usage_is_read_for_a_few_sessions_and_for_many_alike(home):
    from onegc_tui.results.usage_table import _CHUNK, session_usage
    from onegc_tui.store.readonly_home import caught_up_store

    build_home(home, full=True)
    store = caught_up_store(home)
    try:
        ids = [r["session_id"] for r in store.sessions()]
        few = session_usage(store, ids)
        many = session_usage(store, ids + [f"missing-{i}" for i in range(_CHUNK)])  # past the lookup by key
        assert few == many and set(few) == set(ids) and few["a-ended"] == (1200, 300, 0.02)
        assert session_usage(store, []) == {}
    finally:
        store.close()
