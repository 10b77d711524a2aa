"""The sealed scorer's answer, checked before the runner uses a byte of it (issue 28).

The scorer's child runs the agent's code, and that code can write its own answer on the child's
answer pipe (it finds the descriptor through the interpreter's frames). So nothing in the answer
is trusted: the header must be a JSON object of the expected form, ``parts`` a list with one
entry per requested split (no duplicate, no other split, no other key), each size an integer, the
sizes summing to the payload exactly; each part an ``.npy`` version 1 or 2 whose header is parsed
here and checked (a numeric dtype — no object, structured, string or sub-array dtype — and a
shape whose bytes are exactly the part's) *before* an array is made. The array is then a
read-only view of the bytes received, never an allocation the header asked for, so a header
claiming 2**43 float64 costs nothing. What shape and dtype kind the task needs, and finiteness,
the task's ``judge`` checks next (``onegc_kit.check_predictions``): NaN or inf is that
checkpoint's error ("the model outputs NaN or inf").

Any failure here is :class:`InvalidAnswer`: that checkpoint is an error with the reason and the
scorer's note ``invalid_answer`` (runner/wire/verdicts.py); the session goes on. The note means "the
harness got no valid answer for this checkpoint": a malformed one, none at all (the child died or
hung), or one the judge raised on. It is a record of strength ``note``: it never disqualifies. A
valid answer whose predictions the task refuses (a wrong shape or dtype kind, NaN or inf) is that
checkpoint's error without the note, as an honest model's can be.

What the child says about itself (its ``flags``: what its audit hook saw) is kept as the child's
own report (the verdict ``child_report``, a note): the child can switch its recorder off, so these
never decide anything (runner/wire/verdicts.py). What the worker saw from outside the child (its exit, its time,
its stdout) comes under ``observed`` and is kept as it is.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from typing import Any

from runner.wire.untrusted import clean

MAX_PAYLOAD_BYTES = 4 << 30  # the worker's own bound (score_worker.MAX_PREDICTION_BYTES)
MAX_NPY_HEADER = 10_000  # numpy's own default bound on an .npy header
NPY_HEADER_BYTES = 12 + MAX_NPY_HEADER  # magic (6), version (2), header length (4), header
MAX_NDIM = 8
MAX_FLAGS = 20
MAX_TEXT = 300
NUMERIC_KINDS = "biuf"
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class InvalidAnswer(ValueError):
    """The scorer's answer is not of the agreed form: the reason is the checkpoint's error."""


@dataclass(frozen=True)
class Header:
    """The header line of one answer, as far as it could be read."""

    ok: bool
    error: str | None
    parts: list[tuple[str, int]]  # (split, bytes), in payload order; empty unless ok
    self_reported: tuple[str, ...]  # the child's own flags (its word only)
    observed: tuple[str, ...]  # what the worker saw from outside the child
    invalid: str | None  # the worker found the child's answer malformed
    stdout: str


def text(value: Any, limit: int = MAX_TEXT) -> str:
    """A bounded, printable, recordable one-liner from whatever ``value`` is (a lone surrogate,
    which the child's JSON can carry as ``"\\ud800"``, becomes U+FFFD: runner/wire/untrusted.py)."""
    return clean(_UNPRINTABLE.sub(" ", str(value)[:limit]), limit)


def payload_size(message: Any, limit: int = MAX_PAYLOAD_BYTES) -> int:
    """The byte count the worker announces for the payload after its header line."""
    if not isinstance(message, dict):
        raise InvalidAnswer("the scorer's answer is not a JSON object")
    size = message.get("bytes", 0)
    if type(size) is int and size > limit:
        raise InvalidAnswer(f"the answer has {size} bytes, more than the predictions asked for can be "
                            f"({limit}): refused unread")
    if type(size) is not int or size < 0:
        raise InvalidAnswer(f"the scorer's answer gives its size as {text(size, 40)!r}, not 0 to {limit} bytes")
    return size


def read_header(message: Any, splits: list[str], payload_len: int, bounds: dict[str, int] | None = None) -> Header:
    """The header of one answer, checked; :class:`InvalidAnswer` if it is malformed or one of its
    parts is larger than ``bounds`` says an honest one can be."""
    if not isinstance(message, dict):
        raise InvalidAnswer("the scorer's answer is not a JSON object")
    self_reported = _strings(message.get("flags"), "flags")
    observed = _strings(message.get("observed"), "observed")
    invalid = message.get("invalid")
    stdout = text(message.get("stdout") or "", 8 << 10) if isinstance(message.get("stdout"), str) else ""
    ok = message.get("ok")
    if invalid is not None:
        raise InvalidAnswer(f"the answer was malformed: {text(invalid)}")
    if ok is False:
        error = message.get("error")
        return Header(False, text(error) if isinstance(error, str) and error else "unknown error", [], self_reported,
                      observed, None, stdout)
    if ok is not True:
        raise InvalidAnswer(f"the answer's ok is {text(ok, 40)!r}, not true or false")
    return Header(True, None, _parts(message.get("parts"), splits, payload_len, bounds or {}), self_reported, observed,
                  None, stdout)


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidAnswer(f"the answer's {what} is not a list of strings")
    return tuple(text(v, 200) for v in value[:MAX_FLAGS])


def _parts(parts: Any, splits: list[str], payload_len: int, bounds: dict[str, int]) -> list[tuple[str, int]]:
    if not isinstance(parts, list):
        raise InvalidAnswer(f"the answer's parts is {type(parts).__name__}, not a list")
    out: list[tuple[str, int]] = []
    for part in parts:
        if not isinstance(part, dict) or set(part) != {"split", "bytes"}:
            raise InvalidAnswer("each part of the answer must be {\"split\": NAME, \"bytes\": N} and nothing else")
        split, size = part["split"], part["bytes"]
        if not isinstance(split, str) or split not in splits:
            raise InvalidAnswer(f"the answer has a part for {text(split, 40)!r}, which was not asked for")
        if split in (s for s, _ in out):
            raise InvalidAnswer(f"the answer has two parts for {split!r}")
        if type(size) is not int or size < 0:
            raise InvalidAnswer(f"the answer gives the size of {split!r} as {text(size, 40)!r}, not a byte count")
        if split in bounds and size > bounds[split]:
            raise InvalidAnswer(f"the answer's part for {split!r} has {size} bytes, more than the task's predictions "
                                f"can be ({bounds[split]})")
        out.append((split, size))
    missing = [s for s in splits if s not in {p for p, _ in out}]
    if missing:
        raise InvalidAnswer(f"the answer has no part for {', '.join(missing)}")
    total = sum(size for _, size in out)
    if total != payload_len:
        raise InvalidAnswer(f"the answer's parts add up to {total} bytes, its payload has {payload_len}")
    return out


def split_payload(parts: list[tuple[str, int]], payload: bytes | memoryview) -> dict[str, memoryview]:
    """Each part's bytes, views of the payload (the sizes were checked to add up)."""
    payload = memoryview(payload)
    out: dict[str, memoryview] = {}
    offset = 0
    for split, size in parts:
        out[split] = payload[offset:offset + size]
        offset += size
    return out


def npy_array(blob: bytes | memoryview):
    """A read-only numpy view of one ``.npy`` part, its header checked before anything is made."""
    import numpy as np
    from numpy.lib import format as npy

    blob = memoryview(blob).toreadonly()
    buf = io.BytesIO(bytes(blob[:NPY_HEADER_BYTES]))  # the header only: the data is never copied
    try:
        version = npy.read_magic(buf)
    except Exception as exc:  # noqa: BLE001 - any malformed start is the answer's fault
        raise InvalidAnswer(f"a part is not an .npy file ({text(exc, 120)})") from None
    readers = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}
    if version not in readers:
        raise InvalidAnswer(f"a part is an .npy of version {version}, not 1.0 or 2.0")
    try:
        shape, fortran, dtype = readers[version](buf, max_header_size=MAX_NPY_HEADER)
    except Exception as exc:  # noqa: BLE001 - a header numpy cannot read is the answer's fault
        raise InvalidAnswer(f"a part's .npy header is unreadable ({text(exc, 160)})") from None
    if not isinstance(dtype, np.dtype) or dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise InvalidAnswer(f"a part's dtype is {text(dtype, 60)}: object, structured and sub-array dtypes are refused")
    if dtype.kind not in NUMERIC_KINDS:
        raise InvalidAnswer(f"a part's dtype is {dtype}, not a number type (bool, int, uint or float)")
    if (not isinstance(shape, tuple) or len(shape) > MAX_NDIM
            or not all(type(n) is int and n >= 0 for n in shape)):
        raise InvalidAnswer(f"a part's shape is {text(shape, 80)}, not up to {MAX_NDIM} sizes of 0 or more")
    count = math.prod(shape)
    data = len(blob) - buf.tell()
    if count * dtype.itemsize != data:
        raise InvalidAnswer(f"a part's header claims {count} x {dtype} ({count * dtype.itemsize} bytes); "
                            f"it carries {data} bytes")
    array = np.frombuffer(blob, dtype=dtype, count=count, offset=buf.tell())
    return array.reshape(shape, order="F" if fortran else "C")
