"""Real agent CLIs end to end: Claude Code, Codex CLI and OpenCode under a real runner, each
against a scripted model server on loopback (tests/agents/fake_model_server.py).

Per CLI, two sessions run side by side (the second mostly sleeps, so the pair costs little more
than one): in the first the model asks for one shell command that writes a tiny training script
and runs it (it saves a checkpoint of the demo model), then answers; the session must end
``completed`` with the transcript in SQLite, the checkpoint scored and the tokens counted. In the
second the command sleeps past the budget: the session must end ``budget_exhausted`` with no
process of its tree left. One CLI (the first installed of Codex, Claude Code, OpenCode) is also
paused while its tool sleeps, every process of its tree must hold still, and then aborted.

The CLIs come from ``make agents`` (or PATH); a CLI that is not installed is skipped (the server
itself is still checked, in the last test). Nothing leaves the machine: the endpoints point at
the fake server, and so does HTTP(S)_PROXY (which all three CLIs honour), so a request for any
other host becomes a recorded "stray" that fails the test.
"""

from __future__ import annotations

import json
import math
import shutil
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import psutil
import pytest

from onegc_tui.ingest import Ingester
from onegc_tui.store import Store
from runner.agents import credentials
from runner.agents.locate import CLIS, find_cli
from runner.config import SessionPaths
from runner.control import request as control
from tests.agents.fake_model_server import FakeModelServer, Shell, Text
from tests.conftest import events, start_session, tree_pids, wait_event, wait_for

pytestmark = pytest.mark.slow

MODELS = {"claude-code": "claude-sonnet-4-5", "codex": "gpt-5", "opencode": "gpt-5"}  # ids the CLIs accept
PAUSE_AGENT_ORDER = ("codex", "claude-code", "opencode")  # fastest to start first
# The tool call writes the run script itself (the runner builds the workspace) and runs it with
# the `python` on PATH, as an agent would: the runner puts its own (with torch) first.
TRAIN = """cat > run_1.py <<'EOF'
import prepare
from train import build_model

if __name__ == "__main__":
    config = {"hidden": 16}
    prepare.save_checkpoint(build_model(config), config, "e2e")
    print("saved checkpoint e2e")
EOF
python run_1.py"""
SLEEP = """python -c 'import time; open("sleep.started", "w").close(); time.sleep(600)'"""
SLEEP_MARK = "time.sleep(600)"
# The sleeping session's budget: enough to reach the tool on a busy 2-core box (OpenCode's start
# takes 10-25 s there, the others' 3-6 s), short because the test waits for all of it.
SLEEP_BUDGET_S = {"claude-code": 20.0, "codex": 20.0, "opencode": 40.0}
GRACE_S = 5.0
DONE_TIMEOUT_S = 240  # the training session: CLI start, torch imports, live and official scoring


@pytest.fixture(scope="module", params=list(MODELS))
def agent(request) -> str:
    """Each CLI in turn (module scope: pytest runs all of one CLI's tests before the next CLI's)."""
    exe = CLIS[request.param][0]
    if find_cli(exe) is None:
        pytest.skip(f"'{exe}' not found: run 'make agents' to test {request.param} end to end")
    return request.param


@dataclass
class Run:
    """One session of a real CLI and the model server it talks to."""

    agent: str
    paths: SessionPaths
    server: FakeModelServer

    def diagnose(self) -> str:
        """What a failed assertion should show: the requests served, the agent's stderr, the runner log."""
        tail = [self.paths.agent_stderr, self.paths.runner_log]
        logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in tail if p.exists())
        return f"\n--- {self.agent} requests\n{self.server.describe()}\n{logs}"

    def ended(self, timeout: float) -> dict:
        try:
            return wait_event(self.paths, "session_ended", timeout=timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}{self.diagnose()}") from None

    def transcript(self) -> list[dict]:
        return [e for e in events(self.paths) if e["type"] == "transcript"]


@pytest.fixture(scope="module")
def e2e_home(tmp_path_factory, demo_data):
    """An ONEGC_HOME with t0 prepared, and an environment with no real credentials in it."""
    with pytest.MonkeyPatch.context() as mp:
        home = tmp_path_factory.mktemp("e2e-real") / "home"
        (home / "data").mkdir(parents=True)
        shutil.copytree(demo_data, home / "data" / "t0_demo")
        mp.setenv("ONEGC_HOME", str(home))
        for var in (*credentials.ALL_CREDENTIAL_VARS, *credentials.USER_CONFIG_VARS):
            mp.delenv(var, raising=False)
        for var in ("NO_PROXY", "no_proxy"):
            mp.setenv(var, "127.0.0.1,localhost")
        yield home, mp


