"""The one error type a person is meant to read: :class:`OnegcError`.

Its message is one line that names the thing, the reason and the fix (``data for t4 not
prepared: run 'onegc prepare t4'``). Every documented error of onegc is one (config, study,
store, disk, preflight); the command line catches it in one place and prints it as one line
with exit status 2 (``onegc_tui/cli/base.py``). Anything else that escapes is a bug, and keeps
its traceback.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from pydantic import ValidationError

# a write that failed for want of room: the disk (or a quota, or a file-size limit) is full
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class OnegcError(Exception):
    """A documented error: the message is the whole story, in one line."""

    def __str__(self) -> str:
        text = super().__str__()
        return " ".join(text.split()) if "\n" in text else text  # one line, whatever the source said

    @property
    def message(self) -> str:  # the name click's errors give it (the monitor's form reads it)
        return str(self)


class DiskFull(OnegcError):
    """A write that could not be made whole because there is no room (nothing of it was kept)."""

    def __init__(self, path, cause: str = "no space left on the device"):
        self.path = str(path)
        self.cause = cause
        super().__init__(f"{self.path}: {cause}: free space there and run again")


def is_no_space(exc: BaseException) -> TypeGuard[OSError | DiskFull]:
    """True for an error that means "there is no room to write this"."""
    return isinstance(exc, DiskFull) or (isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS)


class ConfigError(OnegcError, ValueError):
    """A config that cannot be used; the message names the file and field."""


def describe_validation_error(exc: ValidationError, source: str) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(root)"
    return f"{source}: field '{where}': {err['msg']}"
