"""The harness-run gate between an agent's network namespace and the world (stdlib only).

:class:`Gate` serves, on one asyncio loop in a daemon thread, sockets that live *inside* the
agent's network namespace (they were opened there and handed over, see ``runner/sandbox/network.py``)
while every outbound connection it makes is opened here, in the runner's namespace. Three kinds
of listener:

- ``proxy``: an HTTP proxy (``CONNECT host:port`` tunnels, and absolute-form ``GET http://...``
  requests) for clients that honour ``HTTPS_PROXY``/``HTTP_PROXY``;
- ``transparent``: a TCP listener on ``0.0.0.0:PORT`` in a namespace where every address is local
  (``ip route add local 0.0.0.0/0 dev lo``), so a direct ``connect()`` to any IP on that port
  lands here; the original destination is the accepted socket's own address;
- ``dns``: a UDP socket on the resolver address of ``/etc/resolv.conf``: allowed names get their
  real A records, every other name gets NXDOMAIN.

Allowed targets pass through; every refused attempt calls ``on_blocked(host, port, ts, detail)``.
Repeats of one target within :data:`REPEAT_S` are counted and folded into the next report, so a
retry loop cannot flood the event log.

An allowed endpoint that fails is reported too (:class:`EndpointHealth`): a connection refused or
not answered within :data:`CONNECT_TIMEOUT_S`, or, on plain HTTP, a first response with a 5xx
status, calls ``on_endpoint(host, port, ts, message)`` at once ("model endpoint unreachable:
HOST:PORT (N attempts: connection refused)") and then at most every :data:`ENDPOINT_REPORT_S`
while it keeps failing, so a wrong key, URL or port shows within seconds instead of costing the
whole budget. A 5xx inside TLS cannot be seen here (the agent's own transcript says it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable

from runner.sandbox.http_count import TLS_HANDSHAKE, MessageCounter, status_of

HEAD_LIMIT = 16384  # bytes of request head read before giving up (a CONNECT head is ~200 bytes)
HEAD_TIMEOUT_S = 30.0  # a client that opens the proxy and says nothing is dropped after this
CONNECT_TIMEOUT_S = 30.0  # upstream connect timeout, like a browser's
CHUNK = 65536
REPEAT_S = 1.0  # one report per target per second at most; the rest are counted
DNS_TTL_S = 60
RESOLVE_EVERY_S = 5.0  # a direct connection to an unknown IP on an allowed port re-resolves at most this often
ENDPOINT_REPORT_S = 10.0  # a failing model endpoint is reported at once, then at most this often
HTTP_STATUS_HEAD = 12  # bytes of "HTTP/1.1 503" needed to read a status code

OnBlocked = Callable[[str, int, float, str], None]
OnEndpoint = Callable[[str, int, float, str], None]


class EndpointHealth:
    """Failed attempts on each allowed endpoint since it last answered; coalesced reports."""

    def __init__(self, report: OnEndpoint, clock: Callable[[], float] = time.time):
        self.report = report
        self.clock = clock
        self._failing: dict[tuple[str, int], list] = {}  # target -> [attempts, reported attempts, last report ts, why]
        self._lock = threading.Lock()  # the gate's thread counts, the runner's asks

    def failed(self, host: str, port: int, why: str, unit: str = "attempt") -> None:
        """One more failure: ``unit`` says what failed (a ``request`` the gate saw, a ``tunnel``
        whose requests it cannot see, a ``connection``)."""
        now = self.clock()
        with self._lock:
            state = self._failing.setdefault((host, port), [0, 0, 0.0, why, unit])
            state[0] += 1
            state[3], state[4] = why, unit
            due = state[1] == 0 or now - state[2] >= ENDPOINT_REPORT_S
        if due:
            self._report((host, port), state, now)

    def answered(self, host: str, port: int) -> None:
        with self._lock:
            self._failing.pop((host, port), None)

    def problem(self) -> str | None:
        """The failing endpoint(s) now, as one line; ``None`` when every endpoint answers."""
        with self._lock:
            return "; ".join(self._message(t, s) for t, s in self._failing.items()) or None

    def flush(self) -> None:
        """Report attempts counted since the last report (at the end of the session)."""
        with self._lock:
            due = [(t, s) for t, s in self._failing.items() if s[0] > s[1]]
        for target, state in due:
            self._report(target, state, self.clock())

    def _report(self, target: tuple[str, int], state: list, now: float) -> None:
        state[1], state[2] = state[0], now
        try:
            self.report(target[0], target[1], now, self._message(target, state))
        except Exception:  # a broken callback must not take the gate down
            pass

    @staticmethod
    def _message(target: tuple[str, int], state: list) -> str:
        attempts, why, unit = state[0], state[3], state[4]
        head = "failing" if why.startswith("HTTP ") else "unreachable"
        return f"model endpoint {head}: {target[0]}:{target[1]} ({attempts} {unit}{'s' if attempts != 1 else ''}: {why})"


def norm_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


class Allowlist:
    """(host, port) pairs, and the IP addresses each allowed host resolves to."""

    def __init__(self, endpoints: Iterable[tuple[str, int]]):
        self.endpoints = sorted({(norm_host(h), int(p)) for h, p in endpoints})
        self.hosts = {h for h, _ in self.endpoints}
        self.ips: dict[str, set[str]] = {h: ({h} if _is_ip(h) else set()) for h in self.hosts}
        if "localhost" in self.ips:
            self.ips["localhost"] |= {"127.0.0.1", "::1"}

    def allows(self, host: str, port: int) -> bool:
        return (norm_host(host), port) in self.endpoints

    def has_port(self, port: int) -> bool:
        return any(p == port for _, p in self.endpoints)

    def resolve(self) -> list[str]:
        """Look up every allowed name (runner namespace); returns the names that failed."""
        failed = []
        for host in self.hosts:
            if _is_ip(host):
                continue
            try:
                found = {str(a[4][0]) for a in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
                self.ips[host] = self.ips[host] | found  # rebind, never mutate: the gate's thread reads these
            except OSError:
                failed.append(host)
        return failed

    def host_for(self, ip: str, port: int) -> str | None:
        """The allowed name a direct connection to ``ip:port`` was meant for, if any."""
        ip = norm_host(ip)
        for host, p in self.endpoints:
            if p == port and ip in self.ips.get(host, ()):
                return host
        return None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


class Gate:
    """Serve handed-over listeners on a private event loop; start()/stop() bound its life."""

    def __init__(self, allow: Allowlist, on_blocked: OnBlocked, on_endpoint: OnEndpoint | None = None):
        self.allow = allow
        self.on_blocked = on_blocked
        self.health = EndpointHealth(on_endpoint or (lambda *_: None))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="netgate", daemon=True)
        # allowed connections; HTTP requests forwarded (plain HTTP: each one seen); TLS tunnels (their requests unseen)
        self.counts = {"allowed": 0, "blocked": 0, "requests": 0, "tunnels": 0, "bytes_up": 0, "bytes_down": 0}
        self._last: dict[tuple[str, int], tuple[float, int, str]] = {}  # target -> (last report, suppressed, detail)
        self._servers: list = []
        self._resolved_at = 0.0
        self._tasks: set[asyncio.Task] = set()

    # ------------------------------------------------------------------ life
    def start(self, listeners: Iterable[tuple[str, socket.socket]]) -> None:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(list(listeners)), self.loop).result(timeout=10)

    def stop(self) -> None:
        if not self.thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()
        self._flush_suppressed()
        self.health.flush()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def _serve(self, listeners: list[tuple[str, socket.socket]]) -> None:
        for kind, sock in listeners:
            sock.setblocking(False)
            if kind == "dns":
                transport, _ = await self.loop.create_datagram_endpoint(lambda: _Dns(self), sock=sock)
                self._servers.append(transport)
            else:
                handler = self._proxy if kind == "proxy" else self._transparent
                self._servers.append(await asyncio.start_server(handler, sock=sock, limit=HEAD_LIMIT))

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.sleep(0)

    # ------------------------------------------------------------------ reports
    def blocked(self, host: str, port: int, detail: str) -> None:
        """Report a refused attempt, folding repeats of one target into the next report."""
        self.counts["blocked"] += 1
        now = time.time()
        key = (host, port)
        last, suppressed, _ = self._last.get(key, (0.0, 0, detail))
        if now - last < REPEAT_S:
            self._last[key] = (last, suppressed + 1, detail)
            return
        self._last[key] = (now, 0, detail)
        if suppressed:
            detail += f"; {suppressed} more attempt(s) since the last report"
        self._report(host, port, now, detail)

    def _flush_suppressed(self) -> None:
        for (host, port), (_, suppressed, detail) in self._last.items():
            if suppressed:
                self._report(host, port, time.time(), f"{detail}; {suppressed} more attempt(s) since the last report")
        self._last.clear()

    def _report(self, host: str, port: int, ts: float, detail: str) -> None:
        try:
            self.on_blocked(host, port, ts, detail)
        except Exception:  # a broken callback must not take the gate down
            pass

    # ------------------------------------------------------------------ TCP
    async def _proxy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._track()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            await _reply(writer, 400, "Bad Request")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, port = _split_hostport(target, 443)
            rest = b""
        elif target.startswith("http://"):
            host, port, path = _split_url(target)
            hop = ("proxy-connection:", "connection:", "proxy-authorization:")
            kept = [line for line in lines[1:] if line and not line.lower().startswith(hop)]
            rest = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode("latin-1")
        else:
            await _reply(writer, 400, "Bad Request", "only CONNECT and http:// requests are proxied")
            return
        if host is None or not self.allow.allows(host, port):
            self.blocked(host or target, port, f"proxy {method.upper()} refused by the network policy")
            await _reply(writer, 403, "Forbidden", f"onegc network policy: {host}:{port} is not an allowed model endpoint")
            return
        tunnel = method.upper() == "CONNECT"
        upstream = await self._open(host, port, "tunnel" if tunnel else "request")
        if upstream is None:
            await _reply(writer, 502, "Bad Gateway", f"cannot reach {host}:{port}")
            return
        if tunnel:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream[1].write(rest)
            self.counts["requests"] += 1  # one request: the head was rewritten with "Connection: close"
        await self._pipe(reader, writer, upstream[0], upstream[1], target=(host, port),
                         kind="detect" if tunnel else "http")

    async def _transparent(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._track()
        ip, port = writer.get_extra_info("sockname")[:2]
        host = self.allow.host_for(ip, port)
        if host is None and self.allow.has_port(port) and time.monotonic() - self._resolved_at > RESOLVE_EVERY_S:
            self._resolved_at = time.monotonic()  # the client may have resolved elsewhere (nss-resolve, a CDN's new IP)
            await self.loop.run_in_executor(None, self.allow.resolve)
            host = self.allow.host_for(ip, port)
        if host is None:
            self.blocked(norm_host(ip), port, "direct connection refused by the network policy")
            _reset(writer)
            return
        upstream = await self._open(host, port, "connection")
        if upstream is None:
            _reset(writer)
            return
        await self._pipe(reader, writer, upstream[0], upstream[1], target=(host, port), kind="detect")

    async def _open(self, host: str, port: int,
                    unit: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(host, port, limit=CHUNK), CONNECT_TIMEOUT_S)
        except TimeoutError:
            self.health.failed(host, port, f"no answer within {CONNECT_TIMEOUT_S:.0f} s", unit)
            return None
        except OSError as exc:
            self.health.failed(host, port, _why(exc), unit)
            return None
        self.counts["allowed"] += 1
        return upstream

    async def _pipe(self, reader, writer, up_reader, up_writer, target: tuple[str, int], kind: str = "detect") -> None:
        """Copy both ways. ``kind``: ``http`` (the request head already sent and counted), or
        ``detect``: TLS from the client's first byte is a tunnel (counted once, its requests
        unseen), anything else is read as plain HTTP and each request counted."""
        watch = _Watch(self, target, kind)
        await asyncio.gather(
            self._copy(reader, up_writer, "bytes_up", watch.up),
            self._copy(up_reader, writer, "bytes_down", watch.down),
            return_exceptions=True,
        )
        for w in (writer, up_writer):
            w.close()

    def _first_answer(self, target: tuple[str, int], head: bytes) -> None:
        """The endpoint's first bytes on a connection: a plain-HTTP 5xx is a failure, anything else an answer."""
        status = head[9:12] if head.startswith(b"HTTP/1.") else b""
        if status.isdigit() and int(status) >= 500:
            self.health.failed(*target, f"HTTP {int(status)}")
        else:
            self.health.answered(*target)

    async def _copy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counter: str,
                    seen: Callable[[bytes], None] | None = None) -> None:  # fmt: skip
        try:
            while data := await reader.read(CHUNK):
                if seen is not None:
                    seen(data)
                self.counts[counter] += len(data)
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()  # half-close: the other direction may still be talking
        except OSError:
            writer.transport.abort()

    def _track(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


class _Watch:
    """What one forwarded connection carries: HTTP requests and their answers, or a tunnel."""

    def __init__(self, gate: Gate, target: tuple[str, int], kind: str):
        self.gate = gate
        self.target = target
        self.kind = kind  # http | detect | tunnel
        self.requests = MessageCounter(self._request)
        self.responses = MessageCounter(self._response, responses=True)
        self._first_down = True

    def up(self, data: bytes) -> None:
        if self.kind == "detect":
            if data[:1] == bytes([TLS_HANDSHAKE]):
                self.kind = "tunnel"
                self.gate.counts["tunnels"] += 1
                return
            self.kind = "http-detected"
        if self.kind == "http-detected":
            self.requests.feed(data)

    def down(self, data: bytes) -> None:
        if self.kind == "tunnel" or self.responses.lost:
            if self._first_down:
                self.gate._first_answer(self.target, data[:HTTP_STATUS_HEAD])
            self._first_down = False
            return
        self._first_down = False
        self.responses.feed(data)

    def _request(self, _line: str) -> None:
        self.gate.counts["requests"] += 1

    def _response(self, line: str) -> None:
        code = status_of(line)
        if code is not None and code >= 500:
            self.gate.health.failed(*self.target, f"HTTP {code}", "request")
        else:
            self.gate.health.answered(*self.target)


def _why(exc: OSError) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return exc.strerror or type(exc).__name__


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a RST, so the client fails at once ("connection reset") instead of reading EOF."""
    sock = writer.get_extra_info("socket")
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


async def _reply(writer: asyncio.StreamWriter, code: int, reason: str, body: str = "") -> None:
    data = body.encode() + b"\n" if body else b""
    writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    try:
        await writer.drain()
    except OSError:
        pass
    writer.close()


def _split_hostport(text: str, default: int) -> tuple[str | None, int]:
    if text.startswith("["):  # [v6]:port
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "")
    try:
        return (norm_host(host) or None), int(port) if port else default
    except ValueError:
        return None, default


def _split_url(url: str) -> tuple[str | None, int, str]:
    rest = url[len("http://"):]
    authority, slash, path = rest.partition("/")
    host, port = _split_hostport(authority.rpartition("@")[2], 80)
    return host, port, "/" + path if slash else "/"


# ---------------------------------------------------------------------- DNS
class _Dns(asyncio.DatagramProtocol):
    """A stub resolver for the namespace: real answers for allowed names, NXDOMAIN otherwise."""

    def __init__(self, gate: Gate):
        self.gate = gate
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        try:
            ident, flags, qd = struct.unpack("!HHH", data[:6])
            name, end = _read_name(data, 12)
            qtype, _qclass = struct.unpack("!HH", data[end:end + 4])
        except (struct.error, IndexError, UnicodeDecodeError):
            return
        question = data[12:end + 4]
        host = norm_host(name)
        if host not in self.gate.allow.hosts:
            self.gate.blocked(host, 53, f"DNS lookup refused by the network policy (type {qtype})")
            self._send(ident, flags, question, 3, [], addr)  # NXDOMAIN
            return
        if self.gate.allow.ips.get(host):
            self._answer(ident, flags, question, qtype, host, addr)
        else:  # did not resolve at start (offline then?): try again now, off the loop
            asyncio.ensure_future(self._resolve_then_answer(ident, flags, question, qtype, host, addr))

    async def _resolve_then_answer(self, ident, flags, question, qtype, host, addr) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.gate.allow.resolve)
        self._answer(ident, flags, question, qtype, host, addr)

    def _answer(self, ident, flags, question, qtype, host, addr) -> None:
        family = {1: socket.AF_INET, 28: socket.AF_INET6}.get(qtype)
        ips = sorted(ip for ip in self.gate.allow.ips.get(host, ()) if family and _family(ip) == family)
        rcode = 0 if self.gate.allow.ips.get(host) else 2  # 2: SERVFAIL
        self._send(ident, flags, question, rcode, [(qtype, ip) for ip in ips], addr)

    def _send(self, ident: int, flags: int, question: bytes, rcode: int, answers, addr) -> None:
        rd = flags & 0x0100
        header = struct.pack("!HHHHHH", ident, 0x8000 | 0x0080 | rd | rcode, 1, len(answers), 0, 0)
        body = b"".join(
            struct.pack("!HHHIH", 0xC00C, qtype, 1, DNS_TTL_S, 4 if qtype == 1 else 16)
            + socket.inet_pton(socket.AF_INET if qtype == 1 else socket.AF_INET6, ip)
            for qtype, ip in answers
        )
        if self.transport is not None:
            self.transport.sendto(header + question + body, addr)


def _family(ip: str) -> int:
    return socket.AF_INET6 if ":" in ip else socket.AF_INET


def _read_name(data: bytes, pos: int) -> tuple[str, int]:
    labels: list[str] = []
    while True:
        length = data[pos]
        if length == 0:
            return ".".join(labels), pos + 1
        if length >= 0xC0:  # compression never appears in a question we parse first
            raise IndexError("compressed name in question")
        labels.append(data[pos + 1:pos + 1 + length].decode("ascii"))
        pos += 1 + length
