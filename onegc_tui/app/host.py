"""What the screens and widgets use of the app that hosts them, typed: the home, the store, the
clock, the history's data, the live feed. A protocol, so that they
need not import the app (which imports them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from onegc_tui.store import Store
    from onegc_tui.views.live_feed import LiveFeed


class HistoryData(Protocol):
    """The history screen's data, shared by the app (screens/history.py ``HistoryViews``)."""

    def get(self, study: str | None, demo: bool | None) -> Any: ...

    def ready(self, study: str | None, demo: bool | None) -> bool: ...

    def invalidate(self) -> None: ...


class MonitorHost(Protocol):
    home: Path
    store: Store | None
    now: Callable[[], float]
    show_clock: bool
    history: HistoryData
    sub_title: str  # shown in the header beside the title: the selected session
    feed: LiveFeed  # every session's row, the running ones (their countdowns move), the alerts
    read_only: bool  # a home this user cannot write, watched through a private copy of its store (no key acts on it)

    def refresh_sessions(self) -> None:
        """Read the sessions rows changed since the last look, and hand them to the dashboard."""


def host(node: DOMNode) -> MonitorHost:
    """``node.app``, as the monitor it is (every screen and widget of onegc runs in one)."""
    return cast("MonitorHost", node.app)


def refused(node: DOMNode, what: str) -> bool:
    """Where the monitor is a read-only view, True and one line saying why ``what`` (``abort
    s1``) is not done and who can do it; False where it may go ahead."""
    monitor = host(node)
    if not monitor.read_only:
        return False
    node.app.notify(f"cannot {what}: {monitor.home} is read-only for this user, and this monitor only watches it; "
                    "someone who can write there can", severity="warning", markup=False)
    return True


def store_of(node: DOMNode) -> Store:
    """The app's store, open while the app runs (it is opened on mount, closed on unmount)."""
    store = host(node).store
    if store is None:
        raise RuntimeError("the monitor's store is not open")
    return store
