"""What a checkpoint's frozen code does to the evaluation, read from outside (issue 28).

The scorer's child reports what its audit hook saw, but the checkpoint's code runs in that child
and can switch the recorder off first; so its report never decides anything. This is evidence
the child cannot touch: the runner parses (never runs) the snapshot's ``*.py`` with :mod:`ast`
and names every evaluation function of ``prepare`` or ``onegc_kit`` (runner/verdicts.py's
``EVALUATION``) the code replaces or deletes: ``prepare.judge = ...``, ``setattr(prepare,
"judge", ...)``, ``del prepare.judge``, ``vars(prepare)["judge"] = ...`` or
``prepare.__dict__["judge"] = ...``, under any alias it imports the module as.

A replacement spelt some other way (a name built at run time) is not found here; it is also
harmless, as the runner judges the predictions with the pristine task module in its own process
(runner/scoring.py). The flag :data:`FLAG_PREFIX` ``"<module>: <names>"`` is trusted evidence.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

FLAG_PREFIX = "code replaces "
MODULES = ("prepare", "onegc_kit")
MAX_FILE_BYTES = 2 << 20
MAX_FILES = 200


def replaced(source: str, names: dict[str, set[str]]) -> dict[str, set[str]]:
    """``{module: {name, ...}}`` that ``source`` assigns, sets or deletes among ``names``."""
    tree = ast.parse(source)
    aliases = {m: m for m in names}  # local name -> module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in names:
                    aliases[a.asname or a.name] = a.name
    hits: dict[str, set[str]] = {}

    def module_of(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name) and expr.id in aliases:
            return aliases[expr.id]
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


def imported(source: str) -> set[str]:
    """The module names ``source`` imports by name (``import a.b``, ``from a import b``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


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
def flags(snapshot: Path, script: str | None) -> tuple[str, ...]:
    """Trusted flags for one checkpoint: ``"code replaces prepare: evaluate, judge"``, from its run
    script (the name its checkpoint gives, which the scorer imports) and every module of the
    snapshot that script imports, followed from module to module. The snapshot holds the whole
    workspace's code; another script's file beside it is not this checkpoint's code.

    Files that cannot be read or parsed are passed over (the scorer fails such code anyway)."""
    from runner.verdicts import EVALUATION

    if not script:
        return ()
    first = snapshot / script
    if not _inside(snapshot, first):
        return ()
    found: dict[str, set[str]] = {}
    todo: list[Path] = [first]
    seen: set[Path] = set()
    while todo and len(seen) < MAX_FILES:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            source = path.read_text(errors="replace")
            for module, names in replaced(source, EVALUATION).items():
                found.setdefault(module, set()).update(names)
            todo += [f for name in imported(source) for f in _local(first.parent, name) if _inside(snapshot, f)]
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return tuple(f"{FLAG_PREFIX}{m}: {', '.join(sorted(found[m]))}" for m in MODULES if found.get(m))
