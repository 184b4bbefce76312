"""The A2A prepare skill over real HTTP with the official a2a-sdk client: one-shot prepare on EVM and
Solana routes (bundle verified with the caller-side verifier, self-verifying wallet handoff), and the
hostile cases, each refused with a structured error before anything is created."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest
from solders.keypair import Keypair
from tests.support.a2a import CAMEL, narrow

from routequote.core.actions.bundle import payload_sha256
from routequote.core.hashing import canonical_sha256
from routequote.surfaces.a2a_agent import verify_handoff
from routequote.verify import verification_context, verify_bundle

EVM_A = "0x1111111111111111111111111111111111111111"
EVM_B = "0x2222222222222222222222222222222222222222"
EVM_C = "0x3333333333333333333333333333333333333333"


@pytest.fixture
async def client(served: tuple[str, Any]) -> AsyncIterator[Client]:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        assert "prepare-first-unsigned-action" in {s.id for s in card.skills}
        yield ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)


async def send(client: Client, payload: dict[str, Any]) -> dict[str, Any]:
    msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_data_part(payload)])
    replies = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
    assert len(replies) == 1
    (data,) = get_data_parts(replies[0].message.parts)
    return narrow(data)


class Caller:
    """What a careful agent does: quote over A2A, approve one mode, build the verification context."""

    def __init__(
        self, client: Client, intent: dict[str, Any], wallets: dict[str, str], signer: str | None = None
    ):
        self.client, self.intent, self.wallets, self.signer = client, intent, wallets, signer

    async def quote(self) -> dict[str, Any]:
        reply = await send(self.client, {**{CAMEL[k]: v for k, v in self.intent.items()}, "detail": "full"})
        self.q = reply["quote"]
        return self.q

    def approval(self, mode: str = "one_shot", **over: Any) -> dict[str, Any]:
        c = self.q["continuation_v3"]
        return {
            "version": c["approval_v3_version"],
            "quote_id": self.q["quote_id"],
            "quote_fingerprint": c["quote_fingerprint"],
            "selection_status": "selected",
            "selected_mode": mode,
            "maximum_input_base": c["input_base_bounds"]["maximum"],
            "minimum_output_base": c["minimum_output_base"],
            "direct_route_summary_sha256": c["direct_route_summary_sha256"],
            "idempotency_key": "a2a-" + uuid.uuid4().hex[:16],
            **over,
        }

    def context(self, approval: dict[str, Any], **over: Any) -> dict[str, Any]:
        args = {
            "intent": self.intent,
            "wallets": self.wallets,
            "event_signer_public": self.signer,
            "approval_v3": approval,
            "direct_route_summary": self.q["direct_route_summary"],
            **over,
        }
        return verification_context(**args)

    def message(
        self, approval: dict[str, Any] | None, ctx: dict[str, Any] | None, **over: Any
    ) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "operation": "prepare",
            "callerApproved": True,
            **{CAMEL[k]: v for k, v in self.intent.items()},
            "wallets": self.wallets,
            # this server keeps the development fee placeholders: the caller accepts that explicitly
            # (the refusal without it: test_prepare_refused_while_the_fee_recipient_is_a_placeholder)
            "acceptUnconfiguredFeeRecipient": True,
            # and prices from the embedded snapshot: its bounds are modelled, accepted explicitly
            # (the refusal without it: test_prepare_refused_while_the_bounds_are_modelled)
            "acceptModelledBounds": True,
        }
        if self.signer is not None:
            msg["eventSignerPublic"] = self.signer
        if approval is not None:
            msg["approvalV3"] = approval
        if ctx is not None:
            msg["verificationContext"] = ctx
        msg.update(over)
        return {k: v for k, v in msg.items() if v is not None}


def check_prepared(reply: dict[str, Any], caller: Caller, approval: dict[str, Any]) -> dict[str, Any]:
    assert set(reply) == {"bundle", "guidance", "action_verification", "caller_wallet_handoff"}, reply
    bundle = reply["bundle"]
    assert bundle["payload_sha256"] == payload_sha256(bundle)
    findings = verify_bundle(
        bundle,
        intent=caller.intent,
        wallets=caller.wallets,
        now_unix=int(time.time()),
        approval_v3=approval,
        direct_route_summary=caller.q["direct_route_summary"],
        event_signer_public=caller.signer,
        accept_modelled_bounds=True,  # the embedded market
    )
    assert [f for f in findings if f.severity == "error"] == []
    assert reply["action_verification"]["verified"] is True
    # modelled bounds, accepted: the verification, the handoff and the guidance say so in words
    assert reply["action_verification"]["bounds"]["accepted_as_modelled"] is True
    assert "bounds_modelled_accepted" in {w["code"] for w in reply["action_verification"]["warnings"]}
    assert reply["caller_wallet_handoff"]["bounds"]["modelled_not_live"] is True
    assert reply["guidance"]["bounds"]["basis"] == "modelled"
    handoff = reply["caller_wallet_handoff"]
    assert verify_handoff(handoff, bundle) == []
    assert handoff["bundle_payload_sha256"] == bundle["payload_sha256"]
    assert handoff["automatic_invocation_forbidden"] is True and handoff["adapter_chains_actions"] is False
    tampered = {**handoff, "route": "solana:SOL->base:ETH"}
    assert "handoff_sha256_mismatch" in verify_handoff(tampered, bundle)
    g = reply["guidance"]
    assert g["transaction_signed"] is False and g["transaction_submitted"] is False
    assert g["automatic_invocation_forbidden"] is True
    # the preflight, summarised before signing: this server's RPC URLs lead nowhere, so its reads are unread
    pf = bundle["preflight"]
    unread = [f["message"] for f in pf["findings"] if f["code"] == "unknown"]
    assert pf["checked"] is True and unread
    assert g["preflight"]["unread"] == unread and g["preflight"]["blocking"] == []
    assert g["preflight"]["ok"] is True and g["preflight"]["advice_only"] is True
    assert g["preflight"]["summary"].startswith("preflight: nothing that was read blocks this route, but")
    assert bundle["signed"] is False and bundle["submitted"] is False
    assert bundle["quote_binding"]["quote_id"] == approval["quote_id"]
    return handoff


async def test_prepare_evm_one_shot(client: Client) -> None:
    intent = {
        "from_chain": "base",
        "from_token": "USDC",
        "to_chain": "arbitrum",
        "to_token": "USDC",
        "amount_usd": 100,
    }
    caller = Caller(client, intent, {"base": EVM_A, "arbitrum": EVM_B})
    await caller.quote()
    approval = caller.approval()
    reply = await send(client, caller.message(approval, caller.context(approval)))
    handoff = check_prepared(reply, caller, approval)
    assert handoff["kind"] == "eip1193_eth_sendTransaction"
    txs = reply["bundle"]["unsigned_action"]["transactions"]
    assert [r["params"][0]["to"] for r in handoff["requests"]] == [t["to"] for t in txs]
    assert {r["params"][0]["chainId"] for r in handoff["requests"]} == {hex(8453)}


async def test_prepare_refused_while_the_fee_recipient_is_a_placeholder(client: Client) -> None:
    intent = {
        "from_chain": "base",
        "from_token": "USDC",
        "to_chain": "arbitrum",
        "to_token": "USDC",
        "amount_usd": 100,
    }
    caller = Caller(client, intent, {"base": EVM_A, "arbitrum": EVM_B})
    await caller.quote()
    approval = caller.approval()
    message = caller.message(approval, caller.context(approval))
    del message["acceptUnconfiguredFeeRecipient"]
    reply = await send(client, message)
    assert "bundle" not in reply and "caller_wallet_handoff" not in reply, reply
    error = reply["error"]
    assert error["reason_class"] == "prepared_action_failed_verification"
    assert "fee_recipient_not_configured" in {f["code"] for f in error["findings"]}
    bad = await send(client, {**message, "acceptUnconfiguredFeeRecipient": "yes"})
    assert bad["error"]["reason_class"] == "wrong_type"


async def test_prepare_refused_while_the_bounds_are_modelled(client: Client) -> None:
    intent = {
        "from_chain": "base",
        "from_token": "ETH",
        "to_chain": "base",
        "to_token": "USDC",
        "amount_usd": 100,
    }
    caller = Caller(client, intent, {"base": EVM_A})
    await caller.quote()
    approval = caller.approval()
    message = caller.message(approval, caller.context(approval))
    del message["acceptModelledBounds"]
    reply = await send(client, message)
    assert "bundle" not in reply and "caller_wallet_handoff" not in reply, reply
    error = reply["error"]
    assert error["reason_class"] == "prepared_action_failed_verification"
    assert [f["code"] for f in error["findings"]] == ["bounds_modelled_not_live"]
    assert "modelled from the embedded snapshot of" in error["findings"][0]["message"]
    bad = await send(client, {**message, "acceptModelledBounds": 1})
    assert bad["error"]["reason_class"] == "wrong_type"


async def test_prepare_solana_one_shot(client: Client) -> None:
    intent = {
        "from_chain": "solana",
        "from_token": "USDC",
        "to_chain": "base",
        "to_token": "USDC",
        "amount_usd": 250,
    }
    wallet, signer = str(Keypair().pubkey()), str(Keypair().pubkey())
    caller = Caller(client, intent, {"solana": wallet, "base": EVM_B}, signer)
    await caller.quote()
    approval = caller.approval()
    reply = await send(client, caller.message(approval, caller.context(approval)))
    handoff = check_prepared(reply, caller, approval)
    assert handoff["kind"] == "solana_wallet_standard"
    assert handoff["transaction"]["required_signers"] == [wallet, signer]
    assert handoff["transaction"]["recent_blockhash"] is None


# ---- hostile cases: each refused with a structured error and nothing created ----------------------------

Build = Callable[[Caller], dict[str, Any]]


def _missing_approval(c: Caller) -> dict[str, Any]:
    return c.message(None, c.context(c.approval()))


def _other_mode(c: Caller) -> dict[str, Any]:
    a = c.approval("session")
    return c.message(a, c.context(a))


def _tampered_hash(c: Caller) -> dict[str, Any]:
    a = c.approval()
    ctx = c.context(a)
    ctx["verification_context_sha256"] = canonical_sha256({"not": "the context"})
    return c.message(a, ctx)


def _tampered_context_body(c: Caller) -> dict[str, Any]:
    a = c.approval()
    ctx = c.context(a)
    ctx["wallets"] = {**ctx["wallets"], "arbitrum": EVM_C}  # body edited, hash left stale
    return c.message(a, ctx)


def _intent_drift(c: Caller) -> dict[str, Any]:
    a = c.approval()
    return c.message(a, c.context(a), amountUsd=101)  # the request asks for more than the approved context


def _intent_drift_from_quote(c: Caller) -> dict[str, Any]:
    a = c.approval()
    drifted = {**c.intent, "amount_usd": 101}
    ctx = verification_context(
        intent=drifted,
        wallets=c.wallets,
        event_signer_public=None,
        approval_v3=a,
        direct_route_summary=c.q["direct_route_summary"],
    )
    return c.message(a, ctx, amountUsd=101)  # consistent request + context, but not what the quote was


def _wallet_drift(c: Caller) -> dict[str, Any]:
    a = c.approval()
    return c.message(a, c.context(a), wallets={"base": EVM_A, "arbitrum": EVM_C})


def _secret_field(c: Caller) -> dict[str, Any]:
    a = c.approval()
    return c.message(a, c.context(a), privateKey="redacted-secret-value")


def _secret_value(c: Caller) -> dict[str, Any]:
    a = c.approval()
    key = "0x" + "ab" * 32  # a private-key-looking wallet value
    wallets = {"base": key, "arbitrum": EVM_B}
    return c.message(a, c.context(a, wallets=wallets), wallets=wallets)


def _approval_other_quote(c: Caller) -> dict[str, Any]:
    a = c.approval(quote_id=str(uuid.uuid4()))
    return c.message(a, c.context(a))


def _summary_swapped(c: Caller) -> dict[str, Any]:
    a = c.approval()
    summary = {**c.q["direct_route_summary"], "route": "base:USDC->base:ETH"}
    return c.message(a, c.context(a, direct_route_summary=summary))


HOSTILE: list[tuple[str, Build, str, str]] = [
    ("missing_approval", _missing_approval, "request_rejected", "approval_v3_required"),
    ("approval_for_other_mode", _other_mode, "request_rejected", "approval_v3_mode_mismatch"),
    ("tampered_context_hash", _tampered_hash, "request_rejected", "verification_context_invalid"),
    ("tampered_context_body", _tampered_context_body, "request_rejected", "verification_context_invalid"),
    ("intent_drift", _intent_drift, "request_rejected", "verification_context_intent_mismatch"),
    (
        "intent_drift_from_quote",
        _intent_drift_from_quote,
        "reapproval_required",
        "approval_v3_intent_mismatch",
    ),
    ("wallet_drift", _wallet_drift, "request_rejected", "verification_context_wallets_mismatch"),
    ("secret_looking_field", _secret_field, "request_rejected", "secret_field_rejected"),
    ("secret_looking_value", _secret_value, "request_rejected", "secret_material_rejected"),
    (
        "approval_for_another_quote",
        _approval_other_quote,
        "reapproval_required",
        "approval_v3_quote_not_found_or_process_restarted",
    ),
    ("summary_not_the_approved_one", _summary_swapped, "request_rejected", "verification_context_invalid"),
]


def created(app: Any) -> tuple[int, int, int]:
    tasks = sum(len(v) for v in app.state.a2a.task_store._impl.tasks.values())
    return app.state.prepare.idempotency.retained(), app.state.service.quotes.retained(), tasks


@pytest.mark.parametrize(("name", "build", "code", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_hostile_prepare_refused(
    client: Client,
    served: tuple[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    build: Build,
    code: str,
    reason: str,
) -> None:
    _, app = served
    intent = {
        "from_chain": "base",
        "from_token": "USDC",
        "to_chain": "arbitrum",
        "to_token": "USDC",
        "amount_usd": 100,
    }
    caller = Caller(client, intent, {"base": EVM_A, "arbitrum": EVM_B})
    await caller.quote()
    payload = build(caller)
    prepare = app.state.prepare
    calls: list[Any] = []
    original = prepare.prepare

    async def spy(body: Any) -> Any:
        calls.append(body)
        return await original(body)

    monkeypatch.setattr(prepare, "prepare", spy)
    before = created(app)
    reply = await send(client, payload)
    assert set(reply) == {"error"}, reply
    err = reply["error"]
    assert (err["code"], err["reason_class"]) == (code, reason), err
    assert err["message"]
    assert "redacted-secret-value" not in str(reply) and "ab" * 32 not in str(reply)
    assert created(app) == before  # no bundle, no idempotency record, no quote, no task
    # adapter rules fire before any upstream call; only the quote binding and value-secret checks are upstream's
    assert len(calls) == (
        1
        if reason
        in (
            "approval_v3_intent_mismatch",
            "secret_material_rejected",
            "approval_v3_quote_not_found_or_process_restarted",
        )
        else 0
    )
    if code == "reapproval_required":
        assert err["action_created"] is False and err["automatic_selection_forbidden"] is True


async def test_one_shot_prepare_on_multi_step_route_refused(client: Client, served: tuple[str, Any]) -> None:
    _, app = served
    intent = {
        "from_chain": "base",
        "from_token": "ETH",
        "to_chain": "arbitrum",
        "to_token": "USDC",
        "amount_usd": 100,
    }
    caller = Caller(client, intent, {"base": EVM_A, "arbitrum": EVM_B})
    q = await caller.quote()
    assert q["continuation_v3"]["allowed_modes"] == ["session"]
    before = created(app)
    for mode in ("one_shot", "session"):
        a = caller.approval(mode)
        reply = await send(client, caller.message(a, caller.context(a)))
        want = (
            "one_shot_not_allowed_for_multi_step_route" if mode == "one_shot" else "approval_v3_mode_mismatch"
        )
        assert reply["error"]["code"] == "request_rejected" and reply["error"]["reason_class"] == want
    assert created(app) == before


async def test_replay_with_same_key_is_idempotent(client: Client) -> None:
    intent = {
        "from_chain": "base",
        "from_token": "ETH",
        "to_chain": "base",
        "to_token": "USDC",
        "amount_usd": 40,
    }
    caller = Caller(client, intent, {"base": EVM_A})
    await caller.quote()
    approval = caller.approval()
    message = caller.message(approval, caller.context(approval))
    first = await send(client, message)
    check_prepared(first, caller, approval)
    again = await send(client, message)
    assert again["bundle"]["payload_sha256"] == first["bundle"]["payload_sha256"]
    assert again["bundle"]["idempotent_replay"] is True


async def test_action_failing_verification_is_withheld(
    client: Client, served: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, app = served
    intent = {
        "from_chain": "base",
        "from_token": "USDC",
        "to_chain": "arbitrum",
        "to_token": "USDC",
        "amount_usd": 60,
    }
    caller = Caller(client, intent, {"base": EVM_A, "arbitrum": EVM_B})
    await caller.quote()
    approval = caller.approval()
    prepare = app.state.prepare
    original = prepare.prepare

    async def compromised(body: Any) -> Any:  # an upstream that redirects the approval to another spender
        bundle = await original(body)
        txs = bundle["unsigned_action"]["transactions"]
        txs[-1] = {**txs[-1], "to": EVM_C}
        return bundle

    monkeypatch.setattr(prepare, "prepare", compromised)
    reply = await send(client, caller.message(approval, caller.context(approval)))
    assert set(reply) == {"error"}
    err = reply["error"]
    assert (
        err["code"] == "safety_boundary_failed"
        and err["reason_class"] == "prepared_action_failed_verification"
    )
    codes = {f["code"] for f in err["findings"]}
    assert {"target_not_allowed", "action_sha256_mismatch"} <= codes, codes
