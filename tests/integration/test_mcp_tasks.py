"""MCP tasks (`io.modelcontextprotocol/tasks`, 2026-07-28) on /mcp/v2, with the official MCP client: a host that
declares the extension and observes a transaction that is not final yet gets a task, and its claim resolves
to the session read once the session rests; a host without it gets the plain result; tasks/* without the
capability is -32021, an unknown task id is -32602."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import secrets
from collections.abc import Iterator
from typing import Any, ClassVar, Literal

import httpx
import mcp_types as mt
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.unit.sessions.corpus import FakeEvm, swap_receipts

from routequote.app import create_app
from routequote.client.approval import approval_for
from routequote.client.models import Quote
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.verify import verification_context

pytestmark = pytest.mark.asyncio

TASKS = "io.modelcontextprotocol/tasks"
INTENT = {
    "from_chain": "base",
    "from_token": "ETH",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 100,
}
WALLETS = {"base": "0x1111111111111111111111111111111111111111"}


class TaskParams(mt.RequestParams):
    taskId: str  # noqa: N815


class TasksGet(mt.Request[TaskParams, Literal["tasks/get"]]):
    name_param: ClassVar[str | None] = "taskId"  # the extension routes tasks/* by Mcp-Name = taskId
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams


class TaskState(mt.Result):
    model_config = ConfigDict(extra="allow")
    taskId: str  # noqa: N815
    status: str
    pollIntervalMs: int | None = None  # noqa: N815


class CreatedTask(TaskState):
    result_type: Literal["task"] = "task"


class Tasks(ClientExtension):
    """The requester side, as a host would write it: poll tasks/get until the task is terminal."""

    identifier = TASKS

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []
        self.polled: list[str] = []
        self.working = asyncio.Event()

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, task: CreatedTask, ctx: ClaimContext) -> mt.CallToolResult:
        self.created.append(task)
        while True:
            state = await ctx.session.send_request(TasksGet(params=TaskParams(taskId=task.taskId)), TaskState)
            self.polled.append(state.status)
            if state.status == "working":
                self.working.set()
                await asyncio.sleep(0.05)  # the server asks for 2 s; the test need not wait that long
                continue
            extra = state.model_extra or {}
            return mt.CallToolResult.model_validate(extra["result"])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeEvm]]:
    db = tmp_path_factory.mktemp("tasks") / "s.sqlite3"
    port = free_port()
    app = create_app(
        Settings(rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{db}", **OBSERVABLE)
    )
    fake = FakeEvm()
    app.state.sessions.evm = fake
    with running_server(app, port) as base:
        yield base, fake


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


async def open_session(c: Client) -> tuple[dict[str, Any], dict[str, Any]]:
    quote = (await c.call_tool("service_v2_quote", {**INTENT, "detail": "full"})).structured_content["quote"]
    key = "mcp-task-" + secrets.token_hex(4)
    approval = approval_for(Quote.from_raw(quote), "session", idempotency_key=key)
    ctx = verification_context(
        intent=INTENT,
        wallets=WALLETS,
        event_signer_public=None,
        approval_v3=approval,
        direct_route_summary=quote["direct_route_summary"],
    )
    secret = new_token()
    created = await c.call_tool(
        "service_v2_session_create",
        {
            **INTENT,
            "caller_approved": True,
            "wallets": WALLETS,
            "approval_v3": approval,
            "verification_context": ctx,
            "idempotency_key": key,
            "session_token": secret,
            "accept_modelled_bounds": True,
        },
    )
    assert created.is_error is False, created.structured_content
    session = created.structured_content["session"]
    call = {
        "session_token": secret,
        "session_id": session["session_id"],
        "verification_context": ctx,
        "accept_modelled_bounds": True,
    }
    return session, call


async def test_a_declaring_host_gets_a_task_that_completes_when_the_session_rests(
    served: tuple[str, FakeEvm],
) -> None:
    base, fake = served
    tasks = Tasks()
    async with Client(base + "/mcp/v2", mode="2026-07-28", extensions=[tasks]) as c:
        session, call = await open_session(c)
        hashes = swap_receipts(
            fake, session["current_action"]["unsigned_action"], 99_900_000, seed=41, confirmations=0
        )
        observing = asyncio.create_task(
            c.call_tool(
                "service_v2_session_observe",
                {**call, "idempotency_key": "observe-task-1", "transaction_hashes": hashes},
            )
        )
        await asyncio.wait_for(tasks.working.wait(), 60)  # bounds a hang only
        assert tasks.created[0].status == "working" and tasks.created[0].pollIntervalMs == 2000
        assert call["session_token"] not in tasks.created[0].taskId  # sealed, never readable
        # the chain moves on and the session is advanced (today by an observe; the watcher does it by itself)
        for h in hashes:  # final now
            fake.txs[h.lower()] = dataclasses.replace(fake.txs[h.lower()], confirmations=64)
        async with httpx.AsyncClient(base_url=base) as http:
            r = await http.post(
                f"/v2/session/{call['session_id']}/observe",
                json={"idempotency_key": "observe-rest-1"},
                headers={SESSION_HEADER: call["session_token"]},
            )
            assert r.status_code == 200, r.text
            assert r.json()["status"] == "complete", r.json()["status"]
        result = await asyncio.wait_for(observing, 60)
    assert result.is_error is False, result.structured_content
    assert result.structured_content["session"]["status"] == "complete"
    assert tasks.polled[0] == "working" and tasks.polled[-1] == "completed"


async def test_a_host_without_the_extension_gets_the_plain_result(served: tuple[str, FakeEvm]) -> None:
    base, fake = served
    async with Client(base + "/mcp/v2", mode="2026-07-28") as c:
        session, call = await open_session(c)
        hashes = swap_receipts(
            fake, session["current_action"]["unsigned_action"], 99_900_000, seed=42, confirmations=0
        )
        plain = await c.call_tool(
            "service_v2_session_observe",
            {**call, "idempotency_key": "observe-plain-1", "transaction_hashes": hashes},
        )
    assert plain.is_error is False
    assert plain.structured_content["session"]["status"] == "awaiting_source_receipt"


async def test_tasks_methods_need_the_capability_and_a_real_task_id(served: tuple[str, FakeEvm]) -> None:
    base, _ = served
    async with Client(base + "/mcp/v2", mode="2026-07-28") as plain:
        with pytest.raises(MCPError) as missing:
            await plain.session.send_request(TasksGet(params=TaskParams(taskId="rqt1.AAAA")), TaskState)
        assert missing.value.error.code == -32021
    async with Client(base + "/mcp/v2", mode="2026-07-28", extensions=[Tasks()]) as c:
        for forged in (
            "rqt1." + base64.urlsafe_b64encode(secrets.token_bytes(80)).decode(),
            "nope",
            "rqt1.!!",
        ):
            with pytest.raises(MCPError) as unknown:
                await c.session.send_request(TasksGet(params=TaskParams(taskId=forged)), TaskState)
            assert unknown.value.error.code == -32602 and forged not in unknown.value.error.message
