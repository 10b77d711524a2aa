"""Where each agent's model API lives: the endpoints its network gate lets through (``api-only``)."""

from __future__ import annotations

from collections.abc import Mapping

from runner.agents import credentials
from runner.sandbox.network import parse_endpoint
from runner.wire.agents import BY_NAME, provider_of

EXTRA_ALLOW_VAR = "ONEGC_NETWORK_ALLOW"  # "host:port,https://gateway.example" added to every agent's allowlist


def allowed_endpoints(agent: str, environ: Mapping[str, str], model: str | None = None) -> list[tuple[str, int]]:
    """The model endpoints ``agent`` needs, from its base-URL variable or its provider's API host.

    ``model`` matters for an agent with providers (OpenCode's ``PROVIDER/MODEL``; all of its known
    providers when it names none of them). ``ONEGC_NETWORK_ALLOW`` adds hosts for every agent.
    Agents without a remote model (scripted, command) get nothing. From the agent's entry
    (runner/wire/agents.py).
    """
    urls: list[str] = []
    entry = BY_NAME.get(agent)
    if agent in credentials.CREDENTIALS and entry is not None:
        custom = credentials.base_url(agent, environ)
        provider = provider_of(agent, model)
        if custom:
            urls.append(custom)
        elif provider is not None:
            urls.append(provider.endpoint)
        elif entry.providers:
            urls += [p.endpoint for p in entry.providers.values()]
        else:
            urls += entry.endpoints
    urls += [u for u in environ.get(EXTRA_ALLOW_VAR, "").replace(" ", ",").split(",") if u]
    out: list[tuple[str, int]] = []
    for url in urls:
        endpoint = parse_endpoint(url)
        if endpoint not in out:
            out.append(endpoint)
    return out
