"""Agent text on the monitor's screen: :func:`runner.wire.textsafe.safe_text` (no terminal controls)
and no markup. Textual reads a plain ``str`` as markup in ``Static.update``, ``notify``, border
titles and DataTable cells, so agent text goes there as a ``rich.text.Text`` (:func:`plain`),
or, inside a markup string of ours, escaped: :func:`markup_escape` for Rich's markup
(``Text.from_markup``), :func:`content_escape` for Textual's (``Static.update`` of a ``str``,
border titles). The two differ: Rich reads ``\\`` before ``[`` as one backslash, Textual does not.

``textual.markup.escape`` and ``rich.markup.escape`` only escape tags that start with a letter,
``#``, ``/`` or ``@``; Textual also reads ``[$accent]`` and ``[ bold ]`` as styles, so both
functions here escape every ``[``.
"""

from __future__ import annotations

import re

from rich.text import Text

from runner.wire.textsafe import safe_text

_BRACKET = re.compile(r"(\\*)\[")
_TRAILING = re.compile(r"(\\+)$")


def plain(text: object, *, one_line: bool = True, **kwargs) -> Text:
    """Agent text as a ``Text``: cleaned, one line unless ``one_line=False``, never read as markup."""
    return Text(safe_text(text, one_line=one_line), **kwargs)


def content_escape(text: object, *, one_line: bool = True) -> str:
    """Agent text to put inside a Textual markup string: cleaned, and every ``[`` taken literally."""
    return safe_text(text, one_line=one_line).replace("[", "\\[")


def markup_escape(text: object, *, one_line: bool = True) -> str:
    """Agent text to put inside a Rich markup string: cleaned, and every ``[`` taken literally
    (the backslashes before one, or at the end, doubled: Rich would read them as escapes)."""
    escaped = _BRACKET.sub(lambda m: m.group(1) * 2 + "\\[", safe_text(text, one_line=one_line))
    return _TRAILING.sub(lambda m: m.group(1) * 2, escaped)  # a last backslash would escape the next tag
