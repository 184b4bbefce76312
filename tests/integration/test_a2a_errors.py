"""A2A JSON-RPC errors as A2A 1.0 §9.5 requires (issue 40 item 3): each carries a `google.rpc.ErrorInfo` with a
fixed reason and domain per code, which the official a2a-sdk client reads; no error carries anything the caller
sent. The agent card is cacheable: Cache-Control, an ETag, and 304 to a conditional request."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest
from a2a.utils.errors import TaskNotFoundError
from tests.support.hostile import JSONRPC_HEADERS
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
MARK = "callerMARK7f3a"  # a caller-supplied string planted in every part of every request below
SECRET = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    port = free_port()
    with running_server(create_app(Settings(rate_limit="off", port=port)), port) as url:
        yield url


@pytest.fixture
async def client(served: str) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, served).get_agent_card()
        yield ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)


async def test_the_official_client_reads_the_error_info(client: Client, served: str) -> None:
    for call in (
        lambda: client.get_task(GetTaskRequest(id=f"{MARK}-{uuid.uuid4()}")),
        lambda: client.cancel_task(CancelTaskRequest(id=f"{MARK}-{uuid.uuid4()}")),
    ):
        with pytest.raises(TaskNotFoundError) as caught:
            await call()
        # the client hands over the ErrorInfo's metadata as the error's data (a2a-sdk JsonRpcTransport)
        assert caught.value.data == {"code": "-32001"}, caught.value.data
        assert MARK not in str(caught.value) and MARK not in caught.value.message
    async with httpx.AsyncClient(base_url=served, timeout=30) as http:
        body = {"jsonrpc": "2.0", "id": "g1", "method": "GetTask", "params": {"id": MARK}}
        r = await http.post("/a2a", json=body, headers=JSONRPC_HEADERS)
    assert r.json() == {
        "jsonrpc": "2.0",
        "id": "g1",
        "error": {
            "code": -32001,
            "message": "Task not found",
            "data": [
                {
                    "@type": ERROR_INFO,
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    "metadata": {"code": "-32001"},
                }
            ],
        },
    }


def _requests() -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """Requests that end in an error, with caller text in the method, params, ids, parts and headers."""
    message = {"role": "ROLE_USER", "messageId": MARK, "parts": [{"data": {"fromChain": MARK}}]}
    return [
        ("GetTask", {"id": MARK}, {}),
        ("GetTask", {"id": SECRET, "historyLength": MARK}, {}),
        ("CancelTask", {"id": MARK, "metadata": {MARK: MARK}}, {}),
        ("SubscribeToTask", {"id": MARK}, {}),
        ("GetExtendedAgentCard", {MARK: SECRET}, {}),
        ("CreateTaskPushNotificationConfig", {"taskId": MARK, "config": {"url": f"http://{MARK}"}}, {}),
        ("GetTaskPushNotificationConfig", {"taskId": MARK, "id": MARK}, {}),
        ("DeleteTaskPushNotificationConfig", {"taskId": MARK, "id": MARK}, {}),
        ("ListTaskPushNotificationConfigs", {"taskId": MARK}, {}),
        ("SendMessage", {"message": {**message, "role": MARK}}, {}),
        ("SendMessage", {"message": {**message, "parts": [{MARK: SECRET}]}}, {}),
        ("SendMessage", {"message": message, "configuration": {MARK: 1}}, {}),
        ("SendMessage", {"message": message}, {"A2A-Version": MARK}),
        ("SendMessage", MARK, {}),  # type: ignore[list-item]
        ("SendStreamingMessage", {"message": message}, {}),
        (MARK, {}, {}),
        (f"tasks/{MARK}/{SECRET}", {"id": MARK}, {}),
    ]


@pytest.mark.parametrize(("method", "params", "headers"), _requests(), ids=lambda v: str(v)[:24])
def test_no_error_carries_what_the_caller_sent(
    served: str, method: str, params: Any, headers: dict[str, str]
) -> None:
    body = {"jsonrpc": "2.0", "id": 41, "method": method, "params": params}
    with httpx.Client(base_url=served, timeout=30) as http:
        r = http.post("/a2a", content=json.dumps(body), headers={**JSONRPC_HEADERS, **headers})
    assert r.status_code < 500, r.text
    assert MARK not in r.text and SECRET[:16] not in r.text, r.text[:500]
    answer = r.json()
    if (
        "result" in answer
    ):  # the agent's own refusal: a data part of its reply (an A2A result, no JSON-RPC error)
        (part,) = answer["result"]["message"]["parts"]
        assert part["data"]["error"]["code"] == "request_rejected", answer
        return
    error = answer["error"]
    assert answer["id"] == 41 and set(error) == {"code", "message", "data"}, answer
    (info,) = error["data"]
    assert info["@type"] == ERROR_INFO and info["domain"] == "a2a-protocol.org", info
    assert info["reason"].isupper() and info["metadata"] == {"code": str(error["code"])}, info


@pytest.mark.parametrize("path", ["/.well-known/agent-card.json", "/.well-known/agent.json"])
def test_the_agent_card_is_cacheable_and_revalidates(served: str, path: str) -> None:
    with httpx.Client(base_url=served, timeout=30) as http:
        first = http.get(path)
        assert first.status_code == 200 and first.headers["cache-control"] == "public, max-age=300"
        etag = first.headers["etag"]
        again = http.get(path, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
        other = http.get(path, headers={"If-None-Match": 'W/"something-else"'})
        assert other.status_code == 200 and other.json() == first.json()
