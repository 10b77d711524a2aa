"""What a pane of the selected session is: a widget that declares what it reads and how it draws
(``Pane``). The dashboard (screens/dashboard.py) composes its panes from a list, ``PANES``, each
in the place its ``slot`` names, and drives every one alike:

- a session selected: the pane's ``reader()`` runs on a worker, with ``after=0``, and ``show``
  draws what it read, whole (a pane whose reader is None is drawn from the summary row, at once);
- each beat that the store changed: the reader runs again with ``after`` the sequence number it
  has read up to, and ``extend`` draws what came (with the session's newest summary row);
- once a second: ``tick``.

A reader reads typed rows from the store (the transcript's rows, the GPU samples, the checkpoints'
rows, the warnings), never an event line: each line was parsed once, at ingest. It takes the
store opened on the thread that calls it, and must hold no widget: it runs on a worker.
Adding a pane is one file with one such class, and one line in ``PANES``
(docs/architecture.md, "How to add a pane"; tests/app/test_pane_protocol.py adds one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from onegc_tui.store import Store

Slot = Literal["main", "side", "right"]  # the wide column, stacked in the middle column, the right column
Reader = Callable[[Store, str, int], Any]  # (store, session id, after seq) -> what the pane draws


@runtime_checkable
class Pane(Protocol):
    """A pane of the selected session (one widget)."""

    slot: ClassVar[Slot]

    def reader(self) -> Reader | None:
        """What the pane reads of a session after a sequence number, as a function of the store
        (called on the main thread; what it returns runs on a worker); None: the summary row is all."""

    def show(self, row: dict, data: Any) -> None:
        """A session newly selected: ``row`` its summary row, ``data`` what the reader read of it (None without one)."""

    def extend(self, row: dict, data: Any) -> None:
        """What the session gained since: its newest summary row, and what the reader read after the last read."""

    def tick(self) -> None:
        """Once a second (a countdown, figures drawn at 1 Hz)."""
