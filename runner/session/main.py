"""The runner: one process per session (README "How it works").

    python -m runner.session RUNS/<session_id>

reads ``session.json``, builds the workspace, starts the agent as a contained process tree on
its GPU, enforces the budget, samples the GPU, applies control requests from ``control.jsonl``,
and at the end has the official result made (runner/scoring/official_phase.py) and writes
``result.json`` and ``session_ended``. Checkpoints are scored live as they appear
(runner/scoring/live.py). Everything it learns goes to ``events.jsonl``; it never talks to a UI.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from contextlib import ExitStack
from pathlib import Path

import psutil

from runner.agents import get_adapter
from runner.agents.base import AgentAdapter
from runner.agents.endpoints import allowed_endpoints
from runner.errors import DiskFull, is_no_space
from runner.integrity import canaries, checks, sealed_split
from runner.sandbox import bwrap as sandbox
from runner.sandbox.caps import CapGroup, default_caps
from runner.sandbox.execlog import ExecLog
from runner.sandbox.network import NetworkSandbox, NetworkUnavailable
from runner.sandbox.proctree import ProcessTree
from runner.scoring import seal
from runner.scoring.handed import HandedModels
from runner.scoring.live import LiveScoring
from runner.scoring.official_phase import OfficialPhase, OfficialResult, official_device
from runner.scoring.result_file import coverage, result_record, write_result
from runner.scoring.scorer import SealedScorer, TaskJudge, WorkerPlan
from runner.scoring.snapshots import SNAPSHOT_CAP_BYTES
from runner.session import agent_env
from runner.session.agent_launch import start_agent
from runner.session.agent_output import AgentOutput
from runner.session.agent_stop import stop_tree
from runner.session.budget import BudgetClock
from runner.session.contention import ContentionWatch
from runner.session.contract import emit_started
from runner.session.cost_limit import END_REASON as COST_LIMIT
from runner.session.cost_limit import CostMeter
from runner.session.diskguard import DiskGuard
from runner.session.gpu import open_sampler, visible_indices
from runner.session.gpu_feed import sample_until
from runner.session.outcome import end_detail, endpoint_problem
from runner.session.scripts import ScriptWatch
from runner.session.stall import StallWatch, tool_pids
from runner.session.workspace import build_workspace, write_deadline
from runner.wire.coalesce import WarningFolder
from runner.wire.control import read_request
from runner.wire.defaults import STALL_CLEARED, STALL_WARNING
from runner.wire.jsonl import EventWriter, JsonlTail
from runner.wire.liveness import RunnerLock, main_with_lock
from runner.wire.paths import SessionPaths, data_root
from runner.wire.record_caps import RecordCaps, RecordLimits
from tasks import get_task

TICK_S = 0.2  # main loop period: control requests are applied within this
HEARTBEAT_S = 5.0
PROCESS_SCAN_S = 1.0
HARNESS_ERROR_GRACE_S = 5.0  # the agent's grace when the harness itself broke


class Session:
    def __init__(self, paths: SessionPaths, lock: RunnerLock | None = None):
        self.paths = paths
        self.lock = lock  # the runner's claim on its folder (runner/wire/liveness.py)
        self.config = paths.read_config()
        self.spec = get_task(self.config.task)
        self.record_caps = RecordCaps.for_budget(self.config.budget_s, checkpoints=self.config.max_checkpoints)
        self.clock = BudgetClock(self.config.budget_s)
        self.guard = DiskGuard(paths.root)  # room to end the session if the disk fills up
        self.events = EventWriter(paths.events, self.config.session_id, fold=WarningFolder(), on_no_space=self.guard.trip,
                                  limits=RecordLimits(self.record_caps))  # record_caps.py
        self.adapter: AgentAdapter = get_adapter(self.config.agent)
        self.tree: ProcessTree | None = None
        self.caps: CapGroup | None = None  # the agent tree's memory and process caps (runner/sandbox/caps.py)
        self.stop_reason: tuple[str, str] | None = None  # (reason, detail) once decided
        self.contention: ContentionWatch | None = None  # runner/session/contention.py, from the GPU's opening on
        self.pauses = 0  # operator pauses (for the conditions record)
        self._done = threading.Event()
        self._pumps: list[threading.Thread] = []  # the agent's stdout and stderr readers
        self._control = JsonlTail(paths.control)
        self._signal_stop: str | None = None
        self.net: NetworkSandbox | None = None
        self.gpu_info: list[dict] = []
        self.endpoints = allowed_endpoints(self.config.agent, os.environ, self.config.model)
        # every python the agent starts through PATH (in the sandbox its folder is under /run/onegc)
        self.launches = ExecLog(paths.root / "exec", sandbox.INSIDE / "exec" if self.config.sealed else None)
        self.scripts = ScriptWatch(paths.workspace, self.events)
        self.stall = StallWatch(self.config.stall_s)
        self.cost = CostMeter(self.config.cost_limit_usd)  # --cost-limit (runner/session/cost_limit.py)
        self.output = AgentOutput(self.adapter, paths, self.events, self.stall, self.cost, self.guard.trip)
        self.agent_version = self.adapter.version()  # once: `--version` of a Node CLI takes seconds
        self.judge: TaskJudge | None = None
        self.answers: sealed_split.SealedAnswers | None = None  # a sealed split's answers to the agent

    # ------------------------------------------------------------------ lifecycle
    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self.began = time.time()  # nothing in checkpoints/ may be older: the runner makes it empty
        self.scoring = LiveScoring(self.spec, self.paths, self.events, self.clock.active_s, self.began,
                                   self.config.snapshot_cap_bytes or SNAPSHOT_CAP_BYTES, self.record_caps.checkpoints,
                                   sealed=self.config.scored_split == "sealed")
        if not self._set_up():
            return 2
        with ExitStack() as stack:  # clean-ups run in reverse order of registration
            try:
                self._run_agent(stack)
            except Exception as exc:  # the harness itself broke: say so, and still clean up
                if is_no_space(exc):
                    self.guard.trip(exc)
                    self.stop_reason = self.stop_reason or self._disk_full()
                else:
                    self.stop_reason = self.stop_reason or ("harness_error", f"{type(exc).__name__}: {exc}")
                    traceback.print_exc()
        if self.lock is not None and not self.lock.in_place():
            self.scoring.close()
            print(f"onegc runner: {self.stop_reason[1] if self.stop_reason else 'session folder gone'}: "
                  "nothing more can be recorded", file=sys.stderr, flush=True)
            return 2
        reason, detail = self.stop_reason or ("harness_error", "the runner stopped without a reason")
        detail = self._explain(reason, detail)
        conditions = self._conditions()
        answered = tuple(self.answers.verdicts()) if self.answers is not None else ()  # runner/integrity/answer_probes.py
        try:
            result = OfficialPhase(self.spec, self.paths, self.config, self.events, self._scorer,
                                   official_device(self.config.gpu), answered).run(self.scoring, self.guard.full)
        finally:
            self.scoring.close()
        write_result(self.paths, result_record(self.config, self.spec, reason, detail, result, conditions,
                                               self.answers.summary() if self.answers is not None else None))
        self._end(reason, detail, result)
        return 0

    def _set_up(self) -> bool:
        """The workspace, the judge and the network policy, before the clock starts (their start-up is
        not the agent's budget). On failure: result.json and session_ended say why, and False."""
        # the sandbox probe (a real sandbox, tens of ms) runs while the workspace and network are made
        probe = threading.Thread(target=lambda: (sandbox.status(), agent_env.freeze()), name="sandbox-probe", daemon=True)
        probe.start()
        try:
            data = data_root(self.paths.root.parent.parent) / self.spec.id
            sealed = self.config.scored_split == "sealed"
            if sealed:
                sealed_split.check(self.spec)  # the request checked it too: a config written by hand
            marks = canaries.session_judge(self.spec.id, self.spec.scored_split, self.paths.root, data,
                                           self.config.plants_canaries)
            build_workspace(self.spec, self.paths.workspace, data.parent, canary_key=marks.key if marks else None,
                            withheld=tuple(self.spec.scored_targets) if sealed else ())
            self.judge = TaskJudge(self.spec, data, secret=canaries.session_secret(self.paths.root, canaries.PASSES_KEY_FILE))
            self.judge.canaries = marks
            if sealed:  # its public part answers the agent, its private part is the official one (split_parts.py)
                self.judge.cut(self.paths.root / "scoring" / "parts")
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
            return True
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
            write_result(self.paths, result_record(self.config, self.spec, "harness_error", why,
                                                   OfficialResult(failure=why), None))
            self._end("harness_error", why, OfficialResult(failure=why))
            return False

    def _run_agent(self, stack: ExitStack) -> None:
        """Start the agent and everything around it, and run the loop; each part registers its own
        clean-up on ``stack`` (in reverse order: the agent stopped first, the disk reserve last)."""
        assert self.net is not None  # _set_up started it
        stack.callback(self._release_reserve_if_full)
        stack.callback(self.net.stop)  # reports counted repeats of blocked attempts before session_ended
        self.caps = CapGroup(self.config.session_id, default_caps(self.config.memory_bytes, self.config.max_processes))
        stack.callback(self._close_caps)
        sampler, self.gpu_info, gpu_problem = open_sampler(self.config.gpu)
        if sampler is not None:
            stack.callback(sampler.close)
        self.contention = ContentionWatch(sampler.nvml if sampler else None, sampler.handles if sampler else [],
                                          self._own_pids, self.paths.root.parent, self.config.session_id)
        self.contention.start()  # before the agent: memory already in use, processes already there
        self._emit_start(self.gpu_info)
        for note in self.net.notes:
            self.events.emit("warning", code="network", message=note)
        stack.callback(self.scoring.stop)  # after the clock stopped: the last checkpoints' budget time is final
        self.clock.start()
        stack.callback(self.clock.stop)
        write_deadline(self.paths.workspace, self.clock.deadline())
        self.events.emit("budget", state="running", remaining_s=self.clock.remaining_s(), deadline=self.clock.deadline())
        if gpu_problem:
            self.events.emit("warning", code="no_gpu", message=gpu_problem)
        self.scoring.start(self._scorer(self.config.live_eval_device))
        stack.callback(self._done.set)  # the GPU sampler's thread ends
        stack.callback(self._join_pumps)  # once the agent is gone, its pipes close
        stack.callback(self.launches.close)
        p = self.paths
        if self.config.scored_split == "sealed":  # answers the agent's evaluations (runner/integrity/sealed_split.py)
            assert self.judge is not None
            # T1: the evaluations hand the model over; a sealed scorer of the answers' own runs it (scoring/handed.py)
            handed = HandedModels(lambda: self._scorer(official_device(self.config.gpu), "answers"),
                                  self.spec.scored_split, p.workspace, p.snapshots) if self.spec.inputs_are_targets else None
            self.answers = sealed_split.SealedAnswers(self.judge, self.spec.scored_split, p.workspace,
                                                      sealed_split.answers_dir(p.root), self.events,
                                                      self.config.sealed_answers, sealed_split.ladder_for(self.spec), handed)
            if handed is not None:
                stack.callback(handed.close)
            stack.callback(self.answers.start().stop)
        self.guard.mark_start((p.workspace, p.agent_home, p.agent_stdout, p.agent_stderr))  # what the agent writes
        self.tree = start_agent(self.adapter, self.config, self.spec, self.paths, launches=self.launches, net=self.net,
                                caps=self.caps, gpus=self._gpus(), deadline=self.clock.deadline(), events=self.events,
                                version=self.agent_version)
        stack.callback(self._stop_agent)
        self.stall.start()
        assert self.tree.popen.stdout is not None and self.tree.popen.stderr is not None  # both are pipes
        self._pumps = [threading.Thread(target=self.output.pump_stdout, args=(self.tree.popen.stdout,), name="stdout",
                                        daemon=True),
                       threading.Thread(target=self.output.pump_stderr, args=(self.tree.popen.stderr,), name="stderr",
                                        daemon=True)]
        threads = self._pumps + ([threading.Thread(target=sample_until, name="gpu", daemon=True,
                                                   args=(self._done, sampler, self.events, self.contention))]
                                 if sampler is not None else [])
        for t in threads:
            t.start()
        self._loop()

    def _stop_agent(self) -> None:
        """Stop the agent's tree (a short grace when the harness broke), record its last launches and
        the end of every script, and remove its cgroup."""
        tree = self.tree
        assert tree is not None
        harness_broke = self.stop_reason is None or self.stop_reason[0] == "harness_error" or self.guard.full
        stop_tree(tree, self.adapter.graceful_signal, HARNESS_ERROR_GRACE_S if harness_broke else self.config.grace_s,
                  self.clock.paused, lambda: self.scripts.scan(tree, self.launches))
        self.launches.close()  # every launch record sent is in hand now
        self.scripts.scan(tree, self.launches)  # the last launches, and the end of every script
        tree.close()

    def _join_pumps(self) -> None:
        for t in self._pumps:
            t.join(timeout=5)

    def _close_caps(self) -> None:
        assert self.caps is not None
        self._check_caps()  # a cap reached in the last moments
        self.caps.close()

    def _release_reserve_if_full(self) -> None:
        if self.guard.full:
            self._make_room()  # the agent's tree is gone: it cannot take the room back

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
        """The end for a full disk: the agent's own result when its files filled it, else the
        harness's failure, which a study runs again (runner/session/diskguard.py)."""
        reason, detail = self.guard.end()
        self.events.emit("warning", code="disk_full", message=detail)
        return reason, detail

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

    def _emit_start(self, gpu_info: list[dict]) -> None:
        emit_started(self.events, self.spec, self.config, agent_version=self.agent_version, gpu_info=gpu_info,
                     caps=self.caps, net=self.net, parts=self.judge.partition if self.judge is not None else None)

    def _gpus(self) -> tuple[tuple[int, ...], tuple[str | None, ...]]:
        """The assigned GPUs' device-node minors and UUIDs (NVML's, where it answered)."""
        known = {g["index"]: g for g in self.gpu_info}
        indices = visible_indices(self.config.gpu)  # without NVML the index is the best guess of the node
        minors = tuple(known[i]["minor"] if known.get(i, {}).get("minor") is not None else i for i in indices)
        return minors, tuple(known.get(i, {}).get("uuid") for i in indices)

    def _scorer(self, device: str, role: str = "") -> SealedScorer:
        """A sealed scorer (runner/scoring/scorer.py) for this session on ``device``; ``role``: one that
        runs beside the live and official ones (the answers'), with a private folder of its own."""
        minors, uuids = self._gpus()
        self.paths.snapshots.mkdir(exist_ok=True)
        assert self.judge is not None
        return SealedScorer(WorkerPlan(
            judge=self.judge, inputs=self.paths.root / "scoring" / "inputs", snapshots=self.paths.snapshots,
            private=self.paths.root / "scoring" / "-".join(filter(None, (role, device.split(":")[0]))),
            home=self.paths.root.parent.parent,
            session_id=self.config.session_id, device=device, gpu_minors=minors, gpu_uuids=uuids,
            timeout_s=self.spec.eval_timeout_s))

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
        self.contention.poll_sessions(final=True)  # those that ended meanwhile and saw this one too
        record = self.contention.summary(self.pauses, self.clock.paused_s())
        self.events.emit("conditions", **record)
        return record

    # ------------------------------------------------------------------ the loop
    def _loop(self) -> None:
        tree = self.tree
        assert tree is not None
        next_beat = next_scan = time.monotonic()
        while self.stop_reason is None:
            self._apply_controls()
            now = time.monotonic()
            if now >= next_scan:
                self._check_footing()
                if self.stop_reason is not None:
                    break
                self.scripts.scan(tree, self.launches)
                self._check_caps()
                self.output.emit(self.adapter.poll())  # side files: Codex's token totals, OpenCode's errors
                self._check_stall()
                next_scan = now + PROCESS_SCAN_S
            if now >= next_beat and not self.clock.paused:
                write_deadline(self.paths.workspace, self.clock.deadline())
                self.events.emit("heartbeat", remaining_s=self.clock.remaining_s(), active_s=self.clock.active_s(),
                                 procs=len(self.scripts.known))
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
            elif tree.popen.poll() is not None:
                code = tree.popen.returncode
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
        for record in events:
            req = read_request(record)
            if isinstance(req, str):
                self.events.emit("warning", code="control", message=f"{self.paths.control}: {req}")
                continue
            action, rid = req.action, req.id
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
                self.events.emit("control", action="abort", request_id=rid, accepted=True, detail=req.source)
                self.stop_reason = ("aborted", f"aborted by {req.source or 'a control request'}")
            else:
                self.events.emit("warning", code="control", message=f"unknown control action {action!r} in {self.paths.control}")

    def _check_stall(self) -> None:
        """The runner's stall rule (runner/session/stall.py): a warning when a stall begins, one when it ends."""
        tree = self.tree
        assert tree is not None
        # the agent's session: its init's (under bubblewrap --new-session, not the root's)
        agent = tree._agent_pid() or tree.root_pid
        try:
            tools = bool(tool_pids(tree.pids(), os.getsid(agent), {tree.root_pid}))
        except OSError:  # the agent is gone: the loop ends the session
            return
        change = self.stall.check(tools, self.clock.paused)
        if change is not None and change.stalled:
            why = self.adapter.failure() or (self.net.endpoint_problem() if self.net else None)
            self.events.emit("warning", code=STALL_WARNING, message=change.message(why))
        elif change is not None:
            self.events.emit("warning", code=STALL_CLEARED, message=change.message())

    def _explain(self, reason: str, detail: str) -> str:
        """The end detail with its cause (runner/session/outcome.py)."""
        failure = self.adapter.failure()
        problem = self.net.endpoint_problem() if self.net is not None else None
        if failure and problem is None and (self.net is None or not self.net.confined):
            problem = endpoint_problem(self.endpoints)  # no gate saw the endpoint: probe it
        capped = self.caps.summary() if self.caps is not None else None
        detail = f"{detail}; {capped}" if capped else detail  # the caps the agent reached (runner/sandbox/caps.py)
        killed = self.output.open_tools.note()
        stalled = self.stall.end_note()  # a hung model stream, named in the end detail too
        notes = self.adapter.notes() + [n for n in (killed, stalled) if n]
        return end_detail(reason, detail, failure=failure, notes=notes,
                          endpoint_problem=problem,
                          endpoints=self.endpoints, stderr=self.output.stderr_tail)

    def _check_caps(self) -> None:
        for code, message in self.caps.hits() if self.caps is not None else []:
            self.events.emit("warning", code=code, message=message)

    def _on_blocked(self, host: str, port: int, ts: float, detail: str) -> None:  # the gate's thread
        self.events.emit("warning", code="network_blocked", message=f"blocked {host}:{port} ({detail})")

    def _on_endpoint(self, host: str, port: int, ts: float, message: str) -> None:  # the gate's thread
        self.events.emit("warning", code="endpoint", message=message)

    def _end(self, reason: str, detail: str, result: OfficialResult) -> None:
        self.events.emit("session_ended", reason=reason, detail=detail, active_s=self.clock.active_s(),
                         wall_s=self.clock.wall_s(), paused_s=self.clock.paused_s(), score=result.score,
                         best_checkpoint=result.checkpoint, val=result.val,
                         val_gap_flag=result.val_gap.flag if result.val_gap else None,
                         whole=result.figures.get("whole") if result.figures else None,
                         not_checked=checks.not_checked(coverage(self.config, self.spec)),
                         not_reevaluated=(result.not_reevaluated or {}).get("by_bounds"),
                         result_sha256=seal.digest(self.paths.result))
        self.events.close()
        self.guard.release()
        try:  # the record fixed: the chain's head and a digest of every file the runner made (seal.py)
            seal.write(self.paths, self.events.written_head, self.events.written_lines,
                       self.config.study)
        except OSError as exc:
            print(f"onegc runner: {seal.SEAL} not written: {exc}", file=sys.stderr, flush=True)
        score = result.score
        outcome = f"score {score:.6g} ({result.checkpoint})" if score is not None else "no score"
        print(f"onegc runner: session {self.config.session_id} ended: {reason}, {outcome}: {detail}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: python -m runner.session RUNS/<session_id>", file=sys.stderr)
        return 2
    return main_with_lock(SessionPaths(Path(args[0]).resolve()), lambda lock: Session(lock.paths, lock).run())

