"""What a checkpoint's frozen code does to the evaluation, read from outside (issue 28).

The scorer's child reports what its audit hook saw, but the checkpoint's code runs in that child
and can switch the recorder off first; so its report never decides anything. This is evidence
the child cannot touch: the runner parses (never runs) the snapshot's ``*.py`` with :mod:`ast`
and names every evaluation function of ``prepare`` or ``onegc_kit`` (runner/wire/verdicts.py's
``EVALUATION``) the code replaces or deletes: ``prepare.judge = ...``, ``setattr(prepare,
"judge", ...)``, ``del prepare.judge``, ``vars(prepare)["judge"] = ...`` or
``prepare.__dict__["judge"] = ...``, under any alias it imports the module as (:data:`EVALUATION`).

A module reached through ``importlib.import_module("prepare")`` or ``__import__("prepare")`` is
the module under the name it is assigned to. The verdict ``evaluator_replaced`` names
``<module>.<names>``; it is trusted evidence (it disqualifies an official checkpoint).

What the scan cannot read is never clean (INTEGRITY.md V6): the verdict ``code_unscanned`` names it —
a file over :data:`MAX_FILE_BYTES` or that does not parse, more than :data:`MAX_FILES` modules, an
import it cannot resolve (neither a file of the snapshot nor a module installed here; one inside a
``try`` that catches its ImportError is optional and passes), a module imported by a name made at
run time (``importlib``, ``__import__``), code run from a string (``exec``, ``eval``,
``compile``). It is weaker evidence than a replacement: it asks a person for a look and
disqualifies nothing (an honest script may ``eval`` a config). Whatever escapes the scan is still
harmless to the score itself, which the runner computes with the pristine task module in its own
process (runner/scoring/scorer.py).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path

from runner.integrity.checks import verdict
from runner.wire.verdicts import Verdict

MODULES = ("prepare", "onegc_kit")
MAX_FILE_BYTES = 2 << 20  # larger: "unscanned" (a script padded past it hides nothing)
MAX_FILES = 200
MAX_UNSCANNED = 5  # verdicts of this kind per checkpoint (each names a file and a reason)
# What a run script may not replace at import in the scorer: the evaluation itself. (The scorer
# is sealed, so doing it gains nothing; trying is what the paper calls a protocol violation.)
EVALUATION = {"prepare": {"evaluate", "judge", "predict", "inputs"},
              "onegc_kit": {"check_predictions", "evaluate_split", "load_model", "import_script", "save_checkpoint"}}
DYNAMIC_IMPORTS = {"import_module", "__import__"}  # importlib.import_module(name), __import__(name)
RUNS_STRINGS = {"exec", "eval", "compile"}
OPTIONAL = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}  # a try that makes an import optional


def replaced(source: str, names: dict[str, set[str]]) -> dict[str, set[str]]:
    """``{module: {name, ...}}`` that ``source`` assigns, sets or deletes among ``names``."""
    tree = ast.parse(source)
    aliases = {m: m for m in names}  # local name -> module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in names:
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.Assign) and _dynamic_name(node.value) in names:
            for t in node.targets:  # p = importlib.import_module("prepare")
                if isinstance(t, ast.Name):
                    aliases[t.id] = str(_dynamic_name(node.value))
    hits: dict[str, set[str]] = {}

    def module_of(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name) and expr.id in aliases:
            return aliases[expr.id]
        if _dynamic_name(expr) in names:  # importlib.import_module("prepare").judge = ...
            return _dynamic_name(expr)
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) \
                and expr.value.attr == "modules" and isinstance(expr.slice, ast.Constant) \
                and expr.slice.value in names:  # sys.modules["prepare"]
            return str(expr.slice.value)
        return None

    def hit(module_expr: ast.expr, name: object) -> None:
        module = module_of(module_expr)
        if module is not None and isinstance(name, str) and name in names[module]:
            hits.setdefault(module, set()).add(name)

    def target(t: ast.expr) -> None:
        if isinstance(t, ast.Attribute):
            hit(t.value, t.attr)
        elif isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant):
            inner = t.value  # vars(prepare)[...] or prepare.__dict__[...]
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "vars" and inner.args:
                hit(inner.args[0], t.slice.value)
            elif isinstance(inner, ast.Attribute) and inner.attr == "__dict__":
                hit(inner.value, t.slice.value)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for elt in t.elts:
                target(elt)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                target(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            target(node.target)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                target(t)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            hit(node.args[0], node.args[1].value)
    return hits


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
    """Trusted verdicts for one checkpoint: ``evaluator_replaced`` ("the code replaces prepare:
    evaluate, judge"), from its run script (the name its checkpoint gives, which the scorer imports)
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
    replacing = [verdict("evaluator_replaced", "disqualifies",
                         f"the code replaces {m}: {', '.join(sorted(found[m]))}") for m in MODULES if found.get(m)]
    return tuple(replacing + [verdict("code_unscanned", "look", why)
                              for why in list(dict.fromkeys(unscanned))[:MAX_UNSCANNED]])
