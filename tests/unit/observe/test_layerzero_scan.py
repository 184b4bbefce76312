"""LayerZeroScanReader on `/v1/messages/tx/{tx}` answers in LayerZero Scan's documented shape
(tests/recordings/observe/layerzero_scan_messages.json): the delivery is found by source transaction and GUID;
not indexed yet is []; a malformed or unknown answer opens the breaker and is unavailable, never guessed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from routequote.errors import InvalidRequest
from routequote.observe.layerzero_scan import LayerZeroMessage, LayerZeroScanReader
from routequote.ports import ObservationUnavailable

REC = json.loads(
    (
        Path(__file__).resolve().parents[2] / "recordings" / "observe" / "layerzero_scan_messages.json"
    ).read_text()
)
T = TypeVar("T")


def run(go: Callable[[httpx.AsyncClient], Awaitable[T]], transport: httpx.MockTransport) -> T:
    async def main() -> T:
        async with httpx.AsyncClient(transport=transport) as client:
            return await go(client)

    return asyncio.run(main())


def read(answer: httpx.Response | Exception, *, guid: str | None = None) -> tuple[Any, list[str]]:
    urls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        urls.append(str(request.url))
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def go(client: httpx.AsyncClient) -> Any:
        reader = LayerZeroScanReader("https://scan.invalid/", client)
        if guid is not None:
            return await reader.delivery_for(REC["source_tx"], guid)
        return await reader.messages_by_source_tx(REC["source_tx"])

    return run(go, httpx.MockTransport(handler)), urls


def test_delivered_message_names_its_destination_transaction() -> None:
    (m,), urls = read(httpx.Response(200, json=REC["delivered"]))
    assert urls == [f"https://scan.invalid/v1/messages/tx/{REC['source_tx']}"]
    assert isinstance(m, LayerZeroMessage)
    assert (m.guid, m.src_eid, m.dst_eid, m.nonce, m.status) == (REC["guid"], 30416, 30168, 7, "DELIVERED")
    assert m.source_tx == REC["source_tx"] and m.destination_tx and m.destination_block_time == 1795400000


def test_inflight_has_no_destination_and_the_guid_picks_the_message() -> None:
    (m,), _ = read(httpx.Response(200, json=REC["inflight"]))
    assert m.status == "INFLIGHT" and m.destination_tx is None
    got, _ = read(httpx.Response(200, json=REC["two_messages"]), guid=REC["guid"])
    assert got is not None and got.guid == REC["guid"] and got.status == "INFLIGHT"
    none, _ = read(httpx.Response(200, json=REC["delivered"]), guid="0x" + "00" * 32)
    assert none is None


@pytest.mark.parametrize("answer", [httpx.Response(404), httpx.Response(200, json={"data": []})])
def test_not_indexed_yet_is_empty(answer: httpx.Response) -> None:
    assert read(answer)[0] == []


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (httpx.Response(200, json=REC["malformed_float_nonce"]), "layerzero_scan_invalid_response"),
        (httpx.Response(200, json=REC["unknown_status"]), "layerzero_scan_invalid_response"),
        (httpx.Response(200, json={"messages": []}), "layerzero_scan_invalid_response"),
        (httpx.Response(429), "layerzero_scan_rate_limited"),
        (httpx.Response(503), "layerzero_scan_http_503"),
        (httpx.ConnectTimeout("slow"), "layerzero_scan_timeout"),
    ],
)
def test_bad_answers_are_unavailable(answer: Any, reason: str) -> None:
    with pytest.raises(ObservationUnavailable) as exc:
        read(answer)
    assert exc.value.reason == reason


def test_bad_hash_and_missing_url_are_refused() -> None:
    async def bad(client: httpx.AsyncClient) -> Any:
        return await LayerZeroScanReader("https://scan.invalid", client).messages_by_source_tx("0x12")

    with pytest.raises(InvalidRequest):
        run(bad, httpx.MockTransport(lambda r: httpx.Response(200)))

    async def unconfigured(client: httpx.AsyncClient) -> Any:
        return await LayerZeroScanReader(None, client).messages_by_source_tx(REC["source_tx"])

    with pytest.raises(ObservationUnavailable):
        run(unconfigured, httpx.MockTransport(lambda r: httpx.Response(200)))
