"""Find the agent CLIs: the project-local install first (``make agents`` -> ``.agents/``), then PATH.

The project prefix wins over PATH because ``make agents`` pins the CLI versions the transcript
parsers were checked against (``tests/runner/agents/fixtures/``); a global install may be newer.
Prefixes searched, in order: ``$ONEGC_AGENTS_PREFIX``, ``$ONEGC_HOME/.agents`` (default: the
current directory) and the ``.agents`` folder of this checkout. :func:`cli_status` is what
``onegc doctor`` prints for each agent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runner.wire.agents import AGENTS

REPO_ROOT = Path(__file__).resolve().parents[2]
PREFIX_NAME = ".agents"
BIN_SUBDIR = Path("node_modules") / ".bin"
VERSION_TIMEOUT_S = 20  # a first run of a Node CLI can be slow on a cold disk

# agent name -> (executable, npm package), from the agents' entries (runner/wire/agents.py);
# `make agents` installs these into .agents/
CLIS: dict[str, tuple[str, str]] = {a.name: (a.cli.executable, a.cli.package) for a in AGENTS if a.cli is not None}
INSTALL_HINT = "run 'make agents' (project-local, pinned versions) or 'npm install -g {package}'"


def prefixes() -> list[Path]:
    """Project-local install prefixes, most specific first, without duplicates."""
    found: list[Path] = []
    for raw in (
        os.environ.get("ONEGC_AGENTS_PREFIX"),
        str(Path(os.environ.get("ONEGC_HOME") or ".") / PREFIX_NAME),
        str(REPO_ROOT / PREFIX_NAME),
    ):
        if raw:
            path = Path(raw).resolve()
            if path not in found:
                found.append(path)
    return found


def find_cli(executable: str) -> str | None:
    """Absolute path of ``executable`` in a project prefix or on PATH, or ``None``."""
    for prefix in prefixes():
        candidate = prefix / BIN_SUBDIR / executable
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(executable)


def cli_version(path: str) -> str | None:
    """First line of ``path --version``, or ``None`` if it does not run."""
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = (out.stdout or out.stderr or "").strip()
    return text.splitlines()[0] if out.returncode == 0 and text else None


@dataclass(frozen=True)
class CliStatus:
    agent: str
    executable: str
    path: str | None
    version: str | None

    @property
    def ok(self) -> bool:
        return self.path is not None and self.version is not None

    @property
    def message(self) -> str:
        package = CLIS[self.agent][1]
        if self.path is None:
            return f"{self.agent}: '{self.executable}' not found: " + INSTALL_HINT.format(package=package)
        if self.version is None:
            return (
                f"{self.agent}: {self.path} does not run '--version': reinstall it ("
                + INSTALL_HINT.format(package=package)
                + ")"
            )
        return f"{self.agent}: {self.version} ({self.path})"


def cli_status(agent: str) -> CliStatus:
    executable = CLIS[agent][0]
    path = find_cli(executable)
    return CliStatus(agent=agent, executable=executable, path=path, version=cli_version(path) if path else None)
