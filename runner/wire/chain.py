"""The hash chain of a session's ``events.jsonl`` (INTEGRITY.md R5): every line carries the link of
the line before it, so an edited, dropped, reordered or inserted line breaks the chain at the first
place that differs.

A line's **link** is the first :data:`LINK_HEX` hex digits of the SHA-256 of its bytes (without the
newline). Each event's ``prev`` field holds the link of the line before it; the first line's
``prev`` is the session's :func:`genesis`, made from its id, so a line or a whole log moved from
another session breaks at its first line. The one writer of the file, ``runner/wire/jsonl.py``'s
:class:`~runner.wire.jsonl.EventWriter`, stamps every line; the chain's **head** (the last line's
link) goes into the session's seal at its end (runner/wire/seal.py).

A record made before the chain existed has no ``prev`` on its first line: it reads as *unchained*,
never as tampered. :func:`scan` reads a file once, line by line, in bounded memory, without
parsing JSON (a key of the line's top-level object is the only place ``,"prev":"`` can appear:
inside a JSON string a quote is escaped).

The chain has no key: whoever rewrites a record whole, every link recomputed, makes a record the
chain cannot tell from a true one. What it catches is an edit of a record that was not rewritten
whole; ``onegc verify`` re-derives the numbers themselves from the stored snapshots
(docs/verify.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

LINK_HEX = 32  # 128 bits of SHA-256: a second line with the same link costs ~2^128 tries
PREV_KEY = b',"prev":"'
CHAIN_VERSION = "onegc chain 1"
SCAN_BLOCK = 1 << 20


def link(line: bytes) -> str:
    """The link of one line (its bytes without the trailing newline)."""
    return hashlib.sha256(line).hexdigest()[:LINK_HEX]


def genesis(session_id: str) -> str:
    """The ``prev`` of a session's first line: bound to its id."""
    return link(f"{CHAIN_VERSION}\0{session_id}".encode())


def prev_of(line: bytes) -> str | None:
    """The ``prev`` a line carries, or None when it carries none (an unchained line)."""
    at = line.find(PREV_KEY)
    if at < 0:
        return None
    start = at + len(PREV_KEY)
    value = line[start:start + LINK_HEX]
    if line[start + LINK_HEX:start + LINK_HEX + 1] != b'"' or len(value) != LINK_HEX:
        return None
    try:
        return value.decode("ascii")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class ChainScan:
    """One pass over an ``events.jsonl``: its whole lines, the head, and the first break."""

    lines: int  # whole lines read (a torn last line is not one)
    head: str | None  # the link of the last whole line (None: no line)
    chained: bool  # the first line carries a ``prev`` (the record was written with the chain)
    first_break: int | None = None  # 1-based line number of the first line that does not chain on
    why: str = ""  # what is wrong at ``first_break``
    torn: int = 0  # bytes after the last newline (a line cut short)
    last: bytes = b""  # the last whole line


def scan(path: Path, session_id: str) -> ChainScan:
    """Walk ``path``'s chain from ``session_id``'s genesis; never raises for content (a missing
    file is an empty chain)."""
    expected = genesis(session_id)
    n = 0
    head: str | None = None
    chained = False
    brk: int | None = None
    why = ""
    rest = last = b""
    if not path.exists():
        return ChainScan(0, None, False)
    with open(path, "rb") as f:
        while block := f.read(SCAN_BLOCK):
            data = rest + block
            end = data.rfind(b"\n")
            if end < 0:
                rest = data
                continue
            rest = data[end + 1:]
            for line in data[:end].split(b"\n"):
                n += 1
                prev = prev_of(line)
                if n == 1:
                    chained = prev is not None
                if brk is None and chained:
                    if prev is None:
                        brk, why = n, "carries no link to the line before it (a line inserted by hand?)"
                    elif prev != expected:
                        brk, why = n, _mismatch(n, prev, session_id)
                expected = head = link(line)
                last = line
    return ChainScan(n, head, chained, brk, why, len(rest), bytes(last))


def _mismatch(n: int, prev: str, session_id: str) -> str:
    if n == 1:
        return f"does not start session {session_id}'s chain (the log of another session?)"
    return "does not follow the line before it (a line before it was edited, dropped, inserted or moved)"
