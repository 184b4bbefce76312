"""Shared vectors for the TypeScript verifier's destination mints: the CCTP `receiveMessage` on an EVM chain and
`receive_message` on Solana, as the session engine assembles them (`assemble_receive_bundle`,
`assemble_solana_receive_bundle`) from an attested burn message written field by field, with the Python
verifier's verdict. Variants: the generic tampers of ts_vectors.py, and the message itself changed (mint
recipient, source domain, fees, burned token, depositor, destination caller, attestation length), re-encoded
into the payload and re-hashed as a malicious server would."""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from eth_abi import decode
from solders.pubkey import Pubkey

from routequote.core.actions import cctp_solana_receive as rx
from routequote.core.actions.cctp_message import encode_cctp_burn_message, parse_cctp_message
from routequote.core.actions.cctp_receive import assemble_receive_bundle
from routequote.core.actions.common import address_to_bytes32, associated_token_address
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, encode_call
from routequote.core.assets import ASSETS, CHAINS, ChainFamily
from routequote.core.routes import ROUTES
from tests.unit.actions.support import (
    FEE_RECIPIENTS,
    START,
    approval_for,
    intent_for,
    make_env,
    rehash,
    wallets_for,
)

# (route, CCTP step index): an EVM-source and a Solana-source mint on EVM, single- and multi-step routes
EVM_MINTS = (
    ("arbitrum:USDC->base:USDC", 0),
    ("solana:USDC->arbitrum:USDC", 0),
    ("base:ETH->arbitrum:ETH", 1),
)
SOLANA_MINTS = (("base:USDC->solana:USDC", 0), ("arbitrum:ETH->solana:SOL", 1))
ATTESTATION = bytes(range(65)) + bytes(range(100, 165))  # two 65-byte signatures (shape only)
FEE_ACCOUNT = "3Zc8RzEPxTgoBRWFYQ1XVQYuURRZA2dvwQSpxgqXzv9m"  # stands in for the TokenMessenger's fee account
OTHER_B32 = b"\x00" * 12 + b"\x99" * 20


def _b32(wallet: str) -> bytes:
    return address_to_bytes32(wallet) if wallet.startswith("0x") else bytes(Pubkey.from_string(wallet))


def burn_message(route_key: str, index: int, amount: int, max_fee: int, **changes: Any) -> bytes:
    """The attested burn of step `index`, to the caller's wallet (or USDC account on Solana)."""
    route = ROUTES[route_key]
    step = route.steps[index]
    src, dst = step.source, step.target
    wallets = wallets_for(route_key)
    if CHAINS[src.chain].family is ChainFamily.EVM:
        dep = DEFAULT_DEPLOYMENTS[src.chain]
        sender = address_to_bytes32(dep.token_messenger_v2 or "")
        burn_token = address_to_bytes32(dep.token(src))
    else:
        sender = bytes(rx.TMM)
        burn_token = bytes(Pubkey.from_string(ASSETS[src.key].address or ""))
    if CHAINS[dst.chain].family is ChainFamily.EVM:
        recipient = address_to_bytes32(DEFAULT_DEPLOYMENTS[dst.chain].token_messenger_v2 or "")
        mint_recipient = address_to_bytes32(wallets[dst.chain.value])
    else:
        recipient = bytes(rx.TMM)
        mint_recipient = bytes(associated_token_address(wallets["solana"], ASSETS["solana:USDC"]))
    fields: dict[str, Any] = {
        "source_domain": CHAINS[src.chain].cctp_domain,
        "destination_domain": CHAINS[dst.chain].cctp_domain,
        "nonce": hashlib.sha256(f"{route_key}#{index}@{amount}".encode()).digest(),
        "sender": sender,
        "recipient": recipient,
        "destination_caller": b"\x00" * 32,
        "min_finality_threshold": 1000,
        "finality_threshold_executed": 1000,
        "burn_token": burn_token,
        "mint_recipient": mint_recipient,
        "amount": amount,
        "message_sender": _b32(wallets[src.chain.value]),
        "max_fee": max_fee,
        "fee_executed": max_fee * 3 // 4,
        "expiration_block": 0,
    }
    fields.update(changes)
    return encode_cctp_burn_message(**fields)


def _message_of(bundle: dict[str, Any]) -> tuple[bytes, bytes]:
    action = bundle["unsigned_action"]
    if action.get("transactions"):
        data = bytes.fromhex(action["transactions"][0]["data"][2:])
        message, attestation = decode(["bytes", "bytes"], data[4:])
        return bytes(message), bytes(attestation)
    decoded = rx.decode_receive_message_data(base64.b64decode(action["instructions"][1]["data"]))
    assert decoded is not None
    return decoded


