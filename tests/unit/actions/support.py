"""Builds real bundles through the real services (fixed clock, sequential ids) for the action tests."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.core.actions.bundle import action_sha256, allowlists, payload_sha256, raw_payload_rows
from routequote.core.actions.evm import EvmDeployment
from routequote.core.assets import Chain
from routequote.core.routes import ROUTES
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.prepare import PrepareService
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore

START = datetime(2026, 11, 22, 5, 0, 0, tzinfo=UTC)
EVM_WALLETS = {
    "base": "0x1111111111111111111111111111111111111111",
    "arbitrum": "0x2222222222222222222222222222222222222222",
    "robinhood": "0x3333333333333333333333333333333333333333",
}
SOLANA_WALLET = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
EVENT_SIGNER = "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH"
SETTINGS = Settings(rate_limit="off")
FEE_RECIPIENTS = {"evm": SETTINGS.fee_recipient_evm, "solana": SETTINGS.fee_recipient_solana}


def wallets_for(route_key: str) -> dict[str, str]:
    return {
        c: SOLANA_WALLET if c == "solana" else EVM_WALLETS[c]
        for c in ROUTES[route_key].required_wallet_chains
    }


def intent_for(route_key: str, amount_usd: int | float = 100) -> dict[str, Any]:
    src, dst = route_key.split("->")
    fc, ft = src.split(":")
    tc, tt = dst.split(":")
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": amount_usd}


def approval_for(quote: dict[str, Any], key: str | None = None, **changes: str) -> dict[str, Any]:
    c = quote["continuation_v3"]
    out = {
        "version": c["approval_v3_version"],
        "quote_id": quote["quote_id"],
        "quote_fingerprint": c["quote_fingerprint"],
        "selection_status": "selected",
        "selected_mode": c["allowed_modes"][0],
        "maximum_input_base": c["input_base_bounds"]["maximum"],
        "minimum_output_base": c["minimum_output_base"],
        "direct_route_summary_sha256": c["direct_route_summary_sha256"],
        "idempotency_key": key or f"idem-{quote['quote_id']}",
    }
    out.update(changes)
    return out


@dataclass
class Env:
    clock: FixedClock
    service: RouteQuoteService
    prepare: PrepareService


def make_env(deployments: dict[Chain, EvmDeployment] | None = None, start: datetime = START) -> Env:
    clock = FixedClock(start)
    service = RouteQuoteService(
        EmbeddedSnapshot(None),
        MemoryQuoteStore(),
        clock,
        SequentialIds(),
        ServiceConfig(quote_ttl_seconds=60),
    )
    prepare = PrepareService(service, SETTINGS, deployments=deployments, idempotency=MemoryIdempotencyStore())
    service.config.prepare_ready_routes = prepare.supported_routes()
    return Env(clock, service, prepare)


@dataclass
class Prepared:
    bundle: dict[str, Any]
    intent: dict[str, Any]
    wallets: dict[str, str]
    approval: dict[str, Any]
    quote: dict[str, Any]
    signer: str | None
    now_unix: int

    def verify_kwargs(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "wallets": self.wallets,
            "approval_v3": self.approval,
            "direct_route_summary": self.quote["direct_route_summary"],
            "event_signer_public": self.signer,
            "now_unix": self.now_unix,
            "fee_recipients": FEE_RECIPIENTS,
            # the embedded market: every bundle's bounds are modelled, accepted explicitly here
            "accept_modelled_bounds": True,
        }


async def prepare_route(
    env: Env, route_key: str, amount_usd: int | float = 100, wallets: dict[str, str] | None = None
) -> Prepared:
    intent = intent_for(route_key, amount_usd)
    quote = await env.service.quote_request(intent)
    approval = approval_for(quote)
    wallets = wallets or wallets_for(route_key)
    body: dict[str, Any] = {"caller_approved": True, **intent, "wallets": wallets, "approval_v3": approval}
    signer = EVENT_SIGNER if ROUTES[route_key].event_signer_required else None
    if signer:
        body["event_signer_public"] = signer
    bundle = await env.prepare.prepare(body, mode=approval["selected_mode"])  # multi-step: session's step 0
    assert bundle["idempotent_replay"] is False  # response-only flag, outside payload_sha256
    return Prepared(bundle, intent, wallets, approval, quote, signer, int(env.clock.now().timestamp()))


def rehash(bundle: dict[str, Any]) -> dict[str, Any]:
    """What a malicious or buggy server would do after tampering: make every hash consistent again."""
    action = bundle["unsigned_action"]
    receipt = action["safety_receipt"]
    receipt["payload_binding"]["raw_payloads"] = raw_payload_rows(action)
    receipt["target_or_program_allowlist"], receipt["selector_or_instruction_allowlist"] = allowlists(action)
    receipt["payload_binding"]["action_sha256"] = action_sha256(action)
    bundle["payload_sha256"] = payload_sha256(bundle)
    return bundle


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
