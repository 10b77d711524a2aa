"""The one sanitiser for text that came from an agent, applied wherever such text leaves the
harness for a person: the monitor's panes and viewers, ``onegc run --plain``, the ``sessions``
and ``history`` commands and the exports. The session files keep the raw bytes; only what is
shown or exported is cleaned.

:func:`safe_text` removes everything that can drive a terminal rather than print on it:

- escape sequences, 7-bit and 8-bit: CSI (``ESC [`` … final byte, e.g. ``ESC[2J``), OSC
  (``ESC ]`` … BEL or ST, e.g. a window title or an OSC 52 clipboard write), DCS, SOS, PM and
  APC strings (… ST), and the two- and three-byte ``ESC`` sequences (``ESC c`` resets a
  terminal). A string sequence with no terminator ends at the end of its line, so a stray
  ``ESC ]`` cannot swallow the rest of a transcript;
- the remaining C0 controls except tab and newline (so carriage return, backspace, bell and
  form feed, which rewrite or hide what was printed), DEL, and the C1 controls U+0080–U+009F;
- the Unicode bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069),
  which make a line display in another order than it reads ("Trojan Source").

With ``one_line=True`` the text is also kept to one line: newlines (and the Unicode line and
paragraph separators) become `` ↵ `` and tabs a space, so that agent text cannot start a line
of its own that reads as the harness's.

The function knows nothing of Rich markup: the monitor (``onegc_tui.app``) shows agent text as
``rich.text.Text`` objects or escapes it, on top of this.
"""

from __future__ import annotations

import re

# the string sequences (DCS, SOS, OSC, PM, APC), 7-bit (ESC P/X/]/^/_) and 8-bit (0x90/0x98/0x9d/0x9e/0x9f);
# they end at ST (ESC \ or 0x9c), at BEL (which xterm accepts for all of them), or at the end of the line
_STRING_SEQ = r"(?:\x1b[PX\]^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x9c\n]*?(?:\x07|\x9c|\x1b\\|(?=\n)|\Z)"
# CSI: ESC [ or 0x9b, parameter bytes, intermediate bytes, one final byte (a missing final: to the end)
_CSI_SEQ = r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
# the other ESC sequences: intermediates (0x20-0x2f) then one final byte (ESC c, ESC ( B, ESC 7, …)
_ESC_SEQ = r"\x1b[\x20-\x2f]*[\x30-\x7e]?"
# (the lookahead first: a position that is no ESC or C1 byte fails at once, not once per alternative)
_SEQUENCES = re.compile(f"(?=[\x1b\x90-\x9f])(?:{_STRING_SEQ}|{_CSI_SEQ}|{_ESC_SEQ})", re.DOTALL)
# what is left: C0 but tab and newline, DEL, C1, and the bidi controls
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile("\r\n|[\n\u2028\u2029]")
NEWLINE_MARK = " ↵ "


def safe_text(text: object, *, one_line: bool = False) -> str:
    """``text`` (``str()`` of it, if it is not a string) with no terminal control left in it:
    see the module's docstring. ``one_line``: newlines shown as `` ↵ ``, tabs as a space."""
    s = text if isinstance(text, str) else ("" if text is None else str(text))
    if s.isprintable():  # the common case (no control, format or separator character): nothing to do
        return s
    s = _SEQUENCES.sub("", s)
    if one_line:
        s = _LINE_BREAKS.sub(NEWLINE_MARK, s).replace("\t", " ")
    return _CONTROLS.sub("", s)
