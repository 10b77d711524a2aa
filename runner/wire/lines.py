"""Lines of an agent's stdout and stderr, read in bounded memory (INTEGRITY.md R2).

The agent decides how long its lines are; the runner holds at most :data:`LINE_LIMIT` bytes of
one. Every byte still goes on to the raw file (``agent.stdout.jsonl``, ``agent.stderr.log``),
piece by piece, within that file's cap (runner/wire/record_caps.py); the runner parses the
line's head and records that the line was cut (a ``line_cut`` warning, coalesced per cause by
the event writer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO

# Longer than any line a real agent CLI writes (Claude Code's stream-json lines, a tool result
# with a file's contents, run to a few hundred KiB); the runner's memory for one line is this
# plus the parse of it (a few times this: one JSON parse and one decode)
LINE_LIMIT = 4 << 20


def bounded_lines(stream: IO[bytes], sink: Callable[[bytes, bool], object],
                  limit: int = LINE_LIMIT) -> Iterator[tuple[bytes, int]]:
    """``(head, cut)`` for each line of ``stream``: its first ``limit`` bytes at most, and how many
    bytes after them were left out (0 for a whole line). ``sink(piece, continued)`` gets every byte
    first, as read: a line's head with ``continued`` False, each further piece of it with True."""
    while True:
        line = stream.readline(limit)
        if not line:
            return
        sink(line, False)
        cut = 0
        if len(line) == limit and not line.endswith(b"\n"):
            while rest := stream.readline(limit):  # the rest of the line: to the sink, not to memory
                sink(rest, True)
                cut += len(rest)
                if rest.endswith(b"\n"):
                    break
        yield line, cut
