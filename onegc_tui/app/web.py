"""``onegc monitor --web``: the same monitor in a browser, served by textual-serve.

Each browser tab gets its own monitor process (``onegc monitor`` under textual-serve's web
driver) over the same ``$ONEGC_HOME``: the keys, screens and layout are the terminal's. The server
binds to localhost by default, for an SSH tunnel from a laptop to the GPU box
(``ssh -L 8000:localhost:8000 gpu-box``, then the printed URL). Every page and websocket needs
the random token in the printed URL (:mod:`onegc_tui.app.web_token`): a process on this machine
that can reach the port (an agent's sandbox with a network, another user) cannot open the monitor,
read its screen or press its keys without it. ``--host 0.0.0.0`` opens the port to the network;
the token is still needed, but it travels in clear over plain HTTP, so only on a network you trust.

The page's links are built from the address the browser used (textual-serve builds them from
the bound host and port), so a tunnel to another local port, or a proxy, works too.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server, to_int

from onegc_tui.app.web_token import new_token, token_guard

DEFAULT_PORT = 8000
DEFAULT_HOST = "localhost"  # not reachable from other machines: tunnel in with ssh -L


def monitor_command(focus: str | None = None) -> str:
    """The shell command textual-serve runs for each browser tab."""
    argv = [sys.executable, "-m", "onegc_tui.cli", "monitor"] + (["--session", focus] if focus else [])
    return shlex.join(argv)


class MonitorServer(Server):
    def __init__(self, home: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, focus: str | None = None,
                 token: str | None = None, read_only: bool = False):
        super().__init__(monitor_command(focus), host=host, port=port, title="onegc monitor")
        self.home = home
        self.read_only = read_only
        self.token = token or new_token()

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(token_guard(self.token))  # before the router is frozen at startup
        app.add_routes([web.get("/ws/{token}", self.handle_websocket, name="websocket-token")])
        return app

    @property
    def url(self) -> str:
        """The address to open, with the token."""
        return f"{self.public_url}/?token={self.token}"

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        base = f"{'https' if request.secure else 'http'}://{request.host}"
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{'wss' if request.secure else 'ws'}://{request.host}/ws/{self.token}",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }

    async def on_startup(self, app: web.Application) -> None:
        view = ", a read-only view: this user cannot write there" if self.read_only else ""
        self.console.print(f"onegc monitor on {self.url} (sessions under {self.home}{view}); Ctrl+C stops it.",
                           soft_wrap=True, markup=False, highlight=False)
        if self.host in ("localhost", "127.0.0.1", "::1"):
            self.console.print(f"From another machine: ssh -L {self.port}:localhost:{self.port} THIS-HOST, "
                               f"then open http://localhost:{self.port}/?token={self.token}", soft_wrap=True,
                               markup=False, highlight=False)


def serve(home: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, focus: str | None = None,
          read_only: bool = False) -> None:
    """Serve the monitor until Ctrl+C (or SIGTERM); every tab's monitor watches ``home`` (where
    this user cannot write it, ``read_only``: each tab's is a read-only view, on a private copy of
    the store of its own)."""
    os.environ["ONEGC_HOME"] = str(home.resolve())  # the tabs' monitors inherit it
    MonitorServer(home, host, port, focus, read_only=read_only).serve()
