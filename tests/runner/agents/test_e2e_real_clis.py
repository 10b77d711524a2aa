"""Real agent CLIs end to end: Claude Code, Codex CLI and OpenCode under a real runner, each
against a scripted model server on loopback (tests/runner/agents/fake_model_server.py).

Every installed CLI is tested once per install: the pinned one (``make agents`` -> ``.agents/``)
and the newest (``make agents ... AGENTS_PREFIX=.agents-latest``) when it is another version;
``ONEGC_E2E_PREFIXES`` (colon-separated) adds other installs, e.g. an older CLI. Per CLI and
install, five sessions run side by side (most of them wait, so five cost little more than one):

- ``train``: one shell command writes a tiny training script and runs it (it saves a checkpoint
  of the demo model), then runs an instant script three times; ends ``completed`` with the
  transcript in SQLite, the checkpoint scored and exactly 4 scripts counted;
- ``background``: the training runs in the background (Claude Code's ``run_in_background``; a
  ``nohup ... &`` and a wait loop for the others) and the model answers before it ends;
- ``midturn``: the command sleeps past the budget: ``budget_exhausted`` with no process of the
  tree left, and the tokens of the response that asked for it still counted;
- ``http500``: the endpoint answers every request with HTTP 500; ``unreachable``: nothing
  listens on its port. Both under the ``api-only`` network policy: the gate's warning and the end
  detail name the endpoint and the failure, and a stall alert says no model response came.

In every session the tokens stored in SQLite are the ones the server handed out, response by
response (every response reports different figures). One CLI (the first installed of Codex,
Claude Code, OpenCode) is also paused while its tool sleeps, every process of its tree must hold
still, and then aborted.

A CLI that is not installed is skipped (the server itself is still checked). Nothing leaves the
machine: the endpoints point at the fake server, and so does HTTP(S)_PROXY (which all three CLIs
honour), so a request for any other host becomes a recorded "stray" that fails the test.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from runner.agents import credentials
from runner.agents.locate import CLIS, REPO_ROOT, cli_version, find_cli
from runner.agents.pricing import load_prices
from runner.wire.control import request as control
from runner.wire.paths import SessionPaths
from tests.helpers import cpu_seconds, events, slack, start_session, tree_pids, wait_event, wait_for
from tests.runner.agents.fake_model_server import FakeModelServer, Shell, Text, Usage

pytestmark = pytest.mark.slow

MODELS = {"claude-code": "claude-sonnet-4-5", "codex": "gpt-5", "opencode": "gpt-5"}  # ids the CLIs accept
PAUSE_AGENT_ORDER = ("codex", "claude-code", "opencode")  # fastest to start first
PINNED, LATEST = REPO_ROOT / ".agents", REPO_ROOT / ".agents-latest"
# The tool call writes the run scripts itself (the runner builds the workspace) and runs them with
# the `python` on PATH, as an agent would: the runner puts its own (with torch) first.
WRITE_RUN_1 = """cat > run_1.py <<'EOF'
import sys
import time

import prepare
from train import build_model

if __name__ == "__main__":
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
    config = {"hidden": 16}
    prepare.save_checkpoint(build_model(config), config, "e2e")
    print("saved checkpoint e2e")
