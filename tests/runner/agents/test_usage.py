"""The usage ledger: increments and the CLI's own totals always add up to what is reported."""

from __future__ import annotations

import pytest

from runner.agents.usage import Ledger, Tokens


def total_of(items) -> tuple[int, int, int, int, float]:
    return (sum(i.tokens_in for i in items), sum(i.tokens_out for i in items), sum(i.cache_read or 0 for i in items),
            sum(i.cache_write or 0 for i in items), round(sum(i.cost_usd or 0 for i in items), 9))  # fmt: skip


def test_increments_then_authoritative_totals_sum_to_the_totals():
    ledger = Ledger()
    items = ledger.add(Tokens(1540, 1, 500, 40), 0.0033)  # a provisional output count of 1
    items += ledger.add(Tokens(1556, 1, 505, 41), 0.0034)
    items += ledger.settle(Tokens(3096, 61, 1005, 81), 0.00755)  # the CLI's own totals
    assert total_of(items) == (3096, 61, 1005, 81, 0.00755)
    assert ledger.totals() == {"tokens_in": 3096, "tokens_out": 61, "cache_read": 1005, "cache_write": 81,
                               "cost_usd": 0.00755, "cost_known": True}  # fmt: skip
    assert ledger.settle(Tokens(3096, 61, 1005, 81), 0.00755) == []  # nothing new: no item
    result = ledger.result("done")
    assert (result.kind, result.tokens_in, result.tokens_out, result.cache_read, result.cost_usd) == (
        "result", 3096, 61, 1005, 0.00755)


def test_a_correction_may_be_negative_and_unknown_prices_stay_unknown():
    ledger = Ledger()
    items = ledger.add(Tokens(100, 50), None)  # a model without a price
    assert ledger.totals()["cost_known"] is False
    items += ledger.settle(Tokens(100, 40), None)  # the CLI revised the output down, reports no money
    assert total_of(items)[:2] == (100, 40) and items[-1].tokens_out == -10 and "-10 out" in items[-1].text
    assert ledger.totals()["cost_known"] is False and ledger.result("x").cost_usd is None
    items += ledger.settle(Tokens(100, 40), 0.002)  # a CLI that states its cost makes it known
    assert ledger.totals()["cost_known"] is True and total_of(items)[4] == pytest.approx(0.002)


def test_tokens_arithmetic():
    a, b = Tokens(10, 2, 3, 1), Tokens(4, 1, 1, 0)
    assert a + b == Tokens(14, 3, 4, 1) and a - b == Tokens(6, 1, 2, 1)
    assert not Tokens() and a.fresh_in() == 6
