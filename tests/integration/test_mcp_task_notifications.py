"""MCP task status notifications (`notifications/tasks` over `subscriptions/listen`, MCP 2026-07-28 with the tasks
extension) on /mcp/v2, with the official MCP client: a host that declares the extension takes the task of an
observe, listens for it, and is told when its session rests, in order, without ever calling tasks/get; a host
without the extension gets the plain result and no notification; a listen for a task id that is not the
host's own is refused."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import secrets
from collections.abc import Callable, Iterator
from typing import Any, Literal

import httpx
import mcp_types as mt
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict
from tests.integration.test_mcp_tasks import TASKS, CreatedTask, open_session
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.unit.sessions.corpus import FakeEvm, swap_receipts

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.surfaces.mcp_tasks import SessionTasks
from routequote.webhooks.signing import server_key_seed

pytestmark = pytest.mark.asyncio
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


class ListenParams(mt.RequestParams):
    notifications: dict[str, Any]


class ListenForTasks(mt.Request[ListenParams, Literal["subscriptions/listen"]]):
    method: Literal["subscriptions/listen"] = "subscriptions/listen"
    params: ListenParams


class Pushed(BaseModel):
    """A `notifications/tasks` frame's params: the task as tasks/get would answer it."""

    model_config = ConfigDict(extra="allow")
    taskId: str  # noqa: N815
    status: str


