"""The ``onegc`` command line. Errors print one line to stderr and exit 2 (onegc_tui/cli/base.py).

All state lives under ``$ONEGC_HOME`` (default: the current directory): ``data/``, ``runs/``,
``onegc.db``. Budgets are minutes, or ``90s``, ``2m``, ``1h``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from onegc_tui.cli.base import (
    AFTER_DASH_DASH,
    DURATION,
    SIZE,
    AfterDashDash,
    OnegcGroup,
    describe,
    need_terminal,
    session_paths,
)
from onegc_tui.cli.prepare_output import run_prepare
from runner.errors import OnegcError
from runner.wire.paths import SessionPaths, data_root, is_prepared, runs_dir, usable_home

if TYPE_CHECKING:
    from tasks import TaskSpec
# The task registry, the session config and whatever else needs pydantic are imported by the
# commands that use them: `onegc --help`, `onegc sessions` and `onegc tasks` start without it

DEMO_BUDGET = "2m"  # two scripted runs and their checkpoints fit easily
DEMO_PACE_S = 3.0  # the scripted agent "thinks" this long between steps: the demo lasts about a minute


def _task(name: str) -> TaskSpec:
    from tasks import UnknownTask, get_task

    try:
        return get_task(name)
    except UnknownTask as exc:
        raise OnegcError(str(exc)) from None


@click.group(cls=OnegcGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="onegc")
def main() -> None:
    """onegc: run coding agents on the 1GC-7RC benchmark and watch them live."""


# ---------------------------------------------------------------------------- tasks & data
@main.command("tasks")
@click.option("--checks", "show_checks", is_flag=True,
              help="what each integrity check decides, the threat rows it answers and its measured power")
def tasks_cmd(show_checks: bool) -> None:
    """List the tasks, their metric, budget and whether their data is prepared, and how each threat
    row of the threat model is met on each task."""
    from onegc_tui.store.readonly_home import browsable_home
    from onegc_tui.views.checks_view import checks_lines
    from onegc_tui.views.format import arrow
    from onegc_tui.views.task_facts import task_facts
    from onegc_tui.views.text_table import terminal_width, text_table

    home = browsable_home()  # only reads: a read-only home is fine
    rows = []
    for spec in task_facts().values():
        ready = is_prepared(spec.id, data_root(home))
        base = f"{spec.baseline_score:.3f}" if spec.baseline_score is not None else "-"
        metric = f"{spec.metric_label} {arrow('higher' if spec.higher_is_better else 'lower')}"
        state = "prepared" if ready else "made at first run" if spec.cpu_ok else "not prepared"
        rows.append([spec.short, spec.title, metric, f"{spec.budget_minutes:.0f} m", base, state])
    header = ["id", "task", "metric", "budget", "baseline", "data"]
    for line in text_table(header, rows, right=frozenset({3, 4}), width=terminal_width(), shrink=1):
        click.echo(line)
    click.echo("")
    for line in checks_lines(list(task_facts().values()), detail=show_checks):
        click.echo(line)


def prepare_task(spec: TaskSpec, home: Path, from_dir: Path | None, extra: tuple[str, ...] = (),
                 weights_from: Path | None = None) -> None:
    """Run the task's locked ``prepare.py`` into ``$ONEGC_HOME/data/<task>``, showing progress;
    then, for a task with permitted pretrained weights, fetch those once too."""
    base = [sys.executable, str(spec.folder / "prepare.py"), "--data-dir", str(data_root(home) / spec.id)]
    run_prepare(spec.short, base + (["--from", str(from_dir)] if from_dir else []) + list(extra))
    if spec.pretrained_weights:
        from runner.session.workspace import weights_dir

        if not (weights_dir(spec, data_root(home)) / "weights.json").is_file():
            run_prepare(spec.short, base + ["--weights"] + (["--weights-from", str(weights_from)] if weights_from else []))


@main.command("prepare")
@click.argument("names", nargs=-1)
@click.option("--from", "from_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="take the raw files from this folder instead of downloading (offline clusters)")
@click.option("--weights-from", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="T3: take the DINOv3 weight files from this folder instead of downloading them")
@click.option("--force", is_flag=True, help="prepare again even if already prepared")
def prepare_cmd(names: tuple[str, ...], from_dir: Path | None, weights_from: Path | None, force: bool) -> None:
    """Download (or take --from DIR), verify and convert task data: onegc prepare t1 t6 | all.

    Every option is onegc's own (a misspelt one is refused with "did you mean", exit 2), and
    ``--force`` reaches prepare.py."""
    home = usable_home()
    if not names:
        raise OnegcError("name the tasks to prepare (e.g. 'onegc prepare t1 t6') or 'all'")
    extra = ("--force",) if force else ()
    wanted = list(names)
    from tasks import benchmark_tasks

    specs = benchmark_tasks() if wanted == ["all"] else [_task(n) for n in wanted]
    for spec in specs:
        click.echo(f"{spec.short}: {spec.title}", err=True)
        prepare_task(spec, home, from_dir, extra, weights_from)
        if spec.pretrained_weights:  # T3's backbones are timm models: the agents' Python must import them
            from runner.session.agent_env import torchvision_problem

            problem = torchvision_problem()
            if problem:
                click.echo(f"note: {spec.short}'s baseline cannot run here: {problem}", err=True)


# ---------------------------------------------------------------------------- sessions
def _watch(home: Path, sessions: list[SessionPaths], plain: bool, task: str) -> int:
    """Follow the sessions (the monitor, or ``--plain`` lines); the exit code of how they ended
    (onegc_tui/cli/exit_codes.py)."""
    from onegc_tui.cli.exit_codes import EXIT_INTERRUPTED, Outcome, exit_code
    from onegc_tui.cli.plain import official_words, still_running

    ids = [p.session_id for p in sessions]
    if plain or not sys.stdout.isatty():
        from onegc_tui.cli.plain import follow

        try:
            ends = follow(home, ids)
        except KeyboardInterrupt:  # Ctrl-C stops the following, not the sessions: say so, and how to end them
            click.echo(f"\nstopped following{still_running(ids)}", err=True)
            return EXIT_INTERRUPTED
        for sid, end in ends.items():
            click.echo(f"{sid}: {end.reason}, {official_words(end.score, end.task, end.best_checkpoint)} "
                       f"(result: {runs_dir(home) / sid / 'result.json'})")
        return exit_code(Outcome(end.reason, end.score) for end in ends.values())
    from onegc_tui.app import make_app
    from onegc_tui.app.guard import run_monitor
    from runner.launch.records import session_ended

    run_monitor(make_app(home, focus=ids[0]), still_running(ids), describe=describe)
    outcomes = []
    for p in sessions:
        last = session_ended(p)
        outcomes.append(Outcome(last.get("reason"), last.get("score")) if last else Outcome(None, None))
        said = (f"{last.get('reason')}, {official_words(last.get('score'), task, last.get('best_checkpoint'), last.get('val'))}"
                f" (result: {p.result})" if last else f"still running{still_running([p.session_id])}")
        click.echo(f"{p.session_id}: {said}", err=True)
    return exit_code(outcomes)


@main.command("run", cls=AfterDashDash, context_settings={"allow_extra_args": True})
@click.argument("task")
@click.option("--agent", "-a", required=True, help="scripted, command, claude-code, codex or opencode")
@click.option("--model", "-m", default=None, help="the model id the agent CLI should use")
@click.option("--repeats", "-n", default=1, show_default=True, type=click.IntRange(1, 100))
@click.option("--budget", "budget_s", type=DURATION, default=None,
              help="minutes, or 90s, 2m, 1h (default: the task's budget)")
@click.option("--gpus", default=None, help="GPU indices to use, e.g. 0,1 (default: all visible)")
@click.option("--pace", "pace_s", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="scripted agent: seconds between steps")
@click.option("--network", type=click.Choice(["api-only", "none", "open"]), default=None,
              help="what the agent may reach (default: api-only for real agent CLIs, none for scripted/command; "
                   "open shares this machine's network, and is flagged wherever the result is shown)")
@click.option("--plain", is_flag=True, help="print one line per event instead of opening the monitor")
@click.option("--detach", is_flag=True, help="start the sessions and return")
@click.option("--unsealed", is_flag=True,
              help="run the agent without its sandbox (it can then read held-out data and rewrite records): "
                   "recorded in the contract, flagged wherever the result is shown")
@click.option("--memory", "memory_bytes", type=SIZE, default=None,
              help="memory cap of the agent's processes, e.g. 512M, 16G (default: 80% of this machine's)")
@click.option("--max-processes", type=click.IntRange(min=16), default=None,
              help="cap on the agent's processes and threads (default: 256 per CPU, at least 4096)")
@click.option("--cost-limit", "cost_limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="USD",
              help="also end the session, in order, once its model calls have cost this much (reason cost_limit)")
@click.option("--no-canaries", "no_canaries", is_flag=True,
              help="the paper's workspace exactly: no canaries in the agent's copy of the scored split (training on it "
                   "then goes unseen); recorded in the contract, and history never pools it with the default")
@click.option("--scored-split", "scored_split", type=click.Choice(["paper", "sealed"]), default="paper",
              help="sealed: the scored split's targets stay out of the workspace and the harness answers the agent's "
                   "evaluations on it (at most 200), so training on it is impossible (t0, T2, T3, T7); recorded in "
                   "the contract, and history never pools it with the paper's split")
@click.pass_context
def run_cmd(ctx, task, agent, model, repeats, budget_s, gpus, network, pace_s, plain, detach, unsealed, memory_bytes,
            max_processes, cost_limit, no_canaries, scored_split) -> None:
    """Start sessions of an agent on a task: onegc run t6 --agent claude-code --model claude-sonnet-4-6.

    The command agent's command line goes after ``--``: onegc run t0 --agent command -- python agent.py.
    The exit code says how the sessions ended (docs/exit-codes.md)."""
    from runner.launch.request import make_request
    from runner.launch.start import absolute_command, start_sessions

    command = ctx.meta[AFTER_DASH_DASH]
    if command and agent != "command":
        raise click.UsageError(f"only --agent command takes a command line after '--' (--agent {agent} does not): "
                               f"'{' '.join(command)}'", ctx)

    home = usable_home()
    spec = _task(task)
    request = make_request(task=spec.id, agent=agent, model=model, repeats=repeats, budget_s=budget_s,
                           gpus=gpus, network=network, pace_s=pace_s, sealed=not unsealed,
                           command=absolute_command(command), memory_bytes=memory_bytes,
                           max_processes=max_processes, cost_limit_usd=cost_limit, canaries=not no_canaries,
                           scored_split=scored_split)
    sessions = start_sessions(home, request)
    if unsealed:
        click.echo("note: --unsealed: the agent sees this machine as its user does; the result is not comparable", err=True)
    for p in sessions:
        click.echo(f"started {p.session_id} ({p.root})", err=True)
    if not detach:
        ctx.exit(_watch(home, sessions, plain, spec.id))


@main.command("demo")
@click.option("--plain", is_flag=True, help="print one line per event instead of opening the monitor")
@click.option("--budget", "budget_s", type=DURATION, default=DEMO_BUDGET, show_default=True,
              help="minutes, or 90s, 2m, 1h")
def demo_cmd(plain: bool, budget_s: float) -> None:
    """A real session of the built-in scripted agent on the tiny demo task, in the monitor (CPU, offline)."""
    from runner.launch.network_choice import demo_network
    from runner.launch.request import make_request
    from runner.launch.start import start_sessions
    from runner.sandbox.bwrap import status

    home = usable_home()
    sealed = status().ok  # the built-in agent is ours: where no sandbox can be made, the demo runs without
    if not sealed:
        click.echo(f"note: the demo runs unsealed here: {status().detail}", err=True)
    network, why = demo_network()  # likewise its network: a namespace of its own where one can be made
    if why:
        click.echo(f"note: the demo's agent shares this machine's network here: {why}", err=True)
    sessions = start_sessions(home, make_request(task="t0", agent="scripted", budget_s=budget_s, pace_s=DEMO_PACE_S,
                                                 network=network, sealed=sealed))
    click.echo(f"demo session {sessions[0].session_id} started under {home}", err=True)
    click.get_current_context().exit(_watch(home, sessions, plain, _task("t0").id))


@main.command("monitor")
@click.option("--session", "focus", default=None, help="select this session at start")
@click.option("--web", is_flag=True, help="serve the monitor to a browser instead (textual-serve)")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="with --web: the port")
@click.option("--host", default="localhost", show_default=True,
              help="with --web: the address to bind; localhost is for an SSH tunnel (0.0.0.0 opens it to the network); "
                   "the printed URL carries the token every page and websocket needs")
def monitor_cmd(focus: str | None, web: bool, port: int, host: str) -> None:
    """Open the live monitor over every session under $ONEGC_HOME (--web: in a browser). A home
    this user can read but not write is watched as a read-only view: its store read in place where
    it holds the session folders whole and nothing runs, else live through a private copy of it
    (onegc_tui/store/readonly_home.py)."""
    from onegc_tui.store.readonly_home import IN_PLACE, browsable_home, private_store

    if not web:
        need_terminal("onegc monitor")  # else it writes escape codes into a pipe and waits for keys forever
        from onegc_tui.app import make_app
        from onegc_tui.app.guard import check_store, run_monitor

        home = browsable_home()
        with private_store(home) as view:
            check_store(home)
            # in place, nothing is ingested: the store holds every session whole, and none runs
            run_monitor(make_app(home, focus=focus, read_only=bool(view), live=view != IN_PLACE), describe=describe)
        return
    try:
        from onegc_tui.app.web import serve
    except ImportError as exc:
        raise OnegcError(f"--web needs textual-serve ({exc.name} is missing): pip install textual-serve") from None
    from onegc_tui.app.guard import check_store

    home = browsable_home()
    with private_store(home) as view:  # each tab's monitor makes its own (it is an 'onegc monitor')
        check_store(home)  # a damaged store: one line now, not a failure in every tab
    read_only = bool(view)
    try:
        serve(home, host=host, port=port, focus=focus, read_only=read_only)
    except OSError as exc:
        raise OnegcError(f"cannot serve on {host}:{port}: {exc.strerror or exc}; pick another with --port") from None


@main.command("sessions")
@click.option("--json", "as_json", is_flag=True, help="a JSON list, one object per session")
def sessions_cmd(as_json: bool) -> None:
    """List sessions with their state, budget left and scores."""
    from onegc_tui.store.readonly_home import browsable_home, caught_up_store

    home = browsable_home()  # only reads: a read-only home is read in place, or into memory (onegc_tui/store/readonly_home.py)
    store = caught_up_store(home)
    if as_json:  # one JSON document, a list ([] for none), whatever reads it (jq, json.load)
        try:
            _sessions_json(store)
        finally:
            store.close()
        return
    try:
        rows = store.sessions()
    finally:
        store.close()
    if not rows:
        click.echo(f"no sessions under {runs_dir(home)}: start one with 'onegc demo' or 'onegc run'")
        return
    from onegc_tui.cli.sessions_table import plain_sessions
    from onegc_tui.views.text_table import terminal_width

    for line in plain_sessions(rows, terminal_width()):
        click.echo(line)


def _sessions_json(store) -> None:
    """``onegc sessions --json``: one object per session, a line each, written as the rows are read
    (over 100 000 sessions the list is never whole in memory) and encoded by pydantic-core's Rust
    encoder (a third of the json module's time; its floats are the same shortest round trip). An
    object with any character past ASCII is the json module's, which escapes it (``\\u009b``): the
    agent's text never reaches a terminal as a control."""
    from pydantic_core import to_json

    from onegc_tui.store.queries import stream_sessions
    from onegc_tui.views.sessions_view import not_checked
    from onegc_tui.views.task_facts import scored_split
    from runner.wire.defaults import scored_split_sealed

    # "sealed", "network": the contract's (None before sessions recorded it); "flagged": scores with an integrity
    # verdict of strength look or stronger; "not_checked": the threat rows no check met (None: not recorded)
    # "best_live": the best live val score; "score": the official one, on "score_split" (docs/numbers.md)
    chunk, n = ["["], 0
    for n, r in enumerate(stream_sessions(store), 1):
        contract = json.loads(r.pop("contract") or "{}")
        r.update(sealed=contract.get("sealed"), network=contract.get("network"), best_live_split="val",
                 score_split=scored_split(r["task"]), scored_split_sealed=scored_split_sealed(contract),
                 not_checked=not_checked(r) if r.get("not_checked") is not None else None)
        text = to_json(r).decode()
        chunk.append(("\n " if n == 1 else ",\n ") + (text if text.isascii() else json.dumps(r)))
        if len(chunk) >= 1000:
            click.echo("".join(chunk), nl=False)
            chunk = []
    chunk.append("\n]" if n else "]")
    click.echo("".join(chunk))


def _control(session_id: str, action: Literal["pause", "resume"]) -> None:
    """Ask the runner, and wait for its answer: a refusal is an error (exit 2) saying why."""
    from runner.launch.records import has_started, session_ended
    from runner.wire.control import request_and_wait

    paths = session_paths(usable_home(), session_id)
    if paths.result.exists() or session_ended(paths) is not None:
        raise OnegcError(f"session {paths.session_id} has already ended")
    if not has_started(paths):
        raise OnegcError(f"session {paths.session_id} has not started yet (queued): nothing to {action}")
    answer = request_and_wait(paths, action)
    if not answer.accepted:
        raise OnegcError(f"the runner of {paths.session_id} refused to {action} it: {answer.detail or 'refused'}")
    done = {"pause": "paused: its tree is frozen and its budget clock stopped",
            "resume": "resumed: its deadline moved by the time it was paused"}[action]
    click.echo(f"{paths.session_id}: {done}")


@main.command("pause")
@click.argument("session_id")
def pause_cmd(session_id: str) -> None:
    """Freeze a session's whole process tree and stop its budget clock."""
    _control(session_id, "pause")


@main.command("resume")
@click.argument("session_id")
def resume_cmd(session_id: str) -> None:
    """Thaw a paused session; its deadline moves by the time it was paused."""
    _control(session_id, "resume")


@main.command("abort")
@click.argument("session_id")
@click.option("--no-wait", is_flag=True, help="request the abort and return at once (no escalation)")
def abort_cmd(session_id: str, no_wait: bool) -> None:
    """End a session now: SIGINT, SIGTERM, then SIGKILL of its whole tree within the grace period.

    A queued session leaves the queue; a runner that does not end within the grace period is
    stopped through its launcher (signals locally, scancel on Slurm)."""
    from runner.launch.abort import abort_session
    from runner.launch.records import session_ended

    paths = session_paths(usable_home(), session_id)
    if paths.result.exists() or session_ended(paths) is not None:  # as pause and resume: an error, exit 2
        raise OnegcError(f"session {paths.session_id} has already ended: nothing to abort")
    click.echo(abort_session(paths, escalate=not no_wait))


@main.command("disqualify")
@click.argument("session_id")
@click.option("--reason", "-r", default=None, help="why (shown in history and the exports); required unless --clear")
@click.option("--clear", is_flag=True, help="take a disqualification back")
def disqualify_cmd(session_id: str, reason: str | None, clear: bool) -> None:
    """Strike a session's result out of the statistics (the paper's protocol violations: it stays
    in n/N, not in the mean), with a reason that history and the exports show."""
    from onegc_tui.store import Store
    from runner.wire import disqualifications

    if clear == bool(reason):
        raise OnegcError("give --reason TEXT to disqualify, or --clear to take it back (not both)")
    home = usable_home()
    paths = session_paths(home, session_id)
    disqualifications.record(paths, None if clear or reason is None else reason.strip())
    _, standing = disqualifications.current(paths)
    store = Store.open(home)
    try:
        store.set_disqualified(paths.session_id, standing)
    finally:
        store.close()
    click.echo(f"{paths.session_id}: " + (f"disqualified: {standing}" if standing else "counts again"))


@main.command("reindex")
def reindex_cmd() -> None:
    """Rebuild onegc.db from the session folders (events.jsonl is the source of truth)."""
    from onegc_tui.store import DB_NAME, Store
    from onegc_tui.store.reindex import rebuild
    from onegc_tui.store.torn_tail import settle_unended

    home = usable_home()
    db = home / DB_NAME
    tmp = home / f".{DB_NAME}.reindex"
    for suffix in ("", "-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    sessions, n = rebuild(home, tmp)
    store = Store(tmp)
    try:
        settled = settle_unended(store, home)  # a finished session whose log's last line is torn
    finally:
        store.close()
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    os.replace(tmp, db)
    click.echo(f"reindexed {sessions} sessions, {n} events into {db}")
    from onegc_tui.cli.plain import official_words

    for s in settled:
        why = f"its event log ends in a torn line ({s.torn} bytes)" if s.torn else "its event log has no end"
        click.echo(f"{s.session_id}: {why}: its end is taken from result.json: {s.end.reason}, "
                   f"{official_words(s.end.score, s.task, s.end.checkpoint, s.end.val)}")
    store = Store(db)
    try:
        for row in store.sessions("record = 'tampered'"):  # runner/scoring/seal.py: named in every view too
            click.echo(f"{row['session_id']}: TAMPERED record: {row['record_detail']}")
    finally:
        store.close()


def _register_commands() -> None:
    """Commands that live in their own modules (studies, history, doctor, baseline, export, report, rm)."""
    from onegc_tui.cli.baseline import baseline
    from onegc_tui.cli.doctor import doctor
    from onegc_tui.cli.export import export, report
    from onegc_tui.cli.history import history
    from onegc_tui.cli.remove import rm
    from onegc_tui.cli.study import study
    from onegc_tui.cli.verify import bundle, verify

    for command in (study, history, doctor, baseline, export, report, rm, verify, bundle):
        main.add_command(command)


_register_commands()


def entry() -> None:
    """The ``onegc`` executable (errors: OnegcGroup.main)."""
    main()

