"""The price table: packaged prices, lookups by model id, the user's override file, usage totals."""

from __future__ import annotations

import pytest

from runner.agents.pricing import (
    PACKAGED_PRICES,
    Price,
    PriceFileError,
    PriceTable,
    format_usd,
    load_prices,
    load_prices_safe,
    read_price_file,
)


@pytest.fixture
def no_user_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ONEGC_HOME", str(tmp_path))
    return tmp_path


def test_packaged_table_reads_and_covers_the_three_families(no_user_file):
    entries = read_price_file(PACKAGED_PRICES)
    assert len(entries) >= 30
    table = load_prices()
    for model in ["claude-sonnet-4-5", "gpt-5", "openrouter/moonshotai/kimi-k2"]:
        assert table.price(model) is not None, model


@pytest.mark.parametrize(
    ("model", "input_price", "output_price"),
    [
        ("claude-opus-4-8[1m]", 5.0, 25.0),  # the context-window tag is not part of the id
        ("claude-opus-4-5-20251101", 5.0, 25.0),
        ("claude-opus-4-1-20250805", 15.0, 75.0),  # the longer pattern wins over claude-opus-4*
        ("anthropic/claude-sonnet-4-5", 3.0, 15.0),  # provider prefix stripped
        ("claude-haiku-4-5", 1.0, 5.0),
        ("gpt-5", 1.25, 10.0),
        ("openai/gpt-5.2", 1.75, 14.0),
        ("gpt-5-mini-2025-08-07", 0.25, 2.0),
        ("openrouter/moonshotai/kimi-k2-0905", 0.60, 2.50),
        ("opencode/x-ai/grok-code-fast-1", 0.20, 1.50),
    ],
)
def test_lookup(no_user_file, model, input_price, output_price):
    price = load_prices().price(model)
    assert price is not None and (price.input, price.output) == (input_price, output_price)


@pytest.mark.parametrize("model", ["mock-model", "gpt-5.5", "gpt-50", "moonshotai", "", None, "claude-opus"])
def test_unknown_models_have_no_price(no_user_file, model):
    table = load_prices()
    assert table.price(model) is None
    assert table.cost(model, 1000, 1000) is None


def test_cost_matches_what_claude_code_charged_in_the_fixtures(no_user_file):
    # claude-int.jsonl: 120 in, 30 out on claude-opus-4-8 -> total_cost_usd 0.00135
    assert load_prices().cost("claude-opus-4-8[1m]", 120, 30) == pytest.approx(0.00135)


def test_cost_uses_cache_rates_and_defaults_them_to_input():
    table = PriceTable({"m": Price(input=2.0, output=8.0, cached_input=0.5), "n*": Price(input=1.0, output=1.0)})
    assert table.cost("m", 1_000_000, 0, cached_input_tokens=1_000_000, cache_write_tokens=1_000_000) == pytest.approx(
        2.0 + 0.5 + 2.0
    )
    assert table.cost("n-1", 0, 0, cached_input_tokens=2_000_000) == pytest.approx(2.0)
    assert table.cost("m", -5, -5) == 0.0


def test_user_file_overrides_and_extends(no_user_file):
    (no_user_file / "prices.toml").write_text(
        '[models]\n"gpt-5" = { input = 9.0, output = 90.0 }\n"mock-model" = { input = 1, output = 2 }\n'
    )
    table = load_prices()
    assert table.price("gpt-5") == Price(input=9.0, output=90.0)
    assert table.cost("mock-model", 1_000_000, 1_000_000) == pytest.approx(3.0)
    assert table.price("claude-haiku-4-5") is not None  # the packaged entries are still there


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[models]\n"x" = { input = 1 }\n', "'output' is required"),
        ('[models]\n"x" = { input = -1, output = 1 }\n', "must be a number >= 0"),
        ('[models]\n"x" = { input = 1, output = 1, cheap = true }\n', "unknown field(s) cheap"),
        ('[models]\n"x" = 3\n', "expected a table"),
        ("[models\n", "cannot read price table"),
        ('[models]\n"x" = { input = 1, output = 1, tiers = 3 }\n', "'tiers' must be a list"),
        ('[models]\n"x" = { input = 1, output = 1, tiers = [{ input = 2, output = 2 }] }\n', "tiers[0]: 'above' is required"),
        ('[models]\n"x" = { input = 1, output = 1, tiers = [{ above = 9, input = 2, output = 2, x = 1 }] }\n',
         "tiers[0]: unknown field(s) x"),
    ],
)
def test_a_broken_user_file_names_the_file_and_entry(no_user_file, content, message):
    path = no_user_file / "prices.toml"
    path.write_text(content)
    with pytest.raises(PriceFileError) as err:
        load_prices()
    assert str(path) in str(err.value) and message in str(err.value)
    table, warning = load_prices_safe()
    assert table.price("gpt-5") is not None and "using the packaged prices" in warning


def test_format_usd():
    assert format_usd(None) == "price unknown" and format_usd(0.00135) == "$0.0014" and format_usd(12.345) == "$12.35"


def test_long_prompts_are_billed_at_their_tier_where_the_provider_has_one(no_user_file):
    table = load_prices()
    # Sonnet 4.5: a request above 200k prompt tokens is billed at $6 / $22.50 (cache $0.60 / $7.50), whole
    assert table.cost("claude-sonnet-4-5", 100_000, 1_000) == pytest.approx(0.3 + 0.015)
    assert table.cost("claude-sonnet-4-5", 150_000, 1_000, cached_input_tokens=60_000) == pytest.approx(
        (150_000 * 6.0 + 1_000 * 22.5 + 60_000 * 0.60) / 1e6)
    assert table.cost("claude-sonnet-4-5", 200_000, 0) == pytest.approx(0.6)  # at the threshold: not above it
    assert table.cost("openrouter/google/gemini-2.5-pro", 250_000, 0) == pytest.approx(250_000 * 2.5 / 1e6)
    assert table.cost("gpt-5", 900_000, 0) == pytest.approx(900_000 * 1.25 / 1e6)  # no tier: one rate
    (no_user_file / "prices.toml").write_text(
        '[models]\n"m" = { input = 1, output = 2, tiers = [{ above = 1000, input = 3, output = 4 },'
        ' { above = 10, input = 2, output = 3 }] }\n')
    custom = load_prices()
    assert [t.above for t in custom.price("m").tiers] == [10, 1000]
    assert custom.cost("m", 5, 0) == pytest.approx(5 / 1e6)
    assert custom.cost("m", 50, 0, cached_input_tokens=10) == pytest.approx((50 * 2 + 10 * 2) / 1e6)
    assert custom.cost("m", 5000, 100) == pytest.approx((5000 * 3 + 100 * 4) / 1e6)
