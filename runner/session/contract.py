"""``session_started``: the session's contract, the conditions every figure of it was measured
under (task version, budget, GPU, agent and model, sandbox, caps, canaries, network policy, harness)."""

from __future__ import annotations

import platform
import socket

from runner import HARNESS_VERSION
from runner.integrity import canaries, sealed_split
from runner.sandbox.caps import CapGroup
from runner.sandbox.network import NetworkSandbox
from runner.scoring import rescore
from runner.scoring.official import SELECTION
from runner.scoring.snapshots import SNAPSHOT_CAP_BYTES
from runner.session import agent_env
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig
from tasks import TaskSpec


def emit_started(events: EventWriter, spec: TaskSpec, config: SessionConfig, *, agent_version: str | None,
                 gpu_info: list[dict], caps: CapGroup | None, net: NetworkSandbox | None) -> None:
    contract = {
        "task_version": spec.version,
        "task_hash": spec.version_hash(),
        "budget_s": config.budget_s,
        "grace_s": config.grace_s,
        "gpu": gpu_info,
        "agent": config.agent,
        "agent_version": agent_version,
        "model": config.model,
        "sealed": config.sealed,
        "caps": caps.contract() if caps else None,
        # the record's caps on the agent's output (runner/wire/record_caps.py) and the snapshots' cap
        "record_caps": events.limits.caps.contract() if events.limits is not None else None,
        "snapshot_cap_bytes": config.snapshot_cap_bytes or SNAPSHOT_CAP_BYTES,
        "selection": SELECTION,
        "canaries": canaries.contract(spec, config.plants_canaries),  # runner/integrity/canaries.py
        # present only when sealed (runner/integrity/sealed_split.py): the paper's sessions keep their contract
        **({"scored_split": sealed_split.contract(spec, config.sealed_answers)} if config.scored_split == "sealed" else {}),
        "agent_env": agent_env.fingerprint(),  # the Python the agent imports from (runner/session/agent_env.py)
        **(net.contract() if net else {"network": config.network}),
        "harness_version": HARNESS_VERSION,
        "verify": rescore.contract(),  # onegc verify: exact on the CPU and this GPU model, else within a tolerance
        "python": platform.python_version(),
        "host": socket.gethostname(),
    }
    events.emit("session_started", task=spec.id, agent=config.agent, model=config.model, repeat=config.repeat,
                study=config.study, budget_s=config.budget_s, grace_s=config.grace_s, contract=contract)
