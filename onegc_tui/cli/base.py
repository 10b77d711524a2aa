"""What every ``onegc`` command shares: the group that turns documented errors into one line,
the one budget unit, and the refusal to draw without a terminal.

Errors: every invocation (the ``onegc`` entry point, ``python -m onegc_tui.cli``, the tests'
``CliRunner``) goes through :meth:`OnegcGroup.main`, where they are caught once. A documented
error (:class:`runner.errors.OnegcError`), a usage error, a store SQLite refuses and an error of
the operating system (a full disk, a folder that cannot be written) print one line,
``error: …``, on stderr and exit 2. Anything else is a bug in onegc and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
from pathlib import Path

import click

from runner.duration import HINT, BadDuration, duration_s
from runner.errors import OnegcError
from runner.wire.paths import SessionPaths, runs_dir
from runner.wire.textsafe import safe_text

EXIT_ERROR = 2  # the README's promise: one line, exit 2


def one_line(message: str) -> str:
    """An error on one line, with no terminal control in it (it can quote a session's file)."""
    return " ".join(safe_text(message).split())


def describe(exc: BaseException) -> str | None:
    """The one line for an error people can act on; None for a bug (it keeps its traceback)."""
    if isinstance(exc, OnegcError):
        return str(exc)
    if isinstance(exc, click.UsageError):
        where = f" (see '{exc.ctx.command_path} -h')" if exc.ctx is not None else ""
        return exc.format_message() + where
    if isinstance(exc, sqlite3.Error):
        from onegc_tui.store import DB_NAME, unusable

        return unusable(Path(DB_NAME), exc)
    if isinstance(exc, OSError):
        what = (exc.strerror or str(exc)).lower()
        where = f"{exc.filename}: " if exc.filename else ""
        fix = ": free space there and run again" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
        return f"{where}{what}{fix}"
    return None


class OnegcGroup(click.Group):
    """The ``onegc`` command group; :meth:`main` is where errors are caught, once."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                              **extra)
            code = rv if isinstance(rv, int) else 0
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            code = 1
        except click.ClickException as exc:
            if isinstance(exc, click.UsageError):
                click.echo(f"error: {one_line(describe(exc))}", err=True)
                code = EXIT_ERROR
            else:
                exc.show()
                code = exc.exit_code
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
                code = 1  # `onegc sessions | head`: the reader left
            else:
                line = describe(exc)
                if line is None:
                    raise
                click.echo(f"error: {one_line(line)}", err=True)
                code = EXIT_ERROR
        if standalone_mode:
            sys.exit(code)
        return code


class AfterDashDash(click.Command):
    """A command that knows all its options and takes a command line only after ``--``.

    ``onegc run t6 --agent scripted --budgt 2m`` must not start a 40-minute session with the typo
    stored as the agent's command line: an unknown option is a usage error (exit 2, with click's
    "Did you mean"), a stray word before ``--`` is one too, and only the words after the first
    ``--`` reach the command (as ``ctx.meta[AFTER_DASH_DASH]``, a list, empty without ``--``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        head, tail = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args else (args, [])
        ctx.meta[AFTER_DASH_DASH] = list(tail)
        rest = super().parse_args(ctx, head)
        if ctx.args and not ctx.resilient_parsing:
            words = " ".join(ctx.args)
            raise click.UsageError(f"unexpected word(s) '{words}': a command agent's command line goes after "
                                   f"'--' ({ctx.command_path} TASK --agent command -- CMD ...)", ctx)
        return rest


AFTER_DASH_DASH = "onegc.after_dash_dash"


class Duration(click.ParamType):
    """``90s``, ``2m``, ``1h``; a bare number is minutes (runner/duration.py). Gives seconds."""

    name = "duration"

    def convert(self, value, param, ctx) -> float:
        if isinstance(value, float):
            return value
        try:
            return duration_s(value)
        except BadDuration:
            self.fail(f"{value!r}: {HINT}", param, ctx)


DURATION = Duration()


class Size(click.ParamType):
    """``512M``, ``2G``: bytes (runner/sandbox/caps.py)."""

    name = "size"

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        from runner.sandbox.caps import parse_size

        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


SIZE = Size()


def need_terminal(command: str) -> None:
    """Refuse, in one line, to draw a full-screen UI where there is no terminal to draw on; a
    Textual driver named in ``TEXTUAL_DRIVER`` draws elsewhere (textual-serve's web driver, for
    ``onegc monitor --web``: each tab's monitor talks to the server over pipes)."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        raise OnegcError(f"{command} needs a terminal (stdin and stdout are not both one): "
                         "use 'onegc sessions' for a one-shot list, or 'onegc run --plain' to follow a session")


def session_paths(home: Path, session_id: str) -> SessionPaths:
    """The folder of a session named by its id or an unambiguous prefix of it."""
    if not session_id or "/" in session_id or session_id.startswith(".") or any(c in session_id for c in "*?["):
        raise OnegcError(f"'{session_id}' is not a session id: see 'onegc sessions'")
    root = runs_dir(home) / session_id
    if not (root / "session.json").is_file():
        runs = runs_dir(home)
        matches = [p for p in runs.glob(f"{session_id}*") if (p / "session.json").is_file()] if runs.is_dir() else []
        if len(matches) == 1:
            return SessionPaths(matches[0])
        raise OnegcError(f"no session '{session_id}' under {runs_dir(home)}: see 'onegc sessions'")
    return SessionPaths(root)
