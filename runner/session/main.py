"""The runner: one process per session (README "How it works").

    python -m runner.session RUNS/<session_id>

reads ``session.json``, builds the workspace, starts the agent as a contained process tree on
its GPU, enforces the budget, samples the GPU, scores checkpoints as they appear, applies
control requests from ``control.jsonl``, and finally writes ``result.json`` and
``session_ended``. Everything it learns goes to ``events.jsonl``; it never talks to a UI.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path

import psutil

from runner import HARNESS_VERSION
from runner.agents import LaunchContext, get_adapter
from runner.agents.base import AgentAdapter
from runner.agents.endpoints import allowed_endpoints
from runner.agents.item import raw_item
from runner.agents.open_tools import OpenTools
from runner.agents.prompt import standard_prompt
from runner.errors import DiskFull, is_no_space
from runner.sandbox import bwrap as sandbox
from runner.sandbox.caps import CapGroup, default_caps
from runner.sandbox.execlog import ExecLog, Launch
from runner.sandbox.network import NetworkSandbox, NetworkUnavailable
from runner.sandbox.proctree import ProcessTree, start_tree
from runner.scoring import canaries, code_scan, selection_gap, unofficial
from runner.scoring.answer_check import INVALID_ANSWER
from runner.scoring.checkpoints import DISCOVERY_SLACK_S, CheckpointWatcher, FoundCheckpoint, ScoreQueue
from runner.scoring.official import SELECTION, WINDOW_S, Candidate, Evaluation, from_live_scores, select
from runner.scoring.scorer import SELECTION_SPLIT, Score, SealedScorer, TaskJudge, WorkerPlan, self_report_flag
from runner.session import agent_env, contention
from runner.session.budget import BudgetClock
from runner.session.contention import ContentionWatch
from runner.session.cost_limit import END_REASON as COST_LIMIT
from runner.session.cost_limit import CostMeter
from runner.session.diskguard import DiskGuard
from runner.session.gpu import SAMPLE_PERIOD_S, GpuSampler, NoGpu, visible_indices
from runner.session.outcome import end_detail, endpoint_problem
from runner.session.stall import StallWatch, tool_pids
from runner.session.workspace import build_workspace, write_deadline
from runner.wire import verdicts
from runner.wire.coalesce import WarningFolder
from runner.wire.jsonl import EventWriter, JsonlTail, RawLog
from runner.wire.liveness import RunnerLock, main_with_lock
from runner.wire.paths import SessionPaths, data_root
from tasks import get_task

TICK_S = 0.2  # main loop period: control requests are applied within this
HEARTBEAT_S = 5.0
PROCESS_SCAN_S = 1.0
STDERR_TAIL_LINES = 50  # kept in memory for the failure message; all of it is on disk
LIVE_SCORE_DRAIN_S = 60.0  # after the agent stops, wait this long for live scores in flight
MAX_FALLBACK = 10  # when the val-best's official evaluation fails, this many more of the ranking are tried


class Session:
    def __init__(self, paths: SessionPaths, lock: RunnerLock | None = None):
        self.paths = paths
        self.lock = lock  # the runner's claim on its folder (runner/wire/liveness.py)
        self.config = paths.read_config()
        self.spec = get_task(self.config.task)
        self.clock = BudgetClock(self.config.budget_s)
        self.guard = DiskGuard(paths.root)  # room to end the session if the disk fills up
        self.events = EventWriter(paths.events, self.config.session_id, fold=WarningFolder(),
                                  on_no_space=self.guard.trip)
        self.adapter: AgentAdapter = get_adapter(self.config.agent)
        self.tree: ProcessTree | None = None
        self.caps: CapGroup | None = None  # the agent tree's memory and process caps (runner/sandbox/caps.py)
        self.open_tools = OpenTools()  # tool calls without a result yet (runner/agents/open_tools.py)
        self.stop_reason: tuple[str, str] | None = None  # (reason, detail) once decided
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.found: dict[str, FoundCheckpoint] = {}
        self.found_at: dict[str, float] = {}
        self.live: dict[str, Score] = {}
        self.selected_val: float | None = None  # the official checkpoint's validation score
        self.val_gap: selection_gap.GapCheck | None = None  # its val-test gap check (T4-T6)
        self.contention: ContentionWatch | None = None  # runner/session/contention.py, from the GPU's opening on
        self.pauses = 0  # operator pauses (for the conditions record)
        self.conditions: dict | None = None  # the conditions record, at the end
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._known_procs: dict[int, tuple[str, str]] = {}
        self._control = JsonlTail(paths.control)
        self._signal_stop: str | None = None
        self.net: NetworkSandbox | None = None
        self.gpu_info: list[dict] = []
        self.endpoints = allowed_endpoints(self.config.agent, os.environ, self.config.model)
        # every python the agent starts through PATH (in the sandbox its folder is under /run/onegc)
        self.launches = ExecLog(paths.root / "exec", sandbox.INSIDE / "exec" if self.config.sealed else None)
        self.stall = StallWatch(self.config.stall_s)
        self.cost = CostMeter(self.config.cost_limit_usd)  # --cost-limit (runner/session/cost_limit.py)
        self._cost_warned = False
        self.agent_version = self.adapter.version()  # once: `--version` of a Node CLI takes seconds

    # ------------------------------------------------------------------ lifecycle
    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self.began = time.time()  # nothing in checkpoints/ may be older: the runner makes it empty
        # the sandbox probe (a real sandbox, tens of ms) runs while the workspace and network are made
        probe = threading.Thread(target=lambda: (sandbox.status(), agent_env.freeze()), name="sandbox-probe", daemon=True)
        probe.start()
        try:
            data = data_root(self.paths.root.parent.parent) / self.spec.id
            marks = canaries.session_judge(self.spec.id, self.spec.scored_split, self.paths.root, data, self.config.canaries)
            build_workspace(self.spec, self.paths.workspace, data.parent, canary_key=marks.key if marks else None)
            self.judge = TaskJudge(self.spec, data)
            self.judge.canaries = marks
            # set up before the clock starts: the policy's start-up is not the agent's budget
            self.net = NetworkSandbox(self.config.network, self.endpoints, self.paths.root, self._on_blocked,
                                      self._on_endpoint)
            self.net.start()
            probe.join()
            (self.paths.root / "agent_env.txt").write_text("\n".join(agent_env.freeze()) + "\n")
            if self.config.sealed:
                ready = sandbox.status()
                if not ready.ok:
                    raise sandbox.SandboxError(f"no sandbox for the agent: {ready.detail}")
        except Exception as exc:  # data not prepared, no namespaces for the policy, no room, ...
            self.net = None
            if is_no_space(exc):
                self.guard.trip(exc)
            if self.guard.full:
                self._make_room()  # nothing runs yet that could take it
            why = self.guard.reason if self.guard.full else str(exc)
            self._emit_start([])
            code = ("disk_full" if self.guard.full else "network" if isinstance(exc, NetworkUnavailable) else
                    "sandbox" if isinstance(exc, sandbox.SandboxError) else "workspace")
            self.events.emit("warning", code=code, message=why)
            self._write_result("harness_error", why, rows=[], best=None, failure=why, found=0)
            self._end("harness_error", why)
            return 2
        sampler, self.gpu_info, gpu_problem = self._open_gpu()
        self.caps = CapGroup(self.config.session_id, default_caps(self.config.memory_bytes, self.config.max_processes))
        self.contention = ContentionWatch(sampler.nvml if sampler else None, sampler.handles if sampler else [],
                                          self._own_pids, self.paths.root.parent, self.config.session_id)
        self.contention.start()  # before the agent: memory already in use, processes already there
        self._emit_start(self.gpu_info)
        for note in self.net.notes:
            self.events.emit("warning", code="network", message=note)
        threads = []
        watcher = scorer_q = live = None
        try:
            self.clock.start()
            write_deadline(self.paths.workspace, self.clock.deadline())
            self.events.emit("budget", state="running", remaining_s=self.clock.remaining_s(), deadline=self.clock.deadline())
            if gpu_problem:
                self.events.emit("warning", code="no_gpu", message=gpu_problem)
            live = self._scorer(self.config.live_eval_device)
            scorer_q = ScoreQueue(live, self._on_scored)
            scorer_q.start()
            watcher = CheckpointWatcher(self.paths.checkpoints, self.paths.workspace, self.paths.snapshots,
                                        lambda f: self._on_found(f, scorer_q), started_at=self.began,
                                        on_warning=lambda m: self.events.emit("warning", code="checkpoint", message=m))
            watcher.start()
            self._start_agent()
            threads = [
                threading.Thread(target=self._pump_stdout, name="stdout", daemon=True),
                threading.Thread(target=self._pump_stderr, name="stderr", daemon=True),
            ]
            if sampler is not None:
                threads.append(threading.Thread(target=self._sample_gpu, args=(sampler,), name="gpu", daemon=True))
            for t in threads:
                t.start()
            self._loop()
        except Exception as exc:  # the harness itself broke: say so, and still clean up
            if is_no_space(exc):
                self.guard.trip(exc)
                self.stop_reason = self.stop_reason or self._disk_full()
            else:
                self.stop_reason = self.stop_reason or ("harness_error", f"{type(exc).__name__}: {exc}")
                traceback.print_exc()
        finally:
            if self.tree is not None:
                self._stop_tree(self.config.grace_s if self.stop_reason and self.stop_reason[0] != "harness_error" else 5)
            self.launches.close()  # every launch record sent is in hand now
            if self.tree is not None:
                self._scan_processes()  # the last launches, and the end of every script
            self._done.set()
            self.clock.stop()
            for t in threads[:2]:
                t.join(timeout=5)
            if watcher is not None:
                watcher.stop()
            if scorer_q is not None and not scorer_q.close(LIVE_SCORE_DRAIN_S):
                live = None
            if sampler is not None:
                sampler.close()
            if self.tree is not None:
                self.tree.close()
            if self.caps is not None:
                self._check_caps()  # a cap reached in the last moments
                self.caps.close()
            if self.net is not None:
                self.net.stop()  # reports counted repeats of blocked attempts before session_ended
            if self.guard.full:
                self._make_room()  # the agent's tree is gone: it cannot take the room back
        if self.lock is not None and not self.lock.in_place():
            if live is not None:
                live.close()
            print(f"onegc runner: {self.stop_reason[1] if self.stop_reason else 'session folder gone'}: "
                  "nothing more can be recorded", file=sys.stderr, flush=True)
            return 2
        reason, detail = self.stop_reason or ("harness_error", "the runner stopped without a reason")
        detail = self._explain(reason, detail)
        self.conditions = self._conditions()
        try:
            score, best = self._official_result(reason, detail, live)
        finally:
            if live is not None:
                live.close()
        self._end(reason, detail, score, best)
        return 0

    def _on_signal(self, signum, _frame) -> None:
        self._signal_stop = signal.Signals(signum).name

    def _check_footing(self) -> None:
        """A full disk or a vanished session folder ends the session now (runner/session/diskguard.py,
        runner/wire/liveness.py)."""
        if self.guard.check():
            self.stop_reason = self._disk_full()
        elif self.lock is not None and not self.lock.in_place():
            self.stop_reason = ("harness_error", f"the session folder {self.paths.root} was deleted or moved "
                                                 "while the session ran")

    def _disk_full(self) -> tuple[str, str]:
        self.events.emit("warning", code="disk_full", message=self.guard.reason)
        return "harness_error", self.guard.reason

    def _make_room(self) -> None:
        """Give back the disk reserve and write what was held while the disk was full."""
        self.guard.release()
        try:
            self.events.release_held()
        except DiskFull as exc:  # the room was taken after all: what is held stays unwritten
            print(f"onegc runner: {exc}", file=sys.stderr, flush=True)
        if self.events.dropped:
            lost = ", ".join(f"{n} {kind}" for kind, n in sorted(self.events.dropped.items()))
            self.events.emit("warning", code="not_recorded", message=f"while the disk was full: {lost} events were not recorded")

    def _open_gpu(self):
        indices = visible_indices(self.config.gpu)
        try:
            sampler = GpuSampler(indices)
            return sampler, [vars(i) for i in sampler.info()], None
        except NoGpu as exc:
            return None, [], str(exc)
        except Exception as exc:  # a broken NVML must not stop the session
            return None, [], f"no GPU visible: {type(exc).__name__}: {exc}"

    def _emit_start(self, gpu_info) -> None:
        contract = {
            "task_version": self.spec.version,
            "task_hash": self.spec.version_hash(),
            "budget_s": self.config.budget_s,
            "grace_s": self.config.grace_s,
            "gpu": gpu_info,
            "agent": self.config.agent,
            "agent_version": self.agent_version,
            "model": self.config.model,
            "sealed": self.config.sealed,
            "caps": self.caps.contract() if self.caps else None,
            "selection": SELECTION,
            "canaries": canaries.contract(self.spec.id, self.config.canaries),  # runner/scoring/canaries.py
            "agent_env": agent_env.fingerprint(),  # the Python the agent imports from (runner/session/agent_env.py)
            **(self.net.contract() if self.net else {"network": self.config.network}),
            "harness_version": HARNESS_VERSION,
            "python": platform.python_version(),
            "host": socket.gethostname(),
        }
        self.events.emit("session_started", task=self.spec.id, agent=self.config.agent, model=self.config.model,
                         repeat=self.config.repeat, study=self.config.study, budget_s=self.config.budget_s,
                         grace_s=self.config.grace_s, contract=contract)

    def _gpus(self) -> tuple[tuple[int, ...], tuple[str | None, ...]]:
        """The assigned GPUs' device-node minors and UUIDs (NVML's, where it answered)."""
        known = {g["index"]: g for g in self.gpu_info}
        indices = visible_indices(self.config.gpu)  # without NVML the index is the best guess of the node
        minors = tuple(known[i]["minor"] if known.get(i, {}).get("minor") is not None else i for i in indices)
        return minors, tuple(known.get(i, {}).get("uuid") for i in indices)

    def _scorer(self, device: str) -> SealedScorer:
        """A sealed scorer (runner/scoring/scorer.py) for this session on ``device``."""
        minors, uuids = self._gpus()
        self.paths.snapshots.mkdir(exist_ok=True)
        return SealedScorer(WorkerPlan(
            judge=self.judge, inputs=self.paths.root / "scoring" / "inputs", snapshots=self.paths.snapshots,
            private=self.paths.root / "scoring" / device.split(":")[0], home=self.paths.root.parent.parent,
            session_id=self.config.session_id, device=device, gpu_minors=minors, gpu_uuids=uuids,
            timeout_s=self.spec.eval_timeout_s))

    # ------------------------------------------------------------------ the agent
    def _agent_env(self) -> dict[str, str]:
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("ONEGC_") and key not in ("ONEGC_NVML_MODULE", "ONEGC_FAKE_GPUS"):
                env.pop(key)
        bin_dir = str(Path(sys.executable).parent)
        env["PATH"] = self.launches.path_with_shims(bin_dir + os.pathsep + env.get("PATH", ""))
        env["CUDA_VISIBLE_DEVICES"] = self.config.gpu or ""
        env["PWD"] = str(self.paths.workspace)  # OpenCode takes its working folder from $PWD, not the cwd
        env["ONEGC_DEADLINE"] = f"{self.clock.deadline():.3f}"
        env["ONEGC_SESSION"] = self.config.session_id
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def _start_agent(self) -> None:
        self.paths.agent_home.mkdir(exist_ok=True)
        self.launches.start(sandbox.agent_ids(self.config.session_id) if self.config.sealed else None)
        ctx = LaunchContext(
            workspace=self.paths.workspace,
            session_dir=self.paths.root,
            agent_home=self.paths.agent_home,
            prompt=standard_prompt(self.spec.title, self.config.budget_s / 60, self.spec.scored_split),
            model=self.config.model,
            base_env=self._agent_env(),
            extra_args=tuple(self.config.agent_args),
        )
        if hasattr(self.adapter, "configure"):
            self.adapter.configure(self.config)
        price_warning = getattr(self.adapter, "price_warning", None)
        if price_warning:
            self.events.emit("warning", code="prices", message=price_warning)
        prepare_home = getattr(self.adapter, "prepare_home", None)
        if prepare_home:
            prepare_home(ctx)
        argv = agent_argv = self.adapter.argv(ctx)
        env = self.adapter.env(ctx)
        if self.config.sealed:
            argv, env = self._seal(argv, env)
        if self.net is not None:  # joined from outside: the sandboxed agent could not enter it itself
            argv = self.net.wrap_argv(argv)
            env.update(self.net.env())
        stdin = subprocess.PIPE if self.adapter.prompt_on_stdin else subprocess.DEVNULL
        self.tree = start_tree(argv, cwd=self.paths.workspace, env=env, stdin=stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, name=f"{self.config.session_id}.{os.getpid()}",  # its own cgroup
                               sandboxed=self.config.sealed, caps=self.caps)
        if self.adapter.prompt_on_stdin and self.tree.popen.stdin is not None:  # stdin=PIPE gives a stream
            try:
                self.tree.popen.stdin.write(ctx.prompt.encode())
            finally:
                self.tree.popen.stdin.close()  # an open stdin makes some CLIs wait forever
        self.events.emit("agent_started", pid=self.tree.root_pid, argv=[_short(a) for a in agent_argv],
                         containment=self.tree.mode, version=self.agent_version)

    def _seal(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """The agent's command line and environment inside its sandbox (runner/sandbox/bwrap.py)."""
        home = self.paths.root.parent.parent
        minors, uuids = self._gpus()
        plan = sandbox.SandboxPlan(
            workspace=self.paths.workspace, agent_home=self.paths.agent_home, private=self.paths.sandbox,
            protected=(home,), read_only=tuple(self.adapter.read_only_paths() + sandbox.extra_read_only(os.environ)),
            mounts=(self.launches.mount(),), gpu_minors=minors, ids=sandbox.agent_ids(self.config.session_id))
        ws = self.paths.workspace
        sandbox.hand_over(plan, [ws, self.paths.checkpoints, ws / "train.py", ws / "program.md"])
        return sandbox.wrap(plan, argv, sandbox.status().bwrap or "bwrap"), \
            sandbox.sandbox_env(env, plan, uuids)

    def _pump_stdout(self) -> None:
        assert self.tree is not None and self.tree.popen.stdout is not None
        line_no = 0
        raw = RawLog(self.paths.agent_stdout, self.guard.trip)  # read on whatever happens to the copy
        try:
            for line in iter(self.tree.popen.stdout.readline, b""):
                raw.write(line)
                line_no += 1
                text = line.decode("utf-8", errors="replace")
                try:
                    items = self.adapter.parse(text)
                except Exception:  # an adapter bug must not lose the line
                    items = [raw_item(text)]
                self._emit_items(items, line_no)
            self._emit_items(self.adapter.finish())
            self._emit_items(self.open_tools.killed())  # the agent's output ended: a tool still running dies with it
        finally:
            raw.close()

    def _emit_items(self, items, raw_line: int | None = None) -> None:
        for item in items:
            self.open_tools.seen(item)
            if item.role == "assistant" or item.kind == "usage":
                self.stall.model_answered()
            self.events.emit("transcript", raw_line=raw_line, **item.bounded())
            if self.cost.limit_usd is not None:
                self.cost.add(item)
                if self.cost.unpriced and not self._cost_warned:
                    self._cost_warned = True
                    self.events.emit("warning", code="cost_limit", message=self.cost.unpriced_warning())

    def _pump_stderr(self) -> None:
        assert self.tree is not None and self.tree.popen.stderr is not None
        log = RawLog(self.paths.agent_stderr, self.guard.trip)
        try:
            for line in iter(self.tree.popen.stderr.readline, b""):
                log.write(line)
                self.stderr_tail.append(line.decode("utf-8", errors="replace").rstrip())
        finally:
            log.close()

    def _sample_gpu(self, sampler: GpuSampler) -> None:
        next_poll = next_sessions = time.monotonic()
        while not self._done.wait(SAMPLE_PERIOD_S):
            try:
                samples = sampler.sample()
                for s in samples:
                    self.events.emit("gpu", **vars(s))
                now = time.monotonic()
                if self.contention is not None and now >= next_poll:  # runner/session/contention.py
                    self.contention.poll({s.index: s.util_pct for s in samples}, contention.POLL_S)
                    next_poll = now + contention.POLL_S
                if self.contention is not None and now >= next_sessions:
                    self.contention.poll_sessions()
                    next_sessions = now + contention.CONCURRENCY_PERIOD_S
            except Exception as exc:
                self.events.emit("warning", code="gpu", message=f"GPU sampling stopped: {exc}")
                return

    def _own_pids(self) -> set[int]:
        """The runner, everything it started, and the agent's tree: nobody foreign on the GPU."""
        own = {os.getpid()}
        try:
            own |= {p.pid for p in psutil.Process().children(recursive=True)}
        except psutil.Error:
            pass
        if self.tree is not None:
            own |= set(self.tree.pids())
        return own

    def _conditions(self) -> dict | None:
        """The session's conditions (runner/session/contention.py), emitted once at its end."""
        if self.contention is None:
            return None
        self.contention.poll_sessions()
        record = self.contention.summary(self.pauses, self.clock.paused_s())
        self.events.emit("conditions", **record)
        return record

    # ------------------------------------------------------------------ the loop
    def _loop(self) -> None:
        assert self.tree is not None
        next_beat = next_scan = time.monotonic()
        while self.stop_reason is None:
            self._apply_controls()
            now = time.monotonic()
            if now >= next_scan:
                self._check_footing()
                if self.stop_reason is not None:
                    break
                self._scan_processes()
                self._check_caps()
                self._emit_items(self.adapter.poll())  # side files: Codex's token totals, OpenCode's errors
                self._check_stall()
                next_scan = now + PROCESS_SCAN_S
            if now >= next_beat and not self.clock.paused:
                write_deadline(self.paths.workspace, self.clock.deadline())
                self.events.emit("heartbeat", remaining_s=self.clock.remaining_s(), active_s=self.clock.active_s(),
                                 procs=len(self._known_procs))
                next_beat = now + HEARTBEAT_S
            if self._signal_stop:
                job = os.environ.get("SLURM_JOB_ID")
                why = f" (slurm job {job}: scancel or the time limit)" if job else ""
                self.stop_reason = ("aborted", f"runner received {self._signal_stop}{why}")
            elif self.clock.expired():
                self.events.emit("budget", state="expired", remaining_s=0.0, deadline=self.clock.deadline())
                self.stop_reason = ("budget_exhausted", f"active time reached the {self.config.budget_s:.0f} s budget")
            elif self.cost.reached:
                self.stop_reason = (COST_LIMIT, self.cost.detail())
            elif self.tree.popen.poll() is not None:
                code = self.tree.popen.returncode
                if code == 0:
                    self.stop_reason = ("completed", "the agent finished")
                else:
                    self.stop_reason = ("agent_failed", f"the agent exited with code {code}")  # the cause: _explain
            else:
                time.sleep(TICK_S)

    def _apply_controls(self) -> None:
        events, bad = self._control.read_records()
        for line in bad:
            self.events.emit("warning", code="control", message=line)
        for req in events:
            action, rid = req.get("action"), str(req.get("id", ""))
            if action == "pause":
                tree = self.tree if not self.clock.paused else None
                ok = tree is not None
                if tree is not None:
                    tree.pause()
                    self.clock.pause()
                    self.pauses += 1
                    self.events.emit("budget", state="paused", remaining_s=self.clock.remaining_s(),
                                     deadline=self.clock.deadline())
                self.events.emit("control", action="pause", request_id=rid, accepted=ok, detail="" if ok else "already paused")
            elif action == "resume":
                tree = self.tree if self.clock.paused else None
                ok = tree is not None
                if tree is not None:
                    self.clock.resume()
                    write_deadline(self.paths.workspace, self.clock.deadline())
                    tree.resume()
                    self.events.emit("budget", state="resumed", remaining_s=self.clock.remaining_s(),
                                     deadline=self.clock.deadline())
                self.events.emit("control", action="resume", request_id=rid, accepted=ok, detail="" if ok else "not paused")
            elif action == "abort":
                self.events.emit("control", action="abort", request_id=rid, accepted=True, detail=str(req.get("source", "")))
                self.stop_reason = ("aborted", f"aborted by {req.get('source') or 'a control request'}")
            else:
                self.events.emit("warning", code="control", message=f"unknown control action {action!r} in {self.paths.control}")

    def _scan_processes(self) -> None:
        """Training scripts started and ended. Every launch through the PATH shim is counted, however
        short (runner/sandbox/execlog.py); the scan adds those started by an absolute interpreter path that
        live through one scan, and sees every known script end."""
        assert self.tree is not None
        for launch in self.launches.drain():  # first: a record is sent before its script starts
            self._launched(launch)
        pids = set(self.tree.pids())
        for pid in pids - set(self._known_procs):
            try:
                cmd = psutil.Process(pid).cmdline()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            script = _python_script(cmd, self.paths.workspace)
            if script:
                self._known_procs[pid] = (script, " ".join(cmd)[:300])
                self.events.emit("process", action="started", pid=pid, script=script, cmdline=" ".join(cmd)[:300])
        for pid, (script, cmdline) in list(self._known_procs.items()):
            if pid not in pids:
                self.events.emit("process", action="ended", pid=pid, script=script, cmdline=cmdline)
                del self._known_procs[pid]

    def _launched(self, launch: Launch) -> None:
        script = _python_script(list(launch.argv), self.paths.workspace, Path(launch.cwd) if launch.cwd else None)
        if script and launch.pid not in self._known_procs:
            self._known_procs[launch.pid] = (script, launch.cmdline[:300])
            self.events.emit("process", action="started", pid=launch.pid, script=script, cmdline=launch.cmdline[:300])

    def _check_stall(self) -> None:
        assert self.tree is not None
        # the agent's session: its init's (under bubblewrap --new-session, not the root's)
        agent = self.tree._agent_pid() or self.tree.root_pid
        try:
            busy = self.clock.paused or bool(tool_pids(self.tree.pids(), os.getsid(agent), {self.tree.root_pid}))
        except OSError:  # the agent is gone: the loop ends the session
            return
        waited = self.stall.check(busy)
        if waited is not None:
            why = self.adapter.failure() or (self.net.endpoint_problem() if self.net else None)
            took = f"{waited / 60:.0f} min" if waited >= 90 else f"{waited:.0f} s"
            self.events.emit("warning", code="stall", message=f"no model response for {took} while the agent runs "
                             "no tool" + (f"; its last error: {why}" if why else ""))  # fmt: skip

    def _explain(self, reason: str, detail: str) -> str:
        """The end detail with its cause (runner/session/outcome.py)."""
        failure = self.adapter.failure()
        problem = self.net.endpoint_problem() if self.net is not None else None
        if failure and problem is None and (self.net is None or not self.net.confined):
            problem = endpoint_problem(self.endpoints)  # no gate saw the endpoint: probe it
        capped = self.caps.summary() if self.caps is not None else None
        detail = f"{detail}; {capped}" if capped else detail  # the caps the agent reached (runner/sandbox/caps.py)
        killed = self.open_tools.note()
        return end_detail(reason, detail, failure=failure, notes=self.adapter.notes() + ([killed] if killed else []),
                          endpoint_problem=problem,
                          endpoints=self.endpoints, stderr=self.stderr_tail)

    def _check_caps(self) -> None:
        for code, message in self.caps.hits() if self.caps is not None else []:
            self.events.emit("warning", code=code, message=message)

    def _stop_tree(self, grace_s: float) -> None:
        """The agent's graceful signal (SIGINT), SIGTERM to the tree at a third of the grace,
        SIGKILL at its end."""
        tree = self.tree
        assert tree is not None
        if self.clock.paused:
            tree.resume()
        if not tree.alive():
            tree.reap()
            return
        graceful = self.adapter.graceful_signal
        if graceful is not None:
            tree.interrupt_root(graceful)
        else:
            tree.signal_all(signal.SIGTERM)
        end = time.monotonic() + grace_s
        termed = graceful is None
        while time.monotonic() < end and tree.alive():
            if not termed and time.monotonic() >= end - grace_s * 2 / 3:
                tree.signal_all(signal.SIGTERM)
                termed = True
            self._scan_processes()
            time.sleep(0.1)
        if tree.alive():
            tree.kill_all()
        tree.reap()
        self._scan_processes()

    def _on_blocked(self, host: str, port: int, ts: float, detail: str) -> None:  # the gate's thread
        self.events.emit("warning", code="network_blocked", message=f"blocked {host}:{port} ({detail})")

    def _on_endpoint(self, host: str, port: int, ts: float, message: str) -> None:  # the gate's thread
        self.events.emit("warning", code="endpoint", message=message)

    # ------------------------------------------------------------------ checkpoints
    def _on_found(self, found: FoundCheckpoint, queue: ScoreQueue) -> None:
        # budget time when the file was written, not when we got round to it; the mtime is the
        # agent's to set, so it may move a checkpoint earlier by the watcher's latency at most
        lag = min(max(0.0, found.seen_at - found.saved_at), DISCOVERY_SLACK_S)
        elapsed = max(0.0, self.clock.active_s() - max(0.0, time.time() - found.seen_at) - lag)
        with self._lock:
            self.found[found.label] = found
            self.found_at[found.label] = elapsed
        self.events.emit("checkpoint_found", name=found.label, path=str(found.path.relative_to(self.paths.root)),
                         snapshot=str(found.snapshot.relative_to(self.paths.root)), script=found.script,
                         self_reported=found.self_reported, budget_elapsed_s=elapsed)
        queue.put(found)

    def _on_scored(self, found: FoundCheckpoint, score: Score) -> None:
        with self._lock:
            self.live[found.label] = score
        self.events.emit("checkpoint_scored", name=found.label, value=score.value, error=score.error,
                         metric=self.spec.metric, split=SELECTION_SPLIT, eval_s=score.eval_s,
                         budget_elapsed_s=self.found_at.get(found.label, 0.0), flags=self._flags(found, score))

    def _flags(self, found: FoundCheckpoint, val: Score, flags: tuple[str, ...] = ()) -> list[str]:
        """The scorer's integrity flags, and one more when the agent's own validation figure is far
        better than the harness's."""
        claim = self_report_flag(self.spec, found.self_reported, val.value)
        out = list(code_scan.flags(found.snapshot, found.script)) + list(flags or val.flags)  # the code, read from outside
        return out + [claim] if claim else out

    def _official_result(self, reason: str, detail: str, live: SealedScorer | None) -> tuple[float | None, str | None]:
        """Paper step 5 by the harness's own validation scores (runner/scoring/official.py), each
        re-evaluation a fresh child of a scorer on the session's device (the warm live one where
        that is the CPU too)."""
        scored = self.spec.scored_split
        splits = sorted({SELECTION_SPLIT, scored})
        with self._lock:
            cands = [Candidate(label, self.found_at.get(label, 0.0), self.live[label].value if label in self.live else None)
                     for label in self.found]
        live_val = {c.label: c.val for c in cands}
        elapsed = {c.label: c.elapsed_s for c in cands}
        rows: dict[str, dict] = {}
        device = "cuda" if self.config.gpu and _cuda_available() else "cpu"
        reuse = live is not None and live.alive() and live.plan.device == device
        scorer: SealedScorer | None = None

        def evaluate(label: str) -> Evaluation:
            nonlocal scorer
            if scorer is None:
                scorer = live if reuse and live is not None else self._scorer(device)
            found = self.found[label]
            try:
                scores = scorer.score(found.path, found.snapshot, splits)
                sel, off = scores[SELECTION_SPLIT], scores[scored]
            except Exception as exc:  # noqa: BLE001 - one checkpoint's failure, never the session's
                sel = off = Score(None, f"judging failed: {type(exc).__name__}: {str(exc)[:200]}", flags=(INVALID_ANSWER,))
            flags = self._flags(found, sel, off.flags)
            self.events.emit("checkpoint_scored", name=label, value=off.value, error=off.error, metric=self.spec.metric,
                             split=scored, eval_s=off.eval_s, budget_elapsed_s=elapsed[label], official=True,
                             flags=flags, val=sel.value if scored != SELECTION_SPLIT else None)
            rows[label] = {"checkpoint": label, "window": int(elapsed[label] // WINDOW_S),
                           "budget_elapsed_s": round(elapsed[label], 1), "live_val": live_val[label], "val": sel.value,
                           "self_reported": found.self_reported, "official": off.value,
                           "error": off.error or sel.error, "flags": flags,
                           "canaries": sel.evidence}  # runner/scoring/canaries.py: p, losses, counts
            return Evaluation(sel.value, off.value, off.error or sel.error)

        try:
            chosen = select(cands, self.spec.better, evaluate, MAX_FALLBACK)
            if not self.guard.full and scored != SELECTION_SPLIT:  # the unofficial test-best (runner/scoring/unofficial.py)
                for label in unofficial.still_to_evaluate(elapsed, rows):
                    evaluate(label)
        finally:
            if scorer is not None and scorer is not live:
                scorer.close()
        trajectory = [{"window": rows[label]["window"], "checkpoint": label, "val": chosen.vals[label],
                       "official": rows[label]["official"]} for label in chosen.trajectory]
        best = (chosen.best, rows[chosen.best]["official"]) if chosen.best else None
        val = chosen.vals.get(chosen.best) if chosen.best else None
        flags = rows[chosen.best]["flags"] if chosen.best else []
        scored_by = "official re-evaluation" if best else None
        if best is None and self.guard.full:
            best, val, flags, scored_by = self._live_result(cands, rows) or (best, val, flags, scored_by)
        failure = None
        if best is None:
            failure = "no checkpoint was saved" if not self.found else "no checkpoint could be scored: " + (
                next((r["error"] for r in rows.values() if r["error"]), "")
                or next((s.error for s in self.live.values() if s.error), "") or "unknown")
        elif best[1] is None:
            failure = f"{scored_by}; the {scored} split needs the re-evaluation, so there is no {scored} score"
        self.selected_val = val
        self.val_gap = selection_gap.check_selected(self.spec, self.paths.root.parent, val, best[1] if best else None,
                                                    self.config.study)
        struck = verdicts.integrity_rule(flags) if best else None
        if struck:
            try:
                verdicts.record(self.paths, struck, by="integrity rule")
            except OSError as exc:  # a full disk: result.json still carries the verdict
                print(f"onegc runner: verdict not recorded in {verdicts.FILE}: {exc}", file=sys.stderr, flush=True)
        evaluated = sorted(rows.values(), key=lambda r: r["budget_elapsed_s"])
        tested = unofficial.candidates(evaluated, live_val, elapsed, scored == SELECTION_SPLIT)
        self._write_result(reason, detail, evaluated, best, failure, len(self.found), trajectory, val, struck, scored_by,
                           tested)
        return (best[1], best[0]) if best else (None, None)

    def _live_result(self, cands: list[Candidate], rows: dict[str, dict]):
        """``(best, val, flags, scored_by)`` from the live scores (runner/scoring/official.py), for a session
        whose disk filled up and whose re-evaluation gave no score; None without a live score."""
        pick = from_live_scores(cands, self.spec.better, self.spec.scored_split == SELECTION_SPLIT)
        if pick is None:
            return None
        why = (rows.get(pick.label) or {}).get("error") or "it could not run"
        flags = self._flags(self.found[pick.label], self.live[pick.label])
        return ((pick.label, pick.official), pick.val, flags,
                f"live scoring: the disk was full and the official re-evaluation failed ({why})")

    def _write_result(self, reason: str, detail: str, rows: list[dict], best: tuple[str, float] | None,
                      failure: str | None, found: int, trajectory: list[dict] | None = None,
                      val: float | None = None, disqualified: str | None = None, scored_by: str | None = None,
                      tested: list[dict] | None = None) -> None:
        result = {
            "session_id": self.config.session_id,
            "task": self.spec.id,
            "agent": self.config.agent,
            "model": self.config.model,
            "repeat": self.config.repeat,
            "study": self.config.study,
            "metric": self.spec.metric,
            "direction": self.spec.direction,
            "split": self.spec.scored_split,
            "value": best[1] if best else None,
            "checkpoint": best[0] if best else None,
            "selection": SELECTION,  # the checkpoint is the best by the harness's validation score
            "selection_split": SELECTION_SPLIT,
            "val": val,
            "scored_by": scored_by,  # the official re-evaluation, or the live scores where the disk was full
            "end_reason": reason,
            "end_detail": detail,
            "failure": failure,
            "checkpoints_found": found,
            "evaluated": rows,
            "trajectory": trajectory or [],  # each 5-minute window's val-best on the scored split
            "disqualified": disqualified,  # an integrity rule's verdict (runner/wire/verdicts.py); people add theirs later
            "val_test_gap": self.val_gap.record() if self.val_gap else None,  # runner/scoring/selection_gap.py
            "conditions": self.conditions,  # runner/session/contention.py: contended or clean
            "unofficial": unofficial.best_scored(rows if tested is None else tested, self.spec.better,
                                                 self.spec.scored_split, found),
        }
        tmp = self.paths.root / ".result.json.tmp"
        try:
            tmp.write_text(json.dumps(result, indent=2))
            os.replace(tmp, self.paths.result)
        except OSError as exc:  # no room even in the reserve: session_ended still says how it ended
            tmp.unlink(missing_ok=True)
            print(f"onegc runner: {self.paths.result} not written: {exc}", file=sys.stderr, flush=True)

    def _end(self, reason: str, detail: str, score: float | None = None, best: str | None = None) -> None:
        self.events.emit("session_ended", reason=reason, detail=detail, active_s=self.clock.active_s(),
                         wall_s=self.clock.wall_s(), paused_s=self.clock.paused_s(), score=score, best_checkpoint=best,
                         val=self.selected_val, val_gap_flag=self.val_gap.flag if self.val_gap else None)
        self.events.close()
        self.guard.release()
        outcome = f"score {score:.6g} ({best})" if score is not None else "no score"
        print(f"onegc runner: session {self.config.session_id} ended: {reason}, {outcome}: {detail}", flush=True)


def _cuda_available() -> bool:
    """Whether torch sees a GPU (a fake GPU id on a CPU machine does not count)."""
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # no torch, or a broken CUDA install: score on the CPU
        return False


def _python_script(cmd: list[str], workspace: Path, cwd: Path | None = None) -> str | None:
    """The workspace ``*.py`` a python command line runs (``python [-u] run_1.py ...``), if any;
    harness helpers outside the workspace (the namespace init, the exec shim) do not count. A
    relative path is taken from ``cwd`` when it is known."""
    if not cmd or "python" not in Path(cmd[0]).name:
        return None
    for arg in cmd[1:]:
        if arg.endswith(".py"):
            path = Path(arg)
            if not path.is_absolute() and cwd is not None:
                path = cwd / path
            if path.is_absolute() and workspace not in path.parents:
                return None
            return path.name
        if arg in ("-c", "-m"):
            return None
    return None


def _short(arg: str, limit: int = 200) -> str:
    return arg if len(arg) <= limit else arg[:limit] + "…"


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: python -m runner.session RUNS/<session_id>", file=sys.stderr)
        return 2
    return main_with_lock(SessionPaths(Path(args[0]).resolve()), lambda lock: Session(lock.paths, lock).run())

