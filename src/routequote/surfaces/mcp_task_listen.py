"""`subscriptions/listen` on /mcp/v2 (MCP 2026-07-28, SEP-2575) with the tasks extension's `taskIds` (SEP-2663):
a host that holds a task from `service_v2_session_observe` is told when it changes (`notifications/tasks`)
instead of polling `tasks/get`.

- The host declares the extension on the listen request and sends `notifications: {taskIds: [...]}` (at most
  `MAX_TASK_IDS`); `taskIds` without the extension is -32021. A task id this server did not seal, or whose
  sealed token does not open its session (someone else's session), is refused: it is left out of the
  acknowledgement and nothing is sent for it; when no requested task id is honored, the listen is -32602.
- The first frame is `notifications/subscriptions/acknowledged` (the honored `taskIds`). Then, per task, a
  `notifications/tasks` with the task as `tasks/get` would answer it now, and another one each time it
  changes: each session event committed while it waits (`working`, the new status in `statusMessage`) and the
  event it comes to rest with (`completed`, its `result` inlined). Every frame carries the listen request's id
  in `_meta["io.modelcontextprotocol/subscriptionId"]`. Once every task is completed the stream ends with the
  listen result (the graceful close).
- Changes come from the session's event log (`sessions.event_stream.EventFeed`, as `GET /v2/session/{id}/events`):
  a commit of this process wakes the stream at once, another replica's at the feed's next version poll. No
  log is replayed: what happened before the listen is in the first snapshot.
- Bounded like the event stream: the listen takes one of the client's `event_stream_max_per_client` stream slots
  (shared with `GET /v2/session/{id}/events`; -32603 past it), holds one page of events and one frame at a
  time, and a host that reads nothing for `event_stream_send_timeout_seconds` loses the stream.
- `toolsListChanged` / `promptsListChanged` / `resourcesListChanged` are honored as the core asks; the lists
  never change, so nothing is ever sent for them (and such a stream stays open until the host closes it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import mcp_types as mt
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from routequote.errors import RateLimited, RouteQuoteError
from routequote.sessions.event_stream import EventFeed, StreamSlots, StreamStart
from routequote.surfaces.mcp_tasks import WAITING, require_declared

if TYPE_CHECKING:
    from routequote.surfaces.mcp_tasks import SessionTasks, ToolCall

log = structlog.get_logger("routequote.mcp.tasks")
MAX_TASK_IDS: Final = 16
LISTEN_METHOD: Final = "subscriptions/listen"
TASK_IDS: Final = "taskIds"  # the tasks extension's key in a subscription filter


class TaskNotification(mt.Notification[dict[str, Any], Literal["notifications/tasks"]]):
    method: Literal["notifications/tasks"] = "notifications/tasks"
    params: dict[str, Any]


def requested_task_ids(notifications: mt.SubscriptionFilter) -> list[str] | None:
    """The filter's `taskIds` (in order, once each), None when absent; -32602 when not a short list of ids."""
    raw = (notifications.model_extra or {}).get(TASK_IDS)
    if raw is None:
        return None
    if (
        not isinstance(raw, list)
        or len(raw) > MAX_TASK_IDS
        or not all(isinstance(t, str) and 0 < len(t) <= 16_384 for t in raw)
    ):
        raise MCPError(
            code=mt.INVALID_PARAMS,
            message=f"notifications.taskIds: a list of at most {MAX_TASK_IDS} task ids",
        )
    return list(dict.fromkeys(raw))


