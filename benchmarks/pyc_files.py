"""The project's .pyc files, written before anything is timed.

A user's first run of ``onegc`` writes them (Python's default), and pip writes them for an installed
package; an editable install has none until then. Where ``PYTHONDONTWRITEBYTECODE`` is set (this
workplace's shells set it), no run writes them, and every start-up would compile ~50 modules
from source (~30 ms of ``onegc sessions``' ~110 ms at the fast hour here). ``compileall`` writes
them whatever the environment says; a run then reads them, as a user's second run does.
"""

from __future__ import annotations

import compileall
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("onegc_tui", "runner", "tasks")


def compile_sources() -> None:
    for name in PACKAGES:
        compileall.compile_dir(REPO / name, quiet=1)
