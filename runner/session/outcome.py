"""The end detail of a session: the real cause in a few words, never a start-up banner.

A session that ends badly is explained from what the agent itself last saw (the adapter's
``failure``: an HTTP status, a retry count, the CLI's own wording), what the network gate saw
of the model endpoint (refused, timed out, 5xx) or, without a gate, a probe of that endpoint,
and the adapter's notes (a background task that was stopped, usage the CLI left unreported).
The agent's stderr is the last resort, without the lines every run prints.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable

from runner.agents.base import REQUEST_FAILED

PROBE_TIMEOUT_S = 3.0
# Lines the CLIs print on every start; never the cause of anything.
BANNERS = (
    re.compile(r"^Reading additional input from stdin"),  # codex exec, stdin at /dev/null
    re.compile(r"^WARNING: proceeding, even though we could not create PATH aliases"),  # codex under /tmp
)


def stderr_cause(lines: Iterable[str]) -> str | None:
    """The last stderr line worth showing, or ``None``."""
    for line in reversed(list(lines)):
        text = line.strip()
        if text and not any(b.match(text) for b in BANNERS):
            return text[:300]
    return None


def probe(host: str, port: int, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Why ``host:port`` cannot be reached from here, or ``None`` when it accepts a connection."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except TimeoutError:
        return f"no answer within {timeout:.0f} s"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def end_detail(
    reason: str,
    base: str,
    *,
    failure: str | None = None,
    notes: Iterable[str] = (),
    endpoint_problem: str | None = None,
    endpoints: Iterable[tuple[str, int]] = (),
    stderr: Iterable[str] = (),
) -> str:
    """``base`` (what ended the session) with the cause: ``agent_failed`` names it after a colon,
    the other reasons carry it as "the agent's last error". ``endpoints``: the model endpoints,
    named beside a failure when nothing else names them."""
    named = ", ".join(f"{h}:{p}" for h, p in endpoints)
    if failure and failure.startswith(REQUEST_FAILED) and named and not endpoint_problem and named not in failure:
        failure += f" (model endpoint {named})"
    causes = [c for c in (failure, endpoint_problem) if c]
    if reason == "agent_failed" and not causes:
        causes = [c for c in (stderr_cause(stderr),) if c]
    head = base
    if causes:
        joined = "; ".join(causes)
        head += f": {joined}" if reason == "agent_failed" else f"; the agent's last error: {joined}"
    return "; ".join([head, *notes])


def endpoint_problem(endpoints: Iterable[tuple[str, int]], probe_fn=probe) -> str | None:
    """Without a gate: the allowed endpoints that do not accept a connection now."""
    found = []
    for host, port in endpoints:
        why = probe_fn(host, port)
        if why:
            found.append(f"model endpoint unreachable: {host}:{port} ({why})")
    return "; ".join(found) or None
