"""Network policy: real namespaces, a real gate, real HTTP servers on host loopback.

Every address touched is 127.0.0.0/8 on the host, or lives inside the test's own network
namespace (the child checks that it really is in another namespace before it tries anything).
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from runner.agents.endpoints import allowed_endpoints
from runner.sandbox import proxy as netproxy
from runner.sandbox.network import NetworkSandbox, NetworkUnavailable, namespaces_available, parse_endpoint
from runner.sandbox.proctree import pidns_available

NS_OK, NS_WHY = namespaces_available()
needs_ns = pytest.mark.skipif(not NS_OK, reason=f"no network namespaces here: {NS_WHY}")
HOST_NETNS = os.stat("/proc/self/ns/net").st_ino

# Runs inside the sandbox: refuses to touch anything unless it really is in another namespace,
# then tries each probe and prints one JSON line of outcomes.
CHILD = r"""
import json, os, socket, sys, urllib.request
if os.stat("/proc/self/ns/net").st_ino == int(sys.argv[1]):
    raise SystemExit("still in the host network namespace: refusing to probe")
probes = json.loads(sys.argv[2]); out = {}
def get(url, proxy=None):
    handlers = [urllib.request.ProxyHandler({"http": proxy} if proxy else {})]
    if proxy:
        os.environ.pop("no_proxy", None); os.environ.pop("NO_PROXY", None)
    return urllib.request.build_opener(*handlers).open(url, timeout=5).read().decode()
for name, kind, arg in probes:
    try:
        if kind == "get":
            out[name] = "ok:" + get(arg)
        elif kind == "proxy_get":
            out[name] = "ok:" + get(arg, os.environ["HTTP_PROXY"])
        elif kind == "connect":  # a CONNECT tunnel through the proxy, then plain HTTP inside it
            s = socket.create_connection(("127.0.0.1", int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])), timeout=5)
            s.sendall(f"CONNECT {arg} HTTP/1.1\r\nHost: {arg}\r\n\r\n".encode())
            status = s.recv(4096).split(b"\r\n")[0].decode()
            if " 200 " not in status:
                out[name] = "refused:" + status; continue
            s.sendall(f"GET / HTTP/1.0\r\nHost: {arg}\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536): data += chunk
            out[name] = "ok:" + data.split(b"\r\n\r\n", 1)[1].decode()
        elif kind == "keepalive":  # N requests on one kept-alive connection, each answer read whole
            host, port, n = arg.split(":")
            s = socket.create_connection((host, int(port)), timeout=5)
            f = s.makefile("rb")
            codes = []
            for _ in range(int(n)):
                s.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                status = f.readline().split()[1].decode()
                length = 0
                while (line := f.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                f.read(length)
                codes.append(status)
            out[name] = "ok:" + ",".join(codes)
        elif kind == "tls_tunnel":  # a CONNECT tunnel whose first bytes are a TLS record: its requests unseen
            s = socket.create_connection(("127.0.0.1", int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])), timeout=5)
            s.sendall(f"CONNECT {arg} HTTP/1.1\r\nHost: {arg}\r\n\r\n".encode())
            status = s.recv(4096).split(b"\r\n")[0].decode()
            s.sendall(b"\x16\x03\x01\x00\x05hello")
            s.close()
            out[name] = "ok:" + status
        elif kind == "tcp":
            host, port = arg.rsplit(":", 1)
            s = socket.create_connection((host, int(port)), timeout=5)
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            out[name] = "ok:" + s.recv(100).decode(errors="replace")
        elif kind == "rawdns":  # ask the resolv.conf nameserver directly: what does the stub answer?
            ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
            qname = b"".join(bytes([len(p)]) + p.encode() for p in arg.split("."))
            q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + qname + b"\x00\x00\x01\x00\x01"
            u = socket.socket(socket.AF_INET6 if ":" in ns else socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5)
            u.sendto(q, (ns, 53)); r = u.recv(512)
            out[name] = f"rcode{r[3] & 15}:" + (socket.inet_ntoa(r[-4:]) if r[7] else "")
        elif kind == "dns":
            out[name] = "ok:" + socket.getaddrinfo(arg, 443)[0][4][0]
    except Exception as exc:
        out[name] = f"fail:{type(exc).__name__}:{exc}"
