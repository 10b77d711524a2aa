"""The web monitor's secret: a random token in the URL it prints, as Jupyter does, without which
the server answers 403 to every page, websocket and download.

A browser carries the token in the page's query (``/?token=…``) and the page gives it to its
websocket in the path (``/ws/<token>``: textual-serve's script appends ``?width=…&height=…`` to
the websocket URL it is given, so a query there would be cut). The static files (textual-serve's
script, CSS and fonts, the same for everyone) need no token. Tokens are compared in constant
time, and the token never goes into a process's command line or environment: only the URL the
operator is shown carries it.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web

TOKEN_BYTES = 24  # 192 random bits, 32 URL-safe characters
OPEN_PREFIXES = ("/static/",)  # textual-serve's assets: public files, no state, no keys
REFUSED = "403: this onegc monitor needs its token: open the URL that 'onegc monitor --web' printed"


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def presented_token(request: web.Request) -> str:
    """The token a request carries: in the websocket's path (``/ws/<token>``) or the query."""
    return request.match_info.get("token") or request.query.get("token") or ""


def token_guard(token: str) -> Callable:
    """An aiohttp middleware that refuses (403) any request but a static file's without ``token``."""
    expected = token.encode()

    @web.middleware
    async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                    ) -> web.StreamResponse:
        if not request.path.startswith(OPEN_PREFIXES) and not secrets.compare_digest(
                presented_token(request).encode(), expected):
            return web.Response(status=403, text=REFUSED + "\n")
        return await handler(request)

    return guard
