"""The one rule for agent-made data entering the harness: decode with a defined replacement,
check the type, bound the size, before anything uses it (INTEGRITY.md R1; docs/boundaries.md
lists every place it is applied).

- **Bytes** (a stdout line, an exception text on a pipe, a datagram) are decoded as UTF-8 with
  U+FFFD for each invalid sequence: :func:`text_of_bytes`.
- **Strings the OS or a JSON parser made** may hold lone surrogates: ``os.scandir``, ``psutil``
  and ``sys.argv`` turn undecodable bytes into U+DC80–U+DCFF ("surrogateescape"), and JSON's
  ``"\\ud800"`` escape parses to a lone surrogate. None of them can be written as UTF-8 (pydantic
  refuses: "surrogates not allowed"), so each becomes U+FFFD: :func:`clean`. A file name that
  holds one is not a name the agent could have meant: :func:`file_name` refuses it.
- **A field of agent-made JSON** must have its type, not one that ``str()`` or ``float()``
  happens to accept: :func:`optional_text`, :func:`optional_number`.

A value that breaks the rule raises :class:`Untrusted`, whose message is the harness's own
wording (never the agent's text unbounded): the caller fails that one item (a checkpoint, a
line, a launch record) with it, and the session goes on.

Display is a separate step: :mod:`runner.wire.textsafe` removes terminal controls from text
that is shown to a person; this module makes text that can be *recorded*.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

REPLACEMENT = "\ufffd"
NAME_LIMIT = 255  # bytes of one file name on every Linux file system
_SURROGATES = re.compile("[\ud800-\udfff]")


class Untrusted(ValueError):
    """An agent-made value of the wrong type, size or encoding; the message says which."""


def text_of_bytes(data: bytes | bytearray | memoryview, limit: int) -> str:
    """``data`` decoded as UTF-8 (U+FFFD for each invalid sequence), at most ``limit`` characters."""
    return cut(bytes(data[: limit * 4]).decode("utf-8", errors="replace"), limit)


def clean(text: str, limit: int) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, at most ``limit`` characters: a string
    that can always be written as UTF-8."""
    text = text[:limit]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _SURROGATES.sub(REPLACEMENT, text)
    return text


def cut(text: str, limit: int) -> str:
    """``text`` bounded to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    mark = f"… [+{len(text) - limit} chars]"
    if len(mark) >= limit:  # no room to say so
        return text[:limit]
    return text[: limit - len(mark)] + mark


def shown(value: object, limit: int = 120) -> str:
    """A bounded, recordable one-line rendering of any value, for the harness's own messages
    about it (``repr`` of a string, so its quotes and escapes show what it was)."""
    raw = repr(value) if isinstance(value, (str, bytes)) else f"{type(value).__name__}"
    return clean(raw, limit)


def file_name(name: str | bytes) -> str:
    """A name read from a folder the agent writes, as text; :class:`Untrusted` when it is not
    valid UTF-8 or is longer than a file name can be."""
    try:
        raw = os.fsencode(name)
    except UnicodeEncodeError:  # a surrogate no file system gave: not a name
        raise Untrusted(f"a file name that is not valid UTF-8 ({shown(name, 80)})") from None
    if len(raw) > NAME_LIMIT:
        raise Untrusted(f"a file name of {len(raw)} bytes (at most {NAME_LIMIT})")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Untrusted(f"a file name that is not valid UTF-8 ({shown(raw, 80)})") from None


def optional_text(value: Any, what: str, limit: int) -> str | None:
    """``None`` or a string, cleaned and bounded; :class:`Untrusted` for any other type."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise Untrusted(f"{what} is {type(value).__name__}, not text")
    return clean(value, limit)


def optional_number(value: Any, what: str) -> float | None:
    """``None`` or a finite int or float (never a bool or a string); :class:`Untrusted` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Untrusted(f"{what} is {type(value).__name__}, not a number")
    try:
        number = float(value)
    except OverflowError:
        raise Untrusted(f"{what} is an integer too large for a number") from None
    if not math.isfinite(number):
        raise Untrusted(f"{what} is {number}, not a finite number")
    return number


def text_list(value: Any, what: str, limit: int, count: int) -> tuple[str, ...]:
    """A list of strings, each cleaned and bounded, at most ``count`` of them."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise Untrusted(f"{what} is not a list of text")
    return tuple(clean(v, limit) for v in value[:count])


def recordable(value: Any) -> Any:
    """``value`` (str, list, tuple, dict of them, or a scalar) with every string :func:`clean`
    (no limit): the event writer's last resort, so that a boundary that forgot the rule costs a
    replaced character, never the runner."""
    if isinstance(value, str):
        return clean(value, len(value))
    if isinstance(value, (list, tuple)):
        return type(value)(recordable(v) for v in value)
    if isinstance(value, dict):
        return {recordable(k): recordable(v) for k, v in value.items()}
    return value