print(json.dumps(out))
"""


class Body(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        data = self.server.body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_):
        pass


@pytest.fixture
def servers():
    """Two HTTP servers on host loopback, answering 'allowed' and 'other'."""
    made = []
    for body in ("allowed", "other"):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Body)
        srv.body = body
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        made.append(srv)
    yield [s.server_address[1] for s in made]
    for srv in made:
        srv.shutdown()
        srv.server_close()


def run_inside(sandbox: NetworkSandbox, probes: list[tuple[str, str, str]]) -> dict[str, str]:
    argv = sandbox.wrap_argv([sys.executable, "-c", CHILD, str(HOST_NETNS), json.dumps(probes)])
    if pidns_available():  # as the runner does it: the PID namespace outside, the network inside
        argv = ["unshare", "--pid", "--fork", "--kill-child", "--", *argv]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(sandbox.env())
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- pure parts
def test_allowed_endpoints_per_agent():
    assert allowed_endpoints("claude-code", {}) == [("api.anthropic.com", 443)]
    assert allowed_endpoints("claude-code", {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8123/x"}) == [("127.0.0.1", 8123)]
    assert allowed_endpoints("codex", {}) == [("api.openai.com", 443)]
    assert allowed_endpoints("codex", {"OPENAI_BASE_URL": "https://gw.example.org/v1"}) == [("gw.example.org", 443)]
    assert allowed_endpoints("opencode", {}, "openrouter/qwen") == [("openrouter.ai", 443)]
    assert allowed_endpoints("opencode", {}, "anthropic/claude") == [("api.anthropic.com", 443)]
    assert len(allowed_endpoints("opencode", {}, None)) == 3  # provider unknown: the three known APIs
    assert allowed_endpoints("scripted", {}) == []
    extra = {"ONEGC_NETWORK_ALLOW": "proxy.corp:3128, https://hub.example"}
    assert allowed_endpoints("codex", extra) == [("api.openai.com", 443), ("proxy.corp", 3128), ("hub.example", 443)]


def test_parse_endpoint_forms():
    assert parse_endpoint("api.x.com") == ("api.x.com", 443)
    assert parse_endpoint("http://h:81/p") == ("h", 81)
    assert parse_endpoint("[::1]:9") == ("::1", 9)
    assert parse_endpoint(("H", "5")) == ("h", 5)
    with pytest.raises(ValueError):
        parse_endpoint("http://")
    assert netproxy._split_hostport("[::1]:8443", 443) == ("::1", 8443)
    assert netproxy._split_hostport("api.x.com", 443) == ("api.x.com", 443)
    assert netproxy._split_url("http://u@h:81/a?b") == ("h", 81, "/a?b")


def test_repeats_are_folded_not_lost():
    seen = []
    gate = netproxy.Gate(netproxy.Allowlist([]), lambda *a: seen.append(a))
    for _ in range(5):
        gate.blocked("evil.example", 443, "proxy CONNECT refused")
    gate._flush_suppressed()
    assert [s[:2] for s in seen] == [("evil.example", 443)] * 2
    assert "4 more attempt(s)" in seen[1][3]
    assert gate.counts["blocked"] == 5


def test_open_changes_nothing():
    sandbox = NetworkSandbox("open", ["api.anthropic.com"], None)
    sandbox.start()
    assert sandbox.wrap_argv(["a", "b"]) == ["a", "b"] and sandbox.env() == {}
    assert sandbox.contract() == {"network": "open", "network_allowed": [], "network_observed": []}
    sandbox.stop()


def test_unavailable_says_why(monkeypatch):
    monkeypatch.setattr("runner.sandbox.network.namespaces_available", lambda: (False, "unshare not found: install util-linux"))
    with pytest.raises(NetworkUnavailable, match="unshare not found.*--network open"):
        NetworkSandbox("none").start()
    with pytest.raises(ValueError, match="use one of"):
        NetworkSandbox("closed")


# ---------------------------------------------------------------------- real namespaces
@needs_ns
@pytest.mark.slow
def test_none_reaches_nothing(servers):
    port, _ = servers
    blocked = []
    with NetworkSandbox("none", on_blocked=lambda *a: blocked.append(a)) as sandbox:
        assert sandbox.wrap_argv(["x"])[0] == "nsenter"
        out = run_inside(sandbox, [
            ("loopback", "get", f"http://127.0.0.1:{port}/"),
            ("proxied", "proxy_get", f"http://127.0.0.1:{port}/"),
            ("dns", "dns", "example.com"),
        ])  # fmt: skip
    assert out["loopback"].startswith("fail:") and "Connection refused" in out["loopback"]
    assert out["proxied"].startswith("fail:HTTPError") and "403" in out["proxied"]
    assert out["dns"].startswith("fail:gaierror")
    assert ("127.0.0.1", port) in [b[:2] for b in blocked]
    if "dns" in sandbox.observes:
        assert ("example.com", 53) in [b[:2] for b in blocked]


@needs_ns
@pytest.mark.slow
def test_api_only_reaches_the_endpoint_and_records_the_rest(servers):
    good, bad = servers
    blocked = []
    allowed = [f"http://127.0.0.1:{good}", f"localhost:{good}"]
    sandbox = NetworkSandbox("api-only", allowed, None, lambda *a: blocked.append(a))
    sandbox.start()
    try:
        assert sandbox.contract()["network_allowed"] == [f"127.0.0.1:{good}", f"localhost:{good}"]
        out = run_inside(sandbox, [
            ("direct", "get", f"http://127.0.0.1:{good}/"),  # NO_PROXY: the catch-all listener forwards it
            ("proxy_get", "proxy_get", f"http://127.0.0.1:{good}/"),
            ("tunnel", "connect", f"127.0.0.1:{good}"),
            ("other_direct", "get", f"http://127.0.0.1:{bad}/"),
            ("other_proxy", "proxy_get", f"http://127.0.0.1:{bad}/"),
            ("other_tunnel", "connect", f"127.0.0.1:{bad}"),
            ("far_ip", "tcp", "192.0.2.7:443"),  # TEST-NET-1; inside our namespace every address is local
            ("dns", "dns", "example.com"),
            ("stub_allowed", "rawdns", "localhost"),
            ("stub_other", "rawdns", "example.org"),
        ])  # fmt: skip
    finally:
        sandbox.stop()
    assert out["direct"] == out["proxy_get"] == out["tunnel"] == "ok:allowed"
    assert out["other_direct"].startswith("fail:") and "Connection refused" in out["other_direct"]
    assert "403" in out["other_proxy"] and out["other_tunnel"].startswith("refused:") and "403" in out["other_tunnel"]
    assert out["dns"].startswith("fail:")
    targets = [b[:2] for b in blocked]
    assert ("127.0.0.1", bad) in targets and ("127.0.0.1", good) not in targets
    if any(o.startswith("direct:") for o in sandbox.observes):
        assert out["far_ip"].startswith("fail:") and ("192.0.2.7", 443) in targets
    if "dns" in sandbox.observes:
        assert out["stub_allowed"] == "rcode0:127.0.0.1" and out["stub_other"] == "rcode3:"
        assert ("example.org", 53) in targets
    assert all(isinstance(b[2], float) and b[3] for b in blocked)  # a time and a reason each
    assert sandbox.stats()["allowed"] >= 3


@needs_ns
def test_wrap_before_start_is_an_error():
    with pytest.raises(RuntimeError, match="before start"):
        NetworkSandbox("none").wrap_argv(["true"])


class Fails(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection alive

    def do_GET(self):
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


def test_failing_endpoint_reports_are_coalesced_and_the_problem_clears_when_it_answers():
    now = [100.0]
    seen = []
    health = netproxy.EndpointHealth(lambda *a: seen.append(a), clock=lambda: now[0])
    for _ in range(4):  # a retry loop: one report at once, the rest counted
        health.failed("api.example", 443, "connection refused")
    assert [s[3] for s in seen] == ["model endpoint unreachable: api.example:443 (1 attempt: connection refused)"]
    now[0] += netproxy.ENDPOINT_REPORT_S
    health.failed("api.example", 443, "connection refused")
    assert seen[-1][3] == "model endpoint unreachable: api.example:443 (5 attempts: connection refused)"
    health.failed("api.example", 443, "connection refused")
    health.flush()  # the end of the session: the last count is reported too
    assert seen[-1][3].startswith("model endpoint unreachable: api.example:443 (6 attempts")
    assert health.problem() == seen[-1][3]
    health.answered("api.example", 443)
    assert health.problem() is None
    health.failed("api.example", 443, "HTTP 502", "request")
    assert seen[-1][3] == "model endpoint failing: api.example:443 (1 request: HTTP 502)"
    health.failed("api.example", 443, "connection refused", "tunnel")
    assert health.problem() == "model endpoint unreachable: api.example:443 (2 tunnels: connection refused)"


def test_each_http_message_is_counted_through_lengths_chunks_and_split_reads():
    from runner.sandbox.http_count import MessageCounter

    heads = []
    responses = MessageCounter(heads.append, responses=True)
    stream = (b"HTTP/1.1 500 Internal\r\nContent-Length: 5\r\n\r\nerror"
              b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\ndata\r\n3;x=1\r\nabc\r\n0\r\n\r\n"
              b"HTTP/1.1 204 No Content\r\n\r\n"
              b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n")
    for i in range(0, len(stream), 7):  # as the network delivers it: in pieces
        responses.feed(stream[i:i + 7])
    assert [h.split()[1] for h in heads] == ["500", "200", "204", "503"] and not responses.lost
    requests = MessageCounter(heads.append)
    requests.feed(b"POST /v1 HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}GET / HTTP/1.1\r\n\r\n")
    assert requests.count == 2
    tls = MessageCounter(heads.append)
    tls.feed(b"\x16\x03\x01\x02\x00")
    assert tls.lost and tls.count == 0


@needs_ns
@pytest.mark.slow
def test_the_gate_counts_each_request_it_forwards_and_says_tunnels_for_tls(servers):
    """Issue 28: 7 HTTP 500s on one kept-alive connection read "1 attempt"; they are 7 requests.
    A TLS tunnel's requests cannot be seen: it is counted as a tunnel."""
    failing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fails)
    threading.Thread(target=failing.serve_forever, daemon=True).start()
    down = failing.server_address[1]
    good, _ = servers
    reports = []
    sandbox = NetworkSandbox("api-only", [f"http://127.0.0.1:{p}" for p in (good, down)], None, None,
                             lambda *a: reports.append(a))
    sandbox.start()
    try:
        out = run_inside(sandbox, [("seven", "keepalive", f"127.0.0.1:{down}:7"),
                                   ("tunnel", "tls_tunnel", f"127.0.0.1:{good}")])
        sandbox.gate.health.flush()
        stats = sandbox.stats()
    finally:
        sandbox.stop()
        failing.shutdown()
        failing.server_close()
    assert out["seven"] == "ok:" + ",".join(["503"] * 7), out
    assert " 200 " in out["tunnel"], out
    assert stats["requests"] == 7 and stats["tunnels"] == 1, stats
    assert reports[-1][3] == f"model endpoint failing: 127.0.0.1:{down} (7 requests: HTTP 503)", reports