EOF
"""
TRAIN = WRITE_RUN_1 + """python run_1.py
echo 'print("quick")' > run_2.py
for i in 1 2 3; do python run_2.py; done"""
TRAIN_SCRIPTS = ["run_1.py", "run_2.py", "run_2.py", "run_2.py"]  # the three instant ones each count
BACKGROUND_S = 6  # the background training sleeps this long before it saves
BG_CLAUDE = WRITE_RUN_1 + f"python run_1.py {BACKGROUND_S}"  # asked with run_in_background
# Codex ends a command's whole process group the moment its shell exits, so a run started with
# `setsid ... &` dies whenever the shell exits before setsid() has run in the child (70 of 100
# did). The run writes its pid only after setsid(), in its new session, and the shell returns only
# once that file is there: then the group kill cannot reach it (docs/agents.md).
BG_START = WRITE_RUN_1 + (
    f"setsid sh -c 'echo $$ > train.pid; exec python run_1.py {BACKGROUND_S}' > train.log 2>&1 < /dev/null &\n"
    "for i in $(seq 600); do [ -s train.pid ] && break; sleep 0.1; done; echo started $(cat train.pid)")
# until the run has ended (its process gone), at most 240 s
BG_WAIT = ("for i in $(seq 240); do kill -0 $(cat train.pid) 2>/dev/null || break; sleep 1; done; "
           "cat train.log; ls checkpoints")
SLEEP = """python -c 'import time; open("sleep.started", "w").close(); time.sleep(600)'"""
SLEEP_MARK = "time.sleep(600)"
# The sleeping and failing sessions' budgets: enough to reach the tool (or the first request) on a
# busy 2-core box with five sealed sessions starting at once: OpenCode's first model request comes
# 30-50 s after its start there, the others' after 3-10 s.
SLEEP_BUDGET_S = {"claude-code": 30.0, "codex": 30.0, "opencode": 90.0}
FAIL_BUDGET_S = {"claude-code": 30.0, "codex": 35.0, "opencode": 90.0}  # Codex gives up by itself after 5 retries
STALL_S = 8.0  # the failing sessions' stall alert
GRACE_S = 5.0
DONE_TIMEOUT_S = 300  # a completed session: CLI start beside four others, torch imports, live and official scoring


@dataclass(frozen=True)
class Install:
    """One installed version of one agent CLI."""

    agent: str
    label: str  # pinned, latest, or an extra prefix's folder name
    prefix: Path

    @property
    def exe(self) -> str | None:
        candidate = self.prefix / "node_modules" / ".bin" / CLIS[self.agent][0]
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def installs() -> list[Install]:
    extra = [Path(p) for p in os.environ.get("ONEGC_E2E_PREFIXES", "").split(os.pathsep) if p]
    prefixes = [("pinned", PINNED), ("latest", LATEST), *((p.name, p.resolve()) for p in extra)]
    return [Install(agent, label, prefix) for agent in MODELS for label, prefix in prefixes]


@pytest.fixture(scope="module", params=installs(), ids=lambda i: f"{i.agent}-{i.label}")
def install(request) -> Install:
    """Each CLI install in turn (module scope: all of one install's tests run before the next's)."""
    inst: Install = request.param
    if inst.exe is None:
        latest = " (or AGENTS_PREFIX=.agents-latest with the *_VERSION=latest variables)" if inst.label == "latest" else ""
        pytest.skip(f"{inst.agent} is not installed in {inst.prefix}: run 'make agents' to test it end to end{latest}")
    if inst.label != "pinned":
        pinned = Install(inst.agent, "pinned", PINNED)
        version = cli_version(inst.exe)
        if pinned.exe and cli_version(pinned.exe) == version:
            pytest.skip(f"{inst.agent} in {inst.prefix} is the pinned version ({version}): tested once")
    return inst


@dataclass
class Run:
    """One session of a real CLI and the model server it talks to."""

    agent: str
    paths: SessionPaths
    server: FakeModelServer
    endpoint: str  # host:port the CLI was pointed at

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

    def warnings(self, code: str) -> list[str]:
        return [e["message"] for e in events(self.paths) if e["type"] == "warning" and e["code"] == code]

    def scripts(self) -> list[str]:
        return [e["script"] for e in events(self.paths) if e["type"] == "process" and e["action"] == "started"]


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


def dead_port() -> int:
    """A loopback port with nothing listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def launch(e2e_home):
    """``launch(agent, name, turns, prefix, fail_status=, endpoint=, **session fields)``: a fake
    server and a runner pointed at it (or at ``endpoint``, e.g. a dead port)."""
    home, mp = e2e_home
    runs: list[Run] = []
    outside = {REPO_ROOT, Path.cwd()}  # an agent's files must land in its workspace, never here
    before = {f for d in outside for f in d.glob("run_*.py")}

    def start(agent: str, name: str, turns: list, prefix: Path = PINNED, fail_status: int | None = None,
              endpoint: str | None = None, **fields) -> Run:  # fmt: skip
        server = FakeModelServer(turns, fail_status=fail_status).start()
        url = endpoint or server.url
        # the runner copies this environment into the agent's (credentials.agent_env keeps each CLI's own)
        mp.setenv("ONEGC_AGENTS_PREFIX", str(prefix))
        mp.setenv("ANTHROPIC_BASE_URL", url)
        mp.setenv("ANTHROPIC_API_KEY", "sk-ant-e2e")
        mp.setenv("OPENAI_BASE_URL", url + "/v1")
        mp.setenv("OPENAI_API_KEY", "sk-e2e")
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            mp.setenv(var, server.url)  # anything for another host lands here as a stray
        mp.setenv("NODE_USE_ENV_PROXY", "1")  # Node's own fetch honours the proxy variables too
        paths = start_session(home, f"{agent}-{prefix.name.lstrip('.')}-{name}", agent=agent, model=MODELS[agent],
                              **fields)  # fmt: skip
        runs.append(Run(agent, paths, server, url.split("//", 1)[1]))
        return runs[-1]

    yield start
    for run in runs:  # a failed test must not leave a runner (or its CLI) behind
        if not run.paths.result.exists():
            control(run.paths, "abort", source="test teardown")
    for run in runs:
        try:
            wait_for(run.paths.result.exists, 60, f"{run.paths} to end")
        finally:
            run.server.stop()
    strays = {f for d in outside for f in d.glob("run_*.py")} - before
    assert not strays, f"an agent wrote outside its workspace: {sorted(strays)}"