@pytest.fixture(scope="module")
def launch(e2e_home):
    """``launch(agent, name, turns, **session fields)``: a fake server and a runner pointed at it."""
    home, mp = e2e_home
    runs: list[Run] = []

    def start(agent: str, name: str, turns: list, **fields) -> Run:
        server = FakeModelServer(turns).start()
        # the runner copies this environment into the agent's (credentials.agent_env keeps each CLI's own)
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("ANTHROPIC_API_KEY", "sk-ant-e2e")
        mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
        mp.setenv("OPENAI_API_KEY", "sk-e2e")
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            mp.setenv(var, server.url)  # anything for another host lands here as a stray
        mp.setenv("NODE_USE_ENV_PROXY", "1")  # Node's own fetch honours the proxy variables too
        paths = start_session(home, f"{agent}-{name}", agent=agent, model=MODELS[agent], **fields)
        runs.append(Run(agent, paths, server))
        return runs[-1]

    yield start
    for run in runs:  # a failed test must not leave a runner (or its CLI) behind
        if not run.paths.result.exists():
            control(run.paths, "abort", source="test teardown")
    for run in runs:
        try:
            wait_for(run.paths.result.exists, 30, f"{run.paths} to end")
        finally:
            run.server.stop()


@pytest.fixture(scope="module")
def pairs(launch):
    """Per CLI, started on first use: the training session and the over-budget one, side by side."""
    started: dict[str, tuple[Run, Run]] = {}

    def get(agent: str) -> tuple[Run, Run]:
        if agent not in started:
            train = [Shell(TRAIN, "train the demo model"), Text("done")]
            sleep = [Shell(SLEEP, "a long run"), Text("done")]
            trained = launch(agent, "train", train, budget_s=300, grace_s=10)
            slept = launch(agent, "sleep", sleep, budget_s=SLEEP_BUDGET_S[agent], grace_s=GRACE_S)
            started[agent] = (trained, slept)
        return started[agent]

    return get


def sleeping_pids(paths) -> list[int]:
    """The scripted tool's python, once it sleeps (its cwd is the workspace; its shell is left out)."""
    if not (paths.workspace / "sleep.started").exists():
        return []
    found = []
    for pid in tree_pids(paths):
        try:
            cmd = psutil.Process(pid).cmdline()
        except psutil.NoSuchProcess:
            continue
        if cmd and "python" in cmd[0].rsplit("/", 1)[-1] and SLEEP_MARK in " ".join(cmd):
            found.append(pid)
    return found


def assert_no_traffic_elsewhere(run: Run) -> None:
    assert not run.server.stray, f"{run.agent} tried to reach other hosts: {run.server.stray}"
    blocked = [e for e in events(run.paths) if e["type"] == "warning" and e["code"] == "network_blocked"]
    assert not blocked, f"{run.agent}: the network policy blocked {[e['message'] for e in blocked]}"


