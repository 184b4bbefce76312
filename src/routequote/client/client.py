"""RouteQuoteClient (sync) and AsyncRouteQuoteClient (httpx): one request plan per operation, shared by both.

Every answer is validated before it is returned (models, custody flags everywhere, amount chaining, quote
hashes recomputed), and every prepared action runs through routequote.verify.verify_bundle against what the
caller itself holds: a bundle that fails is never returned. The client never signs and never submits."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from decimal import Decimal
from typing import Any

import httpx

from routequote.client.approval import approval_for
from routequote.client.errors import ServiceUnreachable
from routequote.client.events import SessionEvent, afollow_events, follow_events
from routequote.client.models import Capabilities, PreparedAction, Quote, Session, SessionView, Status
from routequote.client.plans import Call, Plans, T
from routequote.client.token import SessionHandle, SessionToken

USER_AGENT = "routequote-client/1"


class RouteQuoteClient(Plans):
    """Synchronous client. `transport` / `http` let tests and callers supply their own httpx plumbing."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        http: httpx.Client | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.base_url = base_url.rstrip("/")
        self._own = http is None
        self._http = http or httpx.Client(
            base_url=self.base_url, timeout=timeout, transport=transport, headers={"user-agent": USER_AGENT}
        )

    def __repr__(self) -> str:
        return f"RouteQuoteClient({self.base_url!r})"

    def __enter__(self) -> RouteQuoteClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._own:
            self._http.close()

    def _run(self, call: Call[T]) -> T:
        try:
            resp = self._http.request(
                call.method, call.path, json=call.body, params=call.params, headers=call.headers()
            )
        except httpx.TransportError as exc:
            raise ServiceUnreachable(f"{call.what}: {type(exc).__name__}") from None
        return self._finish(call, resp)

    def capabilities(self) -> Capabilities:
        return self._run(self.plan_capabilities())

    def status(self) -> Status:
        return self._run(self.plan_status())

    def quote(self, source: str, target: str, amount_usd: int | float | str | Decimal) -> Quote:
        """A validated quote for `source` -> `target` (chain:TOKEN each) at `amount_usd`."""
        return self._run(self.plan_quote(source, target, amount_usd))

    approval_for = staticmethod(approval_for)

    def prepare(
        self,
        quote: Quote,
        wallets: dict[str, str],
        *,
        approval: dict[str, str] | None = None,
        event_signer_public: str | None = None,
    ) -> PreparedAction:
        """The first unsigned action for `quote`, verified; `approval` defaults to the quote's own bounds."""
        return self._run(self.plan_prepare(quote, wallets, approval, event_signer_public))

    def create_session(
        self,
        quote: Quote,
        wallets: dict[str, str],
        *,
        approval: dict[str, str] | None = None,
        event_signer_public: str | None = None,
        token: SessionToken | None = None,
        on_created: Callable[[SessionHandle], None] | None = None,
    ) -> Session:
        """Create a session (token generated unless given); `session.handle` drives it from then on.

        `on_created(handle)` runs as soon as the server answered with a session id, before the answer and its
        action are verified: keep the handle there, since a refused action still leaves the session open (to
        cancel, or to continue once the cause is fixed)."""
        return self._run(
            self.plan_create_session(quote, wallets, approval, event_signer_public, token, on_created)
        )

    def read_session(self, handle: SessionHandle) -> Session:
        return self._run(self.plan_read_session(handle))

    def session_view(self, handle: SessionHandle, view: str) -> SessionView:
        return self._run(self.plan_session_view(handle, view))

    def next_action(self, handle: SessionHandle) -> PreparedAction | None:
        """The session's current unsigned action, verified, or None when there is nothing to sign."""
        return self.read_session(handle).current_action

    def observe(
        self,
        handle: SessionHandle,
        transaction_hashes: list[str] | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Session:
        return self._run(self.plan_observe(handle, transaction_hashes, idempotency_key))

    def refresh(self, handle: SessionHandle, *, idempotency_key: str | None = None) -> Session:
        return self._run(self.plan_key_only(handle, "refresh", idempotency_key))

    def cancel(self, handle: SessionHandle, *, idempotency_key: str | None = None) -> Session:
        return self._run(self.plan_key_only(handle, "cancel", idempotency_key))

    def events(
        self,
        handle: SessionHandle,
        *,
        last_event_id: str | None = None,
        max_reconnects: int = 5,
        retry_seconds: float = 1.0,
    ) -> Iterator[SessionEvent]:
        """The session's events in order (after `last_event_id`), as they happen, until the session rests;
        a dropped stream is resumed with Last-Event-ID (`client.events`)."""
        return follow_events(
            self._http,
            handle,
            self._raise_error,
            last_event_id=last_event_id,
            max_reconnects=max_reconnects,
            retry_seconds=retry_seconds,
        )


class AsyncRouteQuoteClient(Plans):
    """The asynchronous twin of RouteQuoteClient (same methods, awaited)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        http: httpx.AsyncClient | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.base_url = base_url.rstrip("/")
        self._own = http is None
        self._http = http or httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout, transport=transport, headers={"user-agent": USER_AGENT}
        )

    def __repr__(self) -> str:
        return f"AsyncRouteQuoteClient({self.base_url!r})"

    async def __aenter__(self) -> AsyncRouteQuoteClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def _run(self, call: Call[T]) -> T:
        try:
            resp = await self._http.request(
                call.method, call.path, json=call.body, params=call.params, headers=call.headers()
            )
        except httpx.TransportError as exc:
            raise ServiceUnreachable(f"{call.what}: {type(exc).__name__}") from None
        return self._finish(call, resp)

    async def capabilities(self) -> Capabilities:
        return await self._run(self.plan_capabilities())

    async def status(self) -> Status:
        return await self._run(self.plan_status())

    async def quote(self, source: str, target: str, amount_usd: int | float | str | Decimal) -> Quote:
        return await self._run(self.plan_quote(source, target, amount_usd))

    approval_for = staticmethod(approval_for)

    async def prepare(
        self,
        quote: Quote,
        wallets: dict[str, str],
        *,
        approval: dict[str, str] | None = None,
        event_signer_public: str | None = None,
    ) -> PreparedAction:
        return await self._run(self.plan_prepare(quote, wallets, approval, event_signer_public))

    async def create_session(
        self,
        quote: Quote,
        wallets: dict[str, str],
        *,
        approval: dict[str, str] | None = None,
        event_signer_public: str | None = None,
        token: SessionToken | None = None,
        on_created: Callable[[SessionHandle], None] | None = None,
    ) -> Session:
        return await self._run(
            self.plan_create_session(quote, wallets, approval, event_signer_public, token, on_created)
        )

    async def read_session(self, handle: SessionHandle) -> Session:
        return await self._run(self.plan_read_session(handle))

    async def session_view(self, handle: SessionHandle, view: str) -> SessionView:
        return await self._run(self.plan_session_view(handle, view))

    async def next_action(self, handle: SessionHandle) -> PreparedAction | None:
        return (await self.read_session(handle)).current_action

    async def observe(
        self,
        handle: SessionHandle,
        transaction_hashes: list[str] | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Session:
        return await self._run(self.plan_observe(handle, transaction_hashes, idempotency_key))

    async def refresh(self, handle: SessionHandle, *, idempotency_key: str | None = None) -> Session:
        return await self._run(self.plan_key_only(handle, "refresh", idempotency_key))

    async def cancel(self, handle: SessionHandle, *, idempotency_key: str | None = None) -> Session:
        return await self._run(self.plan_key_only(handle, "cancel", idempotency_key))

    def events(
        self,
        handle: SessionHandle,
        *,
        last_event_id: str | None = None,
        max_reconnects: int = 5,
        retry_seconds: float = 1.0,
    ) -> AsyncIterator[SessionEvent]:
        """`async for event in client.events(handle)`: the session's events in order until it rests."""
        return afollow_events(
            self._http,
            handle,
            self._raise_error,
            last_event_id=last_event_id,
            max_reconnects=max_reconnects,
            retry_seconds=retry_seconds,
        )
