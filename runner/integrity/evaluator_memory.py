"""Whether a scorer child's evaluation functions are still the pristine ones after the checkpoint's
code ran, read from outside the child (issue 46 part 5: the replaced-evaluator verdict decided by
behaviour, not by the text of the code).

Who can see what. The scorer's child imports the agent's run script, so everything the child says
about itself is the agent's to write (its audit hook's flags are the note ``child_report``). The
zygote that forks the children is trusted: it never runs an agent's code. Each child is a fork of
it, so the objects the child starts from — the task module ``prepare``, the kit ``onegc_kit``,
their dicts, their functions, the interpreter's ``sys.modules`` — sit at the same addresses in
both. After the child has answered, the zygote stops it (SIGSTOP: no thread of it runs) and reads
those objects in the child's memory (``/proc/<pid>/mem``), comparing each with its own pristine
copy, pointer for pointer:

- the module object's type (``prepare.__class__ = ...``) and its dict;
- each evaluation function's entry in the module's dict (:data:`EVALUATION`): present, and the very
  object the zygote holds — whatever spelling put another there (an alias, ``setattr`` on a joined
  name, a function parameter, ``sys.modules.get``, ``vars(...).update``, ``__globals__``);
- each such function's code, defaults and keyword defaults (``prepare.judge.__code__ = ...``);
- ``sys.modules["prepare"]`` and ``sys.modules["onegc_kit"]``.

The reading follows CPython's object layout (:class:`Layout`, 64-bit CPython 3.11 to 3.12), and is
checked at the zygote's start against its own memory, through the same code (:func:`self_test`):
where it does not read what Python itself says, the check is off and says why, never a silent pass.

What no check sees (stated in the verdict): a replacement undone before the child answered (the
metric is the runner's own, computed with the pristine judge from the child's predictions); any
replacement in the agent's own processes (its training runs, its own validation figures), where
no trusted code runs at all; and what the functions use beside themselves (a constant, a helper,
numpy). The text scan of the frozen code (runner/integrity/code_scan.py) remains a hint for those.

Standard library only, no project import: it runs inside the scorer's sandbox, loaded by its path.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import FunctionType, ModuleType

# What a run script may not replace: the evaluation itself (the one list: the code scan reads it too)
EVALUATION = {"prepare": ("evaluate", "judge", "predict", "inputs"),
              "onegc_kit": ("check_predictions", "evaluate_split", "load_model", "import_script", "save_checkpoint")}
WORD = 8
MAX_ENTRIES = 1 << 16  # a module's dict holds hundreds; more is not a module dict
MAX_READ = 4 << 20
STOP_WAIT_S = 2.0
Read = Callable[[int, int], bytes]


class Unreadable(Exception):
    """The child's memory does not hold what the layout says (its objects were corrupted, or freed)."""


@dataclass(frozen=True)
class Layout:
    """Offsets of the CPython objects read (Include/cpython/*.h of 3.11 and 3.12, 64-bit)."""

    ob_type: int = 8
    md_dict: int = 16  # PyModuleObject
    ma_used: int = 16  # PyDictObject
    ma_keys: int = 32
    ma_values: int = 40
    dk_log2_size: int = 8  # PyDictKeysObject
    dk_log2_index_bytes: int = 9
    dk_kind: int = 10
    dk_nentries: int = 24
    dk_indices: int = 32
    func_code: int = 48  # PyFunctionObject
    func_defaults: int = 56
    func_kwdefaults: int = 64
    str_length: int = 16  # PyASCIIObject
    str_state: int = 32
    str_data: int = 40 if sys.version_info >= (3, 12) else 48  # 3.12 dropped wstr


LAYOUT = Layout()


@dataclass(frozen=True)
class Pristine:
    """The addresses the zygote holds, taken before any child is forked."""

    modules: dict[str, int]  # name -> address of the module object
    module_types: dict[str, int]
    dicts: dict[str, int]  # name -> address of its __dict__
    values: dict[str, dict[str, int]]  # module -> {function name: address}
    keys: dict[int, str]  # address of each interned key string -> its text
    parts: dict[str, dict[str, tuple[int, int, int]]]  # module -> name -> (code, defaults, kwdefaults)
    sys_modules: int
    str_type: int
    disabled: str | None = None  # why the check is off (the layout did not read back)


