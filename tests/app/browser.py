"""A headless Chromium driven over the DevTools protocol (aiohttp's websocket client), enough to
load the web monitor, type keys, read what its terminal shows and take a screenshot.

The page draws its terminal (xterm.js) on a canvas, so the text is read from the terminal's own
buffer: a script run before the page's (``Page.addScriptToEvaluateOnNewDocument``) catches the
terminal object as textual-serve stores it (``this.terminal = new Terminal(...)``) and keeps it
as ``window.__onegcTerminal``; ``screen_text`` asks it for its rows.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.helpers import Patience

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--mute-audio",
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost"]  # no web fonts from outside

CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true, enumerable: true});
    if (value && value.buffer) window.__onegcTerminal = value;
  },
});
"""
SCREEN_TEXT = """(() => {
  const t = window.__onegcTerminal;
  if (!t) return "";
  const b = t.buffer.active, rows = [];
  for (let i = 0; i < b.length; i++) { const line = b.getLine(i); rows.push(line ? line.translateToString(true) : ""); }
  return rows.join("\\n");
})()"""


def find_chromium() -> str | None:
    return next((p for name in CHROMIUM_NAMES if (p := shutil.which(name))), None)


class Browser:
    """``async with Browser(width, height) as b: await b.open(url); await b.screen_text()``."""

    def __init__(self, width: int = 1400, height: int = 900):
        self.width, self.height = width, height
        self._ids = itertools.count(1)

    async def __aenter__(self) -> Browser:
        import aiohttp

        exe = find_chromium()
        assert exe, "no Chromium"
        # Chromium's helpers (renderer, GPU, crashpad) can still be writing the profile as it is
        # removed: they are killed with their group first, and what they wrote meanwhile is no error
        self._profile = tempfile.TemporaryDirectory(prefix="onegc-chromium-", ignore_cleanup_errors=True)
        self.proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile.name}",
                                      "--remote-debugging-port=0", f"--window-size={self.width},{self.height}",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        port_file = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"Chromium did not start (exit {self.proc.poll()})")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self.http = aiohttp.ClientSession()
        async with self.http.get(f"http://127.0.0.1:{port}/json/list") as r:
            page = next(t for t in await r.json() if t["type"] == "page")
        self.ws = await self.http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self.call("Page.enable")
        await self.call("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()
        await self.http.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its helpers, which outlive it for a moment
        except ProcessLookupError:
            pass
        self._profile.cleanup()

    async def call(self, method: str, **params):
        msg_id = next(self._ids)
        await self.ws.send_str(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads((await self.ws.receive()).data)
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    async def open(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def screen_text(self) -> str:
        result = await self.call("Runtime.evaluate", expression=SCREEN_TEXT, returnByValue=True)
        return result.get("result", {}).get("value") or ""

    async def wait_for_text(self, *needles: str, timeout: float = 60) -> str:
        """The page's text once it shows every needle (``timeout``: on a quiet machine; tests/helpers.Patience)."""
        patience = Patience(timeout)
        text = ""
        while patience.left():
            text = await self.screen_text()
            if all(n in text for n in needles):
                return text
            await asyncio.sleep(0.25)
        raise AssertionError(f"after {patience} the page never showed {needles!r}; it showed:\n{text}")

    async def wait_until_gone(self, needle: str, timeout: float = 30) -> str:
        patience = Patience(timeout)
        while (text := await self.screen_text()) and needle in text:
            if not patience.left():
                raise AssertionError(f"after {patience} the page still shows {needle!r}:\n{text}")
            await asyncio.sleep(0.25)
        return text

    async def type(self, text: str) -> None:
        """Type printable keys into the terminal (its hidden text area takes the keyboard)."""
        await self.call("Runtime.evaluate", expression="document.querySelector('.xterm-helper-textarea').focus()")
        await self.call("Input.insertText", text=text)

    async def press(self, key: str, code: int) -> None:
        """A key that types nothing (Escape: 27, Enter: 13, arrows 37-40), as a keyboard sends it."""
        await self.call("Runtime.evaluate", expression="document.querySelector('.xterm-helper-textarea').focus()")
        for kind in ("rawKeyDown", "keyUp"):
            await self.call("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code,
                            nativeVirtualKeyCode=code)

    async def screenshot(self, path: Path) -> None:
        shot = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
