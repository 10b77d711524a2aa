"""The end detail: the cause the agent saw, the endpoint that failed, never a start-up banner."""

from __future__ import annotations

import socket

from runner.session.outcome import end_detail, endpoint_problem, probe, stderr_cause

CODEX_STDERR = [
    "WARNING: proceeding, even though we could not create PATH aliases: "
    'Refusing to create helper binaries under temporary dir "/tmp"',
    "Reading additional input from stdin...",
    "",
]


def test_an_agent_failure_is_the_agents_last_error_not_its_banner():
    assert stderr_cause(CODEX_STDERR) is None
    detail = end_detail("agent_failed", "the agent exited with code 1",
                        failure="model request failed: mock failure 400 (invalid_request_error)",
                        endpoints=[("127.0.0.1", 4242)], stderr=CODEX_STDERR)  # fmt: skip
    assert detail == ("the agent exited with code 1: model request failed: mock failure 400 (invalid_request_error)"
                      " (model endpoint 127.0.0.1:4242)")  # fmt: skip
    # without anything better, the last stderr line that is not a banner
    assert end_detail("agent_failed", "the agent exited with code 2", stderr=[*CODEX_STDERR[:2], "Error: bad flag"]) == (
        "the agent exited with code 2: Error: bad flag")
    assert end_detail("agent_failed", "the agent exited with code 1", stderr=CODEX_STDERR) == "the agent exited with code 1"


def test_a_budget_end_carries_the_last_error_the_gate_and_the_notes():
    detail = end_detail("budget_exhausted", "active time reached the 2400 s budget",
                        failure="model request failed: HTTP 500: server_error (14 failed attempts)",
                        endpoint_problem="model endpoint failing: 127.0.0.1:4242 (14 attempts: HTTP 500)",
                        endpoints=[("127.0.0.1", 4242)], notes=["a note"])  # fmt: skip
    assert detail == ("active time reached the 2400 s budget; the agent's last error: model request failed: HTTP 500:"
                      " server_error (14 failed attempts); model endpoint failing: 127.0.0.1:4242 (14 attempts: HTTP 500);"
                      " a note")  # fmt: skip
    assert end_detail("completed", "the agent finished") == "the agent finished"
    # an error that is not a failed model request names no endpoint
    assert end_detail("completed", "the agent finished", failure="error_max_turns", endpoints=[("h", 1)]) == (
        "the agent finished; the agent's last error: error_max_turns")


def test_probe_tells_refused_from_listening():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        port = listening.getsockname()[1]
        assert probe("127.0.0.1", port) is None
    assert probe("127.0.0.1", port) == "connection refused"  # closed now: nothing listens
    assert endpoint_problem([("127.0.0.1", port)]) == f"model endpoint unreachable: 127.0.0.1:{port} (connection refused)"
    assert endpoint_problem([("h", 1)], probe_fn=lambda h, p: None) is None