def _parts(fn: object) -> tuple[int, int, int]:
    """A function's code, defaults and keyword defaults as their addresses (0: none, a NULL field)."""
    if not isinstance(fn, FunctionType):
        return 0, 0, 0
    return (id(fn.__code__), 0 if fn.__defaults__ is None else id(fn.__defaults__),
            0 if fn.__kwdefaults__ is None else id(fn.__kwdefaults__))


def pristine(modules: Mapping[str, ModuleType]) -> Pristine:
    """The zygote's own evaluation objects (call it before the first fork)."""
    values: dict[str, dict[str, int]] = {}
    parts: dict[str, dict[str, tuple[int, int, int]]] = {}
    keys: dict[int, str] = {}
    for name, module in modules.items():
        found = vars(module)
        values[name] = {fn: id(found[fn]) for fn in EVALUATION.get(name, ()) if fn in found}
        parts[name] = {fn: _parts(found[fn]) for fn in EVALUATION.get(name, ()) if fn in found}
        keys.update({id(k): k for k in found if isinstance(k, str) and k in EVALUATION.get(name, ())})
    return Pristine({n: id(m) for n, m in modules.items()}, {n: id(type(m)) for n, m in modules.items()},
                    {n: id(vars(m)) for n, m in modules.items()}, values, keys, parts, id(sys.modules), id(str))


@dataclass
class Finding:
    replaced: list[str] = field(default_factory=list)  # "prepare.judge", "prepare.judge.__code__", ...
    unchecked: str | None = None  # why the child could not be read
    by_child: bool = False  # the child's doing (it left early, its objects unreadable): else the harness's

    def record(self) -> dict:
        if self.unchecked is not None:
            return {"unchecked": self.unchecked[:300], "by": "child" if self.by_child else "harness"}
        return {"replaced": self.replaced[:20]}


class _Memory:
    """Bounded reads of one address space."""

    def __init__(self, read: Read):
        self._read = read
        self.total = 0

    def bytes(self, addr: int, n: int) -> bytes:
        self.total += n
        if addr <= 0 or n < 0 or self.total > MAX_READ:
            raise Unreadable(f"a read of {n} bytes at {addr:#x}")
        try:
            data = self._read(addr, n)
        except (OSError, ValueError) as exc:
            raise Unreadable(f"{type(exc).__name__} at {addr:#x}") from None
        if len(data) != n:
            raise Unreadable(f"a short read at {addr:#x}")
        return data

    def word(self, addr: int) -> int:
        return int.from_bytes(self.bytes(addr, WORD), "little")


def _text(mem: _Memory, addr: int, p: Pristine, lay: Layout) -> str | None:
    """A dict key's text where it is an exact compact ASCII ``str`` (any other key is no name of a
    watched function: a lookup by ``prepare.judge`` finds an interned str key)."""
    if addr in p.keys:
        return p.keys[addr]
    if mem.word(addr + lay.ob_type) != p.str_type:
        return None
    length = mem.word(addr + lay.str_length)
    state = struct.unpack("<I", mem.bytes(addr + lay.str_state, 4))[0]
    compact, ascii_ = (state >> 5) & 1, (state >> 6) & 1
    if not (compact and ascii_) or length > 64:
        return None
    return mem.bytes(addr + lay.str_data, length).decode("ascii", "replace")


def _entries(mem: _Memory, dict_addr: int, p: Pristine, lay: Layout) -> dict[str, int]:
    """``{key text: value address}`` of a combined-table dict (a module's, ``sys.modules``)."""
    if mem.word(dict_addr + lay.ma_values):
        raise Unreadable("a split-table dict where a module's dict should be")
    keys = mem.word(dict_addr + lay.ma_keys)
    head = mem.bytes(keys, lay.dk_indices)
    log2_index_bytes, kind = head[lay.dk_log2_index_bytes], head[lay.dk_kind]
    n = int.from_bytes(head[lay.dk_nentries:lay.dk_nentries + WORD], "little")
    if not 0 <= n <= MAX_ENTRIES or log2_index_bytes > 24 or kind > 2:
        raise Unreadable(f"a dict of {n} entries, kind {kind}")
    size = 2 * WORD if kind else 3 * WORD  # DICT_KEYS_UNICODE/SPLIT: (key, value); GENERAL: (hash, key, value)
    table = mem.bytes(keys + lay.dk_indices + (1 << log2_index_bytes), n * size)
    out: dict[str, int] = {}
    for i in range(n):
        entry = table[i * size:(i + 1) * size]
        key = int.from_bytes(entry[size - 2 * WORD:size - WORD], "little")
        value = int.from_bytes(entry[size - WORD:], "little")
        if key and value:
            text = _text(mem, key, p, lay)
            if text is not None:
                out[text] = value
    return out


