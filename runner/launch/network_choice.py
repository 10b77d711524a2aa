"""Which network a session gets before it starts: the policy checked where it is chosen, so that
``onegc run`` refuses in one line rather than starting a session that can only end in a harness
error, and the built-in demo falls back as it does for its sandbox.

The defaults themselves are :func:`runner.wire.agents.default_network`: ``api-only`` for the agent
CLIs, ``none`` for ``command`` and ``scripted``; ``open`` only when asked for.
"""

from __future__ import annotations

from runner.errors import OnegcError
from runner.wire.defaults import NetworkPolicy


def ensure_network(policy: str, open_hint: str = "pass --network open") -> None:
    """A confined policy (``none``, ``api-only``) needs a network namespace: refuse otherwise,
    saying how to get one or how to share the host's network knowingly (``open_hint``: the way to
    ask for ``open`` where the start came from)."""
    if policy == "open":
        return
    from runner.sandbox.network import namespaces_available

    ok, why = namespaces_available()
    if not ok:
        raise OnegcError(f"network {policy} needs a network namespace of the agent's own: {why}; "
                         f"or {open_hint} to let the agent share this machine's network (flagged in history)")


def demo_network() -> tuple[NetworkPolicy, str | None]:
    """The demo's policy: ``none``, or ``open`` with the reason where no namespace can be made
    (the built-in agent is ours and offline, as with its sandbox: the demo still runs)."""
    from runner.sandbox.network import namespaces_available

    ok, why = namespaces_available()
    return ("none", None) if ok else ("open", why)