@needs_ns
@pytest.mark.slow
def test_api_only_names_an_allowed_endpoint_that_refuses_or_answers_5xx(servers):
    """The gate's own connections to allowed endpoints: refused (nothing listening) and HTTP 503."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    failing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fails)
    threading.Thread(target=failing.serve_forever, daemon=True).start()
    down = failing.server_address[1]
    good, _ = servers
    reports = []
    allowed = [f"http://127.0.0.1:{p}" for p in (good, dead, down)]
    sandbox = NetworkSandbox("api-only", allowed, None, None, lambda *a: reports.append(a))
    sandbox.start()
    try:
        out = run_inside(sandbox, [
            ("good", "get", f"http://127.0.0.1:{good}/"),
            ("dead", "get", f"http://127.0.0.1:{dead}/"),
            ("dead_again", "get", f"http://127.0.0.1:{dead}/"),
            ("down", "get", f"http://127.0.0.1:{down}/"),
        ])  # fmt: skip
        problem = sandbox.endpoint_problem()
    finally:
        sandbox.stop()
        failing.shutdown()
        failing.server_close()
    assert out["good"] == "ok:allowed" and out["dead"].startswith("fail:") and "503" in out["down"]
    messages = [r[3] for r in reports]
    assert f"model endpoint unreachable: 127.0.0.1:{dead} (1 connection: connection refused)" in messages
    assert f"model endpoint failing: 127.0.0.1:{down} (1 request: HTTP 503)" in messages
    assert f"127.0.0.1:{dead} (2 connections: connection refused)" in problem and f"127.0.0.1:{good}" not in problem