@pytest.fixture(scope="module")
def sessions(launch):
    """Per CLI install, started on first use: its five sessions, side by side."""
    started: dict[Install, dict[str, Run]] = {}

    def get(inst: Install) -> dict[str, Run]:
        if inst not in started:
            a, p = inst.agent, inst.prefix
            stretch = slack()  # five CLIs start at once: on a loaded machine one may not reach its tool in 30 s
            if a == "claude-code":
                background = [Shell(BG_CLAUDE, "train in the background", background=True), Text("done")]
            else:
                background = [Shell(BG_START, "train in the background"), Shell(BG_WAIT, "wait for it"), Text("done")]
            failing = dict(budget_s=FAIL_BUDGET_S[a] * stretch, grace_s=GRACE_S, network="api-only", stall_s=STALL_S)
            started[inst] = {
                "train": launch(a, "train", [Shell(TRAIN, "train the demo model"), Text("done")], p,
                                budget_s=300, grace_s=10),
                "background": launch(a, "background", background, p, budget_s=300, grace_s=10),
                "midturn": launch(a, "midturn", [Shell(SLEEP, "a long run"), Text("done")], p,
                                  budget_s=SLEEP_BUDGET_S[a] * stretch, grace_s=GRACE_S),
                "http500": launch(a, "http500", [Text("never served")], p, fail_status=500, **failing),
                "unreachable": launch(a, "unreachable", [Text("never served")], p,
                                      endpoint=f"http://127.0.0.1:{dead_port()}", **failing),
            }  # fmt: skip
        return started[inst]

    return get


def stored(run: Run, home: Path) -> dict:
    """The session's summary row in SQLite, everything ingested."""
    store = Store.open(home)
    try:
        Ingester(home, store).ingest_all()
        return dict(store.session(run.paths.session_id))
    finally:
        store.close()


NOTHING_MISSING = Usage(0, 0)


