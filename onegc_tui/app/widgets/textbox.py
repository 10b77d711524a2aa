"""A one-line text box whose Enter and Esc give the keyboard back at once, in the order keys were typed.

Textual resolves a box's Enter (its ``submit`` binding) and a screen's ``on_key`` only once the
key has bubbled from the box up to the app, and ``Widget.focus`` moves the keyboard a message
later still. A key typed while that was under way ("\\state:failed Enter \\ Esc" on a loaded
machine) went into the box, and the Esc then found the keyboard on the table: the filter stayed,
with a stray ``\\`` in it (CI, the 80x24 tmux test).

Here Enter and Esc are the box's *priority* bindings: the app runs them as it reads the key, so
the keyboard is back on ``give_back`` before the app reads the next one. What the key does to the
text (submit it, clear it) is queued on the box, behind the characters already sent to it."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class TextBox(Input):
    BINDINGS = [Binding("enter", "done", "Keep", show=False, priority=True),
                Binding("escape", "cancel", "Clear", show=False, priority=True)]

    class Cleared(Message):
        """Esc in the box: its text was cleared (and the keyboard given back)."""

        def __init__(self, box: TextBox) -> None:
            super().__init__()
            self.box = box

        @property
        def control(self) -> TextBox:  # lets @on(TextBox.Cleared, "#id") pick the box
            return self.box

    def __init__(self, *, give_back: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.give_back = give_back  # the selector (on the screen) of the widget that gets the keyboard back

    def _hand_back(self) -> None:
        if self.screen.focused is self:  # (has_focus follows a message later)
            self.screen.set_focus(self.screen.query_one(self.give_back))  # now: the next key goes there

    def action_done(self) -> None:
        self._hand_back()
        self.call_later(self.action_submit)  # on the box's queue, after the characters typed before the Enter

    def action_cancel(self) -> None:
        self._hand_back()
        self.app.clear_notifications()  # what Esc does elsewhere on the dashboard
        self.call_later(self._clear)

    def _clear(self) -> None:
        self.value = ""
        self.post_message(self.Cleared(self))