def test_session_runs_a_training_script_scores_its_checkpoint_and_counts_tokens(agent, pairs, e2e_home):
    run, _ = pairs(agent)
    ended = run.ended(DONE_TIMEOUT_S)
    assert ended["reason"] == "completed", f"{ended['detail']}{run.diagnose()}"
    assert run.server.turns_served() == [0, 1], run.diagnose()  # the tool call, then the answer after its result

    transcript = run.transcript()
    calls = [e for e in transcript if e["kind"] == "tool_call" and "python run_1.py" in e["text"]]
    assert len(calls) == 1, f"no tool call with the training command in {transcript}"
    results = [e for e in transcript if e["kind"] == "tool_result" and e.get("call_id") == calls[0].get("call_id")]
    assert len(results) == 1, f"no tool result for {calls[0]} in {transcript}"
    assert results[0].get("exit_code") == 0 and "saved checkpoint e2e" in results[0]["text"], results[0]
    assert any(e["kind"] == "text" and e["role"] == "assistant" and e["text"] == "done" for e in transcript)
    assert not [e["text"] for e in transcript if e["kind"] == "raw"]  # the pinned CLI's every line is understood
    result = [e for e in transcript if e["kind"] == "result"][-1]
    assert (result.get("tokens_in"), result.get("tokens_out")) == tuple(run.server.usage.values()), result

    started = [e for e in events(run.paths) if e["type"] == "process" and e["action"] == "started"]
    assert [e["script"] for e in started] == ["run_1.py"]
    agent_started = next(e for e in events(run.paths) if e["type"] == "agent_started")
    assert agent_started["containment"].startswith("bwrap")  # the real CLI ran in its sandbox
    scored = [e for e in events(run.paths) if e["type"] == "checkpoint_scored"]
    live = [e for e in scored if not e.get("official")]
    assert [e["name"] for e in live] == ["e2e-1"] and live[0].get("value") is not None, scored
    assert math.isfinite(live[0]["value"]) and 0.0 <= live[0]["value"] <= 1.0  # val accuracy of a random MLP
    assert ended["score"] is not None and ended["best_checkpoint"] == "e2e-1", ended
    assert json.loads(run.paths.result.read_text())["value"] == ended["score"]
    assert not tree_pids(run.paths)
    assert_no_traffic_elsewhere(run)

    home, _ = e2e_home
    store = Store.open(home)
    try:
        Ingester(home, store).ingest_all()
        row = store.session(run.paths.session_id)
        assert row["state"] == "ended" and row["end_reason"] == "completed" and row["agent"] == agent
        assert (row["tokens_in"], row["tokens_out"]) == tuple(run.server.usage.values()), row  # counted once
        rows = store.transcript(run.paths.session_id)
        assert any(r["kind"] == "tool_call" and "python run_1.py" in r["text"] for r in rows)
        assert any(r["kind"] == "tool_result" and r["exit_code"] == 0 for r in rows)
        scored_rows = store.checkpoints(run.paths.session_id)  # the live score and the official one
        assert [c["value"] is not None for c in scored_rows] == [True, True], scored_rows
    finally:
        store.close()


def test_a_tool_sleeping_past_the_budget_ends_the_session_with_its_whole_tree(agent, pairs):
    _, run = pairs(agent)  # started beside the training session: it may be over already
    budget = SLEEP_BUDGET_S[agent]
    ended = run.ended(budget + GRACE_S + 60)
    assert ended["reason"] == "budget_exhausted", f"{ended['detail']}{run.diagnose()}"
    assert ended["active_s"] < budget + GRACE_S + 3
    assert wait_event(run.paths, "budget", state="expired")
    assert (run.paths.workspace / "sleep.started").exists(), f"the sleeping tool never ran{run.diagnose()}"
    assert run.server.turns_served() == [0], "the tool returned before the deadline: the CLI was not stopped mid-tool"
    assert not tree_pids(run.paths), "a process of the tree (the sleeping tool?) outlived the session"
    assert json.loads(run.paths.result.read_text())["failure"] == "no checkpoint was saved"
    assert_no_traffic_elsewhere(run)


def _cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def test_pause_holds_every_process_of_a_real_cli_still_and_abort_ends_it(launch):
    agent = next((a for a in PAUSE_AGENT_ORDER if find_cli(CLIS[a][0])), None)
    if agent is None:
        pytest.skip("no agent CLI installed: run 'make agents'")
    run = launch(agent, "pause", [Shell(SLEEP, "a long run"), Text("done")], budget_s=300, grace_s=GRACE_S)
    try:
        sleepers = wait_for(lambda: sleeping_pids(run.paths), 90, "the sleeping tool")
    except AssertionError as exc:
        raise AssertionError(f"{exc}{run.diagnose()}") from None
    control(run.paths, "pause", source="test")
    wait_event(run.paths, "budget", state="paused", timeout=15)
    pids = tree_pids(run.paths)
    assert set(sleepers) <= set(pids) and len(pids) >= 3  # unshare, the CLI (and its helpers), the tool
    before = _cpu_seconds(pids)
    time.sleep(1.0)
    assert _cpu_seconds(pids) - before < 0.02, "a process of the tree used CPU while paused"
    for pid in pids:
        status = psutil.Process(pid).status()
        assert status in (psutil.STATUS_STOPPED, psutil.STATUS_DISK_SLEEP, "frozen"), (pid, status)

    t0 = time.monotonic()
    control(run.paths, "abort", source="test")
    ended = run.ended(GRACE_S + 30)
    assert ended["reason"] == "aborted" and ended["paused_s"] > 0.9, ended
    assert time.monotonic() - t0 < GRACE_S + 20
    assert not tree_pids(run.paths)
    assert_no_traffic_elsewhere(run)


