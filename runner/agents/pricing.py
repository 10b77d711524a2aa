"""Token prices and session usage totals for the agent adapters.

:func:`load_prices` reads the packaged ``prices.toml`` (USD per million tokens, per model id or
glob pattern) and lays ``$ONEGC_HOME/prices.toml`` over it. :meth:`PriceTable.price` finds a
model's :class:`Price`; :meth:`PriceTable.cost` prices one usage record and returns ``None``
when the model is unknown, so callers can say "price unknown" instead of showing $0.
(The per-session running sums live in ``runner/agents/usage.py``.)
"""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from runner.agents.price_tiers import Tier, parse_tiers
from runner.errors import OnegcError

PACKAGED_PRICES = Path(__file__).resolve().with_name("prices.toml")
USER_PRICES_NAME = "prices.toml"  # looked for in $ONEGC_HOME (default: the current directory)
PER = 1_000_000  # prices are quoted per million tokens
_WINDOW_TAG = re.compile(r"\[[^\]]*\]$")  # "claude-opus-4-8[1m]": a context-window tag, not a model


class PriceFileError(OnegcError, ValueError):
    """A prices.toml that cannot be read; the message names the file and the entry."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens; ``tiers``: the prices of long prompts (runner/agents/price_tiers.py)."""

    input: float
    output: float
    cached_input: float | None = None  # None: billed as input
    cache_write: float | None = None  # None: billed as input
    tiers: tuple[Tier, ...] = ()


def _price_entry(raw: object, where: str) -> Price:
    if not isinstance(raw, dict):
        raise PriceFileError(f"{where}: expected a table like {{ input = 1.0, output = 2.0 }}")
    unknown = set(raw) - {"input", "output", "cached_input", "cache_write", "tiers"}
    if unknown:
        raise PriceFileError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    tiers = parse_tiers(raw.get("tiers"), where, PriceFileError)
    values = {}
    for key in ("input", "output", "cached_input", "cache_write"):
        value = raw.get(key)
        if value is None and key in ("input", "output"):
            raise PriceFileError(f"{where}: '{key}' is required")
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise PriceFileError(f"{where}: '{key}' must be a number >= 0 (USD per million tokens)")
            values[key] = float(value)
    return Price(**values, tiers=tiers)


def read_price_file(path: Path) -> dict[str, Price]:
    """One prices.toml as ``{model id or pattern: Price}``; raises :class:`PriceFileError`."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PriceFileError(f"{path}: cannot read price table: {exc}") from None
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise PriceFileError(f"{path}: [models] must be a table of model = {{ input = ..., output = ... }}")
    return {str(key): _price_entry(value, f"{path}: models.{key}") for key, value in models.items()}


def user_price_file() -> Path:
    return Path(os.environ.get("ONEGC_HOME") or ".") / USER_PRICES_NAME


class PriceTable:
    """Model id -> :class:`Price`, with exact ids before glob patterns."""

    def __init__(self, entries: dict[str, Price]):
        self.exact = {k: v for k, v in entries.items() if not any(c in k for c in "*?[")}
        # Longest pattern first: "claude-opus-4-1*" must win over a broader "claude-opus-4*".
        self.patterns = sorted(((k, v) for k, v in entries.items() if k not in self.exact), key=lambda kv: -len(kv[0]))

    @staticmethod
    def candidates(model: str) -> list[str]:
        """The names a model id is looked up under, most specific first."""
        name = _WINDOW_TAG.sub("", model.strip())
        parts = name.split("/")
        return [c for c in ("/".join(parts[i:]) for i in range(len(parts))) if c]

    def price(self, model: str | None) -> Price | None:
        if not model:
            return None
        names = self.candidates(model)
        for name in names:
            if name in self.exact:
                return self.exact[name]
        for name in names:
            for pattern, price in self.patterns:
                if fnmatch.fnmatchcase(name, pattern):
                    return price
        return None

    def cost(
        self,
        model: str | None,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float | None:
        """USD for one usage record, or ``None`` when the model's price is unknown.

        ``input_tokens`` are the uncached input tokens only: callers whose CLI counts cached
        tokens inside the input (OpenAI style) subtract them first.
        """
        price = self.price(model)
        if price is None:
            return None
        price = tier_for(price, input_tokens + cached_input_tokens + cache_write_tokens)
        cached = price.input if price.cached_input is None else price.cached_input
        write = price.input if price.cache_write is None else price.cache_write
        return (
            max(input_tokens, 0) * price.input
            + max(output_tokens, 0) * price.output
            + max(cached_input_tokens, 0) * cached
            + max(cache_write_tokens, 0) * write
        ) / PER


def load_prices(user_file: Path | None = None) -> PriceTable:
    """The packaged table with ``$ONEGC_HOME/prices.toml`` (or ``user_file``) laid over it."""
    entries = read_price_file(PACKAGED_PRICES)
    override = user_file if user_file is not None else user_price_file()
    if override.is_file():
        entries.update(read_price_file(override))
    return PriceTable(entries)


def load_prices_safe(user_file: Path | None = None) -> tuple[PriceTable, str | None]:
    """Like :func:`load_prices`, but a broken user file only costs its entries and a warning."""
    try:
        return load_prices(user_file), None
    except PriceFileError as exc:
        return PriceTable(read_price_file(PACKAGED_PRICES)), f"{exc}; using the packaged prices"


def format_usd(cost: float | None) -> str:
    if cost is None:
        return "price unknown"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def tier_for(price: Price, prompt_tokens: int) -> Price:
    """``price`` with the rates of the highest tier whose threshold ``prompt_tokens`` exceeds."""
    chosen = None
    for tier in price.tiers:
        if prompt_tokens > tier.above:
            chosen = tier
    if chosen is None:
        return price
    return replace(price, input=chosen.input, output=chosen.output,
                   cached_input=chosen.cached_input if chosen.cached_input is not None else chosen.input,
                   cache_write=chosen.cache_write if chosen.cache_write is not None else chosen.input, tiers=())
