"""The new-session form: task, agent, model, repeats, budget, GPUs; starts sessions the way
``onegc run`` does: the same start request (runner/launch/request.py), started by
``runner.launch.start.start_sessions`` in a worker; any refusal is one line in the form."""

from __future__ import annotations

import shlex
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from runner.agents import ADAPTERS
from runner.duration import HINT, BadDuration, duration_s
from runner.errors import OnegcError
from runner.launch.request import MAX_REPEATS, StartRequest, default_budget_s
from tasks import all_tasks, get_task

DEFAULT_AGENT = "scripted"  # runs offline, so the form works out of the box


class NewSessionScreen(ModalScreen[list[str] | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    class Done(Message):
        def __init__(self, ids: list[str] | None, error: str | None):
            super().__init__()
            self.ids, self.error = ids, error

    def __init__(self, home: Path):
        super().__init__()
        self.home = home

    def compose(self) -> ComposeResult:
        tasks = list(all_tasks().values())
        with Vertical(id="new-session"):
            yield Static("New session", classes="pane-title")
            with Grid(id="form"):
                yield Label("Task")
                yield Select([(f"{s.short.upper()} · {s.title[:40]}", s.short) for s in tasks], value=tasks[0].short,
                             allow_blank=False, id="task")
                yield Label("Agent")
                agent = DEFAULT_AGENT if DEFAULT_AGENT in ADAPTERS else next(iter(ADAPTERS))
                yield Select([(a, a) for a in ADAPTERS], value=agent, allow_blank=False, id="agent")
                yield Label("Model")
                yield Input(placeholder="model id (empty: the agent's default)", id="model")
                yield Label("Repeats")
                yield Input("1", id="repeats", type="integer")
                yield Label("Budget")
                yield Input(_budget_text(tasks[0].id), id="budget",  # the unit in sight: 90s, 2m, 1h
                            placeholder="minutes, or 90s, 2m, 1h (as onegc run --budget)")
                yield Label("GPUs")
                yield Input(placeholder="e.g. 0,1 (empty: all visible)", id="gpus")
                yield Label("Command")
                yield Input(placeholder="command agent only: the command line", id="command")
            yield Static("", id="form-error")
            with Horizontal(id="form-buttons"):
                yield Button("Start", variant="success", id="start")
                yield Button("Cancel", id="cancel")

    @on(Select.Changed, "#task")
    def _task_changed(self, event: Select.Changed) -> None:
        if event.value is not Select.BLANK:
            self.query_one("#budget", Input).value = _budget_text(str(event.value))

    def _error(self, text: str) -> None:
        self.query_one("#form-error", Static).update(f"✖ {text}")

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#start")
    @on(Input.Submitted)
    def _start(self) -> None:
        from runner.launch.request import make_request
        from runner.launch.start import absolute_command

        values = {w.id: w.value for w in self.query(Input)}
        try:
            repeats = int(values["repeats"] or "1")
        except ValueError:
            repeats = 0
        if not 1 <= repeats <= MAX_REPEATS:
            self._error(f"repeats: give a whole number from 1 to {MAX_REPEATS}")
            return
        try:  # the CLI's parser and bounds (runner/duration.py): 90s is 90 seconds, a bare number minutes
            budget_s = duration_s(values["budget"])
        except BadDuration:
            self._error(f"budget {values['budget'].strip()!r}: {HINT}")
            return
        try:
            command = shlex.split(values["command"])
        except ValueError as exc:
            self._error(f"command: {exc}")
            return
        try:  # the request `onegc run` builds from the same choices (runner/launch/request.py)
            request = make_request(task=str(self.query_one("#task", Select).value),
                                   agent=str(self.query_one("#agent", Select).value),
                                   model=values["model"].strip() or None, repeats=repeats, budget_s=budget_s,
                                   gpus=values["gpus"].strip() or None, command=absolute_command(command))
        except OnegcError as exc:
            self._error(exc.message)
            return
        self.query_one("#start", Button).disabled = True
        self.query_one("#form-error", Static).update("starting…")
        self.start(request)

    @work(thread=True, exit_on_error=False)
    def start(self, request: StartRequest) -> None:
        from runner.launch.start import start_sessions

        try:
            paths = start_sessions(self.home, request)
            self.post_message(self.Done([p.session_id for p in paths], None))
        except OnegcError as exc:
            self.post_message(self.Done(None, exc.message))
        except Exception as exc:  # anything else still gets one line in the form
            self.post_message(self.Done(None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))

    def on_new_session_screen_done(self, msg: Done) -> None:
        if msg.error:
            self.query_one("#start", Button).disabled = False
            self._error(msg.error)
        else:
            self.dismiss(msg.ids)


def _budget_text(task: str) -> str:
    """The budget field's default: the task's budget, the request's default (in minutes, its unit in sight)."""
    return f"{default_budget_s(get_task(task)) / 60:g}m"
