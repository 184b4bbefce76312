"""Where the composition root builds session webhooks and runs their deliverer beside the server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from routequote.config import Settings
from routequote.ports import Clock


def session_webhooks(settings: Settings, store: Any, key: Any, clock: Clock) -> Any:
    """Signed webhooks (webhooks/), kept beside the sessions in the SQL store; None for other stores."""
    from routequote.storage.retention import CappedSessionStore

    if not isinstance(store, CappedSessionStore):
        return None
    from routequote.storage.webhooks_sql import SqlWebhookStore
    from routequote.webhooks.service import Webhooks, WebhookSettings
    from routequote.webhooks.signing import server_key_seed

    allow = tuple(h.strip() for h in settings.webhook_allow_hosts.split(",") if h.strip())
    return Webhooks(
        SqlWebhookStore(store.inner),
        server_key_seed(key),
        WebhookSettings(allow_hosts=allow, interval_seconds=settings.webhook_interval_seconds),
        clock.now,
    )


@contextlib.asynccontextmanager
async def delivering(webhooks: Any) -> AsyncIterator[None]:
    """The webhook deliverer runs beside the server, in every worker (claims keep each event to one)."""
    stop = asyncio.Event()
    task = asyncio.create_task(webhooks.run(stop))
    try:
        yield
    finally:
        stop.set()
        await task
