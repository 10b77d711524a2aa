"""Each HTTP/1.x message on one direction of a plain-HTTP connection, for the network gate.

The gate (runner/sandbox/proxy.py) forwards bytes; to count requests (not connections: a client keeps
one connection alive for many requests) and to see the status of every response, it feeds each
direction's bytes to a :class:`MessageCounter`, which finds each message's head and skips its
body (``Content-Length``, ``chunked``). Whatever it cannot follow (a body that runs until the
connection closes, a malformed head, TLS) stops the counting for that connection; the bytes are
forwarded untouched all the same. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable

MAX_HEAD = 64 << 10
MAX_CHUNK_LINE = 1024
TLS_HANDSHAKE = 0x16  # a TLS record's first byte: the requests inside cannot be seen


class MessageCounter:
    """Calls ``on_head(first_line)`` for each message head; ``responses``: heads are status lines."""

    def __init__(self, on_head: Callable[[str], None], responses: bool = False):
        self.on_head = on_head
        self.responses = responses
        self.count = 0
        self.lost = False  # could not follow the stream any further
        self._buf = bytearray()
        self._body = 0  # bytes of the current body still to skip
        self._chunked = False
        self._state = "head"  # head | body | chunk_size | chunk_data | trailer

    def feed(self, data: bytes) -> None:
        if self.lost:
            return
        self._buf += data
        try:
            while self._step():
                pass
        except ValueError:
            self.lost = True
            self._buf.clear()

    def _step(self) -> bool:
        if self._state == "head":
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > MAX_HEAD or (self._buf and self._buf[0] == TLS_HANDSHAKE):
                    raise ValueError("not HTTP")
                return False
            head = bytes(self._buf[:end]).decode("latin-1").split("\r\n")
            del self._buf[:end + 4]
            self._begin(head)
            return True
        if self._state == "body":
            take = min(self._body, len(self._buf))
            del self._buf[:take]
            self._body -= take
            if self._body == 0:
                self._state = "head"
                return True
            return False
        if self._state in ("chunk_size", "trailer"):
            end = self._buf.find(b"\r\n")
            if end < 0:
                if len(self._buf) > MAX_CHUNK_LINE:
                    raise ValueError("chunk line too long")
                return False
            line = bytes(self._buf[:end])
            del self._buf[:end + 2]
            if self._state == "trailer":
                if not line:
                    self._state = "head"
                return True
            size = int(line.split(b";")[0].strip() or b"x", 16)
            if size == 0:
                self._state = "trailer"
            else:
                self._body, self._state = size + 2, "chunk_data"  # the data and its CRLF
            return True
        if self._state == "chunk_data":
            take = min(self._body, len(self._buf))
            del self._buf[:take]
            self._body -= take
            if self._body == 0:
                self._state = "chunk_size"
                return True
            return False
        return False

    def _begin(self, head: list[str]) -> None:
        first = head[0]
        if not (first.startswith("HTTP/1.") if self.responses else " HTTP/1." in first):
            raise ValueError("not an HTTP/1 message")
        self.count += 1
        self.on_head(first)
        headers = {}
        for line in head[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        status = first[9:12] if self.responses else ""
        if self.responses and status.isdigit() and (status[0] == "1" or status in ("204", "304")):
            self._state = "head"  # no body (an answer to HEAD is not told apart: it stops the count)
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            self._state = "chunk_size"
        elif "content-length" in headers:
            self._body = int(headers["content-length"])
            if self._body < 0:
                raise ValueError("negative length")
            self._state = "body" if self._body else "head"
        elif self.responses:
            raise ValueError("a body until the connection closes: no further message")
        else:
            self._state = "head"  # a request without a body


def status_of(status_line: str) -> int | None:
    code = status_line[9:12]
    return int(code) if code.isdigit() else None
