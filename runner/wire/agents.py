"""The agents onegc runs, one entry each: every fact about an agent the harness needs, in one place.

An entry names the agent's adapter (its class, whose ``parse`` reads the CLI's stream), its CLI
(the executable and the npm package ``make agents`` installs), its credentials (the variables that
authenticate it, and the ones that point it at another endpoint), the model endpoints its network
gate lets through under ``api-only``, the providers a ``PROVIDER/MODEL`` names, the network policy
a session of it gets unless asked for another, and how its sessions' cost is known. The tables the
rest of the code reads are derived from these entries: the adapters by name
(runner/agents/__init__.py ``ADAPTERS``), the CLIs (runner/agents/locate.py ``CLIS``), the
credentials (runner/agents/credentials.py ``CREDENTIALS``), the endpoints
(runner/agents/endpoints.py) and, here, :data:`REAL_AGENTS` and :func:`default_network`.

Plain data and the standard library only: ``session.json`` names an agent, and both the runner
and the monitor read here what that name means. Adding an agent: docs/architecture.md, "How to add
an agent adapter".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from runner.wire.defaults import NetworkPolicy


@dataclass(frozen=True)
class Cli:
    """An agent's command line: its executable, and the npm package that installs it."""

    executable: str
    package: str


@dataclass(frozen=True)
class Credentials:
    """The variables an agent CLI reads: any one of ``keys`` authenticates it; ``base_urls`` point
    it at a custom model endpoint (optional); ``note``: what a person should know."""

    keys: tuple[str, ...]
    base_urls: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Provider:
    """A model provider an agent reaches by ``--model PROVIDER/MODEL``: its API, and its key."""

    endpoint: str
    key: str


@dataclass(frozen=True)
class AgentEntry:
    name: str
    adapter: str  # "module:Class", imported on use (a broken optional adapter cannot break the others)
    summary: str  # what it is, in a few words (onegc doctor)
    network: NetworkPolicy = "none"  # a session's policy unless another is asked for (runner/launch/request.py)
    cli: Cli | None = None  # None: built in, nothing to install
    credentials: Credentials | None = None  # None: it needs none
    endpoints: tuple[str, ...] = ()  # its model API, where no base URL is set (the api-only gate's allowlist)
    providers: Mapping[str, Provider] = field(default_factory=lambda: MappingProxyType({}))
    cost: str = "none: no model is paid for"  # how its sessions' cost is known (onegc doctor)


_OPENAI, _ANTHROPIC = "https://api.openai.com", "https://api.anthropic.com"

AGENTS: tuple[AgentEntry, ...] = (
    AgentEntry("scripted", "runner.agents.scripted:ScriptedAdapter",
               "built in: offline and deterministic, the task's scripted edits"),
    AgentEntry("command", "runner.agents.command:CommandAdapter",
               "any command line (--agent command -- CMD ...): its output as plain text"),
    AgentEntry(
        "claude-code", "runner.agents.claude_code:ClaudeCodeAdapter", "Anthropic's Claude Code (claude -p)",
        network="api-only", cli=Cli("claude", "@anthropic-ai/claude-code"),
        credentials=Credentials(
            keys=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"), base_urls=("ANTHROPIC_BASE_URL",),
            note="a subscription login does not carry over (fresh HOME): use 'claude setup-token' -> "
                 "CLAUDE_CODE_OAUTH_TOKEN"),
        endpoints=(_ANTHROPIC,),
        cost="priced from prices.toml as it goes (an estimate); the CLI's own total replaces it at each result"),
    AgentEntry(
        "codex", "runner.agents.codex:CodexAdapter", "OpenAI's Codex CLI (codex exec --json)",
        network="api-only", cli=Cli("codex", "@openai/codex"),
        credentials=Credentials(keys=("OPENAI_API_KEY", "CODEX_API_KEY"), base_urls=("OPENAI_BASE_URL",),
                                note="OPENAI_BASE_URL must serve the Responses API (/v1/responses)"),
        endpoints=(_OPENAI,),
        cost="its token counts priced from prices.toml (\"price unknown\" for a model it does not list)"),
    AgentEntry(
        "opencode", "runner.agents.opencode:OpenCodeAdapter", "OpenCode (opencode run --format json)",
        network="api-only", cli=Cli("opencode", "opencode-ai"),
        credentials=Credentials(keys=("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
                                base_urls=("OPENAI_BASE_URL",),
                                note="OPENAI_BASE_URL must serve Chat Completions (/v1/chat/completions)"),
        providers=MappingProxyType({"openrouter": Provider("https://openrouter.ai", "OPENROUTER_API_KEY"),
                                    "openai": Provider(_OPENAI, "OPENAI_API_KEY"),
                                    "anthropic": Provider(_ANTHROPIC, "ANTHROPIC_API_KEY")}),
        cost="reported by OpenCode for each step, priced from prices.toml where it has no price"),
)
BY_NAME: Mapping[str, AgentEntry] = MappingProxyType({a.name: a for a in AGENTS})
REAL_AGENTS: tuple[str, ...] = tuple(a.name for a in AGENTS if a.cli is not None)  # agent CLIs, installed apart


def default_network(agent: str) -> NetworkPolicy:
    """A session's network policy unless another is asked for: its entry's (an agent CLI reaches its
    model API and nothing else; the offline agents, and a name no entry has, get ``none``: a network
    namespace of their own with loopback only, so no agent shares the host's: its loopback services,
    its abstract unix sockets, the web monitor). ``open`` is only ever what someone asked for; it is
    recorded in the contract and flagged."""
    entry = BY_NAME.get(agent)
    return entry.network if entry is not None else "none"


def provider_of(agent: str, model: str | None) -> Provider | None:
    """The provider ``model`` names (``PROVIDER/MODEL``) among the agent's; None where it names none."""
    entry = BY_NAME.get(agent)
    if entry is None or not model or "/" not in model:
        return None
    return entry.providers.get(model.split("/", 1)[0])


__all__ = ["AGENTS", "BY_NAME", "REAL_AGENTS", "AgentEntry", "Cli", "Credentials", "Provider", "default_network",
           "provider_of"]
