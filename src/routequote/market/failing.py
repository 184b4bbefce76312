"""Market adapters that fail on purpose: for tests and for proving the 502/503 paths."""

from __future__ import annotations

from routequote.core.market import MarketView
from routequote.errors import CapacityBusy, UpstreamUnavailable
from routequote.ports import SourceHealth


class FailingMarket:
    """Every view() fails: `mode="down"` as an unavailable upstream (502), `"busy"` as saturation (503)."""

    label = "failing"

    def __init__(self, mode: str = "down") -> None:
        self.mode = mode

    async def view(self) -> MarketView:
        if self.mode == "busy":
            raise CapacityBusy("market_source_saturated", "market source is saturated", retry_after_seconds=2)
        raise UpstreamUnavailable(
            "market_source_unavailable", "market source is failing", retry_after_seconds=10
        )

    def health(self) -> list[SourceHealth]:
        return [SourceHealth(name="failing", ok=False, reason=f"market source {self.mode}")]