def _post(url: str, body: dict, proxy: str | None = None) -> tuple[int, str]:
    handlers = [urllib.request.ProxyHandler({"http": proxy} if proxy else {})]
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.build_opener(*handlers).open(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_fake_server_follows_its_script_in_all_three_protocols():
    """The server alone (no CLI needed): turn choice, tool shapes, usage, strays."""
    with FakeModelServer([Shell("echo hi"), Text("bye")]) as server:
        tool_result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "hi"}]}
        _, first = _post(server.url + "/v1/messages", {"stream": True, "tools": [{"name": "Bash"}], "messages": []})
        _, second = _post(server.url + "/v1/messages", {"stream": True, "tools": [{"name": "Bash"}],
                                                         "messages": [tool_result]})  # fmt: skip
        assert '"name": "Bash"' in first and "echo hi" in first and '"output_tokens": 34' in first
        assert '"text_delta", "text": "bye"' in second

        codex = {"tools": [{"type": "function", "name": "exec_command"}], "stream": True}
        _, call = _post(server.url + "/v1/responses", {**codex, "input": []})
        running = {"type": "function_call_output", "call_id": "c", "output": "Process running with session ID 7\n"}
        _, poll = _post(server.url + "/v1/responses", {**codex, "input": [running]})
        done = {"type": "function_call_output", "call_id": "c", "output": "Process exited with code 0\nhi\n"}
        _, answer = _post(server.url + "/v1/responses", {**codex, "input": [running, done]})
        assert '\\"cmd\\": \\"echo hi\\"' in call and "response.completed" in call
        assert "write_stdin" in poll and '\\"session_id\\": 7' in poll
        assert '"text": "bye"' in answer

        bash = {"stream": True, "tools": [{"type": "function", "function": {"name": "bash"}}]}
        _, title = _post(server.url + "/v1/chat/completions", {"stream": True, "messages": [{"role": "user"}]})
        _, chat = _post(server.url + "/v1/chat/completions", {**bash, "messages": [{"role": "user"}]})
        assert '"tool_calls"' in chat and "echo hi" in chat and chat.rstrip().endswith("data: [DONE]")
        assert "E2E session" in title  # a side request: no tools, not part of the script

        assert server.turns_served() == [0, 1, 0, 1, 0]  # the poll waits on turn 0
        assert server.usage == {"input_tokens": 6 * 1200, "output_tokens": 6 * 34}
        code, _ = _post("http://api.example.com/v1/messages", {}, proxy=server.url)
        assert code == 403 and server.stray == ["POST http://api.example.com/v1/messages"]


REACH_OUT = """python -c "
import socket
try:
    s = socket.create_connection(('10.9.9.9', 80), timeout=5)
    s.sendall(b'GET / HTTP/1.0\\\\r\\\\n\\\\r\\\\n')
    print('REACHED' if s.recv(64) else 'blocked: reset')
except OSError as exc:
    print('blocked:', exc)
" """


def test_api_only_lets_the_model_through_and_records_a_blocked_tool_call(launch):
    """Policy api-only: the CLI keeps talking to its model endpoint while its tool's connection to
    any other address fails and becomes a network_blocked warning."""
    from runner.network import namespaces_available

    ok, why = namespaces_available()
    if not ok:
        pytest.skip(f"network namespaces unavailable here: {why}")
    agent = next((a for a in ("claude-code", "codex") if find_cli(CLIS[a][0])), None)
    if agent is None:
        pytest.skip("neither claude nor codex installed: run 'make agents'")
    run = launch(agent, "apionly", [Shell(REACH_OUT, "try the internet"), Text("done")], budget_s=180, grace_s=5,
                 network="api-only")
    ended = run.ended(DONE_TIMEOUT_S)
    assert ended["reason"] == "completed", f"{ended['detail']}{run.diagnose()}"
    assert run.server.turns_served() == [0, 1], run.diagnose()  # the model answered after the tool ran
    results = [e for e in run.transcript() if e["kind"] == "tool_result"]
    assert results and "blocked" in results[0]["text"] and "REACHED" not in results[0]["text"], results
    blocked = [e["message"] for e in events(run.paths) if e["type"] == "warning" and e["code"] == "network_blocked"]
    assert any("10.9.9.9:80" in m for m in blocked), blocked
    contract = next(e for e in events(run.paths) if e["type"] == "session_started")["contract"]
    assert contract["network"] == "api-only" and contract["network_allowed"], contract
