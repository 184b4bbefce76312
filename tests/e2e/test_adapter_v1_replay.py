"""The public MCP adapter of this API's v1 (repository assetfare/assetfare-mcp, `src/server.js`, 0.4.x line),
replayed request by request against a running server: its paths, bodies and headers as that file builds
them, over real HTTP. The adapter calls, for its legacy tools:

    POST /v1/quote                     {from_chain:"solana", from_token:"SOL", to_chain, to_token:"ETH", amount_usd}
    POST /v1/auth/challenge            {source_wallet}
    POST /v1/auth/verify               {challenge_id, source_wallet, signature, terms_version}
    POST /v1/session                   {quote_id, idempotency_key, source_wallet, destination_wallet}   + Bearer
    GET  /v1/session/{id}[/workflow|/receipt|/next-action]                                            + Bearer
    POST /v1/session/{id}/prepare-source-action        {}
    POST /v1/session/{id}/verify-source                {signature, idempotency_key}
    POST /v1/session/{id}/prepare-cctp-action          {event_signer_public, idempotency_key}
    POST /v1/session/{id}/observe-cctp                 {burn_signature, idempotency_key}
    POST /v1/session/{id}/prepare-destination-action   {idempotency_key}
    POST /v1/session/{id}/observe-destination          {transaction_hash, idempotency_key}

with `accept: application/json`, `content-type: application/json` on bodies, `x-assetfare-channel: mcp`,
the caller's `x-forwarded-for` and `user-agent`. The chain side (recorded Solana answers, the CCTP stand-ins
and the ERC-4337 settlement on anvil) is the one of tests/e2e/test_v1_corridor.py, whose fixture this reuses.
"""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
from _solana_session import ATTESTATION, SOLANA_DOMAIN, attested_message, iris_solana_item, solana_burn
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from solders.keypair import Keypair
from test_v1_corridor import Env, env, swap_result
from tests.support.json_safety import assert_javascript_safe

from routequote.core.actions import erc4337 as aa

__all__ = ["env"]  # the module-scoped chain fixture of test_v1_corridor.py


