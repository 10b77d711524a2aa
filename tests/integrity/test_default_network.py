"""No agent shares the host's network by default (issue 28): a hostile ``command`` agent, started
with no ``--network``, tries the host's loopback services — a TCP listener on 127.0.0.1, an
abstract unix socket, and a real ``onegc monitor --web`` (even handed its token). Judged from
outside: the listeners count who connected, the monitor is shown to be reachable from the host
at the same moment, and the session leaves its result and ``session_ended`` with ``none`` in the
contract. The same agent run ``--network open`` reaches both listeners (the test can fail), and
that session is flagged wherever its result is shown."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import uuid

import pytest

from runner.sandbox.network import namespaces_available
from tests.app.test_web import wait_http
from tests.helpers import REPO, events, start_session, wait_event, write_agent

pytestmark = pytest.mark.slow

SECRET = b"HOST-LOOPBACK-SECRET-2828"

HOSTILE_NET = """
import json, socket, sys, urllib.request
tcp_port, abstract, web_url = int(sys.argv[1]), sys.argv[2], sys.argv[3]
got = {}
try:
    with socket.create_connection(("127.0.0.1", tcp_port), timeout=3) as s:
        got["tcp"] = s.recv(100).decode(errors="replace")
except OSError as exc:
    got["tcp_error"] = str(exc)
try:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        s.connect("\\0" + abstract)
        got["abstract"] = s.recv(100).decode(errors="replace")
except OSError as exc:
    got["abstract_error"] = str(exc)
for name, url in (("web", web_url), ("web_no_token", web_url.split("?")[0])):
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            got[name] = r.read(2000).decode(errors="replace")
    except Exception as exc:
        got[name + "_error"] = str(exc)
open("findings.json", "w").write(json.dumps(got))
print("findings", json.dumps(got)[:300])
"""


class Listener:
    """A host service that hands out a secret and counts who connected (judged from outside)."""

    def __init__(self, sock: socket.socket):
        self.sock, self.accepted = sock, 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.sendall(SECRET)
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def host_services(tmp_path, home):
    ok, why = namespaces_available()
    if not ok:
        pytest.skip(f"network namespaces unavailable here: {why}")
    tcp = Listener(socket.create_server(("127.0.0.1", 0)))
    abstract_name = f"onegc-test-{uuid.uuid4().hex}"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + abstract_name)
    unix.listen()
    abstract = Listener(unix)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "ONEGC_HOME": str(home), "PYTHONPATH": str(REPO)}
    web = subprocess.Popen([sys.executable, "-m", "onegc_tui.cli", "monitor", "--web", "--port", str(port)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        line = web.stdout.readline().decode()
        found = re.search(r"onegc monitor on (http://\S+/\?token=\S+)", line)
        assert found, line
        url = found.group(1).replace("localhost", "127.0.0.1")
        yield tcp, abstract_name, abstract, url
    finally:
        web.terminate()
        web.wait(timeout=20)
        tcp.close()
        abstract.close()


def run_hostile(home, tmp_path, sid: str, tcp, abstract_name: str, url: str, **fields):
    cmd = write_agent(tmp_path, "hostile_net.py", HOSTILE_NET) + [str(tcp.sock.getsockname()[1]), abstract_name, url]
    paths = start_session(home, sid, agent="command", command=cmd, budget_s=60, **fields)
    ended = wait_event(paths, "session_ended", timeout=120)
    findings = json.loads((paths.workspace / "findings.json").read_text())
    started = next(e for e in events(paths) if e["type"] == "session_started")
    return paths, ended, findings, started["contract"]


def test_a_default_command_agent_reaches_no_host_service(home, tmp_path, host_services):
    tcp, abstract_name, abstract, url = host_services
    assert "/ws/" in wait_http(url)  # the monitor serves the host meanwhile
    paths, ended, findings, contract = run_hostile(home, tmp_path, "nn1", tcp, abstract_name, url)
    assert contract["network"] == "none", contract  # no --network given: none, on the record
    assert tcp.accepted == 0 and abstract.accepted == 0, findings  # no connection arrived, seen from the host
    assert set(findings) == {"tcp_error", "abstract_error", "web_error", "web_no_token_error"}, findings
    assert SECRET not in paths.agent_stdout.read_bytes()
    assert ended["reason"] in ("completed", "agent_failed") and paths.result.exists()


def test_network_open_is_asked_for_reaches_the_host_and_is_flagged(home, tmp_path, host_services, monkeypatch):
    from click.testing import CliRunner

    from onegc_tui.cli.main import main
    from onegc_tui.store import Store
    from onegc_tui.views.sessions_view import integrity_note

    tcp, abstract_name, abstract, url = host_services
    paths, ended, findings, contract = run_hostile(home, tmp_path, "no1", tcp, abstract_name, url, network="open")
    assert contract["network"] == "open"
    assert tcp.accepted == 1 and abstract.accepted == 1, findings  # the control: this test can fail
    assert findings["tcp"] == findings["abstract"] == SECRET.decode()
    assert "needs its token" in findings["web_no_token_error"] or "403" in findings["web_no_token_error"]
    monkeypatch.setenv("ONEGC_HOME", str(home))
    history = CliRunner().invoke(main, ["history", "--demo", "--no-paper"])
    assert history.exit_code == 0 and "⚠" in history.output and "--network open" in history.output, history.output
    listing = CliRunner().invoke(main, ["sessions", "--json"])
    assert json.loads(listing.output)[0]["network"] == "open", listing.output
    store = Store.open(home)
    try:
        note = integrity_note(store.session("no1"))  # the monitor's ⚠ before the id, and the detail's note
    finally:
        store.close()
    assert note and "network open" in note