def look(read: Read, p: Pristine, lay: Layout = LAYOUT) -> Finding:
    """What of :data:`EVALUATION` differs from ``p`` in the address space ``read`` reads."""
    if p.disabled:
        return Finding(unchecked=p.disabled)
    mem = _Memory(read)
    out = Finding()
    try:
        installed = _entries(mem, p.sys_modules, p, lay)
        for name, module in p.modules.items():
            if installed.get(name) != module:
                out.replaced.append(f"sys.modules[{name!r}]")
            if mem.word(module + lay.ob_type) != p.module_types[name]:
                out.replaced.append(f"{name}.__class__")
            if mem.word(module + lay.md_dict) != p.dicts[name]:
                out.replaced.append(f"{name}.__dict__")
                continue
            found = _entries(mem, p.dicts[name], p, lay)
            for fn, pristine_addr in p.values[name].items():
                if found.get(fn) != pristine_addr:
                    out.replaced.append(f"{name}.{fn}" + ("" if fn in found else " (deleted)"))
                    continue
                code, defaults, kwdefaults = p.parts[name][fn]
                if code and (mem.word(pristine_addr + lay.func_code), mem.word(pristine_addr + lay.func_defaults),
                             mem.word(pristine_addr + lay.func_kwdefaults)) != (code, defaults, kwdefaults):
                    out.replaced.append(f"{name}.{fn}.__code__")
    except Unreadable as exc:
        return Finding(unchecked=f"the child's memory could not be read as Python objects ({exc})", by_child=True)
    return out


def own_memory(addr: int, n: int) -> bytes:
    """This process's memory (the self-test's reader), through ``/proc/self/mem``: a wrong address
    is an OSError there, never a crash."""
    fd = os.open("/proc/self/mem", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.pread(fd, n, addr)
    finally:
        os.close(fd)


def self_test(p: Pristine) -> str | None:
    """None when :func:`look` reads this process's own pristine objects as pristine, else why not."""
    if sys.maxsize != 2**63 - 1 or sys.implementation.name != "cpython" or sys.version_info[:2] not in ((3, 11), (3, 12)):
        return f"the layout of {sys.implementation.name} {sys.version_info[0]}.{sys.version_info[1]} is not read"
    found = look(own_memory, p)
    if found.unchecked or found.replaced:
        return f"this Python's objects do not read as the layout says ({found.unchecked or found.replaced[0]})"
    return None


def checked(modules: Mapping[str, ModuleType]) -> Pristine:
    """:func:`pristine`, with the check switched off where :func:`self_test` fails."""
    p = pristine(modules)
    why = self_test(p)
    return p if why is None else Pristine(p.modules, p.module_types, p.dicts, p.values, p.keys, p.parts,
                                          p.sys_modules, p.str_type, why)


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return None


def stop_and_look(pid: int, p: Pristine) -> Finding:
    """Stop the child ``pid`` (all its threads), read it, and let it go on (the caller then ends it)."""
    if p.disabled:
        return Finding(unchecked=p.disabled)
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return Finding(unchecked="the child ended before the harness could look at it", by_child=True)
    try:
        deadline = time.monotonic() + STOP_WAIT_S
        while (state := _state(pid)) not in ("T", "t"):
            if state in (None, "Z", "X"):
                return Finding(unchecked="the child ended before the harness could look at it", by_child=True)
            if time.monotonic() > deadline:
                return Finding(unchecked=f"the child did not stop within {STOP_WAIT_S:.0f} s (state {state})")
            time.sleep(0.002)
        try:
            fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            return Finding(unchecked=f"the harness may not read the child's memory here ({exc.strerror})")
        try:
            return look(lambda addr, n: os.pread(fd, n, addr), p)
        finally:
            os.close(fd)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
