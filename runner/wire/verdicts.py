"""Typed verdicts: what an integrity check found about one score, in one shape everywhere.

Every check of the integrity wing (runner/integrity/) and every note the scorer makes about a
checkpoint says what it found as a :class:`Verdict`: which check, how strong, the evidence for a
person, the statistic and p-value where there is one, and the check's measured power and
false-alarm rate by name (runner/integrity/checks.py holds them, benchmarks/ measures them). Events
(``checkpoint_scored.verdicts``), ``result.json``, the store and every view carry this type, and
decide by its ``strength`` alone: nothing reads a verdict's wording.

Strengths, strongest first:

- ``disqualifies``: trusted evidence that the score was not earned. A checkpoint with one is never
  the official result where the verdict is about the checkpoint's own predictions (it reads ahead,
  it was saved after the budget); on the official checkpoint it disqualifies the session (n/N, not
  the mean, as the paper counts protocol violations).
- ``look``: worth a person's look (weaker evidence, or a check that could not run): counted and
  shown with the number, never held against it by itself.
- ``note``: a record of what the scored code did that a model needs not do, or what the scorer's
  child said about itself (the child's word is never evidence: its code can write it).

Records made before verdicts were typed carry free-text ``flags``; they read as verdicts of the
check :data:`LEGACY` at strength ``look`` (as they were counted then), whatever their text says.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

Strength = Literal["disqualifies", "look", "note"]
STRENGTHS: tuple[Strength, ...] = get_args(Strength)  # strongest first
FLAGGED: frozenset[str] = frozenset({"disqualifies", "look"})  # what makes a score "flagged" in every view
LEGACY = "recorded_flag"  # a free-text flag of a record made before typed verdicts
CHECK_CHARS = 64
EVIDENCE_CHARS = 400
MAX_POWER_FIGURES = 16


@dataclass(frozen=True)
class Verdict:
    """One check's finding about one score (or, for a session-level check, one session). A plain
    dataclass (no pydantic: the light commands read verdicts too); events validate it as a field,
    extra keys refused."""

    __pydantic_config__ = {"extra": "forbid"}

    check: str  # a name of runner/integrity/checks.py's CHECKS
    strength: Strength
    evidence: str  # what was found, for a person (bounded, printable)
    statistic: float | None = None  # the check's statistic, where it has one (a margin, a distance, ...)
    p: float | None = None  # its p-value, where it has one
    power: dict[str, float] = field(default_factory=dict)  # the check's measured power, by attack name
    false_alarm: float | None = None  # its measured false-alarm rate on honest checkpoints

    @property
    def flagged(self) -> bool:
        return self.strength in FLAGGED

    def record(self) -> dict[str, Any]:
        """The JSON form (events, result.json, the store): empty and absent fields left out."""
        return {k: v for k, v in asdict(self).items() if v is not None and v != {}}


def legacy(flags: Iterable[Any]) -> list[Verdict]:
    """Verdicts for the free-text flags of a record made before typed verdicts (see the module)."""
    return [Verdict(LEGACY, "look", str(f)[:EVIDENCE_CHARS]) for f in flags if f]


def from_record(item: Any) -> Verdict | None:
    """A verdict from its JSON form, checked field by field; None when it is not one."""
    if isinstance(item, Verdict):
        return item
    if not isinstance(item, Mapping) or not set(item) <= _FIELDS:
        return None
    check, strength, evidence = item.get("check"), item.get("strength"), item.get("evidence")
    if not (isinstance(check, str) and 0 < len(check) <= CHECK_CHARS and strength in STRENGTHS
            and isinstance(evidence, str) and len(evidence) <= EVIDENCE_CHARS):
        return None
    numbers = [item.get("statistic"), item.get("p"), item.get("false_alarm")]
    if not all(x is None or _number(x) for x in numbers):
        return None
    power = item.get("power") or {}
    if not (isinstance(power, Mapping) and len(power) <= MAX_POWER_FIGURES
            and all(isinstance(k, str) and len(k) <= CHECK_CHARS and _number(v) for k, v in power.items())):
        return None
    statistic, p, alarm = (None if x is None else float(x) for x in numbers)
    return Verdict(check, strength, evidence, statistic, p, {k: float(v) for k, v in power.items()}, alarm)


def read(raw: Any, legacy_flags: Any = None) -> list[Verdict]:
    """Verdicts from a record: a list of verdict records (``verdicts``), else the legacy ``flags``
    of an older record. An entry that is not a verdict reads as a legacy flag of its text, never as
    nothing."""
    out: list[Verdict] = []
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        for item in raw:
            v = from_record(item)
            out += [v] if v is not None else legacy([item if isinstance(item, str) else repr(item)[:EVIDENCE_CHARS]])
    if not out and isinstance(legacy_flags, Sequence) and not isinstance(legacy_flags, str):
        out = legacy(legacy_flags)
    return out


def read_json(verdicts_text: object, flags_text: object = None) -> list[Verdict]:
    """:func:`read` of JSON text (the store's ``verdicts`` and legacy ``flags`` columns); what is not
    JSON reads as nothing, never as an exception."""
    return read(_loads(verdicts_text), _loads(flags_text))


def _loads(raw: object) -> Any:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def strongest(verdicts: Iterable[Verdict]) -> Strength | None:
    """The strongest strength among ``verdicts`` (None: there are none)."""
    found = {v.strength for v in verdicts}
    return next((s for s in STRENGTHS if s in found), None)


def flagged(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts that flag a score (disqualifies or look), strongest first."""
    return sorted((v for v in verdicts if v.flagged), key=lambda v: STRENGTHS.index(v.strength))


def disqualifying(verdicts: Iterable[Verdict]) -> Verdict | None:
    """The first verdict that disqualifies, or None."""
    return next((v for v in verdicts if v.strength == "disqualifies"), None)


def records(verdicts: Iterable[Verdict]) -> list[dict[str, Any]]:
    return [v.record() for v in verdicts]


def merged(*groups: Iterable[Verdict]) -> tuple[Verdict, ...]:
    """The verdicts of ``groups`` in order, each once (by check, strength and evidence)."""
    seen: dict[tuple[str, str, str], Verdict] = {}
    for v in (v for g in groups for v in g):
        seen.setdefault((v.check, v.strength, v.evidence), v)
    return tuple(seen.values())


def counts(verdicts: Iterable[Verdict]) -> Mapping[str, int]:
    """How many verdicts of each strength."""
    out: dict[str, int] = dict.fromkeys(STRENGTHS, 0)
    for v in verdicts:
        out[v.strength] += 1
    return out


_FIELDS = frozenset({"check", "strength", "evidence", "statistic", "p", "power", "false_alarm"})


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
