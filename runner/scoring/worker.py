"""The scorer's worker: turns one checkpoint into predictions, apart from the answers and from every
other checkpoint. It runs inside its own sandbox (runner/scoring/scorer.py) and never sees a target.

    python -I score_worker.py --task PREPARE.PY --inputs DIR --fd N

At start it imports torch, numpy and the pristine task module, and loads the scored split's
inputs (``DIR/*.npy``, made by the trusted side). Then it is a zygote: for each request on the
socket ``N`` (one JSON line: checkpoint, code snapshot, device, timeout, threads) it forks a
fresh child, so nothing one checkpoint's code does at import time (monkeypatching ``prepare``,
``atexit`` hooks, prints) can reach the next one; torch is imported once, so this is fast.

The child gives itself new PID, mount and IPC namespaces (it is root of the sandbox's user
namespace, which owns nothing outside), then, as PID 1 of that namespace: a fresh size-capped
``/tmp`` of its own (also its ``$HOME``), memory and CPU-time limits, every capability dropped and no new privileges,
an audit hook that notes what it opens and starts. The zygote is not dumpable, so no child can
read or write its memory or descriptors through ``/proc``. Only then does it
import the checkpoint's run script (``build_model``), load the weights strictly and call the
task's ``predict`` captured before the import. The predictions go back on a pipe of their own
(never stdout) as an ``.npy`` (no pickles); stdout and stderr are kept for the error message.
When it exits, whatever it forked dies with its PID namespace.

A request with ``probe_inputs`` (a folder of its own, made by the trusted side for the causality
probes of runner/integrity/causal.py) predicts on those inputs instead of the split's: they are read
into the child's memory, then the split's real inputs are dropped from it and both folders are
covered by empty mounts before the checkpoint's code is imported, so a probed model sees nothing
but the probe (no later position, no other window's horizon) in any file or in memory.

The answer on the socket: one JSON line (``ok``, ``error``, ``flags``, ``stdout``/``stderr``
tails, ``eval_s``, ``bytes``) followed by that many bytes of ``.npy``. The child's own keys are
its word (it may have written that line itself); ``observed`` (its stdout, its exit, a timeout)
and ``invalid`` (its answer was malformed) are this process's, which the child cannot reach. The
runner checks all of it again (runner/wire/answer_check.py). Standard library, numpy
and torch only: the project's source is not in the sandbox.
"""

import ctypes
import importlib.util
import io
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x2, 0x4, 0x1000, 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
CAP_LAST = 63
TMP_BYTES = 256 << 20  # the child's only writable storage: its own /tmp ($TMPDIR and $HOME)
TAIL_BYTES = 8 << 10  # of stdout and stderr, for the error message
MAX_PREDICTION_BYTES = 4 << 30  # T3's val predictions are 73 MB; anything near this is not predictions
FLAG_LIMIT = 20
MAX_HEADER_BYTES = 64 << 10  # an answer's JSON line: a few parts and flags


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def load_task(prepare_py: Path):
    """The pristine task module as ``prepare`` (what run scripts import), with its kit."""
    sys.path[:0] = [str(prepare_py.parent)]
    spec = importlib.util.spec_from_file_location("prepare", prepare_py)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {prepare_py}")
    task = importlib.util.module_from_spec(spec)
    sys.modules["prepare"] = task
    spec.loader.exec_module(task)
    return task


def load_inputs(folder: Path) -> dict[str, dict]:
    """``{split: {name: array}}`` from ``folder/<split>/<name>.npy`` (memory-mapped, read-only)."""
    import numpy as np

    return {d.name: {p.stem: np.load(p, mmap_mode="r", allow_pickle=False) for p in sorted(d.glob("*.npy"))}
            for d in sorted(folder.iterdir()) if d.is_dir()}


# ----------------------------------------------------------------------------- the child
class Watch:
    """What the checkpoint's code did that a model does not need to do (integrity flags)."""

    def __init__(self, allowed: list[str]):
        self.allowed = tuple(allowed)
        self.flags: list[str] = []
        self.armed = False

    def note(self, flag: str) -> None:
        if flag not in self.flags and len(self.flags) < FLAG_LIMIT:
            self.flags.append(flag)

    def hook(self, event: str, args: tuple) -> None:
        if not self.armed:
            return
        if event == "open" and args and isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0])
            if path.startswith("/") and not path.startswith(self.allowed):
                self.note(f"opened {path[:120]}")
        elif event in ("os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "subprocess.Popen", "os.system"):
            self.note(f"started a process ({event})")
        elif event in ("socket.connect", "socket.bind"):
            self.note(f"used the network ({event})")
        elif event in ("os.kill", "os.killpg"):
            self.note(f"sent a signal ({event})")


def _own_namespaces() -> str:
    """New PID, mount and IPC namespaces for what this process forks next; "" or why not."""
    try:
        _check(_libc().unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC), "unshare")
        return ""
    except OSError as exc:
        return str(exc)


