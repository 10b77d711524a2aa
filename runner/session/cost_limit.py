"""The optional cost limit beside the time budget (``onegc run --cost-limit USD``, a study's
``[budget] cost_usd``): what the agent's model calls have cost so far, and whether that reached
the limit.

The meter follows the store's rule for the cost column (onegc_tui/store): ``usage`` transcript
items are increments, a ``result`` item's cost is the session's total and replaces the sum. When
the limit is reached the runner ends the session as it ends one whose budget ran out: the agent
gets its grace period, every checkpoint is scored, the official result is chosen, and the end
reason is ``cost_limit`` with the figures in its detail. The check runs with the runner's loop
(every tick), so a session can overshoot by what one model response costs: the CLI reports a
call's cost after it was made.

A model whose price is unknown (no cost in its usage) cannot be held to a limit: the runner says
so once, as a warning, and the time budget remains the bound (``unpriced``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from runner.wire.events import TranscriptFields

END_REASON = "cost_limit"


@dataclass
class CostMeter:
    limit_usd: float | None
    spent_usd: float = 0.0
    unpriced: bool = False  # a usage increment came without a cost: the limit cannot be held

    def add(self, item: TranscriptFields) -> None:
        cost = item.cost_usd
        if item.kind == "usage":
            if cost is not None and math.isfinite(cost):
                self.spent_usd += cost
            elif item.tokens_in or item.tokens_out:
                self.unpriced = True
        elif item.kind == "result" and cost is not None and math.isfinite(cost):
            self.spent_usd = cost  # the CLI's own total

    @property
    def reached(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def detail(self) -> str:
        return f"the model calls cost ${self.spent_usd:.4f}, reaching the ${self.limit_usd:.2f} cost limit"

    def unpriced_warning(self) -> str:
        return (f"the ${self.limit_usd:.2f} cost limit cannot be held: the model's usage comes without a price "
                "(add the model to $ONEGC_HOME/prices.toml); the time budget still ends the session")


__all__ = ["END_REASON", "CostMeter"]