def _put_message(bundle: dict[str, Any], message: bytes, attestation: bytes) -> None:
    action = bundle["unsigned_action"]
    if action.get("transactions"):
        call = encode_call("receiveMessage", message, attestation)
        action["transactions"][0]["data"] = "0x" + call.hex()
    else:
        data = rx.receive_message_data(message, attestation)
        action["instructions"][1]["data"] = base64.b64encode(data).decode()


def _field(name: str, value: Any) -> Callable[[bytes, bytes], tuple[bytes, bytes]]:
    def change(message: bytes, attestation: bytes) -> tuple[bytes, bytes]:
        m = parse_cctp_message(message)
        burn = m.pop("burn")
        fields = {k: v for k, v in m.items() if k not in ("version", "message_body")}
        fields.update({k: v for k, v in burn.items() if k not in ("version", "hook_data")})
        fields[name] = value(fields) if callable(value) else value
        return encode_cctp_burn_message(**fields), attestation

    return change


MESSAGE_TAMPERS: dict[str, Callable[[bytes, bytes], tuple[bytes, bytes]]] = {
    "message_mint_recipient": _field("mint_recipient", OTHER_B32),
    "message_source_domain": _field("source_domain", lambda f: (f["source_domain"] + 1) % 7),
    "message_fee_executed_over_max": _field("fee_executed", lambda f: f["max_fee"] + 1),
    "message_burn_token": _field("burn_token", OTHER_B32),
    "message_sender": _field("message_sender", OTHER_B32),
    "message_destination_caller": _field("destination_caller", OTHER_B32),
    "attestation_short": lambda m, a: (m, a[:64]),
}


def _kwargs(route_key: str, quote: dict[str, Any], amount_usd: int) -> dict[str, Any]:
    return {
        "intent": intent_for(route_key, amount_usd),
        "wallets": wallets_for(route_key),
        "now_unix": int(START.timestamp()) + 10,
        "approval_v3": approval_for(quote),
        "direct_route_summary": quote["direct_route_summary"],
        "event_signer_public": None,
        "fee_recipients": FEE_RECIPIENTS,
        "session_actual_input_base": None,
        "accept_modelled_bounds": True,
    }


async def mint_bundle(route_key: str, index: int, amount_usd: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The destination mint of step `index` and the verifier's arguments (the approved quote's)."""
    env = make_env()
    quote = await env.service.quote_request(intent_for(route_key, amount_usd))
    route = ROUTES[route_key]
    step = route.steps[index]
    ss = quote["direct_route_summary"]["steps"][index]
    amount = int(ss["expected_input_base"])
    max_fee = max(1, amount - int(ss["minimum_output_base"]))
    message = burn_message(route_key, index, amount, max_fee)
    binding = {
        "quote_id": quote["quote_id"],
        "quote_fingerprint": quote["continuation_v3"]["quote_fingerprint"],
        "selected_mode": "session",
    }
    common: dict[str, Any] = {
        "workflow_id": "wf-mint",
        "action_id": f"act-{index + 1}",
        "prepared_at": START,
        "quote_binding": binding,
        "summary_steps": quote["direct_route_summary"]["steps"],
    }
    wallets = wallets_for(route_key)
    if CHAINS[step.target.chain].family is ChainFamily.EVM:
        bundle = assemble_receive_bundle(route, step, wallets, message, ATTESTATION, None, **common)
    else:
        bundle = rx.assemble_solana_receive_bundle(
            route, step, wallets, message, ATTESTATION, FEE_ACCOUNT, **common
        )
    return bundle, _kwargs(route_key, quote, amount_usd)


async def mint_entries(
    add_variants: Callable[[list[dict[str, Any]], str, str, dict[str, Any], dict[str, Any]], None],
    entry: Callable[[str, str, dict[str, Any], dict[str, Any]], dict[str, Any]],
    amounts: tuple[int, ...],
) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for kind, mints in (("cctp_receive:evm", EVM_MINTS), ("cctp_receive:solana", SOLANA_MINTS)):
        for route_key, index in mints:
            for amount in amounts:
                bundle, kwargs = await mint_bundle(route_key, index, amount)
                base = f"{route_key}#{index}:mint@{amount}"
                add_variants(entries, base, kind, bundle, kwargs)
                for name, tamper in MESSAGE_TAMPERS.items():
                    for rehashed in (True, False):
                        tampered = copy.deepcopy(bundle)
                        _put_message(tampered, *tamper(*_message_of(tampered)))
                        if rehashed:
                            tampered = rehash(tampered)
                        label = f"{base}:{name}{':rehashed' if rehashed else ''}"
                        entries.append(entry(label, kind, tampered, kwargs))
                late = {**kwargs, "now_unix": kwargs["now_unix"] + int(timedelta(minutes=5).total_seconds())}
                entries.append(entry(f"{base}:expired", kind, bundle, late))
    return entries
