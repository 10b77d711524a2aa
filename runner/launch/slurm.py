"""The Slurm launcher: one batch job per session, through the plain commands (sbatch, squeue,
scontrol, sacct, scancel); the session folder lives on the filesystem the nodes share.

A job runs ``runs/<id>/slurm.sh``, which binds the session to the GPU Slurm gave it (rewrites
``session.json``'s ``gpu`` from ``$CUDA_VISIBLE_DEVICES``, atomically, before the runner reads
it) and then ``exec``s ``python -m runner.session DIR``, so the batch shell *is* the runner and
``--signal=B:TERM@<s>`` reaches it before the time limit (the runner ends cleanly on SIGTERM).
``launcher.json`` records the job id, so any monitor can find the job again. Pause, resume and
abort travel through ``control.jsonl`` like everywhere else (``scontrol suspend`` is admin-only);
:func:`runner.launch.records.abort_session` falls back to ``scancel`` after the grace period.

    python -m runner.launch.slurm bind-gpu RUNS/<id>      # what the job script runs first
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from runner.launch.records import has_started, read_record, update_record, write_record
from runner.launch.spawn import REPO_ROOT
from runner.wire.paths import SessionPaths
from runner.wire.session_config import SessionConfig

SCORING_MARGIN_S = 600  # after the budget and grace: official re-evaluation of a few checkpoints
STARTUP_MARGIN_S = 120  # workspace build (data copy) before the budget clock starts
QUERY_TIMEOUT_S = 30  # a slurmctld busy with a large cluster answers slowly
SNAPSHOT_TTL_S = 2.0  # one squeue call serves every session a status pass asks about
ALIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
                "SIGNALING", "STAGE_OUT", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "STOPPED"}
JOB_SCRIPT = "slurm.sh"
SLURM_TIME_RE = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$")


class SlurmError(RuntimeError):
    """A Slurm command failed; the message says which and why."""


class SlurmOptions(BaseModel):
    """``[launcher.slurm]`` of a study file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = None  # Slurm time ("2:30:00", "150"); default: budget + grace + margins
    gres: str = "gpu:1"
    cpus_per_task: int | None = Field(default=None, ge=1)
    mem: str | None = None  # "64G"
    signal_s: int = Field(default=120, ge=60)  # SIGTERM this long before the time limit
    extra: list[str] = Field(default_factory=list)  # more sbatch options, e.g. ["--constraint=a100"]
    setup: list[str] = Field(default_factory=list)  # shell lines run before the runner (module load ...)
    python: str | None = None  # the interpreter on the nodes; default: the one submitting

    @field_validator("time")
    @classmethod
    def _slurm_time(cls, value: str | None) -> str | None:
        if value is not None and not SLURM_TIME_RE.match(value):
            raise ValueError("use Slurm's format: minutes, H:MM:SS or D-HH:MM:SS")
        return value


def available() -> bool:
    return shutil.which("sbatch") is not None


def time_limit(config: SessionConfig, options: SlurmOptions) -> str:
    """The job's ``--time``: the option if given, else everything a session can take, in minutes."""
    if options.time:
        return options.time
    seconds = config.budget_s + config.grace_s + SCORING_MARGIN_S + STARTUP_MARGIN_S + options.signal_s
    return str(math.ceil(seconds / 60))


def job_script(paths: SessionPaths, options: SlurmOptions, home: Path) -> str:
    python = shlex.quote(options.python or sys.executable)
    root = shlex.quote(str(paths.root))
    lines = [
        "#!/bin/bash",
        f"# onegc session {paths.session_id}: written by runner.launch.slurm; run by sbatch",
        "set -eo pipefail",
        f"export PYTHONPATH={shlex.quote(str(REPO_ROOT))}${{PYTHONPATH:+:$PYTHONPATH}}",
        f"export ONEGC_HOME={shlex.quote(str(home))}",
        f"cd {root}",
        *options.setup,
        f"{python} -m runner.launch.slurm bind-gpu {root}",
        f"exec {python} -m runner.session {root} >> runner.log 2>&1",
        "",
    ]
    return "\n".join(lines)


def sbatch_argv(paths: SessionPaths, config: SessionConfig, options: SlurmOptions) -> list[str]:
    argv = ["sbatch", "--parsable", f"--job-name=onegc-{paths.session_id}", f"--chdir={paths.root}",
            f"--output={paths.root}/slurm-%j.out", f"--gres={options.gres}",
            f"--time={time_limit(config, options)}", f"--signal=B:TERM@{options.signal_s}"]
    for flag, value in (("--partition", options.partition), ("--account", options.account), ("--qos", options.qos),
                        ("--cpus-per-task", options.cpus_per_task), ("--mem", options.mem)):
        if value is not None:
            argv.append(f"{flag}={value}")
    return [*argv, *options.extra, str(paths.root / JOB_SCRIPT)]


