"""A fake LayerZero Scan on 127.0.0.1: `GET /v1/messages/tx/{txHash}` answers what the test published for that
source transaction (the shape the production reader parses), 404 before (not indexed yet)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.support.loopback import json_server


def scan_item(
    *, guid: str, src_eid: int, dst_eid: int, sender: str, receiver: str, source_tx: str, delivery: str | None
) -> dict[str, Any]:
    """One message as LayerZero Scan lists it: INFLIGHT until `delivery` (the destination signature) is known."""
    return {
        "pathway": {
            "srcEid": src_eid,
            "dstEid": dst_eid,
            "sender": {"address": sender},
            "receiver": {"address": receiver},
            "nonce": 1,
        },
        "source": {"status": "SUCCEEDED", "tx": {"txHash": source_tx}},
        "destination": {"status": "SUCCEEDED", "tx": {"txHash": delivery, "blockTimestamp": 1795400000}}
        if delivery
        else {},
        "guid": guid,
        "status": {"name": "DELIVERED" if delivery else "INFLIGHT", "message": ""},
    }


@dataclass
class FakeLayerZeroScan:
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # source tx (lower) -> items
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def publish(self, source_tx: str, items: list[dict[str, Any]]) -> None:
        self.messages[source_tx.lower()] = items

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        self.requests.append(path)
        parts = path.split("?")[0].strip("/").split("/")
        if method == "GET" and len(parts) == 4 and parts[:3] == ["v1", "messages", "tx"]:
            items = self.messages.get(parts[3].lower())
            if items is not None:
                return 200, {"data": items}
        return 404, {"message": "not found"}

    @contextmanager
    def running(self) -> Iterator[FakeLayerZeroScan]:
        with json_server(self.answer) as self.url:
            yield self
