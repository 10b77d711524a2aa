"""``onegc monitor --web`` in a real headless Chromium: the page loads, its terminal shows the
sessions table with the running session on top, and the keys work as in a terminal (``?``).
Without the token in the printed URL, the page and the websocket are refused (403).

Set ``ONEGC_WEB_SCREENSHOT=path.png`` to keep a screenshot of the page (the README's)."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.app.browser import Browser, find_chromium
from tests.helpers import REPO
from tests.homes import CROWD_RUNNING, build_crowd

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed (apt-get install chromium)"),
]
pytest.importorskip("textual_serve", reason="textual-serve is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def printed_url(proc: subprocess.Popen) -> str:
    """The URL the server prints on its first line (with its token)."""
    line = proc.stdout.readline().decode()  # the server prints it once it listens
    found = re.search(r"onegc monitor on (http://\S+/\?token=\S+)", line)
    assert found, line
    return found.group(1)


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
        yield printed_url(proc), proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


async def test_the_web_monitor_shows_the_session_table_in_chromium(web_monitor):
    url, proc = web_monitor
    page = wait_http(url)
    assert "ws://localhost" in page and "/ws/" in page  # the websocket link is the address the browser used
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
        await browser.type("\\state:failed")  # the sessions filter, typed fast, then kept with Enter
        await browser.press("Enter", 13)
        await browser.wait_for_text("filter “state:failed”: 3 shown", timeout=30)
        await browser.type("\\")  # back into the box, and Esc clears it (issue 37's filter, as in tmux)
        await browser.press("Escape", 27)
        text = await browser.wait_until_gone("filter “")
        assert "running" in text and "21 sessions" in text
    assert proc.poll() is None  # the server is still serving


def test_the_web_server_says_where_it_listens_and_how_to_tunnel(web_monitor):
    url, proc = web_monitor
    wait_http(url)
    proc.terminate()
    proc.wait(timeout=20)
    # read through the pipe's buffered reader: printed_url's readline may hold the next lines
    # already (communicate() reads the raw pipe and would miss them, as it did under load)
    out = proc.stdout.read().decode()
    assert "ssh -L" in out and url.split("?token=")[1] in out


def test_without_its_token_the_web_monitor_refuses_pages_and_websockets(web_monitor):
    """A process that reaches the port but has not seen the printed URL gets nothing: no page, no
    websocket (so no screen to read and no keys to press); with the token both work."""
    import aiohttp

    url, _proc = web_monitor
    token = url.split("?token=")[1]
    base = url.split("/?token=")[0]
    assert len(token) >= 32 and "ws/" + token in wait_http(url)

    async def probe() -> None:
        async with aiohttp.ClientSession() as http:
            for path in ("/", "/?token=", f"/?token={token[:-1]}", "/download/x", f"/?token={token}x"):
                async with http.get(base + path) as r:
                    assert r.status == 403 and "needs its token" in await r.text(), path
            async with http.get(base + "/static/js/textual.js") as r:  # the public script: no secret
                assert r.status == 200
            ws_base = base.replace("http://", "ws://")
            for path in ("/ws", "/ws?width=80&height=24", f"/ws/{token[:-1]}?width=80", f"/ws?token={token[:-1]}"):
                try:
                    async with http.ws_connect(ws_base + path):
                        raise AssertionError(f"a websocket opened at {path} without the token")
                except aiohttp.WSServerHandshakeError as exc:
                    assert exc.status == 403, path
            async with http.ws_connect(f"{ws_base}/ws/{token}?width=100&height=30") as ws:
                seen = b""
                while b"Budget" not in seen:  # the monitor's screen comes through, escape codes and all
                    msg = await asyncio.wait_for(ws.receive(), timeout=90)
                    assert msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
                    seen += msg.data if isinstance(msg.data, bytes) else msg.data.encode()

    asyncio.run(probe())
