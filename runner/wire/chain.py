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
    file is an empty chain). A block of lines is hashed and checked by maps in C (~85 MB/s here);
    only a block with a break is walked line by line, to name it."""
    expected = genesis(session_id)
    n = 0
    chained: bool | None = None
    brk: int | None = None
    why = ""
    rest = last = b""
    try:
        with open(path, "rb") as f:
            while block := f.read(SCAN_BLOCK):
                data = rest + block
                end = data.rfind(b"\n")
                if end < 0:
                    rest = data
                    continue
                rest = data[end + 1:]
                if chained is None:
                    chained = prev_of(data[:data.find(b"\n")]) is not None
                if not chained:  # a record from before the chain: its lines counted, none hashed
                    n += data.count(b"\n", 0, end + 1)
                    last = data[data.rfind(b"\n", 0, end) + 1:end]
                    continue
                lines = data[:end].split(b"\n")
                links = [link(line) for line in lines]
                if brk is None:
                    wanted = [expected, *links[:-1]]
                    keys = [PREV_KEY + w.encode() + b'"' for w in wanted]
                    if not all(map(bytes.__contains__, lines, keys)):
                        at, why = _first_break(lines, wanted, n, session_id)
                        brk = n + at
                n += len(lines)
                expected = links[-1]
                last = lines[-1]
    except FileNotFoundError:
        return ChainScan(0, None, False)
    head = expected if n and chained else (link(last) if n else None)
    return ChainScan(n, head, bool(chained), brk, why, len(rest), bytes(last))


def _first_break(lines: list[bytes], wanted: list[str], before: int, session_id: str) -> tuple[int, str]:
    """The 1-based place (in ``lines``) of the first line whose ``prev`` is not the one wanted, and why."""
    for i, (line, want) in enumerate(zip(lines, wanted, strict=True), 1):
        prev = prev_of(line)
        if prev is None:
            return i, "carries no link to the line before it (a line inserted by hand?)"
        if prev != want:
            return i, _mismatch(before + i, prev, session_id)
    return len(lines), "does not follow the line before it"  # a key found where no prev was: never by the writer


def _mismatch(n: int, prev: str, session_id: str) -> str:
    if n == 1:
        return f"does not start session {session_id}'s chain (the log of another session?)"
    return "does not follow the line before it (a line before it was edited, dropped, inserted or moved)"
