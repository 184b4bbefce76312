"""A small JSON-RPC 2.0 client over httpx, with batching.

One `batch()` is one HTTP POST carrying a JSON array of requests (JSON-RPC 2.0 §6). Responses may come
back in any order and are matched by `id`. A node that refuses batches (some public RPCs answer a batch
with a single error object, or HTTP 4xx) is remembered and served by concurrent single calls instead.

Errors are typed so the live market can say *why* a source is down:

* `RpcTimeout`        the request did not finish within the client's timeout
* `RpcTransportError` connection refused / reset, HTTP status other than 200
* `RpcRateLimited`    HTTP 429 or JSON-RPC error -32005 / "rate limit" (capacity, not breakage)
* `RpcProtocolError`  the body is not a valid JSON-RPC response (garbage, wrong ids, missing result)
* `RpcCallError`      the node answered with a JSON-RPC error object for one call (e.g. a revert)
* `RpcTooLarge`       the body passed the size limit (reading stopped there: market.upstream)

An error's text is ours (the method and what went wrong); what the node wrote is kept apart in `upstream`
for the log, and answers use `market.upstream.public_reason`, never either text.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from typing import Any

import httpx

from routequote.market.upstream import DEFAULT_MAX_BYTES, ResponseTooLarge, fetch_bounded, loads


class RpcError(Exception):
    """Base of every JSON-RPC client failure; `kind` is a short machine-readable class, `method` the call
    (when known), `upstream` what the node itself wrote (log only)."""

    kind = "rpc_error"
    method: str | None = None
    upstream: str = ""


class RpcTimeout(RpcError):
    kind = "timeout"


class RpcTransportError(RpcError):
    kind = "transport_error"


class RpcRateLimited(RpcError):
    kind = "rate_limited"


class RpcProtocolError(RpcError):
    kind = "invalid_response"


class RpcTooLarge(RpcError):
    kind = "too_large"


class RpcCallError(RpcError):
    kind = "call_error"

    def __init__(self, method: str, code: Any, message: str, data: Any = None) -> None:
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        super().__init__(f"{method}: JSON-RPC error {code}")
        self.method = method
        self.code = code
        self.rpc_message = message
        self.upstream = message
        self.data = data


RATE_LIMIT_CODES = frozenset({-32005, 429})


def _is_rate_limit(err: dict[str, Any]) -> bool:
    msg = str(err.get("message", "")).lower()
    return err.get("code") in RATE_LIMIT_CODES or "rate limit" in msg or "too many requests" in msg


class JsonRpcClient:
    """JSON-RPC over HTTP POST. `client` is shared (connection pooling); `timeout` bounds each POST."""

    def __init__(
        self,
        url: str,
        client: httpx.AsyncClient,
        *,
        timeout: float = 1.5,
        max_batch: int = 1000,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_concurrent_singles: int = 8,
    ) -> None:
        self.url = url
        self.client = client
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_batch = max_batch
        self.batching = True  # turned off when the node refuses batches
        self.round_trips = 0  # HTTP requests sent (for tests and timings)
        # a node that refuses batches gets a batch's calls as single requests, at most this many at once (the
        # watcher's batched gatherer may hand it thousands)
        self.max_concurrent_singles = max(1, max_concurrent_singles)
        self._ids = itertools.count(1)

    async def _post(self, payload: Any) -> Any:
        self.round_trips += 1
        try:
            resp = await fetch_bounded(
                self.client,
                "POST",
                self.url,
                max_bytes=self.max_bytes,
                content=json.dumps(payload, separators=(",", ":")),
                headers={"content-type": "application/json"},
                timeout=self.timeout,
            )
        except ResponseTooLarge as exc:
            raise RpcTooLarge(f"RPC answer too large: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise RpcTimeout(f"no answer from the RPC node within {self.timeout:g} s") from exc
        except httpx.HTTPError as exc:
            raise RpcTransportError(f"RPC transport error: {type(exc).__name__}") from exc
        if resp.status_code == 429:
            raise RpcRateLimited("RPC node rate-limited the request (HTTP 429)")
        if resp.status_code != 200:
            raise RpcTransportError(f"RPC node answered HTTP {resp.status_code}")
        try:
            return await loads(resp.body)
        except ValueError as exc:
            raise RpcProtocolError("RPC node answered with a body that is not JSON") from exc

    async def _named(self, method: str, payload: Any) -> Any:
        """`_post`, its failure labelled with the (first) method it carried."""
        try:
            return await self._post(payload)
        except RpcError as exc:
            exc.method = exc.method or method
            raise

    @staticmethod
    def _result(method: str, item: Any) -> Any:
        if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
            raise RpcProtocolError(f"{method}: not a JSON-RPC 2.0 response object")
        if "error" in item and item["error"] is not None:
            err = item["error"]
            if not isinstance(err, dict):
                raise RpcProtocolError(f"{method}: malformed error object")
            if _is_rate_limit(err):
                limited = RpcRateLimited(f"{method}: rate limited")
                limited.upstream = str(err.get("message", ""))
                raise limited
            raise RpcCallError(method, err.get("code"), str(err.get("message", "")), err.get("data"))
        if "result" not in item:
            raise RpcProtocolError(f"{method}: response has neither result nor error")
        return item["result"]

    async def call(self, method: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        rid = next(self._ids)
        body = await self._named(
            method,
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": method,
                "params": list(params) if not isinstance(params, dict) else params,
            },
        )
        if isinstance(body, dict) and body.get("id") not in (rid, None):
            raise RpcProtocolError(f"{method}: response id does not match request id {rid}")
        return self._result(method, body)

    async def batch(
        self, calls: Sequence[tuple[str, Sequence[Any]]], *, return_exceptions: bool = False
    ) -> list[Any]:
        """Send `calls` as one batch (split at `max_batch`); results in call order.

        With `return_exceptions`, a per-call JSON-RPC error is returned in place as an `RpcCallError`
        (transport, protocol and rate-limit failures still raise: they break the whole batch).
        """
        if not calls:
            return []
        if not self.batching:
            return await self._singles(calls, return_exceptions)
        out: list[Any] = []
        for i in range(0, len(calls), self.max_batch):
            chunk = calls[i : i + self.max_batch]
            out.extend(await self._batch_chunk(chunk, return_exceptions))
        return out

    async def batch_within_limit(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """`batch(calls, return_exceptions=True)` whose answers stay within the size limit: a batch answered past
        it is split in two and each half sent again, down to a single call, whose too-large answer raises
        `RpcTooLarge` (the watcher's batched reads: many receipts in one answer must not fail them all)."""
        try:
            return await self.batch(calls, return_exceptions=True)
        except RpcTooLarge:
            if len(calls) <= 1:
                raise
        mid = len(calls) // 2
        return [*await self.batch_within_limit(calls[:mid]), *await self.batch_within_limit(calls[mid:])]

    async def _singles(
        self, calls: Sequence[tuple[str, Sequence[Any]]], return_exceptions: bool
    ) -> list[Any]:
        gate = asyncio.Semaphore(self.max_concurrent_singles)

        async def one(method: str, params: Sequence[Any]) -> Any:
            async with gate:
                try:
                    return await self.call(method, params)
                except RpcCallError as exc:
                    if return_exceptions:
                        return exc
                    raise

        return list(await asyncio.gather(*(one(m, p) for m, p in calls)))

    async def _batch_chunk(
        self, calls: Sequence[tuple[str, Sequence[Any]]], return_exceptions: bool
    ) -> list[Any]:
        ids = [next(self._ids) for _ in calls]
        payload = [
            {"jsonrpc": "2.0", "id": rid, "method": m, "params": list(p)}
            for rid, (m, p) in zip(ids, calls, strict=True)
        ]
        try:
            body = await self._named(calls[0][0], payload)
        except RpcTransportError:
            # some gateways answer a batch with HTTP 4xx: fall back to single calls for this node
            self.batching = False
            return await self._singles(calls, return_exceptions)
        if isinstance(body, dict) and "error" in body:
            err = body.get("error") or {}
            if isinstance(err, dict) and _is_rate_limit(err):
                raise RpcRateLimited("batch: rate limited")
            if len(calls) > 1:  # a batch answered by one error object: the node does not take batches
                self.batching = False
                return await self._singles(calls, return_exceptions)
        if not isinstance(body, list):
            if len(calls) == 1 and isinstance(body, dict):
                body = [body]
            else:
                raise RpcProtocolError("batch answered with something other than a JSON array")
        by_id: dict[Any, Any] = {}
        for item in body:
            if isinstance(item, dict):
                by_id[item.get("id")] = item
        out: list[Any] = []
        for rid, (method, _) in zip(ids, calls, strict=True):
            if rid not in by_id:
                raise RpcProtocolError(f"batch response lacks the answer to {method} (id {rid})")
            try:
                out.append(self._result(method, by_id[rid]))
            except RpcCallError as exc:
                if not return_exceptions:
                    raise
                out.append(exc)
        return out


class SourceDataError(RpcError):
    """An upstream answered, but with data that cannot be decoded or fails a sanity check."""

    kind = "invalid_data"


class StaleSourceData(RpcError):
    """An upstream answered with data older than allowed (an old block, slot or price update)."""

    kind = "stale_data"
