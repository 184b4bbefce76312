"""One bounded delivery attempt to a webhook receiver.

The host is resolved here, every address is checked (`core/webhook_rules.py`), and the connection goes to
an address that was checked: the request carries the host name in its Host header and, over TLS, as the
server name the certificate must match. A second lookup (DNS rebinding) is never made. No redirect is
followed, no proxy from the environment is used, the connect and total times are short, and at most
`MAX_ANSWER_BYTES` of the answer are read. An attempt never raises: it says what happened.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Final

import httpx

from routequote.core.webhook_rules import WebhookUrl, checked_addresses
from routequote.errors import InvalidRequest

MAX_ANSWER_BYTES: Final = 4096
CONNECT_TIMEOUT_SECONDS: Final = 3.0
TOTAL_TIMEOUT_SECONDS: Final = 10.0

Resolver = Callable[[str, int], Awaitable[Collection[str]]]


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True)
class Attempt:
    delivered: bool
    status: int | None  # the receiver's HTTP status, when it answered
    reason: str  # a short class of what happened (never the URL, never the answer's body)


async def resolve(url: WebhookUrl, resolver: Resolver = system_resolver) -> str:
    """The address to connect to, or 400 webhook_url_invalid (the same rule at create and at delivery)."""
    try:
        addresses = await asyncio.wait_for(resolver(url.host, url.port), CONNECT_TIMEOUT_SECONDS)
    except (OSError, TimeoutError, UnicodeError):
        raise InvalidRequest("webhook_url_invalid", "webhook.url host does not resolve") from None
    return str(checked_addresses(url, addresses)[0])


async def deliver_once(
    url: WebhookUrl,
    body: bytes,
    headers: dict[str, str],
    *,
    resolver: Resolver = system_resolver,
    total_timeout: float = TOTAL_TIMEOUT_SECONDS,
    connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
) -> Attempt:
    try:
        address = await resolve(url, resolver)
    except InvalidRequest as exc:
        return Attempt(False, None, f"refused: {exc.message}")
    literal = f"[{address}]" if ":" in address else address
    request_headers = {
        **headers,
        "host": url.host if url.port in (80, 443) else f"{url.host}:{url.port}",
        "content-type": "application/json",
        "user-agent": "routequote-webhooks/1",
    }
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    timeout = httpx.Timeout(total_timeout, connect=connect_timeout)
    try:
        async with asyncio.timeout(total_timeout):
            async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=timeout) as client:
                request = client.build_request(
                    "POST",
                    f"{url.scheme}://{literal}:{url.port}{url.target}",
                    content=body,
                    headers=request_headers,
                    extensions=extensions,
                )
                response = await client.send(request, stream=True)
                try:
                    await _read_at_most(response, MAX_ANSWER_BYTES)
                finally:
                    await response.aclose()
    except TimeoutError:
        return Attempt(False, None, "timeout")
    except httpx.TimeoutException:
        return Attempt(False, None, "timeout")
    except httpx.HTTPError as exc:
        return Attempt(False, None, f"transport: {type(exc).__name__}")
    status = response.status_code
    if 200 <= status < 300:
        return Attempt(True, status, "delivered")
    if 300 <= status < 400:
        return Attempt(False, status, "redirect (not followed)")
    return Attempt(False, status, f"http {status}")


async def _read_at_most(response: httpx.Response, limit: int) -> int:
    """Read up to `limit` bytes of the answer and stop: a receiver answering megabytes costs nothing more."""
    seen = 0
    async for chunk in response.aiter_raw():
        seen += len(chunk)
        if seen >= limit:
            break
    return seen
