"""Per-Attempt telemetry: tokens as the provider reported them; cost from the provider, else the price table."""

from __future__ import annotations

from pathlib import Path

import pytest

from awp_pipelines.core.engine.attempt_record import attempt_usage
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.prices import SHIPPED_PRICES, ModelPrice, PriceTable, load_prices
from awp_pipelines.core.providers.base import ProviderUsage

REPO = Path(__file__).resolve().parents[2]
TABLE = PriceTable(models={"gpt-5": ModelPrice(input=1.25, output=10.0, cached_input=0.125),
                           "gpt-5-mini": ModelPrice(input=0.25, output=2.0)})


def test_a_reported_cost_wins_over_the_table() -> None:
    usage = attempt_usage(ProviderUsage(input_tokens=10, output_tokens=5, cost_usd=0.5, cost_reported=True),
                          "gpt-5", TABLE)
    assert usage.cost_usd == 0.5 and usage.cost_source == "provider"


def test_an_unreported_cost_comes_from_the_longest_matching_price() -> None:
    usage = attempt_usage(ProviderUsage(input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=2_000_000,
                                        reasoning_tokens=40_000), "gpt-5-mini-2026", TABLE)
    # gpt-5-mini has no cached price: cache reads at the input price.
    assert usage.cost_source == "price_table" and usage.cost_usd == pytest.approx(0.25 + 0.5 + 0.2)
    assert usage.cached_input_tokens == 2_000_000 and usage.reasoning_tokens == 40_000
    codex = attempt_usage(ProviderUsage(input_tokens=315, cached_input_tokens=24448, output_tokens=122), "gpt-5", TABLE)
    assert codex.cost_usd == pytest.approx((315 * 1.25 + 24448 * 0.125 + 122 * 10) / 1e6, abs=1e-6)


def test_an_unknown_model_has_no_cost_rather_than_a_made_up_one() -> None:
    usage = attempt_usage(ProviderUsage(input_tokens=10, output_tokens=5), "mystery-model", TABLE)
    assert usage.cost_usd is None and usage.cost_source == "unknown"


def test_the_shipped_price_table_loads_and_a_bad_key_is_refused(tmp_path: Path) -> None:
    table = load_prices(SHIPPED_PRICES)
    assert table.price_for("claude-haiku-4-5") is not None and table.price_for("gpt-5.3-codex-spark") is not None
    bad = tmp_path / "prices.yaml"
    bad.write_text("models:\n  x: {input: 1, output: 2, cache_read: 3}\n")
    with pytest.raises(PacketError):
        load_prices(bad)


def test_totals_sum_tokens_and_known_costs_and_keep_the_weakest_source() -> None:
    from awp_pipelines.core.engine.attempt_record import Usage, total_usage

    known = Usage(input_tokens=10, output_tokens=2, cached_input_tokens=5, cost_usd=0.5, cost_source="provider")
    table = Usage(input_tokens=1, output_tokens=1, cost_usd=0.25, cost_source="price_table")
    total = total_usage([known, table])
    assert (total.input_tokens, total.output_tokens, total.cached_input_tokens) == (11, 3, 5)
    assert total.cost_usd == 0.75 and total.cost_source == "price_table"
    assert total_usage([known, Usage(input_tokens=3)]).cost_source == "unknown"
    assert total_usage([]).cost_usd is None
