"""Per-session network policy: ``open``, ``api-only`` (only the model endpoint) or ``none``.

For ``api-only`` and ``none`` the agent runs in a network namespace of its own, entered with
``nsenter`` just before ``exec`` (so it composes with the PID namespace of ``runner/sandbox/proctree.py``
and adds no process to the tree). The namespace has only loopback; nothing in it can route out.
What it *can* reach are sockets that a short-lived helper opened inside it and handed to the
runner over ``SCM_RIGHTS``; the runner serves them with :class:`runner.sandbox.proxy.Gate`, whose
outbound connections start in the runner's own namespace. No veth, no iptables, no daemon:

- an HTTP proxy on ``127.0.0.1:<port>`` (``HTTPS_PROXY`` and friends in :meth:`env`);
- with iproute2, every IPv4/IPv6 address is made local (``ip route add local 0.0.0.0/0 dev lo``)
  and listeners on ports 80, 443 and the allowed ports catch direct connections to *any* address,
  so clients that ignore proxy variables still reach the model endpoint, and blocked direct
  attempts are seen with their destination;
- a stub DNS server on the resolver address of ``/etc/resolv.conf``: allowed names resolve,
  others get NXDOMAIN and are reported.

Every refused attempt calls ``on_blocked(host, port, ts, detail)``; the runner turns it into a
``warning`` event (code ``network_blocked``). ``none`` is ``api-only`` with nothing allowed.
See docs/network.md for what is and is not observed.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from runner.errors import OnegcError
from runner.sandbox.proxy import Allowlist, Gate, OnBlocked, OnEndpoint

POLICIES = ("open", "api-only", "none")
CATCH_PORTS = (80, 443)  # direct connections on these ports (plus the allowed ones) are seen and reported
NO_PROXY = "localhost,127.0.0.1,::1"  # the agent's own loopback stays inside its namespace
HELPER_TIMEOUT_S = 10.0
PR_SET_PDEATHSIG = 1


class NetworkUnavailable(OnegcError, RuntimeError):
    """The policy needs network namespaces that this machine does not give us."""


def parse_endpoint(value: str | tuple[str, int]) -> tuple[str, int]:
    """``(host, port)`` from a URL, ``host:port``, a bare host (port 443) or a tuple."""
    if isinstance(value, tuple):
        return value[0].lower(), int(value[1])
    text = value.strip()
    parts = urlsplit(text if "://" in text else f"//{text}")
    if not parts.hostname:
        raise ValueError(f"not a host or URL: {value!r}")
    default = 80 if parts.scheme in ("http", "ws") else 443
    return parts.hostname.lower(), parts.port or default


def _nameservers(path: Path = Path("/etc/resolv.conf")) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return [parts[1].split("%")[0] for line in lines if len(parts := line.split()) >= 2 and parts[0] == "nameserver"]


_PROBES: dict[bool, tuple[bool, str]] = {}


def _unshare_flags() -> list[str]:
    return ["--net"] if os.geteuid() == 0 else ["--user", "--map-current-user", "--keep-caps", "--net"]


def namespaces_available() -> tuple[bool, str]:
    """Whether this machine lets us make a network namespace (as root, or via a user namespace)."""
    root = os.geteuid() == 0
    if root in _PROBES:
        return _PROBES[root]
    missing = [tool for tool in ("unshare", "nsenter") if not shutil.which(tool)]
    if missing:
        result = (False, f"{' and '.join(missing)} not found: install util-linux")
    elif not Path("/proc/self/ns/net").exists():
        result = (False, "the kernel has no network namespaces (/proc/self/ns/net missing)")
    else:
        try:
            probe = subprocess.run(["unshare", *_unshare_flags(), "true"], capture_output=True, text=True, timeout=10)
            err = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else f"exit {probe.returncode}"
            how = "" if root else (" (not root: needs unprivileged user namespaces, "
                                   "e.g. sysctl kernel.unprivileged_userns_clone=1)")
            result = (True, "") if probe.returncode == 0 else (False, f"cannot create a network namespace: {err}{how}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            result = (False, f"cannot create a network namespace: {exc}")
    _PROBES[root] = result
    return result


class NetworkSandbox:
    """One session's network policy: ``start()``, then ``wrap_argv``/``env`` for the agent, ``stop()``."""

    def __init__(
        self,
        policy: str,
        allowed: Iterable[str | tuple[str, int]] = (),
        session_dir: Path | None = None,
        on_blocked: OnBlocked | None = None,
        on_endpoint: OnEndpoint | None = None,
    ):
        if policy not in POLICIES:
            raise ValueError(f"network policy {policy!r}: use one of {', '.join(POLICIES)}")
        self.policy = policy
        self.allowed = [parse_endpoint(a) for a in allowed] if policy == "api-only" else []
        self.session_dir = session_dir
        self.on_blocked: OnBlocked = on_blocked or (lambda *_: None)
        self.on_endpoint = on_endpoint  # an allowed endpoint refuses, times out or answers 5xx
        self.gate: Gate | None = None
        self.proxy_port: int | None = None
        self.observes: list[str] = []  # what the gate can see: proxy, direct:<ports>, dns
        self.notes: list[str] = []  # degradations worth a warning (unresolvable host, no iproute2, ...)
        self._ns_fds: dict[str, int] = {}
        self._socks: list[socket.socket] = []

    @property
    def confined(self) -> bool:
        return self.policy != "open"

    def available(self) -> tuple[bool, str]:
        return (True, "") if not self.confined else namespaces_available()

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        """Create the namespace and start the gate. Raises :class:`NetworkUnavailable`."""
        if not self.confined or self.gate is not None:
            return
        ok, reason = self.available()
        if not ok:
            raise NetworkUnavailable(f"network policy {self.policy} needs a network namespace: {reason}; or use --network open")
        allow = Allowlist(self.allowed)
        for host in allow.resolve():
            self.notes.append(f"cannot resolve allowed host {host} now; it stays allowed through the proxy only")
        ports = sorted(set(CATCH_PORTS) | {p for _, p in self.allowed})
        kinds, socks, ns = self._make_namespace(ports)
        self._socks = socks
        self._ns_fds = ns
        self.gate = Gate(allow, self.on_blocked, self.on_endpoint)
        self.gate.start(list(zip(kinds, socks, strict=True)))

    def _make_namespace(self, ports: list[int]) -> tuple[list[str], list[socket.socket], dict[str, int]]:
        """Run the helper in a fresh namespace; receive its sockets; keep the namespace open by fd."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        spec = json.dumps({"ports": ports, "nameservers": _nameservers()})
        helper = subprocess.Popen(
            ["unshare", *_unshare_flags(), "--", sys.executable, "-c", HELPER, spec, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,
        )
        theirs.close()
        try:
            ours.settimeout(HELPER_TIMEOUT_S)
            msg, fds, _, _ = socket.recv_fds(ours, 65536, 64)
            if not msg:
                raise NetworkUnavailable(f"network namespace helper failed: {_stderr(helper)}")
            info = json.loads(msg)
            pid = info["pid"]  # the helper, as /proc sees it (unshare may have forked)
            ns = {"net": os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)}
            if os.geteuid() != 0:
                ns["user"] = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
        except (OSError, ValueError, KeyError) as exc:
            helper.kill()
            raise NetworkUnavailable(f"network namespace helper failed: {exc}: {_stderr(helper)}") from exc
        finally:
            ours.close()  # the helper's cue to exit: the namespace lives on through our fds and sockets
        helper.wait(timeout=HELPER_TIMEOUT_S)
        socks = [socket.socket(fileno=fd) for fd in fds]
        self.proxy_port = info["proxy_port"]
        self.notes += info["notes"]
        direct = sorted({p for k, p in info["bound"] if k == "transparent"})
        self.observes = ["proxy"] + ([f"direct:{','.join(map(str, direct))}"] if info["anyip"] and direct else [])
        self.observes += ["dns"] if "dns" in info["kinds"] else []
        return info["kinds"], socks, ns

    def stop(self) -> None:
        if self.gate is not None:
            self.gate.stop()
        for sock in self._socks:
            sock.close()
        for fd in self._ns_fds.values():
            os.close(fd)
        self._socks, self._ns_fds = [], {}

    def __enter__(self) -> NetworkSandbox:
        self.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ for the agent
    def wrap_argv(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the policy (after :meth:`start`); unchanged for ``open``."""
        if not self.confined:
            return list(argv)
        if not self._ns_fds:
            raise RuntimeError("NetworkSandbox.wrap_argv before start()")
        me = os.getpid()
        cmd = ["nsenter"]
        if "user" in self._ns_fds:
            cmd += [f"--user=/proc/{me}/fd/{self._ns_fds['user']}", "--preserve-credentials"]
        return cmd + [f"--net=/proc/{me}/fd/{self._ns_fds['net']}", "--", *argv]

    def env(self) -> dict[str, str]:
        """Proxy variables for the agent: Rust (reqwest), curl, pip, Python, Bun and Node >= 22.21/24.5."""
        if not self.confined or self.proxy_port is None:
            return {}
        proxy = f"http://127.0.0.1:{self.proxy_port}"
        env = {}
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            env[name] = env[name.lower()] = proxy
        env["NO_PROXY"] = env["no_proxy"] = NO_PROXY
        env["NODE_USE_ENV_PROXY"] = "1"  # Node's built-in fetch/http honour the variables only with this
        return env

    def contract(self) -> dict:
        """What the comparability contract records about the network."""
        return {
            "network": self.policy,
            "network_allowed": [f"{h}:{p}" for h, p in self.allowed],
            "network_observed": list(self.observes),
        }

    def stats(self) -> dict:
        return dict(self.gate.counts) if self.gate else {}

    def endpoint_problem(self) -> str | None:
        """The allowed endpoint(s) failing right now, as the gate saw them; ``None`` if none."""
        return self.gate.health.problem() if self.gate else None


