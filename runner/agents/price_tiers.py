"""Long-prompt price tiers (prices.toml ``tiers``): some providers bill a whole request at higher
rates once its prompt is longer than a threshold (Anthropic's Sonnet 4 family above 200k prompt
tokens, Google's Gemini 2.5 Pro above 200k).

A tier is ``{ above = TOKENS, input = ..., output = ..., cached_input = ..., cache_write = ... }``
(USD per million tokens; cached_input and cache_write default to the tier's input); the tier with
the highest ``above`` under the request's prompt size (fresh input + cache reads + cache writes)
prices every token of that usage record. A usage record is what the agent CLI reports at once:
one model response for Codex and OpenCode; Claude Code states its own cost, which stands.
"""

from __future__ import annotations

from dataclasses import dataclass

TIER_FIELDS = ("above", "input", "output", "cached_input", "cache_write")


@dataclass(frozen=True)
class Tier:
    above: int  # prompt tokens of one request beyond which these prices apply
    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None


def parse_tiers(raw: object, where: str, error: type[Exception]) -> tuple[Tier, ...]:
    """The ``tiers`` of one prices.toml entry, lowest threshold first; ``error`` names the entry."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise error(f"{where}: 'tiers' must be a list like [{{ above = 200000, input = 6.0, output = 22.5 }}]")
    out = []
    for i, t in enumerate(raw):
        unknown = set(t) - set(TIER_FIELDS)
        if unknown:
            raise error(f"{where}: tiers[{i}]: unknown field(s) {', '.join(sorted(unknown))}")
        values: dict[str, float | None] = {}
        for key in TIER_FIELDS:
            v = t.get(key)
            if v is None and key in ("above", "input", "output"):
                raise error(f"{where}: tiers[{i}]: '{key}' is required")
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v < 0):
                raise error(f"{where}: tiers[{i}]: '{key}' must be a number >= 0")
            values[key] = None if v is None else float(v)
        above, inp, outp = (values[k] for k in ("above", "input", "output"))
        assert above is not None and inp is not None and outp is not None  # required above
        out.append(Tier(int(above), inp, outp, values["cached_input"], values["cache_write"]))
    return tuple(sorted(out, key=lambda t: t.above))


__all__ = ["Tier", "parse_tiers"]
