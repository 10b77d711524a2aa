"""The agents' Python environment, declared (``requirements-agent.txt``) and checked.

The sandbox shows the agent the runner's own environment read-only, so what the agent can
import is what is installed here: torch, numpy, scipy, scikit-learn, pandas, timm and, where a
build matching torch imports, torchvision (T3's DINOv3 backbones need timm, and timm needs
torchvision). :func:`fingerprint` hashes those declared packages and everything they require (not
the harness's own extras); it goes in every session's contract, so sessions run with different
environments are flagged like any other difference.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# torch minor -> the torchvision minor built with it (pytorch.org's compatibility table)
TORCHVISION_FOR = {"2.9": "0.24", "2.10": "0.25", "2.11": "0.26", "2.12": "0.27", "2.13": "0.28", "2.14": "0.29"}
# what an agent may import, and the module that proves it imports
DECLARED = {"torch": "torch", "numpy": "numpy", "scipy": "scipy", "scikit-learn": "sklearn", "pandas": "pandas",
            "torchvision": "torchvision.ops", "timm": "timm"}
PYTORCH_INDEX = "https://download.pytorch.org/whl"  # PyTorch's own index: a torchvision for each build of torch


@functools.cache
def freeze() -> tuple[str, ...]:
    """``name==version`` of every distribution installed, sorted (what ``pip freeze`` lists)."""
    found = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").strip()
        if name:
            found[name.lower()] = f"{name}=={dist.version}"
    return tuple(found[k] for k in sorted(found))


def normalised(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503): ``Scikit_Learn`` is ``scikit-learn``."""
    return re.sub(r"[-_.]+", "-", name).lower()


REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def needed(requirement: str) -> str | None:
    """The distribution a ``Requires-Dist`` line needs here, or None: one asked for only by an
    extra (``pytest; extra == "test"``), or whose marker does not hold on this machine."""
    name, _, marker = requirement.partition(";")
    if "extra" in marker:
        return None
    if marker.strip():
        try:
            from packaging.markers import Marker

            if not Marker(marker).evaluate():
                return None
        except Exception:  # no packaging, or a marker it cannot read: counted (a fingerprint too wide, never too narrow)
            pass
    found = REQUIREMENT_NAME.match(name)
    return normalised(found.group(1)) if found else None


