"""LayerZero Scan's message lookup by source transaction: `GET {base}/v1/messages/tx/{txHash}` (mainnet base
`https://scan.layerzero-api.com`; configure it, nothing is called without one).

It plays for the OFT what Iris plays for CCTP: from the Robinhood `send` transaction it finds the message (its
GUID, pathway, status) and, once delivered, the destination transaction, so the caller need not name it. What it
says is a lead, never evidence: the destination transaction is then read from the chain and verified
(`core/bridge_arrivals.verify_oft_solana_delivery`) whoever named it.

Answer shape (LayerZero Scan API v1): `{"data": [{"pathway": {"srcEid", "dstEid", "sender": {"address"},
"receiver": {"address"}, "nonce"}, "source": {"status", "tx": {"txHash"}}, "destination": {"status", "tx":
{"txHash", "blockNumber", "blockTimestamp"}}, "guid", "status": {"name", "message"}, ...}]}`. 404 and an empty
`data` mean "not indexed yet". Numbers arrive as JSON integers or decimal strings; floats are refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from routequote.core.field_rules import EVM_TX_HASH_RE
from routequote.errors import InvalidRequest
from routequote.market.upstream import DEFAULT_MAX_BYTES
from routequote.observe._common import Breaker, RestUpstream, WireError, integer
from routequote.ports import ObservationUnavailable

GUID_RE = EVM_TX_HASH_RE  # a GUID is bytes32 as 0x + 64 hex: the same shape as an EVM transaction hash
MESSAGE_STATUSES = frozenset(
    {
        "INFLIGHT",
        "CONFIRMING",
        "DELIVERED",
        "FAILED",
        "BLOCKED",
        "PAYLOAD_STORED",
        "APPLICATION_BURNED",
        "APPLICATION_SKIPPED",
        "UNRESOLVABLE_COMMAND",
        "MALFORMED_COMMAND",
    }
)


@dataclass(frozen=True, slots=True)
class LayerZeroMessage:
    guid: str  # 0x + 64 hex, lower case
    src_eid: int
    dst_eid: int
    sender: str
    receiver: str
    nonce: int
    status: str  # one of MESSAGE_STATUSES
    source_tx: str
    destination_tx: str | None  # the delivery (a Solana signature for dstEid 30168), once there is one
    destination_block_time: int | None


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireError(f"{what}: not an object")
    return value


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise WireError(f"{what}: not a non-empty string")
    return value


def parse_scan_message(item: Any) -> LayerZeroMessage:
    item = _obj(item, "message")
    pathway = _obj(item.get("pathway"), "pathway")
    source = _obj(item.get("source"), "source")
    destination = _obj(item.get("destination") or {}, "destination")
    status = _obj(item.get("status"), "status")
    name = _str(status.get("name"), "status.name")
    if name not in MESSAGE_STATUSES:
        raise WireError(f"status.name: unknown status {name!r}")
    guid = _str(item.get("guid"), "guid").lower()
    if not GUID_RE.fullmatch(guid):
        raise WireError("guid: not 0x + 64 hex")
    dst_tx = destination.get("tx") or {}
    dst_tx = _obj(dst_tx, "destination.tx")
    dst_hash = dst_tx.get("txHash")
    block_time = dst_tx.get("blockTimestamp")
    return LayerZeroMessage(
        guid=guid,
        src_eid=integer(pathway.get("srcEid"), "pathway.srcEid"),
        dst_eid=integer(pathway.get("dstEid"), "pathway.dstEid"),
        sender=_str(_obj(pathway.get("sender"), "pathway.sender").get("address"), "pathway.sender.address"),
        receiver=_str(
            _obj(pathway.get("receiver"), "pathway.receiver").get("address"), "pathway.receiver.address"
        ),
        nonce=integer(pathway.get("nonce"), "pathway.nonce"),
        status=name,
        source_tx=_str(_obj(source.get("tx"), "source.tx").get("txHash"), "source.tx.txHash"),
        destination_tx=_str(dst_hash, "destination.tx.txHash") if dst_hash else None,
        destination_block_time=None if block_time in (None, "") else integer(block_time, "blockTimestamp"),
    )


def parse_scan_messages(body: Any) -> list[LayerZeroMessage]:
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise WireError("LayerZero Scan answer has no data list")
    return [parse_scan_message(item) for item in body["data"]]


class LayerZeroScanReader:
    """The lookup, behind a circuit breaker like every observer."""

    name = "layerzero_scan"

    def __init__(
        self,
        base_url: str | None,
        client: httpx.AsyncClient,
        *,
        timeout: float = 2.0,
        failure_threshold: int = 3,
        cooldown_seconds: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.base_url = base_url.rstrip("/") if base_url else None
        self.client = client
        self.timeout = timeout
        self.breaker = Breaker(self.name, failure_threshold, cooldown_seconds, clock)
        self.upstream = RestUpstream(
            "LayerZero Scan", "GET /v1/messages/tx", "layerzero_scan", self.breaker, max_bytes
        )

    async def messages_by_source_tx(self, tx_hash: str) -> list[LayerZeroMessage]:
        """The messages the source transaction sent; [] until LayerZero Scan has indexed it."""
        if not isinstance(tx_hash, str) or not EVM_TX_HASH_RE.fullmatch(tx_hash):
            raise InvalidRequest("invalid_transaction_hash", "not an EVM transaction hash")
        if self.base_url is None:
            raise ObservationUnavailable(
                "layerzero_scan_not_configured", "no LayerZero Scan URL is configured"
            )
        body = await self.upstream.get_json(
            self.client, f"{self.base_url}/v1/messages/tx/{tx_hash}", self.timeout
        )
        if body is None:
            return []
        try:
            out = parse_scan_messages(body)
        except (ValueError, WireError) as exc:
            raise self.upstream.fail("layerzero_scan_invalid_response", "invalid_response", exc) from None
        self.breaker.success()
        return out

    async def delivery_for(self, tx_hash: str, guid: str) -> LayerZeroMessage | None:
        """The message of `guid` sent by `tx_hash`, or None (not indexed yet, or no such GUID there)."""
        want = guid.lower()
        return next((m for m in await self.messages_by_source_tx(tx_hash) if m.guid == want), None)
