"""AttestationReader on Circle Iris: `GET {base}/v2/messages/{sourceDomain}?transactionHash=0x..`.

404 is normal until Iris has indexed the burn: it is `[]`. An attestation of `"PENDING"` (or null) is None.
Iris sends numbers both as JSON integers and as decimal strings; both are accepted, floats never. When the
raw `message` is present, the fields are read from its bytes (the attested truth), and the decoded JSON is
only a fallback for messages not yet emitted in full.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import httpx

from routequote.core.field_rules import TRANSACTION_ID_PATTERN
from routequote.core.sessions.evidence import parse_cctp_message
from routequote.errors import InvalidRequest
from routequote.market.upstream import DEFAULT_MAX_BYTES
from routequote.observe._common import Breaker, RestUpstream, WireError, data_bytes, integer
from routequote.ports import CctpMessage, ObservationUnavailable

TX_ID = re.compile(TRANSACTION_ID_PATTERN)  # EVM hash or Solana signature


def _opt_int(value: Any, what: str) -> int | None:
    return None if value is None or value == "" else integer(value, what)


def _hex_or_none(value: Any, what: str) -> bytes | None:
    if value is None or value in ("", "0x", "PENDING"):
        return None
    return data_bytes(value, what)


def _bytes32_hex(value: Any) -> str | None:
    """A decoded address field as 0x + 64 hex (EVM addresses are left-padded); None if absent or not hex."""
    if not isinstance(value, str) or not value.startswith("0x"):
        return None
    raw = data_bytes(value, "mintRecipient")
    if len(raw) > 32:
        raise WireError("mintRecipient longer than 32 bytes")
    return "0x" + raw.rjust(32, b"\x00").hex()


def parse_message(item: Any) -> CctpMessage:
    if not isinstance(item, dict):
        raise WireError("message: not an object")
    decoded = item.get("decodedMessage") or {}
    if not isinstance(decoded, dict):
        raise WireError("decodedMessage: not an object")
    body = decoded.get("decodedMessageBody") or {}
    if not isinstance(body, dict):
        raise WireError("decodedMessageBody: not an object")
    message = _hex_or_none(item.get("message"), "message")
    attestation = _hex_or_none(item.get("attestation"), "attestation")
    status = item.get("status")
    if not isinstance(status, str):
        raise WireError("status: not a string")
    if message is not None and len(message) >= 148 + 228:
        m = parse_cctp_message(message)
        return CctpMessage(
            status=status,
            message=message,
            attestation=attestation,
            source_domain=m["source_domain"],
            destination_domain=m["destination_domain"],
            nonce=m["nonce"],
            amount=m["amount"],
            mint_recipient=m["mint_recipient"],
            max_fee=m["max_fee"],
            fee_executed=m["fee_executed"],
            min_finality_threshold=m["min_finality_threshold"],
            finality_threshold_executed=m["finality_threshold_executed"],
        )
    nonce = decoded.get("nonce", item.get("eventNonce"))
    return CctpMessage(
        status=status,
        message=message,
        attestation=attestation,
        source_domain=integer(decoded.get("sourceDomain"), "sourceDomain"),
        destination_domain=integer(decoded.get("destinationDomain"), "destinationDomain"),
        nonce=None if nonce is None else str(nonce),
        amount=_opt_int(body.get("amount"), "amount"),
        mint_recipient=_bytes32_hex(body.get("mintRecipient")),
        max_fee=_opt_int(body.get("maxFee"), "maxFee"),
        fee_executed=_opt_int(body.get("feeExecuted"), "feeExecuted"),
        min_finality_threshold=_opt_int(decoded.get("minFinalityThreshold"), "minFinalityThreshold"),
        finality_threshold_executed=_opt_int(
            decoded.get("finalityThresholdExecuted"), "finalityThresholdExecuted"
        ),
    )


def parse_messages(body: Any) -> list[CctpMessage]:
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise WireError("Iris answer has no messages list")
    return [parse_message(item) for item in body["messages"]]


class IrisAttestationReader:
    name = "circle_iris"

    def __init__(
        self,
        base_url: str | None,
        client: httpx.AsyncClient,
        *,
        timeout: float = 1.5,
        failure_threshold: int = 3,
        cooldown_seconds: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.base_url = base_url.rstrip("/") if base_url else None
        self.client = client
        self.timeout = timeout
        self.breaker = Breaker(self.name, failure_threshold, cooldown_seconds, clock)
        self.upstream = RestUpstream("Circle Iris", "GET /v2/messages", "iris", self.breaker, max_bytes)

    async def messages(self, source_domain: int, tx_hash: str) -> list[CctpMessage]:
        if not isinstance(tx_hash, str) or not TX_ID.match(tx_hash):
            raise InvalidRequest("invalid_transaction_hash", "not a transaction hash or signature")
        if isinstance(source_domain, bool) or not isinstance(source_domain, int) or source_domain < 0:
            raise InvalidRequest("invalid_cctp_domain", "a CCTP domain is a non-negative integer")
        if self.base_url is None:
            raise ObservationUnavailable(
                "attestation_service_not_configured", "no Circle Iris URL is configured"
            )
        url = f"{self.base_url}/v2/messages/{source_domain}"
        body = await self.upstream.get_json(
            self.client, url, self.timeout, params={"transactionHash": tx_hash}
        )
        if body is None:
            return []  # not indexed yet: normal for a while after the burn
        try:
            out = parse_messages(body)
        except (ValueError, WireError) as exc:
            raise self.upstream.fail("iris_invalid_response", "invalid_response", exc) from None
        self.breaker.success()
        return out