class Adapter:
    """The adapter's `api(path, {method, body, token})` for its legacy tools, nothing more."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=60)
        self.seen: list[tuple[str, str, int]] = []

    def api(self, path: str, method: str = "GET", body: Any = None, token: str | None = None) -> Any:
        headers = {"accept": "application/json"}
        if body is not None:
            headers["content-type"] = "application/json"
        if token:
            headers["authorization"] = f"Bearer {token}"
        headers["x-forwarded-for"] = "203.0.113.10"
        headers["user-agent"] = "assetfare-mcp-replay/0.4"
        headers["x-assetfare-channel"] = "mcp"
        r = self.http.request(method, path, headers=headers, json=body)
        self.seen.append((method, path, r.status_code))
        payload = r.json()
        assert_javascript_safe(payload)  # the adapter is JavaScript: JSON.parse must read every number
        if r.status_code >= 400:
            raise AssertionError(f"{method} {path} -> {r.status_code} {payload}")
        return payload

    # the adapter's tools, argument names and paths as it defines them
    def quote(self, amount_usd: int, destination_chain: str = "base") -> Any:
        body = {
            "from_chain": "solana",
            "from_token": "SOL",
            "to_chain": destination_chain,
            "to_token": "ETH",
            "amount_usd": amount_usd,
        }
        return self.api("/v1/quote", "POST", body)

    def read_session(self, access_token: str, session_id: str, view: str = "session") -> Any:
        suffix = "" if view == "session" else "/" + ("next-action" if view == "next_action" else view)
        return self.api(f"/v1/session/{session_id}{suffix}", token=access_token)

    def step(self, access_token: str, session_id: str, path: str, **body: Any) -> Any:
        return self.api(f"/v1/session/{session_id}/{path}", "POST", body, token=access_token)


def test_the_adapters_v1_request_sequence(env: Env) -> None:
    adapter = Adapter(env.url)
    wallet, event = Keypair(), Keypair()
    dest = Account.create()

    def key(label: str) -> str:
        return f"{label}-{hashlib.sha256(label.encode()).hexdigest()[:10]}"

    quoted = adapter.quote(100, "base")
    assert quoted["corridor"] == "solana:SOL->base:ETH" and quoted["quote_id"] == quoted["quote"]["quote_id"]
    assert adapter.quote(100, "arbitrum")["corridor"] == "solana:SOL->arbitrum:ETH"

    ch = adapter.api("/v1/auth/challenge", "POST", {"source_wallet": str(wallet.pubkey())})
    finish = {
        "challenge_id": ch["challenge_id"],
        "source_wallet": str(wallet.pubkey()),
        "signature": str(wallet.sign_message(ch["message"].encode())),
        "terms_version": ch["terms_version"],
    }
    token = adapter.api("/v1/auth/verify", "POST", finish)["access_token"]
    replay = adapter.http.post("/v1/auth/verify", json=finish)
    assert replay.status_code == 400 and replay.json()["reason_class"] == "challenge_already_used"

    created = adapter.api(
        "/v1/session",
        "POST",
        {
            "quote_id": quoted["quote_id"],
            "idempotency_key": key("create"),
            "source_wallet": str(wallet.pubkey()),
            "destination_wallet": dest.address,
        },
        token=token,
    )
    sid = created["session_id"]
    for view in ("session", "workflow", "receipt", "next_action"):
        read = adapter.read_session(token, sid, view)
        assert read["session_id"] == sid and read["view"] == view

    s = adapter.step(token, sid, "prepare-source-action")
    action = s["current_action"]["unsigned_action"]
    usdc_out = int(action["minimumOutput"]) + 1000
    sig, res = swap_result(action, wallet, usdc_out, 381_700_002)
    env.rpc.publish(res)
    s = adapter.step(token, sid, "verify-source", signature=sig, idempotency_key=key("swap"))
    assert s["status"] == "action_required" and s["current_step"] == 1

    s = adapter.step(
        token,
        sid,
        "prepare-cctp-action",
        event_signer_public=str(event.pubkey()),
        idempotency_key=key("cctp"),
    )
    burn_action = s["current_action"]["unsigned_action"]
    burn = solana_burn(burn_action, wallet, event)
    env.rpc.publish(burn.result)
    message = attested_message(
        burn_action["instructions"][-1],
        str(wallet.pubkey()),
        env.a["messenger"],
        nonce=hashlib.sha256(("adapter " + sid).encode()).digest(),
        fee_executed=0,
    )
    env.iris.publish(
        SOLANA_DOMAIN, burn.signature, [iris_solana_item(message, ATTESTATION, env.a["messenger"])]
    )
    env.chain.transact(
        env.a["transmitter"],
        "receiveMessage(bytes,bytes)",
        message,
        ATTESTATION,
        sender=env.chain.accounts[2],
    )
    # the agent observes again (a new key each time) until the relayed mint is found: burn, then the mint
    for attempt in range(3):
        s = adapter.step(
            token, sid, "observe-cctp", burn_signature=burn.signature, idempotency_key=key(f"burn-{attempt}")
        )
        if s["status"] != "awaiting_destination":
            break
    assert s["status"] == "action_required" and s["current_step"] == 2, s["status"]

    s = adapter.step(token, sid, "prepare-destination-action", idempotency_key=key("dst"))
    plan = s["current_action"]["plan"]
    permit_sig = Account.sign_message(
        encode_typed_data(full_message=plan["permit"]["typedData"]), dest.key
    ).signature
    signed = aa.attach_permit_signature(plan, permit_sig)
    owner_sig = Account.sign_message(
        encode_defunct(primitive=bytes.fromhex(signed["userOpHash"][2:])), dest.key
    ).signature
    op = aa.packed_user_operation(signed, owner_sig)
    env.chain.send(signed["smartAccount"], "0x", value=int(plan["bounds"]["maxGasCostWei"]))
    bundler = env.chain.accounts[1]
    tx_hash = env.chain.rpc.call(
        "eth_sendTransaction",
        {
            "from": bundler,
            "to": aa.ENTRY_POINT_V07,
            "data": "0x" + aa.handle_ops_call_data([op], bundler).hex(),
            "gas": hex(5_000_000),
        },
    )
    for _ in range(500):
        if env.chain.rpc.call("eth_getTransactionReceipt", tx_hash) is not None:
            break
    s = adapter.step(token, sid, "observe-destination", transaction_hash=tx_hash, idempotency_key=key("op"))
    assert s["status"] == "complete" and s["next_operation"] == "none"
    receipt = adapter.read_session(token, sid, "receipt")["receipt"]
    assert receipt["route"]["complete"] is True
    # every call of the sequence answered 2xx (api() raises otherwise)
    assert [p for _, p, code in adapter.seen if code >= 400] == []
