"""A session's token usage as an adapter reports it: :class:`Tokens` and the :class:`Ledger`.

The ledger keeps one rule: the ``usage`` transcript items an adapter emits always add up to the
totals it reports (``result`` items, :meth:`Ledger.totals`). Live figures are running sums of
increments; when the CLI states authoritative session totals (Claude Code's ``modelUsage``,
Codex's ``total_token_usage``), :meth:`Ledger.settle` emits the one usage item that brings the
running sum to them — a correction may be negative when the CLI revises a provisional count
down. So the monitor's live figure and the final one are the same sum, and a session stopped at
any moment keeps every increment it saw.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from runner.agents.item import TranscriptItem
from runner.agents.pricing import format_usd

COST_DIGITS = 9  # dollars are summed from many small increments; rounding only for display


@dataclass(frozen=True)
class Tokens:
    """Token counts in the harness's terms (every CLI is mapped onto these)."""

    tokens_in: int = 0  # every prompt token: fresh, cache reads and cache writes
    tokens_out: int = 0  # completion tokens, reasoning included
    cache_read: int = 0  # part of tokens_in read from the prompt cache
    cache_write: int = 0  # part of tokens_in written to the prompt cache

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: Tokens) -> Tokens:
        return Tokens(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))

    def fresh_in(self) -> int:
        """Prompt tokens billed at the plain input price."""
        return self.tokens_in - self.cache_read - self.cache_write


class Ledger:
    """Running usage of one session; every change comes out as a ``usage`` item."""

    def __init__(self) -> None:
        self.tokens = Tokens()
        self.cost = 0.0  # the sum of the costs that were known
        self.cost_known = True  # False once an increment could not be priced

    def add(self, delta: Tokens, cost: float | None, note: str = "") -> list[TranscriptItem]:
        """One increment (a model response, or the part of one not counted yet)."""
        if not delta and not cost:
            return []
        return [self._apply(delta, cost, note)]

    def settle(self, total: Tokens, cost: float | None, note: str = "") -> list[TranscriptItem]:
        """The CLI's own cumulative totals: the item that brings the running sum to them.

        ``cost`` is the CLI's cumulative cost, or ``None`` when it reports none (then the running
        estimate stands and only the tokens are corrected)."""
        delta = total - self.tokens
        d_cost = None if cost is None else cost - self.cost
        if not delta and not d_cost:
            if cost is not None:
                self.cost_known = True
            return []
        item = self._apply(delta, d_cost, note or "the CLI's own totals")
        if cost is not None:
            self.cost_known = True
        return [item]

    def _apply(self, delta: Tokens, cost: float | None, note: str) -> TranscriptItem:
        self.tokens = self.tokens + delta
        if cost is None:
            self.cost_known = False
        else:
            self.cost = round(self.cost + cost, COST_DIGITS)
        text = f"{_signed(delta)}, {format_usd(cost) if cost is None or cost >= 0 else '-' + format_usd(-cost)}"
        return TranscriptItem(
            role="system", kind="usage", text=text + (f" ({note})" if note else ""),
            tokens_in=delta.tokens_in, tokens_out=delta.tokens_out, cache_read=delta.cache_read or None,
            cache_write=delta.cache_write or None, cost_usd=cost,
        )  # fmt: skip

    def result(self, text: str) -> TranscriptItem:
        """A ``result`` item carrying the session totals so far."""
        t = self.tokens
        return TranscriptItem(
            role="system", kind="result", text=text, tokens_in=t.tokens_in, tokens_out=t.tokens_out,
            cache_read=t.cache_read or None, cache_write=t.cache_write or None,
            cost_usd=self.cost if self.cost_known else None,
        )  # fmt: skip

    def totals(self) -> dict:
        t = self.tokens
        return {
            "tokens_in": t.tokens_in,
            "tokens_out": t.tokens_out,
            "cache_read": t.cache_read,
            "cache_write": t.cache_write,
            "cost_usd": round(self.cost, 6),
            "cost_known": self.cost_known,
        }


def _signed(t: Tokens) -> str:
    def s(n: int) -> str:
        return f"+{n}" if n >= 0 else str(n)

    extra = [f"{s(n)} {what}" for n, what in ((t.cache_read, "cached"), (t.cache_write, "cache write")) if n]
    return f"{s(t.tokens_in)} in" + (f" ({', '.join(extra)})" if extra else "") + f" / {s(t.tokens_out)} out"