def _die_with_parent() -> None:  # child, between fork and exec: the helper dies with the runner
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _stderr(proc: subprocess.Popen) -> str:
    try:
        proc.wait(timeout=2)
        text = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
    except (subprocess.TimeoutExpired, OSError):
        text = ""
    return text.splitlines()[-1] if text else f"exit {proc.returncode}"


# Runs inside the new namespace: loopback up, every address local (when iproute2 is there), the
# gate's sockets opened here and sent back over the inherited unix socket; exits once the runner
# closes its end. Stdlib only, no imports from the project (it may run under any interpreter).
HELPER = r"""
import fcntl, json, os, shutil, socket, struct, subprocess, sys
spec = json.loads(sys.argv[1]); chan = socket.socket(fileno=int(sys.argv[2]))
notes = []
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
req = struct.pack("16sH14x", b"lo", 0)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, req)[:18])[1]  # SIOCGIFFLAGS
fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
s.close()
ip = shutil.which("ip")
def route(*args):
    return ip is not None and subprocess.run([ip, *args], capture_output=True).returncode == 0
anyip = route("route", "add", "local", "0.0.0.0/0", "dev", "lo")
anyip6 = anyip and route("-6", "route", "add", "local", "::/0", "dev", "lo")
if not anyip:
    notes.append("iproute2 missing or refused: direct connections and DNS to non-loopback addresses fail unseen")
kinds, socks, bound = [], [], []
def listen(kind, family, addr, stype=socket.SOCK_STREAM):
    sk = socket.socket(family, stype)
    try:
        if family == socket.AF_INET6:
            sk.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sk.bind(addr)
        if stype == socket.SOCK_STREAM:
            sk.listen(128)
    except OSError as e:
        sk.close()
        return e
    kinds.append(kind); socks.append(sk); bound.append([kind, sk.getsockname()[1]])
proxy = listen("proxy", socket.AF_INET, ("127.0.0.1", 0))
if proxy is not None:
    raise SystemExit(f"cannot open the proxy socket: {proxy}")
for port in spec["ports"]:
    err = listen("transparent", socket.AF_INET, ("0.0.0.0", port))
    if err is not None:
        notes.append(f"direct connections to port {port} are not observed: {err}")
    if anyip6:
        listen("transparent", socket.AF_INET6, ("::", port))
for ns in spec["nameservers"]:
    v6 = ":" in ns
    if (v6 and not anyip6) or (not v6 and not anyip and not ns.startswith("127.")):
        continue
    err = listen("dns", socket.AF_INET6 if v6 else socket.AF_INET, (ns, 53), socket.SOCK_DGRAM)
    if err is not None:
        notes.append(f"DNS on {ns} not observed: {err}")
info = {"pid": os.getpid(), "proxy_port": socks[0].getsockname()[1], "kinds": kinds, "bound": bound,
        "anyip": anyip, "notes": notes}
socket.send_fds(chan, [json.dumps(info).encode()], [sk.fileno() for sk in socks])
chan.recv(1)
"""
