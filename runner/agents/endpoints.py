"""Where each agent's model API lives: the endpoints its network gate lets through (``api-only``)."""

from __future__ import annotations

from collections.abc import Mapping

from runner.agents import credentials
from runner.sandbox.network import parse_endpoint

EXTRA_ALLOW_VAR = "ONEGC_NETWORK_ALLOW"  # "host:port,https://gateway.example" added to every agent's allowlist

# Where each agent's model API lives when no custom base URL is set.
DEFAULT_ENDPOINTS: dict[str, tuple[str, ...]] = {
    "claude-code": ("https://api.anthropic.com",),
    "codex": ("https://api.openai.com",),
}
OPENCODE_PROVIDERS = {
    "openrouter": "https://openrouter.ai",
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
}


def allowed_endpoints(agent: str, environ: Mapping[str, str], model: str | None = None) -> list[tuple[str, int]]:
    """The model endpoints ``agent`` needs, from its base-URL variable or its provider's API host.

    ``model`` matters for OpenCode only (``PROVIDER/MODEL``; all three known providers when it is
    unknown). ``ONEGC_NETWORK_ALLOW`` adds hosts for every agent. Agents without a remote model
    (scripted, command) get nothing.
    """
    urls: list[str] = []
    if agent in credentials.CREDENTIALS:
        custom = credentials.base_url(agent, environ)
        if custom:
            urls.append(custom)
        elif agent == "opencode":
            provider = model.split("/", 1)[0] if model and "/" in model else None
            urls += [OPENCODE_PROVIDERS[provider]] if provider in OPENCODE_PROVIDERS else list(OPENCODE_PROVIDERS.values())
        else:
            urls += DEFAULT_ENDPOINTS.get(agent, ())
    urls += [u for u in environ.get(EXTRA_ALLOW_VAR, "").replace(" ", ",").split(",") if u]
    out: list[tuple[str, int]] = []
    for url in urls:
        endpoint = parse_endpoint(url)
        if endpoint not in out:
            out.append(endpoint)
    return out