def assert_tokens_as_handed_out(run: Run, row: dict, missing: Usage = NOTHING_MISSING) -> None:
    """The stored tokens are what the server's responses reported (less ``missing``: what the CLI
    itself never reported), the live running sum is the same, and the cost is the CLI's own
    (Claude Code) or onegc's price of those tokens."""
    served = run.server.handed_out()
    expect = Usage(served.tokens_in - missing.tokens_in, served.tokens_out - missing.tokens_out,
                   served.cache_read - missing.cache_read, served.cache_write - missing.cache_write)  # fmt: skip
    got = Usage(row["tokens_in"], row["tokens_out"], row["cache_read"], row["cache_write"])
    assert got == expect, f"stored {got}, the server handed out {served}{run.diagnose()}"
    if run.agent == "claude-code":
        results = [e for e in run.transcript() if e["kind"] == "result" and e.get("cost_usd") is not None]
        assert results and row["cost_usd"] == pytest.approx(results[-1]["cost_usd"]), row
    else:
        price = load_prices().price(MODELS[run.agent])
        fresh = expect.tokens_in - expect.cache_read - expect.cache_write
        cost = (fresh * price.input + expect.tokens_out * price.output + expect.cache_read * price.cached_input) / 1e6
        assert row["cost_usd"] == pytest.approx(cost), row
    live = [e for e in run.transcript() if e["kind"] == "usage"]
    assert (sum(e.get("tokens_in", 0) for e in live), sum(e.get("tokens_out", 0) for e in live)) == (
        expect.tokens_in, expect.tokens_out)  # fmt: skip


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
    blocked = run.warnings("network_blocked")
    assert not blocked, f"{run.agent}: the network policy blocked {blocked}"


def test_session_runs_a_training_script_scores_its_checkpoint_and_counts_everything(install, sessions, e2e_home):
    run = sessions(install)["train"]
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
    assert not [e["text"] for e in transcript if e["kind"] == "raw"]  # every line of this CLI is understood
    assert run.scripts() == TRAIN_SCRIPTS  # the three instant launches included

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
    row = stored(run, home)
    assert row["state"] == "ended" and row["end_reason"] == "completed" and row["agent"] == install.agent
    assert row["scripts_launched"] == len(TRAIN_SCRIPTS) and row["end_detail"] == "the agent finished", row
    assert_tokens_as_handed_out(run, row)
    store = Store.open(home)
    try:
        rows = store.transcript(run.paths.session_id)
        assert any(r["kind"] == "tool_call" and "python run_1.py" in r["text"] for r in rows)
        assert any(r["kind"] == "tool_result" and r["exit_code"] == 0 for r in rows)
        scored_rows = store.checkpoints(run.paths.session_id)  # the live score and the official one
        assert [c["value"] is not None for c in scored_rows] == [True, True], scored_rows
    finally:
        store.close()


def test_a_background_training_run_is_scored_or_its_end_explained(install, sessions, e2e_home):
    """Claude Code 2.1.332 waits for its run_in_background task and answers again when it ends;
    the others wait with a loop. A CLI that kills its background tasks when it exits (Claude Code
    2.1.197) must say so in the end detail instead of a silent "completed, no score"."""
    run = sessions(install)["background"]
    ended = run.ended(DONE_TIMEOUT_S)
    assert ended["reason"] == "completed", f"{ended['detail']}{run.diagnose()}"
    assert run.scripts() == ["run_1.py"]
    assert not [e["text"] for e in run.transcript() if e["kind"] == "raw"]
    if ended.get("score") is None:
        assert "background task 'train in the background' was still running" in ended["detail"], ended
    else:
        assert ended["best_checkpoint"] == "e2e-1" and ended["detail"] == "the agent finished", ended
    assert not tree_pids(run.paths)
    assert_no_traffic_elsewhere(run)
    home, _ = e2e_home
    assert_tokens_as_handed_out(run, stored(run, home))