def submit(paths: SessionPaths, options: SlurmOptions, home: Path, **extra) -> str:
    """Write the job script, ``sbatch`` it, record the job id in ``launcher.json``; returns the id."""
    config = paths.read_config()
    script = paths.root / JOB_SCRIPT
    script.write_text(job_script(paths, options, home))
    script.chmod(0o755)
    argv = sbatch_argv(paths, config, options)
    out = _run(argv)
    job_id = out.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(f"sbatch printed {out.strip()!r} instead of a job id")
    write_record(paths, {"kind": "slurm", "state": "submitted", "job_id": job_id, "submitted_at": time.time(),
                         "sbatch": argv, **extra})
    return job_id


def cancel(paths: SessionPaths) -> str:
    record = read_record(paths) or {}
    job_id = record.get("job_id")
    if not job_id:
        return f"{paths.session_id}: no slurm job recorded in {paths.launcher}"
    _run(["scancel", str(job_id)])
    if not has_started(paths):
        update_record(paths, state="cancelled", ended_at=time.time())
    return f"{paths.session_id}: slurm job {job_id} cancelled (scancel)"


# ---------------------------------------------------------------------- job state
_snapshot: tuple[float, dict[str, str]] | None = None


def _queue_snapshot() -> dict[str, str] | None:
    """``{job_id: state}`` for this user's jobs still in the queue, cached for a moment."""
    global _snapshot
    now = time.monotonic()
    if _snapshot is not None and now - _snapshot[0] < SNAPSHOT_TTL_S:
        return _snapshot[1]
    user = os.environ.get("USER") or _whoami()
    try:
        out = _run(["squeue", "-h", "-o", "%i|%T", "-u", user])
    except SlurmError:
        return None
    states = {}
    for line in out.splitlines():
        job, _, state = line.partition("|")
        if job.strip():
            states[job.strip()] = state.strip()
    _snapshot = (now, states)
    return states


def job_state(job_id: str) -> str | None:
    """Slurm's state of a job (``RUNNING``, ``CANCELLED``, ``TIMEOUT``…); ``UNKNOWN`` if the
    scheduler no longer knows it; None when Slurm cannot be asked from here."""
    if not available():
        return None
    snapshot = _queue_snapshot()
    if snapshot is not None and str(job_id) in snapshot:
        return snapshot[str(job_id)]
    try:  # finished jobs stay in slurmctld's memory for MinJobAge (300 s by default)
        out = _run(["scontrol", "-o", "show", "job", str(job_id)])
        match = re.search(r"\bJobState=(\S+)", out)
        if match:
            return match.group(1)
    except SlurmError:
        pass
    try:  # older ones only in the accounting database, where there is one
        out = _run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", str(job_id)])
        first = out.strip().splitlines()[0].split()[0] if out.strip() else ""
        if first:
            return first
    except (SlurmError, IndexError):
        pass
    return "UNKNOWN" if snapshot is not None else None


def failure_reason(paths: SessionPaths, record: dict) -> str | None:
    """Why a Slurm session without ``session_ended`` is dead, or None while its job lives."""
    job_id = record.get("job_id")
    if not job_id:
        return f"no slurm job recorded in {paths.launcher.name}: the submission did not complete"
    state = job_state(str(job_id))
    if state is None or state.rstrip("+") in ALIVE_STATES:
        return None
    when = "before the session did" if has_started(paths) else "before the session started"
    what = f"slurm job {job_id} ended ({state}) {when}"
    note = _job_log_note(paths, job_id)
    return f"{what}: {note}" if note else f"{what} (see slurm-{job_id}.out)"


def _job_log_note(paths: SessionPaths, job_id: str) -> str:
    """Slurm's own line about the job's end (``*** JOB 12 CANCELLED AT ... DUE TO TIME LIMIT ***``)."""
    try:
        text = (paths.root / f"slurm-{job_id}.out").read_text(errors="replace")
    except FileNotFoundError:
        return ""
    for line in reversed(text.splitlines()):
        if "***" in line or "error:" in line.lower():
            return line.strip()[:200]
    return ""


# ---------------------------------------------------------------------- in the job
def bind_gpu(root: Path) -> str | None:
    """Rewrite ``session.json``'s ``gpu`` from ``$CUDA_VISIBLE_DEVICES`` (atomically); returns it."""
    paths = SessionPaths(root)
    config = paths.read_config()
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() or None
    if gpu != config.gpu:
        paths.write_config(config.model_copy(update={"gpu": gpu}), new=False)
    return gpu


def _run(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} not found: run this on a Slurm login node, or use the local launcher") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{argv[0]} did not answer within {QUERY_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        raise SlurmError(f"{' '.join(argv[:2])} failed: {err[-1] if err else f'exit {proc.returncode}'}")
    return proc.stdout


def _whoami() -> str:
    import getpass

    return getpass.getuser()


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 2 or args[0] != "bind-gpu":
        print("usage: python -m runner.launch.slurm bind-gpu RUNS/<session_id>", file=sys.stderr)
        return 2
    gpu = bind_gpu(Path(args[1]).resolve())
    print(f"onegc: session bound to CUDA_VISIBLE_DEVICES={gpu or '(none)'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
