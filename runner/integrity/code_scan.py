"""What a checkpoint's frozen code reads as doing to the evaluation: a hint, read from outside
(issue 28; issue 46 part 5 made it a hint).

The runner parses (never runs) the snapshot's ``*.py`` with :mod:`ast` and names every evaluation
function of ``prepare`` or ``onegc_kit`` (:data:`EVALUATION`) the code reads as replacing or
deleting: an attribute write, ``setattr``/``delattr``/``__setattr__``, a write to the module's
dict (``vars(m)``, ``m.__dict__``, ``m.f.__globals__``: ``[...] =``, ``.update``, ``.pop``, ...),
a function's ``__code__``/``__defaults__``, the module's ``__class__``, its ``sys.modules``
entry. It follows the module through aliases (``j = prepare``), imports (``from importlib import
import_module as load``; ``sys.modules.get("prepare")``; a constant name folded from ``"pre" +
"pare"``), containers, loops and the parameters of functions called with it. A name made at run
time is read as :data:`RUNTIME`.

A text scan can always be out-spelled by an agent that knows it (``exec`` of a string, a name
from a file, a module reached through ``gc``): so its verdict ``evaluator_in_code`` asks for a
**look** and disqualifies nothing. The verdict that decides is made by behaviour: the scorer's
zygote reads the child's evaluation functions from outside after the checkpoint's code ran
(runner/integrity/evaluator_memory.py, runner/integrity/evaluator_check.py: ``evaluator_replaced``).
The scan still sees what behaviour cannot: a replacement the code makes only in the agent's own
runs (under ``if __name__ == "__main__"``), or undoes before the child answers. The rate of each
against spellings that know the scan: benchmarks/evaluator_spellings.py (docs/benchmarks.md).

What the scan cannot read is never clean (INTEGRITY.md V6): the verdict ``code_unscanned`` names it —
a file over :data:`MAX_FILE_BYTES` or that does not parse, more than :data:`MAX_FILES` modules, an
import it cannot resolve (neither a file of the snapshot nor a module installed here; one inside a
``try`` that catches its ImportError is optional and passes), a module imported by a name made at
run time (``importlib``, ``__import__``), code run from a string (``exec``, ``eval``,
``compile``). It asks a person for a look and disqualifies nothing (an honest script may ``eval``
a config). Whatever escapes the scan is still harmless to the score itself, which the runner
computes with the pristine task module in its own process (runner/scoring/scorer.py).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from runner.integrity import evaluator_memory
from runner.integrity.checks import verdict
from runner.wire.verdicts import Verdict

MODULES = ("prepare", "onegc_kit")
MAX_FILE_BYTES = 2 << 20  # larger: "unscanned" (a script padded past it hides nothing)
MAX_FILES = 200
MAX_UNSCANNED = 5  # verdicts of this kind per checkpoint (each names a file and a reason)
# What a run script may not replace (the scorer's zygote checks the same list: runner/integrity/evaluator_memory.py)
EVALUATION = {m: set(names) for m, names in evaluator_memory.EVALUATION.items()}
DYNAMIC_IMPORTS = {"import_module", "__import__"}  # importlib.import_module(name), __import__(name)
RUNS_STRINGS = {"exec", "eval", "compile"}
OPTIONAL = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}  # a try that makes an import optional


RUNTIME = "an attribute named at run time"  # setattr(prepare, name, ...), vars(prepare).update(**kw), ...
WHOLE = "the module itself"  # sys.modules["prepare"] = ..., prepare.__class__ = ...
FUNCTION_PARTS = {"__code__", "__defaults__", "__kwdefaults__"}  # a function replaced in place
SETTERS = {"__setattr__", "__delattr__"}
DICT_WRITES = {"update", "__setitem__", "setdefault", "pop", "__delitem__", "clear", "popitem", "__ior__"}
MAX_ROUNDS = 8  # aliases of aliases: each round follows one more step


def fold(expr: ast.expr, consts: Mapping[str, str] | None = None) -> str | None:
    """The text a string expression always has, where it is made of constants: a literal, a name
    bound to one, ``+`` of such, an f-string of such, ``"".join([...])`` of such, and their
    ``.lower()``/``.upper()``/``.strip()``; else None (made at run time)."""
    consts = consts or {}
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return consts.get(expr.id)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = fold(expr.left, consts), fold(expr.right, consts)
        return left + right if left is not None and right is not None else None
    if isinstance(expr, ast.JoinedStr):
        parts = [fold(v.value if isinstance(v, ast.FormattedValue) else v, consts) for v in expr.values]
        return "".join(p for p in parts if p is not None) if None not in parts else None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and not expr.keywords:
        base = fold(expr.func.value, consts)
        if base is not None and expr.func.attr == "join" and len(expr.args) == 1 \
                and isinstance(expr.args[0], (ast.List, ast.Tuple)):
            items = [fold(e, consts) for e in expr.args[0].elts]
            return base.join(i for i in items if i is not None) if None not in items else None
        if base is not None and expr.func.attr in ("lower", "upper", "strip") and not expr.args:
            return str(getattr(base, expr.func.attr)())
    return None


class _Reader:
    """What a module's code does to ``prepare``/``onegc_kit`` (see :func:`replaced`): the names
    bound to those modules, to their dicts, to ``sys.modules`` and to the import functions are
    followed through assignments, imports, loops, containers and function parameters (by name,
    in every scope alike: a hint errs towards seeing too much), then every write through them is
    read."""

    def __init__(self, tree: ast.AST, names: Mapping[str, set[str]]):
        self.tree = tree
        self.names = names
        self.modules: dict[str, str] = {m: m for m in names}  # local name -> module
        self.dicts: dict[str, str] = {}  # local name -> the module whose __dict__ it is
        self.held: dict[str, str] = {}  # local name of a list/tuple/dict holding a module -> that module
        self.loaders: set[str] = {"__import__"}  # names of import_module / __import__
        self.sys: set[str] = {"sys"}
        self.maps: set[str] = set()  # names of sys.modules
        self.consts: dict[str, str] = {}
        self.members: dict[str, str] = {}  # a name imported from a watched module -> the module
        self.funcs: dict[str, list[list[str]]] = {}  # name -> the parameter lists of its defs
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
                self.funcs.setdefault(node.name, []).append(params)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Lambda):
                a = node.value.args
                self.funcs.setdefault(node.targets[0].id, []).append(
                    [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]])
        for _ in range(MAX_ROUNDS):
            if not self._bind_round():
                break

    # ------------------------------------------------------------------ what an expression is
    def module_of(self, expr: ast.expr) -> str | None:
        """The watched module ``expr`` always is, or None."""
        if isinstance(expr, ast.Name):
            return self.modules.get(expr.id)
        if isinstance(expr, ast.Call) and expr.args:
            func = expr.func
            if self._is_loader(func):
                name = fold(expr.args[0], self.consts)
                return name if name in self.names else None
            if isinstance(func, ast.Attribute) and func.attr in ("get", "setdefault", "__getitem__", "pop") \
                    and self._is_map(func.value):
                name = fold(expr.args[0], self.consts)
                return name if name in self.names else None
        if isinstance(expr, ast.Subscript):
            if self._is_map(expr.value):
                name = fold(expr.slice, self.consts)
                return name if name in self.names else None
            if isinstance(expr.value, ast.Name) and expr.value.id in self.held:
                return self.held[expr.value.id]
        if isinstance(expr, ast.NamedExpr):
            return self.module_of(expr.value)
        return None

    def dict_of(self, expr: ast.expr) -> str | None:
        """The watched module whose ``__dict__`` ``expr`` always is (``vars(m)``, ``m.__dict__``,
        ``getattr(m, "__dict__")``, ``m.f.__globals__``), or None."""
        if isinstance(expr, ast.Name):
            return self.dicts.get(expr.id)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
            if expr.func.id == "vars" and len(expr.args) == 1:
                return self.module_of(expr.args[0])
            if expr.func.id == "getattr" and len(expr.args) >= 2 and fold(expr.args[1], self.consts) == "__dict__":
                return self.module_of(expr.args[0])
        if isinstance(expr, ast.Attribute):
            if expr.attr == "__dict__":
                return self.module_of(expr.value)
            if expr.attr == "__globals__" and isinstance(expr.value, ast.Attribute):
                return self.module_of(expr.value.value)  # a function of the module: its globals are its dict
            if expr.attr == "__globals__" and isinstance(expr.value, ast.Name):
                return self.members.get(expr.value.id)  # from prepare import load_split; load_split.__globals__
        return None

    def _is_loader(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return func.id in self.loaders or func.id in DYNAMIC_IMPORTS
        return isinstance(func, ast.Attribute) and func.attr in DYNAMIC_IMPORTS

    def _is_map(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.maps
        if isinstance(expr, ast.Attribute) and expr.attr == "modules":
            return isinstance(expr.value, ast.Name) and expr.value.id in self.sys or self._is_sys_call(expr.value)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "getattr" \
                and len(expr.args) >= 2 and fold(expr.args[1], self.consts) == "modules":
            return isinstance(expr.args[0], ast.Name) and expr.args[0].id in self.sys or self._is_sys_call(expr.args[0])
        return False

    def _is_sys_call(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Call) and self._is_loader(expr.func) and bool(expr.args) \
            and fold(expr.args[0], self.consts) == "sys"

    # ------------------------------------------------------------------ bindings, to a fixed point
    def _bind(self, name: str, value: ast.expr) -> bool:
        before = (len(self.modules), len(self.dicts), len(self.held), len(self.loaders), len(self.maps),
                  len(self.consts), len(self.sys))
        if (m := self.module_of(value)) is not None:
            self.modules.setdefault(name, m)
        elif (d := self.dict_of(value)) is not None:
            self.dicts.setdefault(name, d)
        elif self._is_map(value):
            self.maps.add(name)
        elif self._is_loader(value) if isinstance(value, (ast.Name, ast.Attribute)) else False:
            self.loaders.add(name)
        elif self._is_sys_call(value):
            self.sys.add(name)
        elif isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            held = [m for e in value.elts if (m := self.module_of(e)) is not None]
            if held:
                self.held.setdefault(name, held[0])
        elif isinstance(value, ast.Dict):
            held = [m for e in value.values if e is not None and (m := self.module_of(e)) is not None]
            if held:
                self.held.setdefault(name, held[0])
        elif (text := fold(value, self.consts)) is not None:
            self.consts.setdefault(name, text)
        return before != (len(self.modules), len(self.dicts), len(self.held), len(self.loaders), len(self.maps),
                          len(self.consts), len(self.sys))

    def _bind_target(self, target: ast.expr, value: ast.expr) -> bool:
        if isinstance(target, ast.Name):
            return self._bind(target.id, value)
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            return any([self._bind_target(t, v) for t, v in zip(target.elts, value.elts, strict=True)])
        return False

    def _bind_round(self) -> bool:
        changed = False
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    if a.name in self.names and local not in self.modules:
                        self.modules[local], changed = a.name, True
                    elif a.name == "sys" and local not in self.sys:
                        self.sys.add(local)
                        changed = True
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                for a in node.names:
                    local = a.asname or a.name
                    if node.module == "importlib" and a.name == "import_module" and local not in self.loaders:
                        self.loaders.add(local)
                        changed = True
                    elif node.module == "sys" and a.name == "modules" and local not in self.maps:
                        self.maps.add(local)
                        changed = True
                    elif source in self.names and a.name == "__dict__" and local not in self.dicts:
                        self.dicts[local], changed = source, True
                    elif source in self.names and local not in self.members:
                        self.members[local], changed = source, True
                    elif (node.module is None or node.level) and a.name in self.names \
                            and local not in self.modules:  # from . import prepare
                        self.modules[local], changed = a.name, True
            elif isinstance(node, ast.Assign):
                changed |= any([self._bind_target(t, node.value) for t in node.targets])
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                changed |= self._bind_target(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name):
                loop = node.iter
                held = self.held.get(loop.id) if isinstance(loop, ast.Name) else None
                if held is None and isinstance(loop, (ast.List, ast.Tuple, ast.Set)):
                    held = next((m for e in loop.elts if (m := self.module_of(e)) is not None), None)
                if held is not None and node.target.id not in self.modules:
                    self.modules[node.target.id], changed = held, True
            elif isinstance(node, ast.Call):
                changed |= self._bind_parameters(node)
        return changed

    def _bind_parameters(self, call: ast.Call) -> bool:
        """A function called with a watched module (or its dict) binds its parameter to it."""
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        changed = False
        for params in self.funcs.get(name or "", []):
            offset = 1 if isinstance(func, ast.Attribute) and params[:1] in (["self"], ["cls"]) else 0
            pairs = [(params[i + offset], a) for i, a in enumerate(call.args) if i + offset < len(params)]
            pairs += [(k.arg, k.value) for k in call.keywords if k.arg in params]
            for param, arg in pairs:
                changed |= self._bind(param, arg)
        return changed

    # ------------------------------------------------------------------ the writes
    def hits(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}

        def hit(module: str | None, name: str | None) -> None:
            if module is None:
                return
            name = RUNTIME if name is None else name
            if name in self.names[module] or name in (RUNTIME, WHOLE):
                found.setdefault(module, set()).add(name)

        def target(t: ast.expr) -> None:
            if isinstance(t, ast.Attribute):
                if (m := self.module_of(t.value)) is not None:
                    hit(m, WHOLE if t.attr == "__class__" else t.attr)
                elif t.attr in FUNCTION_PARTS and isinstance(t.value, ast.Attribute):
                    hit(self.module_of(t.value.value), t.value.attr)  # prepare.judge.__code__ = ...
            elif isinstance(t, ast.Subscript):
                if (m := self.dict_of(t.value)) is not None:
                    hit(m, fold(t.slice, self.consts))
                elif self._is_map(t.value):
                    name = fold(t.slice, self.consts)
                    if name in self.names:
                        hit(name, WHOLE)
            elif isinstance(t, ast.Name) and t.id in self.dicts:  # d |= {...}
                hit(self.dicts[t.id], RUNTIME)
            elif isinstance(t, (ast.Tuple, ast.List)):
                for elt in t.elts:
                    target(elt)

        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    target(t)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                target(node.target)
            elif isinstance(node, ast.Delete):
                for t in node.targets:
                    target(t)
            elif isinstance(node, ast.Call):
                self._call_hits(node, hit)
        return found

    def _call_hits(self, node: ast.Call, hit) -> None:
        func, args = node.func, node.args
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and len(args) >= 2:
            name = fold(args[1], self.consts)
            if (m := self.module_of(args[0])) is not None:
                hit(m, WHOLE if name == "__class__" else name)
            elif name in FUNCTION_PARTS and isinstance(args[0], ast.Attribute):
                hit(self.module_of(args[0].value), args[0].attr)
        elif isinstance(func, ast.Attribute) and func.attr in SETTERS:
            if (m := self.module_of(func.value)) is not None and args:  # prepare.__setattr__("judge", f)
                hit(m, fold(args[0], self.consts))
            elif len(args) >= 2 and (m := self.module_of(args[0])) is not None:  # object.__setattr__(prepare, ...)
                hit(m, fold(args[1], self.consts))
        elif isinstance(func, ast.Attribute) and func.attr in DICT_WRITES and args and self.dict_of(args[0]) \
                and self.dict_of(func.value) is None:  # dict.__setitem__(vars(prepare), "judge", f)
            unbound = ast.Call(ast.Attribute(args[0], func.attr, ast.Load()), args[1:], node.keywords)
            self._call_hits(unbound, hit)
        elif isinstance(func, ast.Attribute) and func.attr in DICT_WRITES:
            if (m := self.dict_of(func.value)) is not None:
                if func.attr in ("clear", "popitem"):
                    hit(m, WHOLE)
                elif func.attr in ("update", "__ior__"):
                    for k in node.keywords:
                        hit(m, k.arg)  # None: **mapping, named at run time
                    for a in args:
                        keys = a.keys if isinstance(a, ast.Dict) else [None]
                        for key in keys:
                            hit(m, fold(key, self.consts) if key is not None else None)
                elif args:
                    hit(m, fold(args[0], self.consts))
            elif self._is_map(func.value):  # sys.modules.update(prepare=...), .pop("prepare")
                names = [k.arg for k in node.keywords] + [fold(a, self.consts) for a in args[:1]
                                                         if func.attr not in ("update", "__ior__")]
                names += [fold(key, self.consts) for a in args if isinstance(a, ast.Dict) for key in a.keys
                          if key is not None]
                for name in names:
                    if name in self.names:
                        hit(name, WHOLE)


def replaced(source: str, names: dict[str, set[str]]) -> dict[str, set[str]]:
    """``{module: {name, ...}}`` that ``source`` reads as assigning, setting or deleting among
    ``names`` (:data:`RUNTIME` where the name is made at run time, :data:`WHOLE` where the module
    itself is replaced): through any name bound to the module, its dict, ``sys.modules`` or an
    import function, a parameter of a function called with it, a container holding it."""
    reader = _Reader(ast.parse(source), names)
    return reader.hits()


def _dynamic_name(expr: ast.expr) -> str | None:
    """The constant module name of ``importlib.import_module("x")`` / ``__import__("x")``, else None."""
    if not (isinstance(expr, ast.Call) and expr.args and isinstance(expr.args[0], ast.Constant)
            and isinstance(expr.args[0].value, str)):
        return None
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return expr.args[0].value if name in DYNAMIC_IMPORTS else None


def imported(source: str) -> set[str]:
    """The module names ``source`` imports by name (``import a.b``, ``from a import b``,
    ``importlib.import_module("a")``)."""
    return {name for name, _ in _imports(ast.parse(source))}


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """(module name, optional) of every import by name; optional: inside a ``try`` that catches
    its ImportError. A relative import (``from . import x``) names the snapshot's ``x``."""
    optional_nodes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            optional_nodes.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        optional = id(node) in optional_nodes
        if isinstance(node, ast.Import):
            out += [(a.name, optional) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                out.append((node.module, optional))
                out += [(f"{node.module}.{a.name}", True) for a in node.names]  # a name, or a submodule
            elif node.level:
                out += [(a.name, optional) for a in node.names]
        elif isinstance(node, ast.Call) and _dynamic_name(node):
            out.append((str(_dynamic_name(node)), optional))
    return out


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(isinstance(k, ast.Name) and k.id in OPTIONAL for k in kinds)


def unreadable(tree: ast.AST, resolves) -> list[str]:
    """Why the scan cannot vouch for this module's code: imports by a name made at run time, code
    run from strings, and imports ``resolves(name)`` does not find."""
    why: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in DYNAMIC_IMPORTS and _dynamic_name(node) is None:
                why.append(f"imports a module by a name made at run time ({name})")
            elif name in ("spec_from_file_location", "module_from_spec", "SourceFileLoader", "load_module"):
                why.append(f"loads a module from a file by hand ({name})")
            elif isinstance(func, ast.Name) and name in RUNS_STRINGS:
                why.append(f"runs code from a string ({name})")
    missing = sorted({name for name, optional in _imports(tree) if not optional and not resolves(name)})
    if missing:
        why.append(f"imports what it cannot resolve ({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''})")
    return list(dict.fromkeys(why))


@lru_cache(maxsize=4096)
def _installed(top: str) -> bool:
    """Whether a top-level module is importable here (the scorer's environment is this one)."""
    if top in sys.builtin_module_names or top in sys.stdlib_module_names or top in MODULES:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _local(root: Path, name: str) -> list[Path]:
    """The snapshot's files a module name may load (``a.b``: a/__init__.py, a/b.py, a/b/__init__.py)."""
    parts = name.split(".")
    files = []
    for k in range(1, len(parts) + 1):
        base = root.joinpath(*parts[:k])
        files += [base.with_suffix(".py"), base / "__init__.py"]
    return files


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (OSError, ValueError):
        return False
    return path.is_file() and not path.is_symlink()


@lru_cache(maxsize=256)
def verdicts(snapshot: Path, script: str | None) -> tuple[Verdict, ...]:
    """The scan's verdicts for one checkpoint: ``evaluator_in_code`` ("the code reads as replacing
    prepare: evaluate, judge", a look), from its run script (the name its checkpoint gives, which the scorer imports)
    and every module of the snapshot that script imports, followed from module to module, then one
    ``code_unscanned`` per thing the scan could not read whole (see the module's docstring). The snapshot holds the whole
    workspace's code; another script's file beside it is not this checkpoint's code."""
    if not script:
        return ()
    first = snapshot / script
    if not _inside(snapshot, first):
        return ()
    found: dict[str, set[str]] = {}
    unscanned: list[str] = []
    todo: list[Path] = [first]
    seen: set[Path] = set()

    def resolves(name: str) -> bool:
        return any(_inside(snapshot, f) for f in _local(first.parent, name)) or _installed(name.split(".")[0])

    while todo:
        path = todo.pop()
        if path in seen:
            continue
        if len(seen) >= MAX_FILES:
            unscanned.append(f"more than {MAX_FILES} modules; the rest were not read")
            break
        seen.add(path)
        shown = path.name[:80]
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                unscanned.append(f"{shown} is over the scan's {MAX_FILE_BYTES >> 20} MiB limit")
                continue
            source = path.read_text(errors="replace")
            tree = ast.parse(source)
            for module, names in replaced(source, EVALUATION).items():
                found.setdefault(module, set()).update(names)
            unscanned += [f"{shown} {why}" for why in unreadable(tree, resolves)]
            todo += [f for name in imported(source) if name.split(".")[0] not in MODULES  # scored: the pristine ones
                     for f in _local(first.parent, name) if _inside(snapshot, f)]
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            unscanned.append(f"{shown} cannot be read or parsed ({type(exc).__name__})")
    replacing = [verdict("evaluator_in_code", "look", f"the code reads as replacing {m}: {', '.join(sorted(found[m]))}")
                 for m in MODULES if found.get(m)]
    return tuple(replacing + [verdict("code_unscanned", "look", why)
                              for why in list(dict.fromkeys(unscanned))[:MAX_UNSCANNED]])
