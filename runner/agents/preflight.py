"""Checks before a session of a real agent CLI starts: what ``onegc doctor`` knows, per session.

``onegc run`` (and a local study) calls :func:`preflight` before it creates anything, so a
missing CLI, missing credentials or a missing model is one line at once, not a session that
"started" and failed two seconds later inside its sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from runner.errors import OnegcError
from runner.wire.agents import REAL_AGENTS


class AgentNotReady(OnegcError):
    """The agent CLI could not start a session here as asked (the message names the fix)."""


def preflight(agent: str, model: str | None, environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`AgentNotReady` (or ``ModelRequired``) when ``agent`` cannot start with
    ``model`` here; the built-in agents always can. Cheapest check first: the CLI's
    ``--version`` takes seconds."""
    if agent not in REAL_AGENTS:
        return
    from runner.agents import get_adapter
    from runner.agents.credentials import credential_report
    from runner.agents.locate import cli_status

    environ = os.environ if environ is None else environ
    type(get_adapter(agent)).check_model(model, environ)
    creds = credential_report(agent, environ, model)
    if not creds.ok:
        raise AgentNotReady(creds.message)
    cli = cli_status(agent)
    if not cli.ok:
        raise AgentNotReady(cli.message)
