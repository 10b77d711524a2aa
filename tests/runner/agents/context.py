"""A LaunchContext in a temporary folder, as the runner builds one, for the adapters' launch tests."""

from __future__ import annotations

from pathlib import Path

from runner.agents.base import LaunchContext


def launch_context(tmp_path: Path, model: str | None, env: dict, extra=()) -> LaunchContext:
    return LaunchContext(
        workspace=tmp_path / "workspace",
        session_dir=tmp_path,
        agent_home=tmp_path / "agent_home",
        prompt="Read program.md. Budget: 2 minutes.",
        model=model,
        base_env=env,
        extra_args=tuple(extra),
    )
