"""Which environment variables each agent CLI needs or accepts, and the agent's environment.

:data:`CREDENTIALS` names, per agent, the variables that authenticate it (any one will do) and
the ones that point it at a custom endpoint. :func:`credential_report` says which are set —
names only, never values — for ``onegc doctor`` and for a clear error before a launch.
:func:`agent_env` builds an agent's environment from the runner's: a fresh HOME and XDG folders
in the session's agent home (so the user's own agent settings, logins and plugins stay out),
and no credentials that belong to the other agents.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.wire.agents import AGENTS, BY_NAME, Credentials, provider_of

# from the agents' entries (runner/wire/agents.py)
CREDENTIALS: dict[str, Credentials] = {a.name: a.credentials for a in AGENTS if a.credentials is not None}

ALL_CREDENTIAL_VARS: frozenset[str] = frozenset(
    name for creds in CREDENTIALS.values() for name in creds.keys + creds.base_urls
)

# Variables that would point a CLI back at the user's own configuration; agent_env drops them.
USER_CONFIG_VARS = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
)


@dataclass(frozen=True)
class CredentialReport:
    agent: str
    present: tuple[str, ...]  # names of the accepted variables that are set (never their values)
    needed: tuple[str, ...]  # the key variables of which at least one must be set
    base_url: str | None  # the name of the custom-endpoint variable in use, if any

    @property
    def ok(self) -> bool:
        return any(name in self.present for name in self.needed)

    @property
    def message(self) -> str:
        if self.ok:
            endpoint = f", custom endpoint from {self.base_url}" if self.base_url else ""
            return f"{self.agent}: {', '.join(n for n in self.present if n in self.needed)} set{endpoint}"
        hint = " (any value if the endpoint does not check keys)" if self.base_url else ""
        return f"{self.agent}: no credentials: set {' or '.join(self.needed)}{hint}"


def _set(environ: Mapping[str, str], name: str) -> bool:
    return bool(environ.get(name, "").strip())


def base_url(agent: str, environ: Mapping[str, str]) -> str | None:
    """The custom endpoint configured for ``agent`` (a URL), or ``None``."""
    for name in CREDENTIALS[agent].base_urls:
        if _set(environ, name):
            return environ[name].strip()
    return None


def credential_report(
    agent: str, environ: Mapping[str, str] | None = None, model: str | None = None
) -> CredentialReport:
    """Which of ``agent``'s variables are set in ``environ`` (default: this process's)."""
    environ = os.environ if environ is None else environ
    creds = CREDENTIALS[agent]
    needed = creds.keys
    url_var = next((n for n in creds.base_urls if _set(environ, n)), None)
    if BY_NAME[agent].providers:  # the key of the provider --model PROVIDER/MODEL names, or the base URL's
        provider = provider_of(agent, model)
        if url_var:
            needed = ("OPENAI_API_KEY",)
        elif provider is not None:
            needed = (provider.key,)
    present = tuple(n for n in creds.keys + creds.base_urls if _set(environ, n))
    return CredentialReport(agent=agent, present=present, needed=needed, base_url=url_var)


def home_dirs(agent_home: Path) -> dict[str, Path]:
    """HOME and the XDG folders inside a session's agent home."""
    return {
        "HOME": agent_home,
        "XDG_CONFIG_HOME": agent_home / ".config",
        "XDG_DATA_HOME": agent_home / ".local" / "share",
        "XDG_STATE_HOME": agent_home / ".local" / "state",
        "XDG_CACHE_HOME": agent_home / ".cache",
    }


def agent_env(agent: str, base_env: Mapping[str, str], agent_home: Path) -> dict[str, str]:
    """``base_env`` with a fresh HOME/XDG in ``agent_home`` and only this agent's credentials."""
    mine = set(CREDENTIALS[agent].keys + CREDENTIALS[agent].base_urls)
    env = {
        k: v for k, v in base_env.items() if k not in USER_CONFIG_VARS and (k in mine or k not in ALL_CREDENTIAL_VARS)
    }
    env.update({name: str(path) for name, path in home_dirs(agent_home).items()})
    return env


def make_home(agent_home: Path) -> None:
    """Create the agent home and its XDG folders (mode 700: it may hold a provider config)."""
    for path in home_dirs(agent_home).values():
        path.mkdir(parents=True, exist_ok=True)
    agent_home.chmod(0o700)
