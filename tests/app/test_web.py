"""``onegc monitor --web`` in a real headless Chromium: the page loads, its terminal shows the
sessions table with the running session on top, and the keys work as in a terminal (``?``).

Set ``ONEGC_WEB_SCREENSHOT=path.png`` to keep a screenshot of the page (the README's)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.app.browser import Browser, find_chromium
from tests.app.fixtures import CROWD_RUNNING, build_crowd
from tests.conftest import REPO

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed (apt-get install chromium)"),
]
pytest.importorskip("textual_serve", reason="textual-serve is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture
def web_monitor(tmp_path):
    home = build_crowd(tmp_path / "home")
    port = free_port()
    env = {**os.environ, "ONEGC_HOME": str(home), "PYTHONPATH": str(REPO), "TZ": "UTC"}
    proc = subprocess.Popen([sys.executable, "-m", "onegc_tui.cli", "monitor", "--web", "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        yield f"http://localhost:{port}/", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


async def test_the_web_monitor_shows_the_session_table_in_chromium(web_monitor):
    url, proc = web_monitor
    page = wait_http(url)
    assert "ws://localhost" in page and "/ws" in page  # the websocket link is the address the browser used
    async with Browser(1400, 900) as browser:
        await browser.open(url)
        text = await browser.wait_for_text("State", "Budget left", "Best", "Session", "FAILED", "? Help", timeout=90)
        rows = text.splitlines()
        header = next(i for i, line in enumerate(rows) if "Budget left" in line)
        assert "running" in rows[header + 1] and CROWD_RUNNING[-4:] in rows[header + 1]  # the live one on top
        if shot := os.environ.get("ONEGC_WEB_SCREENSHOT"):
            await browser.screenshot(Path(shot))
        await browser.type("?")
        await browser.wait_for_text("Keys · the keyboard is on: Sessions table", timeout=30)
        await browser.press("Escape", 27)
        text = await browser.wait_until_gone("Keys ·")  # Esc closed it
        assert "Budget left" in text
    assert proc.poll() is None  # the server is still serving


def test_the_web_server_says_where_it_listens_and_how_to_tunnel(web_monitor):
    url, proc = web_monitor
    wait_http(url)
    proc.terminate()
    out = proc.communicate(timeout=20)[0].decode()
    assert f"onegc monitor on {url}" in out and "ssh -L" in out
