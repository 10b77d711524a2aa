"""Running the monitor so that an error people can act on ends it with one line, not a traceback.

Textual catches what a handler raises, draws a traceback of several KB with its locals and exits
0. For the errors onegc documents (a damaged or locked ``onegc.db``, a folder that cannot be
read, an :class:`~runner.errors.OnegcError`: whatever the command's ``describe`` has a line
for, onegc_tui/cli/base.py) :func:`run_monitor` closes the app instead and raises the error again once the
terminal is restored, so the command prints ``error: …`` and exits 2 like every other one. A bug
(anything else) keeps Textual's traceback, and its exit code 1.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App

from runner.errors import OnegcError


def check_store(home) -> None:
    """Open the store and read its session list's size before a monitor starts, so that a store
    damaged where most damage shows (its header, the sessions table) is said in one line before
    the screen changes (and before ``--web`` serves tabs that would each fail)."""
    from onegc_tui.store import Store

    store = Store.open(home)
    try:
        store.conn.execute("SELECT count(*) FROM sessions").fetchone()
    finally:
        store.close()


class MonitorFailed(OnegcError):
    """The monitor ended on an error it cannot show on screen; the message says what and the way out."""


def run_monitor(app: App, going_on: str = "", headless: bool = False, *,
                describe: Callable[[BaseException], str | None]) -> None:
    """``app.run()``; a documented error ends it and is raised as :class:`MonitorFailed` (with
    ``going_on`` after it: what still runs, for ``onegc run`` and ``onegc demo``). ``describe``: the
    one line for an error people can act on, None for a bug (the CLI's, which the app may not import)."""
    caught: list[BaseException] = []
    handle = app._handle_exception  # Textual's: draws the traceback and exits 0 (8.x)

    def one_line(error: Exception) -> None:
        line = describe(error)
        if line is None or caught:
            if not caught:
                handle(error)
            return
        caught.append(error)
        app.exit(return_code=2)

    app._handle_exception = one_line  # type: ignore[method-assign]
    app.run(headless=headless)
    if caught:
        line = " ".join((describe(caught[0]) or "").split())
        raise MonitorFailed(f"{line}{going_on}") from None
    if app.return_code:  # a bug: Textual has shown its traceback
        raise SystemExit(app.return_code)
