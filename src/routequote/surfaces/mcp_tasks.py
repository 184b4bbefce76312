"""MCP tasks (`io.modelcontextprotocol/tasks`, the 2026-07-28 extension) for the v2 session tools.

A host that declares the extension on its `tools/call` and observes a transaction that leaves the session
waiting on the chain (`awaiting_source_receipt`, `awaiting_destination`) gets a task instead of the plain
result. The task is `working` while the session waits, and `completed` once it rests: the next action is
ready, the route is complete, or the session stopped (`reapproval_required`, `cancelled`, ...). Its result is
then exactly what `service_v2_session_get` answers at that moment. A host without the extension gets
today's plain results; `tasks/*` from it is refused with -32021.

The task id is stateless, so every replica answers `tasks/get`: it is the session call's arguments (its
token among them) sealed with AES-256-GCM under a key derived from the server's signing key. It is therefore
a capability like the session token itself; nothing about it is stored. `tasks/cancel` is acknowledged and
stops nothing: following a session costs nothing, and cancelling the session is `service_v2_session_cancel`.

A host need not poll `tasks/get`: `subscriptions/listen` with `notifications: {taskIds: [...]}` pushes
`notifications/tasks` as the task changes (`mcp_task_listen`).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import mcp_types as mt
import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from routequote.surfaces.mcp_task_listen import TaskListen

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
MISSING_CLIENT_CAPABILITY: Final = -32021
WAITING: Final = frozenset({"awaiting_source_receipt", "awaiting_destination"})
TASK_TOOLS: Final = {"service_v2_session_observe": "service_v2_session_get"}
POLL_INTERVAL_MS: Final = 2000
TTL_MS: Final = 24 * 3600 * 1000
_GET_FIELDS: Final = ("session_token", "session_id", "verification_context", "accept_modelled_bounds")
_SALT: Final = b"routequote/mcp-task-id/v1"
_PREFIX: Final = "rqt1."

ToolCall = Callable[[str, dict[str, Any]], Awaitable[mt.CallToolResult]]


class TaskIdParams(mt.RequestParams):
    taskId: str  # noqa: N815 (the extension's wire name)


class TaskUpdateParams(TaskIdParams):
    inputResponses: dict[str, Any] | None = None  # noqa: N815


def declared(meta: Mapping[str, Any] | None) -> bool:
    """Whether this request's per-request capabilities declare the tasks extension (2026-07-28 `_meta`)."""
    caps = (meta or {}).get(mt.CLIENT_CAPABILITIES_META_KEY)
    extensions = caps.get("extensions") if isinstance(caps, Mapping) else None
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def _iso(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class SessionTasks:
    def __init__(
        self, key_material: bytes, now: Callable[[], datetime], listen: TaskListen | None = None
    ) -> None:
        self._aead = AESGCM(HKDF(hashes.SHA256(), 32, salt=_SALT, info=b"task").derive(key_material))
        self.now = now
        self.listen = listen  # `subscriptions/listen` for `notifications/tasks` (none: tasks/get only)

    # ---- the sealed id -----------------------------------------------------------------------------

    def seal(self, tool: str, args: dict[str, Any], created: str) -> str:
        plain = orjson.dumps({"tool": tool, "args": args, "created": created})
        nonce = os.urandom(12)
        return (
            _PREFIX
            + base64.urlsafe_b64encode(nonce + self._aead.encrypt(nonce, plain, _PREFIX.encode())).decode()
        )

    def _open(self, task_id: str) -> dict[str, Any]:
        try:
            if not task_id.startswith(_PREFIX) or len(task_id) > 16_384:
                raise ValueError
            raw = base64.urlsafe_b64decode(task_id[len(_PREFIX) :])
            opened = orjson.loads(self._aead.decrypt(raw[:12], raw[12:], _PREFIX.encode()))
        except (InvalidTag, ValueError, orjson.JSONDecodeError):
            raise MCPError(
                code=mt.INVALID_PARAMS, message="Failed to retrieve task: Task not found"
            ) from None
        return dict(opened)

    # ---- on tools/call --------------------------------------------------------------------------------

    def task_for(self, tool: str, args: dict[str, Any], result: mt.CallToolResult) -> dict[str, Any] | None:
        """A CreateTaskResult when the call left the session waiting on the chain; None for the plain result."""
        follow = TASK_TOOLS.get(tool)
        session = (result.structured_content or {}).get("session")
        if follow is None or result.is_error or not isinstance(session, dict):
            return None
        if session.get("status") not in WAITING:
            return None
        created = _iso(self.now())
        get_args: dict[str, Any] = {k: args[k] for k in _GET_FIELDS if k in args}
        return {
            "resultType": "task",
            **self._task(self.seal(follow, get_args, created), "working", created, _waiting(session)),
        }

    def _task(self, task_id: str, status: str, created: str, message: str) -> dict[str, Any]:
        return {
            "taskId": task_id,
            "status": status,
            "statusMessage": message,
            "createdAt": created,
            "lastUpdatedAt": _iso(self.now()),
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    # ---- tasks/* ------------------------------------------------------------------------------------

    def session_of(self, task_id: str) -> tuple[str, str]:
        """The session id and token a task follows (-32602 for an id this server did not seal)."""
        args = self._open(task_id)["args"]
        return str(args.get("session_id")), str(args.get("session_token"))

    async def detail(self, task_id: str, call: ToolCall) -> dict[str, Any]:
        """The task as `tasks/get` answers it now: `working` while the session waits, else `completed` with
        the session read as its `result`."""
        opened = self._open(task_id)
        result = await call(str(opened["tool"]), dict(opened["args"]))
        session = (result.structured_content or {}).get("session")
        created = str(opened["created"])
        if not result.is_error and isinstance(session, dict) and session.get("status") in WAITING:
            return self._task(task_id, "working", created, _waiting(session))
        done = self._task(task_id, "completed", created, _resting(session, result))
        return {**done, "result": result.model_dump(by_alias=True, exclude_none=True, mode="json")}

    def working(self, task_id: str, status: str) -> dict[str, Any]:
        """The task while its session waits in `status` (what `detail` answers then, without a session read)."""
        return self._task(
            task_id, "working", str(self._open(task_id)["created"]), _waiting({"status": status})
        )

    def install(self, server: Server[Any], call: ToolCall) -> None:
        async def get(ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
            require_declared(params)
            return await self.detail(params.taskId, call)

        async def acknowledge(ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
            require_declared(params)
            self._open(params.taskId)
            return {}

        server.add_request_handler("tasks/get", TaskIdParams, get)
        server.add_request_handler("tasks/cancel", TaskIdParams, acknowledge)
        server.add_request_handler("tasks/update", TaskUpdateParams, acknowledge)
        server.extensions[TASKS_EXTENSION] = {}
        if self.listen is not None:
            self.listen.install(server, self, call)


def require_declared(params: mt.RequestParams) -> None:
    if not declared(params.meta):
        raise MCPError(
            code=MISSING_CLIENT_CAPABILITY,
            message="Missing required client capability",
            data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        )


def _waiting(session: Mapping[str, Any]) -> str:
    return f"session {session.get('status')}: the service follows the chain; nothing for you to sign yet"


def _resting(session: Any, result: mt.CallToolResult) -> str:
    if result.is_error or not isinstance(session, Mapping):
        return "the session could not be read; the result says why"
    return f"session {session.get('status')}, next: {session.get('next_operation')}"
