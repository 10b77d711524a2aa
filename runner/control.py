"""Control requests (pause, resume, abort) travel to a runner through ``control.jsonl``.

Each request gets an id; the runner acknowledges it with a ``control`` event carrying that id.
"""

from __future__ import annotations

import socket
import time
import uuid
from typing import Literal

from runner.config import SessionPaths
from runner.jsonl import append_json_line

Action = Literal["pause", "resume", "abort"]


def request(paths: SessionPaths, action: Action, source: str = "cli") -> str:
    if not paths.config.is_file():
        raise FileNotFoundError(f"no session at {paths.root}: see 'onegc sessions'")
    rid = uuid.uuid4().hex[:12]
    append_json_line(paths.control, {"id": rid, "action": action, "ts": time.time(),
                                     "source": f"{source}@{socket.gethostname()}"})
    return rid
