"""The embedded market snapshot: package data, always labelled as modelled and with its own time."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from routequote.core.market import MarketView, market_view_from_dict
from routequote.ports import SourceHealth

SNAPSHOT_RESOURCE = "market_snapshot.json"


def load_snapshot_document(path: str | Path | None = None) -> dict[str, Any]:
    if path is None:
        text = resources.files("routequote.data").joinpath(SNAPSHOT_RESOURCE).read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


class EmbeddedSnapshot:
    """MarketData that never changes and never fails: the shipped snapshot file."""

    label = "embedded_snapshot"

    def __init__(self, path: str | Path | None = None) -> None:
        self.document = load_snapshot_document(path)
        self._view = market_view_from_dict(self.document, source="embedded_snapshot", live=False)

    async def view(self) -> MarketView:
        return self._view

    def current(self) -> MarketView:
        return self._view

    def health(self) -> list[SourceHealth]:
        return [
            SourceHealth(
                name="embedded_snapshot",
                ok=True,
                reason=None,
                checked_at=self._view.as_of,
                components=tuple(self._view.pools)
                + ("circle_cctp", "across_intent_bridge", "paxos_usdg_layerzero_oft"),
            )
        ]