def closure(installed: Mapping[str, tuple[str, Sequence[str]]], roots: Iterable[str]) -> tuple[str, ...]:
    """``name==version`` of ``roots`` and of every installed distribution they require, directly or
    not (``installed``: normalised name -> (version, its ``Requires-Dist`` lines)), sorted."""
    seen: dict[str, str] = {}
    todo = [normalised(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen or name not in installed:
            continue
        version, requires = installed[name]
        seen[name] = f"{name}=={version}"
        todo += [dep for r in requires if (dep := needed(r)) is not None]
    return tuple(seen[k] for k in sorted(seen))


@functools.cache
def agent_packages() -> tuple[str, ...]:
    """``name==version`` of what the agents' Python is declared to be (:data:`DECLARED`: what
    requirements-agent.txt and the Makefile install) and all it requires. The harness's own
    packages and its optional extras (``[export]``, ``[inspect]``, ``[dev]``) are not in it: an
    agent is not told of them, and installing them leaves the agents' environment as it was."""
    installed = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").strip()
        if name:
            installed[normalised(name)] = (dist.version, tuple(dist.requires or ()))
    return closure(installed, DECLARED)


def fingerprint() -> str:
    """A short hash of :func:`agent_packages`: sessions whose agents had other packages (another
    torch, numpy, pandas, …) are under another contract; the harness's own extras change nothing."""
    return hashlib.sha256("\n".join(agent_packages()).encode()).hexdigest()[:12]


def matching_torchvision(torch_version: str | None = None) -> str | None:
    """The torchvision release series that matches ``torch_version`` (``"0.28"``), or None."""
    version = torch_version or _version("torch")
    if not version:
        return None
    minor = ".".join(version.split("+")[0].split(".")[:2])
    return TORCHVISION_FOR.get(minor)


@dataclass(frozen=True)
class Check:
    package: str
    version: str | None
    ok: bool
    detail: str


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


# one fresh interpreter imports every declared module in turn (torch once, not once per package)
# and prints what each import did, as JSON: {module: null | "the error's last line"}
PROBE = """
import importlib, json, sys
out = {}
for module in sys.argv[1:]:
    try:
        importlib.import_module(module)
        out[module] = None
    except BaseException as exc:
        out[module] = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
print(json.dumps(out))
"""


def _cache_file() -> Path:
    """Where the import probe's answer is kept, keyed by the environment's fingerprint and this
    interpreter: a change to either (a package installed, removed, upgraded) asks again."""
    key = hashlib.sha256(f"{fingerprint()}\0{sys.executable}".encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "onegc" / f"agent-env-{key}.json"


def _probe(modules: list[str]) -> dict[str, str | None]:
    """What importing each module in a fresh interpreter gives (None: it imports); kept in
    :func:`_cache_file`, so that ``onegc doctor`` pays the imports (seconds: torch) once per environment."""
    cache = _cache_file()
    try:
        found = json.loads(cache.read_text())
        if isinstance(found, dict) and set(found) == set(modules):
            return found
    except (OSError, ValueError):
        pass
    probe = subprocess.run([sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, timeout=300)
    try:
        found = json.loads(probe.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):  # the interpreter itself failed: every module with its last line
        last = (probe.stderr.strip().splitlines() or ["?"])[-1][:160]
        return dict.fromkeys(modules, last)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
        tmp.write_text(json.dumps(found))
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only cache: the next check asks again
    return found


def check() -> list[Check]:
    """Each declared package: installed, and importable in a fresh interpreter (as the agent's);
    one interpreter for all of them, its answer kept per environment (:func:`_probe`)."""
    versions = {dist: _version(dist) for dist in DECLARED}
    imports = _probe([DECLARED[d] for d, v in versions.items() if v is not None])
    out = []
    for dist, module in DECLARED.items():
        version = versions[dist]
        if version is None:
            fix = f": {torchvision_fix()}" if dist == "torchvision" else ": make venv installs it (requirements-agent.txt)"
            out.append(Check(dist, None, False, "not installed" + fix))
        elif imports.get(module) is None:
            out.append(Check(dist, version, True, "imports"))
        else:
            out.append(Check(dist, version, False, f"does not import ({imports[module]})"
                             + (f": {torchvision_fix()}" if dist == "torchvision" else "")))
    torchvision_ok = any(c.package == "torchvision" and c.ok for c in out)
    # timm fails through torchvision (make venv installs it only beside one that imports): the fix is said
    # once, on torchvision's line
    return [Check(c.package, c.version, c.ok, "needs torchvision (the fix is on its line)")
            if c.package == "timm" and not c.ok and not torchvision_ok else c for c in out]


def torchvision_install() -> str | None:
    """The one command that installs the torchvision built for this torch, beside it (``--no-deps``:
    torch stays as it is; a mismatched one is replaced): PyTorch's index for a local build (``+cpu``, ``+cu130``), else PyPI.
    None when no torchvision series is known for this torch."""
    torch = _version("torch")
    want = matching_torchvision(torch)
    if not torch or not want:
        return None
    build = torch.partition("+")[2]
    index = f" --index-url {PYTORCH_INDEX}/{build}" if build else ""
    return f"{sys.executable} -m pip install --no-deps --force-reinstall 'torchvision=={want}.*'{index}"


def torchvision_fix() -> str:
    """What to run, in one line (doctor, `onegc prepare t3` and `make venv` say the same)."""
    torch = _version("torch") or "?"
    command = torchvision_install()
    if command:
        return f"install the torchvision built for torch {torch}: {command}"
    known = ", ".join(TORCHVISION_FOR)
    return f"no torchvision is known for torch {torch}: install torch {known} and its torchvision"


def torchvision_problem() -> str | None:
    """One line when torchvision (and so timm, T3's backbones) cannot be used here, else None."""
    for c in check():
        if c.package == "torchvision" and not c.ok:
            return f"torchvision {c.detail}"
    return None