class ListeningTasks(ClientExtension):
    """The requester side a host writes to avoid a polling loop: take the task, listen for its notifications,
    and return the result the `completed` one carries. It never sends tasks/get."""

    identifier = TASKS

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []
        self.pushed: list[Pushed] = []
        self.changed = asyncio.Condition()
        self.listen_result: asyncio.Future[Any] | None = None

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [NotificationBinding(method="notifications/tasks", params_type=Pushed, handler=self.on_task)]

    async def on_task(self, task: Pushed) -> None:
        async with self.changed:
            self.pushed.append(task)
            self.changed.notify_all()

    async def wait_for(self, status: str) -> Pushed:
        async with self.changed:
            await self.changed.wait_for(lambda: any(p.status == status for p in self.pushed))
        return next(p for p in self.pushed if p.status == status)

    async def resolve(self, task: CreatedTask, ctx: ClaimContext) -> mt.CallToolResult:
        self.created.append(task)
        listen = ListenForTasks(params=ListenParams(notifications={"taskIds": [task.taskId]}))
        self.listen_result = asyncio.ensure_future(
            ctx.session.send_request(listen, mt.SubscriptionsListenResult)
        )
        completed = await self.wait_for("completed")
        return mt.CallToolResult.model_validate((completed.model_extra or {})["result"])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeEvm, SessionTasks]]:
    db = tmp_path_factory.mktemp("task-notify") / "s.sqlite3"
    port = free_port()
    app = create_app(
        Settings(rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{db}", **OBSERVABLE)
    )
    fake = FakeEvm()
    app.state.sessions.evm = fake
    # the server's own sealing, to make a task id that names another session with this host's token
    sealer = SessionTasks(server_key_seed(app.state.signing_key.private), app.state.service.clock.now)
    with running_server(app, port) as base:
        yield base, fake, sealer


async def rest_observe(base: str, call: dict[str, Any], key: str) -> str:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        r = await http.post(
            f"/v2/session/{call['session_id']}/observe",
            json={"idempotency_key": key},
            headers={SESSION_HEADER: call["session_token"]},
        )
    assert r.status_code == 200, r.text
    return str(r.json()["status"])


async def test_a_listening_host_is_told_when_its_task_completes_without_polling(
    served: tuple[str, FakeEvm, SessionTasks],
) -> None:
    base, fake, _ = served
    tasks = ListeningTasks()
    acknowledged: list[Any] = []

    async def messages(message: Any) -> None:
        if isinstance(message, mt.SubscriptionsAcknowledgedNotification):
            acknowledged.append(message.params)

    async with Client(base + "/mcp/v2", mode="2026-07-28", extensions=[tasks], message_handler=messages) as c:
        session, call = await open_session(c)
        hashes = swap_receipts(
            fake, session["current_action"]["unsigned_action"], 99_900_000, seed=51, confirmations=0
        )
        observing = asyncio.create_task(
            c.call_tool(
                "service_v2_session_observe",
                {**call, "idempotency_key": "observe-listen-1", "transaction_hashes": hashes},
            )
        )
        working = await asyncio.wait_for(tasks.wait_for("working"), 60)  # bounds a hang only
        task_id = tasks.created[0].taskId
        assert working.taskId == task_id
        assert "awaiting_source_receipt" in str((working.model_extra or {})["statusMessage"])
        # the chain moves on; the session is advanced by an observe over REST (the watcher would do it alone)
        for h in hashes:
            fake.txs[h.lower()] = dataclasses.replace(fake.txs[h.lower()], confirmations=64)
        assert await rest_observe(base, call, "observe-listen-rest-1") == "complete"
        result = await asyncio.wait_for(observing, 60)
        assert tasks.listen_result is not None
        ended = await asyncio.wait_for(tasks.listen_result, 60)  # the stream ends once its task is completed
    assert result.is_error is False, result.structured_content
    assert result.structured_content["session"]["status"] == "complete"
    assert [p.status for p in tasks.pushed] == ["working", "completed"]
    assert all(p.taskId == task_id for p in tasks.pushed)
    listen_ids = {(p.model_extra or {})["_meta"][SUBSCRIPTION_ID] for p in tasks.pushed}
    assert len(acknowledged) == 1 and acknowledged[0].notifications.model_extra == {"taskIds": [task_id]}
    assert listen_ids == {acknowledged[0].meta[SUBSCRIPTION_ID]} == {ended.meta[SUBSCRIPTION_ID]}


async def test_a_host_without_the_extension_gets_nothing_extra(
    served: tuple[str, FakeEvm, SessionTasks],
) -> None:
    base, fake, _ = served
    seen: list[Any] = []

    async def messages(message: Any) -> None:
        seen.append(message)

    async with Client(base + "/mcp/v2", mode="2026-07-28", message_handler=messages) as c:
        session, call = await open_session(c)
        hashes = swap_receipts(
            fake, session["current_action"]["unsigned_action"], 99_900_000, seed=52, confirmations=0
        )
        plain = await c.call_tool(
            "service_v2_session_observe",
            {**call, "idempotency_key": "observe-plain-listen-1", "transaction_hashes": hashes},
        )
        for h in hashes:
            fake.txs[h.lower()] = dataclasses.replace(fake.txs[h.lower()], confirmations=64)
        assert await rest_observe(base, call, "observe-plain-rest-1") == "complete"
        with pytest.raises(MCPError) as missing:  # task notifications need the extension declared
            listen = ListenForTasks(params=ListenParams(notifications={"taskIds": ["rqt1.AAAA"]}))
            await c.session.send_request(listen, mt.SubscriptionsListenResult)
        assert missing.value.error.code == -32021
    assert plain.is_error is False
    assert plain.structured_content["session"]["status"] == "awaiting_source_receipt"
    assert seen == []  # no notification of any kind reached the host


async def test_a_listen_for_a_task_that_is_not_the_hosts_is_refused(
    served: tuple[str, FakeEvm, SessionTasks],
) -> None:
    base, _, sealer = served
    async with Client(base + "/mcp/v2", mode="2026-07-28", extensions=[ListeningTasks()]) as c:
        mine, my_call = await open_session(c)
        theirs, _ = await open_session(c)
        # this host's token on the other session's id, sealed as the server seals task ids
        other = {**my_call, "session_id": theirs["session_id"]}
        someone_elses = sealer.seal("service_v2_session_get", other, "2026-11-28T00:00:00.000Z")
        # a real session with the right token, sealed under another server's key
        foreign = SessionTasks(os.urandom(32), sealer.now).seal(
            "service_v2_session_get", my_call, "2026-11-28T00:00:00.000Z"
        )
        forged = "rqt1." + base64.urlsafe_b64encode(secrets.token_bytes(80)).decode()
        for malformed in ("rqt1.AAAA", [f"rqt1.{i}" for i in range(17)], [3]):
            with pytest.raises(MCPError) as bad:  # not a list of at most 16 task ids
                listen = ListenForTasks(params=ListenParams(notifications={"taskIds": malformed}))
                await asyncio.wait_for(c.session.send_request(listen, mt.SubscriptionsListenResult), 60)
            assert bad.value.error.code == -32602
        for refused in ([someone_elses], [foreign], [forged], [someone_elses, foreign, forged]):
            with pytest.raises(MCPError) as unknown:
                listen = ListenForTasks(params=ListenParams(notifications={"taskIds": refused}))
                await asyncio.wait_for(c.session.send_request(listen, mt.SubscriptionsListenResult), 60)
            assert unknown.value.error.code == -32602
        # the host's own task (its session rests: action_ready), asked beside someone else's: only its own
        # is acknowledged, and its one notification is `completed`, after which the stream ends
        own = sealer.seal("service_v2_session_get", my_call, "2026-11-28T00:00:00.000Z")
    listener_tasks = ListeningTasks()
    acknowledged: list[Any] = []

    async def messages(message: Any) -> None:
        if isinstance(message, mt.SubscriptionsAcknowledgedNotification):
            acknowledged.append(message.params)

    async with Client(
        base + "/mcp/v2", mode="2026-07-28", extensions=[listener_tasks], message_handler=messages
    ) as listener:
        listen = ListenForTasks(params=ListenParams(notifications={"taskIds": [someone_elses, own]}))
        ended = await asyncio.wait_for(
            listener.session.send_request(listen, mt.SubscriptionsListenResult), 60
        )
        pushed = await asyncio.wait_for(listener_tasks.wait_for("completed"), 60)
    assert acknowledged[0].notifications.model_extra == {"taskIds": [own]}
    assert ended.meta[SUBSCRIPTION_ID] == acknowledged[0].meta[SUBSCRIPTION_ID]
    assert [p.taskId for p in listener_tasks.pushed] == [own] and pushed.status == "completed"
    result = mt.CallToolResult.model_validate((pushed.model_extra or {})["result"])
    assert result.structured_content["session"]["status"] == "action_ready"


async def test_listens_take_the_clients_event_stream_slots(tmp_path: Any) -> None:
    """A listen holds one of the client's event-stream slots (shared with GET /v2/session/{id}/events): past the
    cap it is refused, and a slot comes back when the host closes its stream."""
    port = free_port()
    app = create_app(
        Settings(
            rate_limit="off",
            port=port,
            database_url=f"sqlite+aiosqlite:///{tmp_path / 's.sqlite3'}",
            event_stream_max_per_client=1,
            **OBSERVABLE,
        )
    )
    slots = app.state.event_slots
    lists = ListenParams(notifications={"toolsListChanged": True})  # honored; never fires: stays open
    with running_server(app, port) as base:
        async with Client(base + "/mcp/v2", mode="2026-07-28") as holder:
            held = asyncio.create_task(
                holder.session.send_request(ListenForTasks(params=lists), mt.SubscriptionsListenResult)
            )
            await until(lambda: slots.open_streams() == 1)  # the first listen holds the client's one slot
            async with Client(base + "/mcp/v2", mode="2026-07-28") as second:
                with pytest.raises(MCPError) as refused:
                    listen = ListenForTasks(params=lists)
                    await asyncio.wait_for(
                        second.session.send_request(listen, mt.SubscriptionsListenResult), 60
                    )
                assert refused.value.error.code == -32603
            held.cancel()
        await until(lambda: slots.open_streams() == 0)  # the host closed its stream: its slot came back


async def until(condition: Callable[[], bool]) -> None:
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(wait(), 60)  # bounds a hang only


async def test_a_change_committed_by_another_replica_reaches_the_listen(tmp_path: Any) -> None:
    """Two replicas on one store: the host listens on one, the session is advanced through the other, and the
    listen learns it from the log (the event feed's version poll), not from its own process."""
    db = f"sqlite+aiosqlite:///{tmp_path / 's.sqlite3'}"
    fake = FakeEvm()
    apps = []
    for _ in range(2):
        port = free_port()
        app = create_app(Settings(rate_limit="off", port=port, database_url=db, **OBSERVABLE))
        app.state.sessions.evm = fake
        apps.append((app, port))
    tasks = ListeningTasks()
    with running_server(*apps[0]) as listened, running_server(*apps[1]) as other:
        async with Client(listened + "/mcp/v2", mode="2026-07-28", extensions=[tasks]) as c:
            session, call = await open_session(c)
            hashes = swap_receipts(
                fake, session["current_action"]["unsigned_action"], 99_900_000, seed=54, confirmations=0
            )
            observing = asyncio.create_task(
                c.call_tool(
                    "service_v2_session_observe",
                    {**call, "idempotency_key": "observe-replica-1", "transaction_hashes": hashes},
                )
            )
            await asyncio.wait_for(tasks.wait_for("working"), 60)  # bounds a hang only
            for h in hashes:
                fake.txs[h.lower()] = dataclasses.replace(fake.txs[h.lower()], confirmations=64)
            assert await rest_observe(other, call, "observe-replica-rest-1") == "complete"
            result = await asyncio.wait_for(observing, 60)
            assert tasks.listen_result is not None
            ended = await asyncio.wait_for(
                tasks.listen_result, 60
            )  # the graceful close, on the first replica
    assert result.structured_content["session"]["status"] == "complete"
    assert [p.status for p in tasks.pushed] == ["working", "completed"]
    assert ended.meta is not None and SUBSCRIPTION_ID in ended.meta