def _seal_child(mem_bytes: int | None, cpu_s: float, hide: tuple[str, ...] = ()) -> None:
    """As PID 1 of the new namespaces: private mounts, fresh /tmp and /proc, limits, no capabilities;
    each folder of ``hide`` covered by an empty read-only mount."""
    import resource

    libc = _libc()
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount(private)")
    for folder in hide:
        _check(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, b"size=4k,mode=555"),
               f"mount({folder})")
    for scratch, size in ((b"/tmp", TMP_BYTES), (b"/var/tmp", 1 << 20), (b"/dev/shm", 64 << 20)):
        # fresh, private and size-capped: nothing is shared with the checkpoints before or after;
        # what the sandbox mounted below it (a Python environment under /tmp) is mounted again on top
        held = [(p, os.open(p, os.O_PATH | os.O_CLOEXEC)) for p in _mounts_below(scratch.decode())]
        _check(libc.mount(b"tmpfs", scratch, b"tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777".encode()),
               f"mount({scratch.decode()})")
        for path, fd in held:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "a").close()
            _check(libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None),
                   f"mount({path})")
            os.close(fd)
    for name in ("TMPDIR", "HOME"):
        os.environ[name] = "/tmp"
    os.chdir("/tmp")  # a script that writes where it runs (a checkpoint at import time) writes here
    if mem_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    cpu = int(cpu_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    for cap in range(CAP_LAST + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last capability
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    _check(libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()), "capset")


def _mounts_below(root: str) -> list[str]:
    """The outermost mount points strictly below ``root`` (from /proc/self/mountinfo)."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].encode().decode("unicode_escape")  # octal escapes: \040 for a space
            if point.startswith(root.rstrip("/") + "/"):
                points.append(point)
    points.sort(key=len)
    outer: list[str] = []
    for p in points:
        if not any(p == o or p.startswith(o + "/") for o in outer):
            outer.append(p)
    return outer


def _children() -> list[str]:
    """This process's children: as PID 1 of its namespace, every orphan it made is one of them.
    (A fresh /proc cannot be mounted here: the sandbox's has read-only covers, which the kernel
    treats as hiding something; the outer one shows the scorer's processes, which a child can
    neither name to kill nor trace, since the zygote is not dumpable.)"""
    found: list[str] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            found += Path(f"/proc/self/task/{tid}/children").read_text().split()
    except OSError:
        pass
    return found


def _public(module) -> dict[str, int]:
    return {k: id(v) for k, v in vars(module).items() if not k.startswith("__")}


def predict_scores(predict, model, inputs: dict, device: str):
    """The model's scores ([N, C]: what its ``forward`` returned, in its dtype) behind the task's
    pristine ``predict`` on ``inputs``, for the canaries of a classification task: a model fitted
    to its canaries gives their labels more weight than its twins' long before the argmax flips, so
    their losses are cross-entropies, not 0/1 (runner/integrity/canary_kinds.py). The predictions
    are their argmax: the same forward pass gives both.

    Every call of the model's top module is captured in order; where that is not one [B, C] tensor
    per call whose argmax is what ``predict`` returned (a forward that returns a tuple, a predict
    that post-processes), the predictions themselves are returned ([N]): the canaries are then
    judged on 0/1 losses, the metric as ever."""
    import numpy as np
    import torch

    seen: list = []
    hook = model.register_forward_hook(lambda _m, _i, out: seen.append(out.detach().cpu()
                                                                     if isinstance(out, torch.Tensor) else None))
    try:
        pred = predict(model, inputs, device)
    finally:
        hook.remove()
    if isinstance(pred, torch.Tensor):
        pred = pred.detach().cpu().numpy()
    flat = np.asarray(pred).reshape(-1)
    if not seen or any(s is None or s.dim() != 2 for s in seen) or len({s.shape[1] for s in seen}) != 1:
        return pred
    scores = torch.cat(seen)
    if len(scores) != len(flat) or not np.array_equal(scores.argmax(dim=1).numpy(), flat):
        return pred
    if not bool(torch.isfinite(scores).all()):
        return pred
    return (scores if scores.dtype == torch.float64 else scores.float()).numpy()


def run_child(task, inputs: dict, req: dict, result_fd: int, isolated: bool) -> int:
    """Predict for one checkpoint on each split asked for; the answer (a JSON line, then one
    ``.npy`` per split) goes to ``result_fd``."""
    import atexit

    import numpy as np

    kit = sys.modules["onegc_kit"]
    device = req.get("device", "cpu")
    watch = Watch([sys.prefix, sys.base_prefix, sys.exec_prefix, req["code"], str(Path(req["ckpt"]).parent),
                   req["inputs"], req["task_dir"], "/tmp", "/proc", "/sys", "/dev", "/usr", "/etc", "/lib",
                   req.get("weights") or "/nonexistent"])
    answer: dict = {"ok": False}
    payload = b""
    started = time.perf_counter()
    try:
        hide: tuple[str, ...] = ()
        if req.get("probe_inputs"):  # a causality probe: its own inputs, the real ones out of reach
            probe = Path(req["probe_inputs"])
            own = {part: {k: np.array(v) for k, v in arrays.items()} for part, arrays in load_inputs(probe).items()}
            inputs.clear()  # the zygote's maps of the real inputs: unmapped once unreferenced
            import gc

            gc.collect()
            inputs = own
            hide = (req["inputs"], str(probe.parent))
        elif req.get("streams"):  # time-ordered inputs: they arrive row by row, the real ones out of reach
            streams = {split: dict(spec) for split, spec in req["streams"].items()}
            names = {split: spec.pop("name") for split, spec in streams.items()}
            own = {split: {k: (kit.RowStream(**streams[split]) if names.get(split) == k else np.array(v))
                           for k, v in arrays.items()}
                   for split, arrays in inputs.items() if split in (req.get("splits") or ())}
            inputs.clear()
            import gc

            gc.collect()
            inputs = own
            hide = (req["inputs"],)
        if isolated:
            _seal_child(req.get("mem_bytes"), float(req.get("cpu_s", 600)), hide)
        else:
            import tempfile

            os.chdir(tempfile.mkdtemp(prefix="onegc-score-"))
        import torch

        torch.set_num_threads(max(1, int(req.get("threads", 1))))
        torch.manual_seed(int(req.get("seed", 0)))  # 0 unless a probe measures run-to-run noise
        predict = task.predict  # the pristine function, whatever the script does to the module
        before = {"prepare": _public(task), "onegc_kit": _public(kit)}
        callbacks = atexit._ncallbacks()
        sys.addaudithook(watch.hook)
        watch.armed = True
        model, ckpt = kit.load_model(Path(req["ckpt"]), Path(req["code"]), task)
        for name, module in (("prepare", task), ("onegc_kit", kit)):
            changed = sorted(k for k, v in _public(module).items() if before[name].get(k) != v)
            changed += sorted(k for k in before[name] if k not in vars(module))
            if changed:
                watch.note(f"changed {name}: {', '.join(changed[:5])}")
        if atexit._ncallbacks() > callbacks:
            watch.note("registered atexit handlers")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise kit.KitError(f"device {device} requested but CUDA is not available here")
        try:
            model.to(device).eval()
        except Exception as exc:
            raise kit.KitError(f"moving the model to {device} failed: {type(exc).__name__}: {str(exc)[:200]}") from None
        parts, blobs = [], []
        for split in req.get("splits") or sorted(inputs):
            if split not in inputs:
                raise kit.KitError(f"no inputs for split {split!r} in the scorer")
            with torch.no_grad():
                try:
                    if split in (req.get("scores") or ()):
                        pred = predict_scores(predict, model, inputs[split], device)
                    else:
                        pred = predict(model, inputs[split], device)
                except kit.KitError:
                    raise
                except Exception as exc:
                    raise kit.KitError(f"evaluation failed: {type(exc).__name__}: {str(exc)[:300]}") from None
            if isinstance(pred, torch.Tensor):
                pred = pred.detach().cpu().numpy()
            if not isinstance(pred, np.ndarray) or pred.dtype.kind not in "biuf":
                raise kit.KitError(f"predict() returned {type(pred).__name__}, not a numeric numpy array")
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(pred), allow_pickle=False)
            blobs.append(buf.getvalue())
            parts.append({"split": split, "bytes": len(blobs[-1])})
        watch.armed = False
        payload = b"".join(blobs)
        answer = {"ok": True, "parts": parts, "script": ckpt.get("script"), "self_reported": ckpt.get("score")}
    except kit.KitError as exc:
        answer = {"ok": False, "error": str(exc)}
    except MemoryError:
        answer = {"ok": False, "error": "the evaluation ran out of its memory limit"}
    except BaseException as exc:  # noqa: BLE001 - whatever the script raised is its failure
        answer = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    watch.armed = False
    if isolated:
        others = _children()
        if others:
            watch.note(f"left {len(others)} processes running (they end with the evaluation)")
    answer.update(flags=watch.flags, eval_s=round(time.perf_counter() - started, 3), bytes=len(payload),
                  isolation="namespaces" if isolated else f"fork only ({req.get('isolation')})")
    with os.fdopen(result_fd, "wb", closefd=True) as out:
        out.write(json.dumps(answer).encode() + b"\n")
        out.write(payload)
    return 0



# ----------------------------------------------------------------------------- time-ordered inputs
class Streams:
    """The zygote's side of the time-ordered inputs of one request (a task's ``TIME_ORDERED``: name
    -> (look-back, horizon); the child's side is ``onegc_kit.RowStream``). For each such input of a
    split asked for, the child gets a socket instead of the series: the first look-back of rows at
    once, then one row per committed forecast, so a row reaches the child only after every window
    whose horizon holds it was forecast. The forecasts kept are those committed on the socket, in
    order, never what the child's answer claims at its end; one more row per forecast at most, so a
    child that reads ahead only commits forecasts early (INTEGRITY.md V4)."""

    def __init__(self, task, inputs: dict, req: dict):
        import numpy as np

        self.np = np
        self.parts: dict[str, dict] = {}
        ordered = getattr(task, "TIME_ORDERED", None) or {}
        if req.get("probe_inputs"):
            return
        for split in req.get("splits") or ():
            for name, (lookback, horizon) in ordered.items():
                series = (inputs.get(split) or {}).get(name)
                if series is None or getattr(series, "ndim", 0) != 2 or len(series) < lookback:
                    continue
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                ours.setblocking(False)
                n = len(series) - lookback + 1
                self.parts[split] = {
                    "sock": ours, "theirs": theirs, "series": series, "lookback": lookback, "horizon": horizon,
                    "n": n, "msg": horizon * series.shape[1] * 8, "inbox": bytearray(), "got": [],
                    "outbox": bytearray(np.ascontiguousarray(series[:lookback]).tobytes()), "sent": lookback,
                    "child": {"name": name, "fd": theirs.fileno(), "rows": int(len(series)), "cols": int(series.shape[1]),
                              "lookback": lookback, "horizon": horizon, "dtype": series.dtype.name}}

    def child_fds(self) -> set[int]:
        return {p["theirs"].fileno() for p in self.parts.values()}

    def for_child(self) -> dict:
        return {split: dict(p["child"]) for split, p in self.parts.items()}

    def forked(self) -> None:
        for p in self.parts.values():
            p["theirs"].close()

    def readable(self) -> list[socket.socket]:
        return [p["sock"] for p in self.parts.values() if p["sock"].fileno() >= 0]

    def writable(self) -> list[socket.socket]:
        return [p["sock"] for p in self.parts.values() if p["outbox"] and p["sock"].fileno() >= 0]

    def _part(self, sock: socket.socket) -> dict:
        return next(p for p in self.parts.values() if p["sock"] is sock)

    def read(self, sock: socket.socket) -> None:
        p = self._part(sock)
        try:
            chunk = sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            sock.close()
            return
        p["inbox"] += chunk
        while len(p["inbox"]) >= p["msg"] and len(p["got"]) < p["n"]:
            blob = bytes(p["inbox"][:p["msg"]])
            del p["inbox"][:p["msg"]]
            p["got"].append(self.np.frombuffer(blob, dtype=self.np.float64).reshape(p["horizon"], -1))
            if p["sent"] < len(p["series"]):  # the next row, now that the forecast before it is committed
                p["outbox"] += self.np.ascontiguousarray(p["series"][p["sent"]]).tobytes()
                p["sent"] += 1
        if len(p["got"]) >= p["n"] or len(p["inbox"]) > p["msg"]:
            p["inbox"].clear()  # every window is forecast: anything more is not read

    def write(self, sock: socket.socket) -> None:
        p = self._part(sock)
        try:
            k = sock.send(p["outbox"])
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            p["outbox"].clear()
            return
        del p["outbox"][:k]
        if not p["outbox"] and p["sent"] >= len(p["series"]):
            try:
                sock.shutdown(socket.SHUT_WR)  # every row is out: a child that waits for more hears so
            except OSError:
                pass

    def drain(self) -> None:
        """What the child committed before it answered, read without waiting."""
        for sock in self.readable():
            while sock.fileno() >= 0 and select.select([sock], [], [], 0)[0]:
                self.read(sock)

    def close(self) -> None:
        for p in self.parts.values():
            for key in ("sock", "theirs"):
                try:
                    p[key].close()
                except OSError:
                    pass

    def substitute(self, answer: dict, payload) -> tuple[dict, bytes | memoryview]:
        """The child's answer with each time-ordered split's part replaced by the forecasts it committed
        (float64 [N, horizon, cols]); an error where it did not commit one for every window."""
        if not self.parts or not answer.get("ok") or not isinstance(answer.get("parts"), list):
            return answer, payload
        blobs, offset, parts = [], 0, []
        for part in answer["parts"]:
            size = part.get("bytes") if isinstance(part, dict) else None
            if type(size) is not int or size < 0:
                return answer, payload  # malformed: the runner's checks say so
            blob = payload[offset:offset + size]
            offset += size
            split = part.get("split")
            if split in self.parts:
                p = self.parts[split]
                if len(p["got"]) != p["n"]:
                    return {**answer, "ok": False, "parts": [],
                            "error": f"the evaluation committed {len(p['got'])} of the {p['n']} forecasts of {split} "
                                     "in time order"}, b""
                buf = io.BytesIO()
                self.np.save(buf, self.np.stack(p["got"]), allow_pickle=False)
                blob = buf.getvalue()
            blobs.append(bytes(blob))
            parts.append({"split": split, "bytes": len(blobs[-1])})
        joined = b"".join(blobs)
        return {**answer, "parts": parts, "bytes": len(joined)}, joined


# ----------------------------------------------------------------------------- the zygote
def _read_tail(fd: int, buf: bytearray) -> bool:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        return False
    if not chunk:
        return False
    buf.extend(chunk)
    del buf[:-TAIL_BYTES]
    return True


def _close_all_but(keep: set[int]) -> None:
    """Close every inherited descriptor above stderr except ``keep``."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor, already gone


def score_one(task, inputs: dict, req: dict) -> tuple[dict, bytes | memoryview]:
    """Fork the checkpoint's child (and its PID 1), wait for its answer within the timeout."""
    res_r, res_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    streams = Streams(task, inputs, req)
    if streams.parts:
        req = dict(req, streams=streams.for_child())
    pid = os.fork()
    if pid == 0:  # the intermediate: new namespaces, then PID 1 of them
        try:
            _close_all_but({res_w, out_w, err_w, *streams.child_fds()})  # above all the socket to the runner
            why = _own_namespaces()
            inner = os.fork()
            if inner == 0:
                _check(_libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
                os.setsid()  # kill(0, ...) from the script reaches its own group only, never the zygote's
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
                sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), write_through=True)
                os._exit(run_child(task, inputs, dict(req, isolation=why), res_w, isolated=not why))
            for fd in (res_w, out_w, err_w, *streams.child_fds()):
                os.close(fd)
            _, status = os.waitpid(inner, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        except BaseException:
            os._exit(70)
    for fd in (res_w, out_w, err_w):
        os.close(fd)
    streams.forked()
    try:
        answer, payload = _await_child(pid, req, res_r, out_r, err_r, streams)
    finally:
        streams.close()
    return answer, payload


def _await_child(pid: int, req: dict, res_r: int, out_r: int, err_r: int,
                 streams: Streams) -> tuple[dict, bytes | memoryview]:
    """The child's answer within its timeout, its time-ordered inputs served meanwhile."""
    deadline = time.monotonic() + float(req.get("timeout_s", 600))
    # the runner says how large the predictions can honestly be; past that (and its header line) the child is stopped
    limit = min(MAX_PREDICTION_BYTES, int(req.get("max_bytes") or MAX_PREDICTION_BYTES))
    result, out_tail, err_tail = bytearray(), bytearray(), bytearray()
    open_fds = {res_r, out_r, err_r}
    timed_out = too_big = False
    while res_r in open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        serving = {sock.fileno(): sock for sock in streams.readable()}
        ready, ready_out, _ = select.select([*open_fds, *serving], streams.writable(), [], min(left, 1.0))
        for sock in ready_out:
            streams.write(sock)
        for fd in ready:
            if fd in serving:
                streams.read(serving[fd])
            elif fd == res_r:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    open_fds.discard(fd)
                result.extend(chunk)
                if len(result) > limit + MAX_HEADER_BYTES:
                    too_big = True
                    open_fds.discard(fd)
            elif not _read_tail(fd, out_tail if fd == out_r else err_tail):
                open_fds.discard(fd)
    if timed_out or too_big:
        os.kill(pid, signal.SIGKILL)  # its PID 1 dies with it (parent-death signal), and all it forked
    _, status = os.waitpid(pid, 0)
    for fd in (out_r, err_r):  # whatever is left, without waiting
        if fd in open_fds:
            while select.select([fd], [], [], 0)[0] and _read_tail(fd, out_tail if fd == out_r else err_tail):
                pass
    for fd in (res_r, out_r, err_r):
        os.close(fd)
    tails = {"stdout": out_tail.decode(errors="replace"), "stderr": err_tail.decode(errors="replace")}
    # what this process saw from outside the child (its answer's flags are the child's own word)
    code = os.waitstatus_to_exitcode(status)
    how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    observed = ["wrote to stdout"] if tails["stdout"].strip() else []
    if timed_out:
        return {"ok": False, "error": f"evaluation timed out after {float(req.get('timeout_s', 600)):.0f} s",
                "observed": observed + ["timed out"], **tails}, b""
    if too_big:
        why = f"an answer over {limit} bytes, more than the task's predictions can be"
        return {"ok": False, "error": why, "invalid": why, "observed": observed, **tails}, b""
    end = result.find(b"\n")
    line = bytes(result[:end]) if end >= 0 else bytes(result)
    payload = memoryview(result)[end + 1:] if end >= 0 else memoryview(b"")  # the answer is held once
    try:
        answer = json.loads(line)
    except ValueError:
        answer = None
    if not result or answer is None:
        last = (err_tail.decode(errors="replace").strip().splitlines() or [""])[-1][:300]
        error = f"the evaluation died ({how})" + (f": {last}" if last else "")
        return {"ok": False, "error": error, "observed": observed + [f"no answer ({how})"], **tails}, b""
    if not isinstance(answer, dict) or len(line) > MAX_HEADER_BYTES:
        return {"ok": False, "invalid": "the answer is not a JSON object of at most 64 KiB", "observed": observed, **tails}, b""
    for key in ("observed", "invalid", "stdout", "stderr", "id"):  # this process's to say, not the child's
        answer.pop(key, None)
    if type(answer.get("bytes")) is not int or len(payload) != answer["bytes"]:
        return {"ok": False, "invalid": f"the answer announces {str(answer.get('bytes'))[:40]} bytes and carries "
                f"{len(payload)} (cut short, or more than one answer)", "observed": observed, **tails}, b""
    if code != 0:
        observed.append(f"the evaluation ended with {how} after its answer")
    answer.update(tails, observed=observed)
    streams.drain()
    return streams.substitute(answer, payload)


def serve(task, inputs: dict, sock: socket.socket, task_dir: str, inputs_dir: str) -> int:
    reader = sock.makefile("rb")
    sock.sendall(json.dumps({"ready": True, "pid": os.getpid(), "inputs": sorted(inputs)}).encode() + b"\n")
    for line in reader:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            answer, payload = score_one(task, inputs, dict(req, task_dir=task_dir, inputs=inputs_dir))
        except Exception as exc:  # noqa: BLE001 - the zygote answers every request
            answer, payload = {"ok": False, "error": f"scorer: {type(exc).__name__}: {exc}"}, b""
        answer["id"] = req.get("id") if isinstance(req, dict) else None
        answer["bytes"] = len(payload)
        sock.sendall(json.dumps(answer).encode() + b"\n")
        sock.sendall(payload)
    return 0


def main(argv: list[str]) -> int:
    args = dict(zip(argv[::2], argv[1::2], strict=False))  # a lone last word has no value
    prepare_py, inputs_dir, fd = Path(args["--task"]), Path(args["--inputs"]), int(args["--fd"])
    sock = socket.socket(fileno=fd)
    _check(_libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(DUMPABLE)")  # children cannot trace us
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy  # noqa: F401 - warm: every child shares it
    import torch  # noqa: F401

    task = load_task(prepare_py)
    inputs = load_inputs(inputs_dir)
    return serve(task, inputs, sock, str(prepare_py.parent), str(inputs_dir))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
