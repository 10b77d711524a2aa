"""The README's picture (docs/monitor-web.png): ``onegc monitor --web`` in a headless Chromium,
over a home of twelve ended sessions and one real, running session of the scripted agent on the
demo task (CPU, no network), taken once that session has scored a few checkpoints.

    .venv/bin/python scripts/readme_screenshot.py [--out docs/monitor-web.png]

Needs Chromium and textual-serve (the test extras); a developer tool, not part of the product.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def shoot(url: str, out: Path) -> None:
    from tests.app.browser import Browser

    async with Browser(1500, 760) as browser:
        await browser.open(url)
        await browser.wait_for_text("Budget left", "Checkpoint scores", "? Help", timeout=120)
        await asyncio.sleep(3)  # the panes' first refresh after the table
        await browser.screenshot(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "monitor-web.png")
    args = ap.parse_args()
    from tests.helpers import events, start_session, wait_for
    from tests.homes import build_crowd

    with tempfile.TemporaryDirectory(prefix="onegc-shot-") as tmp:
        home = build_crowd(Path(tmp) / "home", n_ended=12, running=False)
        subprocess.run([sys.executable, str(REPO / "tasks/t0_demo/prepare.py"), "--data-dir",
                        str(home / "data" / "t0_demo")], check=True, capture_output=True)
        os.environ["ONEGC_HOME"] = str(home)
        sid = time.strftime("%Y%m%d-%H%M%S") + "-t0-scripted-r1-5e2b"
        paths = start_session(home, sid, budget_s=600, pace_s=2.0)
        scored = lambda: sum(e["type"] == "checkpoint_scored" for e in events(paths))  # noqa: E731
        wait_for(lambda: scored() >= 7, 600, "a handful of scored checkpoints, as a person sees them arrive")
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        server = subprocess.Popen([sys.executable, "-m", "onegc_tui.cli", "monitor", "--web", "--port", str(port),
                                   "--session", sid], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            line = server.stdout.readline().decode()
            url = re.search(r"(http://\S+/\?token=\S+)", line).group(1)
            asyncio.run(shoot(url, args.out))
        finally:
            server.terminate()
            server.wait(timeout=20)
            subprocess.run([sys.executable, "-m", "onegc_tui.cli", "abort", sid], env=env, capture_output=True,
                           timeout=180)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