def test_a_budget_stop_mid_turn_ends_the_whole_tree_and_keeps_the_tokens(install, sessions, e2e_home):
    run = sessions(install)["midturn"]  # started beside the training session: it may be over already
    budget = run.paths.read_config().budget_s  # SLEEP_BUDGET_S, stretched for the load at launch
    ended = run.ended(budget + GRACE_S + 90)
    assert ended["reason"] == "budget_exhausted", f"{ended['detail']}{run.diagnose()}"
    assert ended["active_s"] < budget + GRACE_S + 3
    assert wait_event(run.paths, "budget", state="expired")
    assert (run.paths.workspace / "sleep.started").exists(), f"the sleeping tool never ran{run.diagnose()}"
    turns = run.server.turns_served()
    assert 0 in turns and 1 not in turns, f"the tool returned before the deadline: {turns}"
    assert not tree_pids(run.paths), "a process of the tree (the sleeping tool?) outlived the session"
    assert json.loads(run.paths.result.read_text())["failure"] == "no checkpoint was saved"
    assert_no_traffic_elsewhere(run)
    home, _ = e2e_home
    missing = Usage(0, 0)
    if install.agent == "opencode":  # it reports a step's usage only once the step's tools end (docs/agents.md)
        assert "OpenCode was stopped inside a step" in ended["detail"], ended
        missing = [r.usage for r in run.server.requests if r.usage is not None and r.turn == 0][-1]
    assert_tokens_as_handed_out(run, stored(run, home), missing)


@pytest.mark.parametrize("case", ["http500", "unreachable"])
def test_a_failing_endpoint_is_named_within_seconds_and_in_the_end_detail(install, sessions, e2e_home, case):
    run = sessions(install)[case]
    ended = run.ended(run.paths.read_config().budget_s + GRACE_S + 90)
    assert ended["reason"] in ("budget_exhausted", "agent_failed"), f"{ended['detail']}{run.diagnose()}"
    # the gate counts what it forwards (issue 28): HTTP requests it saw, connections that never got through
    what, why, unit = (("failing", "HTTP 500", "request") if case == "http500"
                       else ("unreachable", "connection refused", "connection"))
    named = f"model endpoint {what}: {run.endpoint}"
    warned = run.warnings("endpoint")
    assert warned and warned[0] == f"{named} (1 {unit}: {why})", warned  # reported at the first failure
    assert named in ended["detail"] and why in ended["detail"], ended["detail"]
    assert "Reading additional input" not in ended["detail"]  # never a start-up banner
    stall = run.warnings("stall")
    assert stall and stall[0].startswith("no model response for"), f"no stall alert{run.diagnose()}"
    if case == "http500":
        assert run.server.failed_attempts() >= 1
    home, _ = e2e_home
    row = stored(run, home)
    assert (row["tokens_in"], row["tokens_out"], row["cost_usd"]) == (0, 0, 0.0), row  # nothing was served
    assert row["end_detail"] == ended["detail"]
    assert not run.server.stray


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
    before = cpu_seconds(pids)
    time.sleep(1.0)
    assert cpu_seconds(pids) - before < 0.02, "a process of the tree used CPU while paused"
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
        assert '"name": "Bash"' in first and "echo hi" in first and '"output_tokens": 30' in first
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
        served = [r.usage for r in server.requests if r.usage is not None]
        assert len(served) == 7 and len(set(served)) == 7  # no two responses report the same figures
        assert server.handed_out() == sum(served, Usage(0, 0)) and server.handed_out().tokens_out == sum(range(30, 37))
        assert served[0] == Usage(1000 + 500 + 40, 30, 500, 40)  # Anthropic: fresh + cache read + cache write
        code, _ = _post("http://api.example.com/v1/messages", {}, proxy=server.url)
        assert code == 403 and server.stray == ["POST http://api.example.com/v1/messages"]
    with FakeModelServer([Text("x")], fail_status=500) as down:
        code, body = _post(down.url + "/v1/chat/completions", {"stream": True, "messages": []})
        assert code == 500 and "mock failure 500" in body
        assert down.failed_attempts() == 1 and down.handed_out() == Usage(0, 0)


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
    from runner.sandbox.network import namespaces_available

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
