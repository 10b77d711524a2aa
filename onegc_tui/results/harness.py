"""Which harness made a record or a re-score: its version, the git commit it runs from, and the
hash of every installed package (a bundle's ``harness``, docs/verify.md)."""

from __future__ import annotations

import functools
import hashlib
import subprocess
from importlib import metadata
from pathlib import Path

from runner import HARNESS_VERSION

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def commit() -> str | None:
    """The git commit of the checkout onegc runs from (``+dirty`` with uncommitted changes to
    tracked files); None outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def packages() -> dict[str, str]:
    """Every installed distribution: ``name -> "version sha256:<16 hex of its RECORD>"`` (the
    RECORD lists each installed file's hash, so its hash stands for the installed files)."""
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        record = dist.read_text("RECORD") or ""
        out[name.lower()] = f"{dist.version} sha256:{hashlib.sha256(record.encode()).hexdigest()[:16]}"
    return dict(sorted(out.items()))


def fingerprint() -> dict:
    """The harness, as a bundle records it."""
    return {"version": HARNESS_VERSION, "commit": commit(), "packages": packages()}


def harness_label() -> str:
    """The harness in a few words: ``onegc 0.1.0 (commit 1a2b3c4d5e6f)``."""
    c = commit()
    return f"onegc {HARNESS_VERSION}" + (f" (commit {c[:12]}{'+dirty' if c.endswith('+dirty') else ''})" if c else "")