class TaskListen:
    def __init__(self, feed: EventFeed, slots: StreamSlots, send_timeout_seconds: float) -> None:
        self.feed = feed
        self.slots = slots
        self.send_timeout_seconds = send_timeout_seconds

    def install(self, server: Server[Any], tasks: SessionTasks, call: ToolCall) -> None:
        async def listen(
            ctx: ServerRequestContext[Any, Any], params: mt.SubscriptionsListenRequestParams
        ) -> mt.SubscriptionsListenResult:
            return await self._listen(ctx, params, tasks, call)

        server.add_request_handler(LISTEN_METHOD, mt.SubscriptionsListenRequestParams, listen)

    async def _honored(self, tasks: SessionTasks, requested: list[str]) -> dict[str, StreamStart]:
        """The requested tasks this host may follow, each with where its session's log stands now."""
        honored: dict[str, StreamStart] = {}
        for task_id in requested:
            try:
                session_id, token = tasks.session_of(task_id)
                honored[task_id] = await self.feed.start_now(session_id, token)
            except (MCPError, RouteQuoteError):
                continue  # not sealed here, or not this token's session: refused (not acknowledged)
        return honored

    async def _listen(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: mt.SubscriptionsListenRequestParams,
        tasks: SessionTasks,
        call: ToolCall,
    ) -> mt.SubscriptionsListenResult:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(code=mt.INVALID_REQUEST, message="subscriptions/listen requires a request id")
        asked = params.notifications
        requested = requested_task_ids(asked)
        if requested is not None:
            require_declared(params)
        lists = {
            "tools_list_changed": True if asked.tools_list_changed else None,
            "prompts_list_changed": True if asked.prompts_list_changed else None,
            "resources_list_changed": True if asked.resources_list_changed else None,
        }
        honored = await self._honored(tasks, requested or [])
        if requested and not honored and not any(lists.values()):
            raise MCPError(code=mt.INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        client = _client_key(ctx)
        try:
            self.slots.acquire(client)
        except RateLimited as exc:
            raise MCPError(
                code=mt.INTERNAL_ERROR, message="Subscription limit reached", data=exc.body()
            ) from None
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}

        async def send(notification: Any) -> None:
            with anyio.fail_after(self.send_timeout_seconds):  # a host that reads nothing loses the stream
                await ctx.session.send_notification(notification, related_request_id=subscription_id)

        try:
            filter_ = mt.SubscriptionFilter(
                **lists, **({TASK_IDS: list(honored)} if requested is not None else {})
            )
            await send(
                mt.SubscriptionsAcknowledgedNotification(
                    params=mt.SubscriptionsAcknowledgedNotificationParams(notifications=filter_, _meta=meta)
                )
            )
            async with anyio.create_task_group() as group:
                for task_id, start in honored.items():
                    group.start_soon(self._follow, task_id, start, tasks, call, send, meta)
            if any(lists.values()):
                await anyio.sleep_forever()  # the lists never change: open until the host closes it
        except* TimeoutError:
            log.info("mcp_task_listen_slow_reader_dropped", tasks=len(honored))
            raise MCPError(code=mt.INTERNAL_ERROR, message="the host read nothing: listen again") from None
        except* MCPError as failed:  # a follower's: its session's log could not be read
            raise failed.exceptions[0] from None
        finally:
            self.slots.release(client)
        return mt.SubscriptionsListenResult(_meta=meta)

    async def _follow(
        self,
        task_id: str,
        start: StreamStart,
        tasks: SessionTasks,
        call: ToolCall,
        send: Callable[[Any], Awaitable[None]],
        meta: dict[str, Any],
    ) -> None:
        """One task's notifications: now, at each event while its session waits, and when it rests (the last)."""
        last: dict[str, Any] | None = None

        async def push(task: dict[str, Any]) -> bool:
            nonlocal last
            seen = {k: v for k, v in task.items() if k != "lastUpdatedAt"}
            if seen != last:  # the same task twice in a row (a wake-up that changed nothing) is sent once
                last = seen
                await send(TaskNotification(params={**task, "_meta": meta}))
            return bool(task["status"] == "completed")

        if await push(await tasks.detail(task_id, call)):
            return
        async with contextlib.aclosing(self.feed.follow(start)) as events:
            async for event in events:
                if event.to_status in WAITING:
                    await push(tasks.working(task_id, event.to_status))
                elif await push(await tasks.detail(task_id, call)):
                    return
        raise MCPError(code=mt.INTERNAL_ERROR, message="the session's events could not be read: listen again")


def _client_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """The same per-client key as the REST event stream (its slots are shared)."""
    client = getattr(ctx.request, "client", None)
    return str(client.host) if client else "local"


__all__ = ["MAX_TASK_IDS", "TaskListen", "TaskNotification", "requested_task_ids"]
