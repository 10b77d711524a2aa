"""One start request (runner/launch/request.py): its defaults resolved once, its bounds, the one
SessionConfig built from it, and every way to start sessions going through it and its checks."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from textual.widgets import Input

from onegc_tui.app import make_app
from onegc_tui.cli.main import main
from runner.errors import OnegcError
from runner.launch import start
from runner.launch.request import BadRequest, default_budget_s, make_request
from runner.wire.paths import runs_dir
from tasks import get_task
from tests.homes import build_home


def test_the_defaults_are_resolved_once_when_the_request_is_made():
    scripted = make_request(task="t6", agent="scripted")
    assert scripted.task == "t6_etth1" and scripted.budget_s == default_budget_s(get_task("t6")) == 40 * 60
    assert scripted.network == "none" and scripted.sealed and scripted.pace_s == 1.0
    assert make_request(task="t6", agent="codex", model="gpt-5").network == "api-only"
    assert make_request(task="t6", agent="codex", model="gpt-5", network="open", budget_s=90).budget_s == 90


def test_a_start_is_sealed_by_default_wherever_the_scored_split_would_be_in_the_workspace():
    """Issue 47: ``onegc run t1`` with no option seals val (its text withheld); t0, T2, T3, T7 too;
    T4-T6's scored split (test) is never in the workspace, so theirs is the paper's; paper when asked."""
    for task in ("t0", "t1", "t2", "t3", "t7"):
        assert make_request(task=task, agent="scripted").scored_split == "sealed", task
    for task in ("t4", "t5", "t6"):
        assert make_request(task=task, agent="scripted").scored_split == "paper", task
    assert make_request(task="t1", agent="scripted", scored_split="paper").scored_split == "paper"


@pytest.mark.parametrize(("fields", "says"), [
    ({"budget_s": 5}, "budget: 5 s: give a duration from 10s to 7 days"),
    ({"budget_s": 1e9}, "budget: 1e+09 s: give a duration from 10s"),
    ({"repeats": 101}, "repeats: Input should be less than or equal to 100"),
    ({"agent": "gpt"}, "unknown agent 'gpt': choose one of"),
    ({"agent": "command"}, "the command agent needs a command line"),
    ({"task": "t99"}, "t99"),
    ({"color": "red"}, "Extra inputs are not permitted"),
])
def test_a_request_that_cannot_be_is_one_line_naming_what_to_change(fields, says):
    with pytest.raises(BadRequest) as err:
        make_request(**{"task": "t0", "agent": "scripted", **fields})
    assert says in str(err.value) and "\n" not in str(err.value)


def test_the_session_config_is_the_requests_own():
    req = make_request(task="t0", agent="command", command=("python", "-c", "pass"), repeats=3, budget_s=120,
                       memory_bytes=1 << 30, cost_limit_usd=2.5, study="s")
    config = req.config("s--a--t0--r2", 2, gpu="1")
    assert (config.task, config.agent, config.repeat, config.budget_s, config.gpu) == ("t0_demo", "command", 2, 120, "1")
    assert (config.command, config.memory_bytes, config.cost_limit_usd, config.study) == \
        (["python", "-c", "pass"], 1 << 30, 2.5, "s")
    assert (config.network, config.sealed, config.grace_s) == (req.network, True, req.grace_s)
    assert set(type(req).model_fields) - {"repeats", "gpus"} <= set(type(config).model_fields)  # nothing dropped


@pytest.fixture
def captured(monkeypatch):
    """The requests that reach start_sessions (nothing is started)."""
    requests = []
    monkeypatch.setattr(start, "start_sessions", lambda home, request, *a, **k: requests.append(request) or [])
    return requests


async def test_the_cli_and_the_form_build_the_same_request(tmp_path, monkeypatch, captured):
    home = build_home(tmp_path / "home", full=True)
    monkeypatch.setenv("ONEGC_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text("print('hi')\n")
    out = CliRunner().invoke(main, ["run", "t6", "--agent", "command", "--budget", "90s", "--repeats", "2", "--detach",
                                    "--", "python", "agent.py"])
    assert out.exit_code == 0, out.output
    app = make_app(home, live=False, show_clock=False)
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        form = app.screen
        form.query_one("#task").value = "t6"
        form.query_one("#agent").value = "command"
        await pilot.pause()
        for field, value in {"budget": "90s", "repeats": "2", "command": "python agent.py"}.items():
            form.query_one(f"#{field}", Input).value = value
        await pilot.click("#start")
        await app.workers.wait_for_complete()
        await pilot.pause()
    cli, form_request = captured
    assert cli == form_request
    assert cli.budget_s == 90 and cli.repeats == 2 and cli.command == ("python", str(tmp_path / "agent.py"))


def test_the_form_shows_the_requests_default_budget(tmp_path):
    from onegc_tui.app.screens.newsession import _budget_text

    assert _budget_text("t6_etth1") == "40m" and _budget_text("t2") == f"{default_budget_s(get_task('t2')) / 60:g}m"


def test_a_baseline_passes_every_check_of_any_start_the_network_policy_included(tmp_path, monkeypatch):
    """`onegc baseline` skipped the network check: a machine where its `none` policy cannot be made
    failed each session at its start instead of refusing in one line, before any folder."""
    from runner.launch import network_choice
    from runner.launch.baseline import start_baseline_sessions

    checked = []
    monkeypatch.setattr(start, "ensure_prepared", lambda spec, home: checked.append(("prepared", spec.id)))
    monkeypatch.setattr(start, "ensure_sandbox", lambda sealed, hint=None: checked.append(("sandbox", sealed)))

    def no_namespace(policy, *hint):
        checked.append(("network", policy))
        raise OnegcError(f"network policy '{policy}' needs a network namespace, and none can be made here")

    monkeypatch.setattr(network_choice, "ensure_network", no_namespace)
    home = tmp_path / "home"
    with pytest.raises(OnegcError, match="network policy 'none' needs a network namespace"):
        start_baseline_sessions(home, get_task("t6"), 2, None, None, {})
    assert checked == [("prepared", "t6_etth1"), ("sandbox", True), ("network", "none")]
    assert not runs_dir(home).exists() or not list(runs_dir(home).iterdir())


def test_a_baseline_request_is_the_command_agent_under_the_baseline_study():
    from runner.integrity.selection_gap import BASELINE_STUDY
    from runner.launch.baseline import baseline_request

    req = baseline_request(get_task("t6"), 3, None, None, {"EPOCHS": 2})
    assert (req.agent, req.study, req.repeats, req.network) == ("command", BASELINE_STUDY, 3, "none")
    assert req.budget_s == default_budget_s(get_task("t6"))  # the same default as any start


def test_a_study_builds_its_sessions_from_one_request_per_agent_and_task(tmp_path):
    from runner.launch.study import load_study, plan, requests

    path = tmp_path / "s.toml"
    path.write_text('name = "s"\ntasks = ["t0", "t6"]\nrepeats = 2\n[budget]\ntasks = {t6 = "90s"}\n'
                    '[[agents]]\nadapter = "scripted"\n')
    study = load_study(path)
    cells = requests(study)
    assert cells[("t6", "scripted")].budget_s == 90
    assert cells[("t0", "scripted")].budget_s == default_budget_s(get_task("t0"))  # the request's default
    for p in plan(study):
        mine = cells[(p.task, p.agent)].config(p.session_id, p.repeat, None)
        assert p.config.model_dump(exclude={"created"}) == mine.model_dump(exclude={"created"})


def test_the_demo_builds_its_request_like_any_start(tmp_path, monkeypatch):
    import onegc_tui.cli.main as cli
    from runner.launch import network_choice
    from runner.sandbox import bwrap
    from runner.wire.paths import SessionPaths

    captured = []
    monkeypatch.setattr(start, "start_sessions", lambda home, request: captured.append(request) or
                        [SessionPaths(runs_dir(home) / "demo")])
    monkeypatch.setenv("ONEGC_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cli, "_watch", lambda home, sessions, plain, task: 0)  # followed: scored
    monkeypatch.setattr(network_choice, "demo_network", lambda: ("none", None))
    monkeypatch.setattr(bwrap, "status", lambda: bwrap.SandboxStatus(ok=True, detail="", bwrap="bwrap"))
    out = CliRunner().invoke(main, ["demo", "--budget", "90s", "--plain"])
    assert out.exit_code == 0, out.output
    [request] = captured
    assert request == make_request(task="t0", agent="scripted", budget_s=90, pace_s=cli.DEMO_PACE_S, network="none")
