"""Change the UPPERCASE constants at the top of a training script (``LR = 3e-4`` style).

Used by the scripted agent to derive ``run_{x}.py`` from ``train.py`` and by tests to shrink a
baseline to a few CPU steps.
"""

from __future__ import annotations

import re

_ASSIGN = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)(?P<ann>\s*:\s*[^=]+)?\s*=\s*(?P<value>.+?)(?P<comment>\s+#.*)?$")


class MissingConstant(KeyError):
    pass


def set_constants(source: str, values: dict[str, object]) -> tuple[str, list[str]]:
    """Return the new source and a ``NAME: old -> new`` line per change.

    Raises :class:`MissingConstant` when a name has no top-level assignment to change.
    """
    lines = source.splitlines(keepends=True)
    changes: list[str] = []
    remaining = dict(values)
    for i, line in enumerate(lines):
        m = _ASSIGN.match(line.rstrip("\n"))
        if not m or m["name"] not in remaining:
            continue
        name = m["name"]
        new = remaining.pop(name)
        rendered = repr(new)
        end = "\n" if line.endswith("\n") else ""
        ann = m["ann"].rstrip() if m["ann"] else ""
        lines[i] = f"{name}{ann} = {rendered}{m['comment'] or ''}{end}"
        changes.append(f"{name}: {m['value'].strip()} -> {rendered}")
    if remaining:
        raise MissingConstant(f"no top-level assignment for {', '.join(remaining)}")
    return "".join(lines), changes
