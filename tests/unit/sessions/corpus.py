"""A recorded corpus of session transitions: many create / read / observe / refresh / cancel / v1 calls driven
through one SessionService against fakes (fixed clock, sequential ids, in-memory store, chain readers that
answer from fabricated receipts), each answer written down as JSON.

`tests/golden/session_corpus.jsonl` holds the answers the engine gave before it was split by step kind;
`test_session_corpus.py` replays the same calls and compares byte for byte. Regenerate (only when a
behaviour change is intended and reviewed) with `python -m tests.unit.sessions.corpus`.

The fabricated receipts carry exactly the prepared transactions (sender, target, value, calldata) with the
logs a real swap emits (ERC-20 `Transfer` to the recipient, WETH9 `Withdrawal` by the router), so the real
evidence rules run on them; they prove nothing about a chain and are called stand-ins here.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.unit.actions.support import EVENT_SIGNER, SETTINGS, START, approval_for, intent_for, wallets_for

from routequote.clock import FixedClock, SequentialIds
from routequote.core.actions.evm import ROUTER_ADDRESS_THIS, decode_call
from routequote.core.routes import ROUTES
from routequote.core.sessions.evidence import TOPIC0, address_topic
from routequote.errors import RouteQuoteError
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.ports import CctpMessage, EvmLog, EvmTransaction, SolanaTransaction
from routequote.prepare import PrepareService
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.sessions import SessionService
from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore
from routequote.storage.sessions_memory import MemorySessionStore

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "session_corpus.jsonl"
TOKEN = "q7Xv0dN3kR9sLb2WmYc8EuTfH1jZpG5aKxQ4oVnDi6B"  # fixed 43-character base64url capabilities
OTHER_TOKEN = "Zr4Tn8wC1yJ6hMbP0eSx3LdQ9uVk5aGfI2oHt7EqNjW"
POOL = "0x00000000000000000000000000000000000000aa"


class FakeEvm:
    """EvmChainReader over fabricated receipts (a stand-in: nothing here ran on a chain)."""

    def __init__(self) -> None:
        self.txs: dict[str, EvmTransaction] = {}
        self.latest = 1_000

    async def transaction(self, chain: str, tx_hash: str) -> EvmTransaction | None:
        return self.txs.get(tx_hash.lower())

    async def logs(
        self, chain: str, address: str, topics: list[str | None], from_block: int, to_block: int | None = None
    ) -> list[EvmLog]:
        return []

    async def block_number(self, chain: str) -> int:
        return self.latest


class FakeSolana:
    async def transaction(self, signature: str) -> SolanaTransaction | None:
        return None  # never finalized: every Solana observation stays pending


class FakeIris:
    async def messages(self, source_domain: int, tx_hash: str) -> list[CctpMessage]:
        return []


def swap_receipts(
    fake: FakeEvm, action: dict[str, Any], output: int, seed: int, confirmations: int = 64
) -> list[str]:
    """Mine the prepared transactions of a Uniswap step (fee transfer, approve, swap) as receipts whose logs
    deliver `output` to the recipient; returns their hashes."""
    hashes = []
    for i, p in enumerate(action["transactions"]):
        tx_hash = f"0x{seed:032x}{i:032x}"
        data = bytes.fromhex(str(p.get("data") or "0x")[2:])
        logs: list[EvmLog] = []
        if action["kinds"][i] == "uniswap_v3_swap":
            call = decode_call(data)
            assert call is not None
            swap = decode_call(bytes(call.args[1][0]))
            assert swap is not None
            token_out, to = str(swap.args[0][1]), str(swap.args[0][3])
            amount = output.to_bytes(32, "big")
            if to.lower() == ROUTER_ADDRESS_THIS.lower():
                topics = (TOPIC0["Withdrawal"], address_topic(str(p["to"])).lower())
                logs.append(EvmLog(token_out, topics, amount, 0, tx_hash, 900))
            else:
                topics = (TOPIC0["Transfer"], address_topic(POOL), address_topic(action["recipient"]).lower())
                logs.append(EvmLog(token_out, topics, amount, 0, tx_hash, 900))
        fake.txs[tx_hash] = EvmTransaction(
            chain_id=int(p["chainId"]),
            tx_hash=tx_hash,
            sender=str(p["from"]),
            to=str(p["to"]),
            value=int(p.get("value") or 0),
            input=data,
            status=1,
            block_number=900,
            block_timestamp=int(START.timestamp()),
            confirmations=confirmations,
            gas_used=21_000,
            effective_gas_price=1_000_000,
            logs=tuple(logs),
        )
        hashes.append(tx_hash)
    return hashes


class Recorder:
    def __init__(self, with_chains: bool = True) -> None:
        self.clock = FixedClock(START)
        self.service = RouteQuoteService(
            EmbeddedSnapshot(None),
            MemoryQuoteStore(),
            self.clock,
            SequentialIds(),
            ServiceConfig(quote_ttl_seconds=60),
        )
        self.prepare = PrepareService(self.service, SETTINGS, idempotency=MemoryIdempotencyStore())
        self.evm = FakeEvm()
        self.sessions = SessionService(
            self.prepare,
            MemorySessionStore(),
            evm=self.evm if with_chains else None,
            solana=FakeSolana() if with_chains else None,
            attestations=FakeIris() if with_chains else None,
        )
        self.out: list[dict[str, Any]] = []
        self.n = 0

    async def call(self, label: str, op: Any) -> dict[str, Any] | None:
        try:
            answer = await op
        except RouteQuoteError as exc:
            self.out.append({"call": label, "error": type(exc).__name__, "body": exc.body()})
            return None
        if isinstance(answer, dict):
            self.out.append({"call": label, "status": 200, "body": answer})
            return answer
        self.out.append({"call": label, "status": answer.status_code, "body": answer.body})
        return dict(answer.body)

    def key(self) -> str:
        self.n += 1
        return f"key-{self.n:06d}"

    async def create_body(self, route: str, key: str | None = None, **approval: str) -> dict[str, Any]:
        quote = await self.service.quote_request(intent_for(route, 100))
        key = key or self.key()
        body: dict[str, Any] = {
            "caller_approved": True,
            **intent_for(route, 100),
            "wallets": wallets_for(route),
            "approval_v3": approval_for(quote, key=key, **{"selected_mode": "session", **approval}),
            "idempotency_key": key,
        }
        if ROUTES[route].event_signer_required:
            body["event_signer_public"] = EVENT_SIGNER
        return body

    def observe(self, sid: str, hashes: list[str], key: str | None = None) -> Any:
        return self.sessions.observe(
            sid, TOKEN, {"idempotency_key": key or self.key(), "transaction_hashes": hashes}
        )


async def _views(r: Recorder, label: str, sid: str) -> None:
    for view in ("session", "workflow", "receipt", "next_action"):
        await r.call(f"{label} read {view}", r.sessions.read(sid, TOKEN, view))


async def record() -> list[dict[str, Any]]:
    r = Recorder()
    s = r.sessions
    # every route: create (ready or refused with its reason)
    for route in sorted(ROUTES):
        await r.call(f"create {route}", s.create(await r.create_body(route), TOKEN))
    # input rules of create
    body = await r.create_body("base:ETH->base:USDC")
    await r.call("create no token", s.create(body, None))
    await r.call("create short token", s.create(body, "abc"))
    await r.call("create not object", s.create([1], TOKEN))
    await r.call("create bad key", s.create({**body, "idempotency_key": "x"}, TOKEN))
    await r.call("create key mismatch", s.create({**body, "idempotency_key": "other-key-1"}, TOKEN))
    await r.call(
        "create mode prepare",
        s.create(await r.create_body("base:ETH->base:USDC", selected_mode="prepare"), TOKEN),
    )
    first = await r.call("create one-step", s.create(body, TOKEN))
    assert first is not None
    sid = first["session_id"]
    await r.call("create replay", s.create(body, TOKEN))
    await r.call(
        "create replay other body",
        s.create({**body, "wallets": wallets_for("base:ETH->base:USDC") | {"base": "0x" + "12" * 20}}, TOKEN),
    )
    await r.call("create replay other token", s.create(body, OTHER_TOKEN))
    await _views(r, "one-step", sid)
    await r.call("read bad view", s.read(sid, TOKEN, "nope"))
    await r.call("read wrong token", s.read(sid, OTHER_TOKEN))
    await r.call("read bad id", s.read("not-a-uuid", TOKEN))
    # observe input rules and rejections
    await r.call("observe not object", s.observe(sid, TOKEN, "x"))
    await r.call("observe extra field", s.observe(sid, TOKEN, {"idempotency_key": r.key(), "extra": 1}))
    await r.call("observe bad hash", r.observe(sid, ["0x12"]))
    await r.call("observe duplicate", r.observe(sid, ["0x" + "ab" * 32, "0x" + "AB" * 32]))
    await r.call("observe nothing named", r.observe(sid, []))
    await r.call("observe solana sig on evm", r.observe(sid, ["5" * 88]))
    await r.call("observe unknown tx", r.observe(sid, ["0x" + "cd" * 32]))
    action = first["current_action"]["unsigned_action"]
    quoted = first["steps"][0]
    mined = swap_receipts(r.evm, action, 10**6, seed=1)
    await r.call(
        "observe one of two",
        r.observe(sid, mined[-1:]) if len(mined) > 1 else r.observe(sid, ["0x" + "ee" * 32]),
    )
    await r.call("refresh before expiry", s.refresh(sid, TOKEN, {"idempotency_key": r.key()}))
    low = swap_receipts(r.evm, action, 1, seed=2)
    await r.call("observe below minimum", r.observe(sid, low))
    shallow = swap_receipts(r.evm, action, 10**12, seed=3, confirmations=1)
    k = r.key()
    await r.call("observe unconfirmed", r.observe(sid, shallow, key=k))
    await r.call("observe unconfirmed replay", r.observe(sid, shallow, key=k))
    await r.call("observe replay other body", r.observe(sid, mined, key=k))
    await _views(r, "awaiting", sid)
    await r.call("observe again without naming", r.observe(sid, []))
    good = swap_receipts(
        r.evm, action, int(first["quote_binding"].get("minimum_output_base", 0) or 0) + 10**12, seed=4
    )
    await r.call("observe good after pending", r.observe(sid, good))
    del quoted
    # a fresh one-step session, completed
    body = await r.create_body("base:ETH->base:USDC")
    done = await r.call("create one-step b", s.create(body, TOKEN))
    assert done is not None
    out = int(done["steps"][0].get("minimum_output_base") or 0) or 10**12
    mined = swap_receipts(r.evm, done["current_action"]["unsigned_action"], 5 * 10**12, seed=5)
    await r.call("observe complete", r.observe(done["session_id"], mined))
    del out
    await _views(r, "complete", done["session_id"])
    await r.call("cancel complete", s.cancel(done["session_id"], TOKEN, {"idempotency_key": r.key()}))
    # multi-step sessions: step 0 verified, step 1 re-quoted (ready, or parked below the approval)
    for route in sorted(k for k, v in ROUTES.items() if len(v.steps) > 1 and k not in s.session_reasons()):
        for label, pick in (("expected", "expected_output_base"), ("minimum", "minimum_output_base")):
            made = await r.call(f"create {route} {label}", s.create(await r.create_body(route), TOKEN))
            if made is None or made["current_action"]["unsigned_action"].get("kinds") is None:
                continue
            act = made["current_action"]["unsigned_action"]
            if "uniswap_v3_swap" not in act["kinds"]:
                continue
            quote = await r.call(f"{route} {label} workflow", s.read(made["session_id"], TOKEN, "workflow"))
            assert quote is not None
            amount = int(quote["steps"][0]["quoted"][pick])
            mined = swap_receipts(r.evm, act, amount, seed=10 + r.n)
            await r.call(f"observe {route} {label}", r.observe(made["session_id"], mined))
            await _views(r, f"{route} {label}", made["session_id"])
            await r.call(
                f"refresh {route} {label}", s.refresh(made["session_id"], TOKEN, {"idempotency_key": r.key()})
            )
    # expiry, refresh and cancel
    body = await r.create_body("base:ETH->base:USDC")
    exp = await r.call("create to expire", s.create(body, TOKEN))
    assert exp is not None
    r.clock.advance(3600)
    await _views(r, "expired", exp["session_id"])
    k = r.key()
    await r.call("refresh expired", s.refresh(exp["session_id"], TOKEN, {"idempotency_key": k}))
    await r.call("refresh replay", s.refresh(exp["session_id"], TOKEN, {"idempotency_key": k}))
    await r.call("cancel same key", s.cancel(exp["session_id"], TOKEN, {"idempotency_key": k}))
    r.clock.advance(3600)
    await r.call("observe expired", r.observe(exp["session_id"], ["0x" + "ab" * 32]))
    await r.call(
        "refresh extra field", s.refresh(exp["session_id"], TOKEN, {"idempotency_key": r.key(), "x": 1})
    )
    await r.call("cancel not object", s.cancel(exp["session_id"], TOKEN, None))
    await r.call("cancel", s.cancel(exp["session_id"], TOKEN, {"idempotency_key": r.key()}))
    await _views(r, "cancelled", exp["session_id"])
    await r.call("cancel twice", s.cancel(exp["session_id"], TOKEN, {"idempotency_key": r.key()}))
    r.clock.advance(timedelta(hours=2).total_seconds())
    await r.call("create replay after quote expiry", s.create(body, TOKEN))
    # a session whose step 0 was named and is awaiting its receipt, then cancelled
    body = await r.create_body("base:ETH->arbitrum:USDC")
    aw = await r.call("create awaiting", s.create(body, TOKEN))
    assert aw is not None
    await r.call("observe not mined", r.observe(aw["session_id"], ["0x" + "99" * 32]))
    await r.call(
        "refresh after observation", s.refresh(aw["session_id"], TOKEN, {"idempotency_key": r.key()})
    )
    await r.call("cancel awaiting", s.cancel(aw["session_id"], TOKEN, {"idempotency_key": r.key()}))
    # readiness
    r.out.append({"call": "session_reasons", "status": 200, "body": s.session_reasons()})
    # v1 corridor
    for wallet in ("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",):
        v1q = await r.service.quote_request(intent_for("solana:SOL->base:ETH", 100))
        fields = {
            "quote_id": v1q["quote_id"],
            "idempotency_key": r.key(),
            "source_wallet": wallet,
            "destination_wallet": "0x" + "44" * 20,
        }
        await r.call("v1 create", s.v1_create(wallet, fields))
        await r.call("v1 create other wallet", s.v1_create(wallet, {**fields, "source_wallet": "x"}))
        await r.call(
            "v1 create bad destination", s.v1_create(wallet, {**fields, "destination_wallet": "0x1"})
        )
        await r.call("v1 create bad quote", s.v1_create(wallet, {**fields, "quote_id": "x"}))
        await r.call(
            "v1 create unknown quote",
            s.v1_create(wallet, {**fields, "quote_id": "00000000-0000-4000-8000-ffffffffffff"}),
        )
        await r.call("v1 create extra", s.v1_create(wallet, {**fields, "extra": 1}))
        await r.call("v1 create missing", s.v1_create(wallet, {"quote_id": v1q["quote_id"]}))
        other = await r.service.quote_request(intent_for("base:ETH->base:USDC", 100))
        await r.call(
            "v1 create not corridor",
            s.v1_create(wallet, {**fields, "idempotency_key": r.key(), "quote_id": other["quote_id"]}),
        )
        await r.call("v1 read unknown", s.v1_read(wallet, "00000000-0000-4000-8000-ffffffffffff"))
        await r.call(
            "v1 prepare source unknown",
            s.v1_prepare_source(wallet, "00000000-0000-4000-8000-ffffffffffff", {}),
        )
        await r.call(
            "v1 prepare cctp bad signer",
            s.v1_prepare_cctp(
                wallet,
                "00000000-0000-4000-8000-ffffffffffff",
                {"event_signer_public": "x", "idempotency_key": r.key()},
            ),
        )
        await r.call(
            "v1 verify source bad sig",
            s.v1_verify_source(
                wallet,
                "00000000-0000-4000-8000-ffffffffffff",
                {"signature": "0x1", "idempotency_key": r.key()},
            ),
        )
        await r.call(
            "v1 observe destination bad hash",
            s.v1_observe_destination(
                wallet,
                "00000000-0000-4000-8000-ffffffffffff",
                {"transaction_hash": "5" * 88, "idempotency_key": r.key()},
            ),
        )
    # no chain readers configured: 503, nothing changed
    bare = Recorder(with_chains=False)
    made = await bare.call(
        "bare create", bare.sessions.create(await bare.create_body("base:ETH->base:USDC"), TOKEN)
    )
    assert made is not None
    await bare.call("bare observe", bare.observe(made["session_id"], ["0x" + "ab" * 32]))
    await bare.call("bare read", bare.sessions.read(made["session_id"], TOKEN))
    return r.out + bare.out


def render(entries: list[dict[str, Any]]) -> str:
    """One answer per line (JSON Lines, keys sorted): a changed answer is one changed line."""
    return "".join(json.dumps(e, sort_keys=True, separators=(",", ":")) + "\n" for e in entries)


def run() -> str:
    return render(asyncio.run(record()))


if __name__ == "__main__":
    GOLDEN.write_text(run())
    print(f"wrote {GOLDEN.name}")
