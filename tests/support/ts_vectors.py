"""Shared vectors for the TypeScript verifier: prepared bundles (the first action of every route at two amounts,
through the real PrepareService) and tampered variants of each, with the Python verifier's verdict. Both
verifiers must agree on every entry (tests/integration/test_ts_verifier_equality.py)."""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

from routequote.core.assets import CHAINS, SPL_TOKEN_PROGRAM, TOKEN_2022_PROGRAM
from routequote.core.intent import parse_quote_request
from routequote.core.routes import ROUTES
from routequote.verify import verify_bundle
from tests.support.ts_vectors_4337 import settlement_entries
from tests.support.ts_vectors_mint import mint_entries
from tests.unit.actions.support import (
    EVENT_SIGNER,
    FEE_RECIPIENTS,
    Env,
    intent_for,
    make_env,
    prepare_route,
    rehash,
    wallets_for,
)

AMOUNTS_USD = (100, 750)
OTHER_EVM = "0x9999999999999999999999999999999999999999"
OTHER_SOLANA = "Fg6PaFpoGXkYsidMpWTK6W2BeZ7FEfcYkg476zPFsLnS"

Tamper = Callable[[dict[str, Any]], bool]  # mutates the bundle in place; False when it does not apply


def action_kind(route_key: str, step_index: int) -> str:
    """What a verifier must understand to check this action: chain family, provider, and where it goes."""
    step = ROUTES[route_key].steps[step_index]
    family = CHAINS[step.source.chain].family.value
    dest_family = CHAINS[step.target.chain].family.value
    return f"{family}:{step.provider.value}" + ("" if dest_family == family else f"->{dest_family}")


def _other(address: str) -> str:
    return OTHER_EVM if address.startswith("0x") else OTHER_SOLANA


def _recipient(b: dict[str, Any]) -> bool:
    a = b["unsigned_action"]
    a["recipient"] = _other(a["recipient"])
    return True


def _calldata_recipient(b: dict[str, Any]) -> bool:
    """The recipient inside the protocol call's calldata (the field the chain enforces)."""
    a = b["unsigned_action"]
    wallet = str(a["recipient"])
    if not wallet.startswith("0x") or not a.get("transactions"):
        return False
    tx = a["transactions"][-1]
    needle = wallet[2:].lower()
    if needle not in tx["data"].lower():
        return False
    tx["data"] = tx["data"].lower().replace(needle, OTHER_EVM[2:])
    return True


def _amount(b: dict[str, Any]) -> bool:
    a = b["unsigned_action"]
    a["inputAmount"] = str(int(a["inputAmount"]) + 1)
    return True


def _min_out(b: dict[str, Any]) -> bool:
    a = b["unsigned_action"]
    a["minimumOutput"] = str(int(a["minimumOutput"]) - 1)
    return True


def _fee_recipient(b: dict[str, Any]) -> bool:
    """The stated fee recipient changed; on an action that pays no fee (null), one named all the same."""
    a = b["unsigned_action"]
    if "feeRecipient" not in a:
        return False
    if a["feeRecipient"] is None:
        a["feeRecipient"] = OTHER_EVM if a.get("family") == "evm" else OTHER_SOLANA
    else:
        a["feeRecipient"] = _other(a["feeRecipient"])
    return True


def _target(b: dict[str, Any]) -> bool:
    a = b["unsigned_action"]
    if a.get("transactions"):
        a["transactions"][-1]["to"] = OTHER_EVM
    else:
        a["instructions"][-1]["programId"] = OTHER_SOLANA
    return True


def _deadline(b: dict[str, Any]) -> bool:
    a = b["unsigned_action"]
    a["deadline"] = a["deadline"] + 3600
    return True


def _calldata_byte(b: dict[str, Any]) -> bool:
    a = b["unsigned_action"]
    if not a.get("transactions"):
        return False
    tx = a["transactions"][-1]
    data = bytearray(bytes.fromhex(tx["data"][2:]))
    data[len(data) // 2] ^= 0x01
    tx["data"] = "0x" + data.hex()
    return True


def _account_flag(b: dict[str, Any]) -> bool:
    a = b["unsigned_action"]
    if not a.get("instructions"):
        return False
    account = a["instructions"][-1]["keys"][0]
    account["isWritable"] = not account["isWritable"]
    return True


def _fee_transfer(a: dict[str, Any]) -> tuple[dict[str, Any], bytes] | None:
    """The action's SPL TransferChecked (the Solana fee) and its data, or None."""
    for ix in a.get("instructions") or []:
        data = base64.b64decode(ix["data"])
        if ix["programId"] in (SPL_TOKEN_PROGRAM, TOKEN_2022_PROGRAM) and len(data) == 10 and data[0] == 12:
            return ix, data
    return None


TRANSFER_SELECTOR = "0xa9059cbb"  # ERC-20 transfer(address,uint256)


def _evm_fee_transaction(a: dict[str, Any]) -> dict[str, Any] | None:
    """The action's EVM fee payment to the stated fee recipient: a native value transfer to it, or an ERC-20
    transfer(feeRecipient, fee); None when the action pays no fee on an EVM chain."""
    recipient = str(a.get("feeRecipient") or "").lower()
    if not recipient.startswith("0x"):
        return None
    for tx in a.get("transactions") or []:
        data = str(tx["data"]).lower()
        if data in ("0x", "") and str(tx["to"]).lower() == recipient:
            return tx
        if data.startswith(TRANSFER_SELECTOR) and data[10:74] == recipient[2:].rjust(64, "0"):
            return tx
    return None


def _evm_fee_to_stranger(b: dict[str, Any]) -> bool:
    """The EVM fee paid to someone else (the value transfer's `to`, or the ERC-20 transfer's recipient), the
    stated fee recipient left as it was."""
    tx = _evm_fee_transaction(b["unsigned_action"])
    if tx is None:
        return False
    if str(tx["data"]).lower() in ("0x", ""):
        tx["to"] = OTHER_EVM
    else:
        tx["data"] = tx["data"][:10] + OTHER_EVM[2:].lower().rjust(64, "0") + tx["data"][74:]
    return True


def _evm_fee_amount(b: dict[str, Any]) -> bool:
    """One base unit more to the fee recipient than the fee rule gives (value or transfer amount)."""
    tx = _evm_fee_transaction(b["unsigned_action"])
    if tx is None:
        return False
    if str(tx["data"]).lower() in ("0x", ""):
        tx["value"] = str(int(tx["value"]) + 1)
    else:
        amount = int(tx["data"][74:138], 16) + 1
        tx["data"] = tx["data"][:74] + f"{amount:064x}" + tx["data"][138:]
    return True


def _fee_to_stranger(b: dict[str, Any]) -> bool:
    """The planted bug of issue 45: the fee paid to another token account (the account creation made to
    match), the stated fee recipient left as it was."""
    a = b["unsigned_action"]
    found = _fee_transfer(a)
    if found is None:
        return False
    transfer, _ = found
    destination = transfer["keys"][2]["pubkey"]
    for ix in a["instructions"]:
        for key in ix["keys"]:
            if key["pubkey"] == destination:
                key["pubkey"] = OTHER_SOLANA
    return True


def _fee_amount(b: dict[str, Any]) -> bool:
    found = _fee_transfer(b["unsigned_action"])
    if found is None:
        return False
    transfer, data = found
    amount = int.from_bytes(data[1:9], "little") + 1
    transfer["data"] = base64.b64encode(data[:1] + amount.to_bytes(8, "little") + data[9:]).decode()
    return True


def _fee_token_account(b: dict[str, Any]) -> bool:
    """The Solana fee's stated token account changed (or, on an action that pays no fee, named)."""
    a = b["unsigned_action"]
    if a.get("family") != "solana" or "feeRecipientTokenAccount" not in a:
        return False
    a["feeRecipientTokenAccount"] = OTHER_SOLANA
    return True


TAMPERS: dict[str, Tamper] = {
    "fee_to_stranger": _fee_to_stranger,
    "fee_amount": _fee_amount,
    "evm_fee_to_stranger": _evm_fee_to_stranger,
    "evm_fee_amount": _evm_fee_amount,
    "fee_token_account": _fee_token_account,
    "recipient": _recipient,
    "calldata_recipient": _calldata_recipient,
    "amount": _amount,
    "min_out": _min_out,
    "fee_recipient": _fee_recipient,
    "target_or_program": _target,
    "deadline": _deadline,
    "calldata_byte": _calldata_byte,
    "account_flag": _account_flag,
}


def _verdict(bundle: dict[str, Any], kwargs: dict[str, Any]) -> list[list[str]]:
    return [[f.code, f.severity] for f in verify_bundle(bundle, **kwargs)]


def _options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The Python keyword arguments in the TypeScript verifier's names (an amount as a decimal string: the
    TypeScript side reads it as a bigint)."""
    actual = kwargs.get("session_actual_input_base")
    return {
        "sessionActualInputBase": None if actual is None else str(actual),
        "intent": kwargs["intent"],
        "wallets": kwargs["wallets"],
        "nowUnix": kwargs["now_unix"],
        "approvalV3": kwargs["approval_v3"],
        "directRouteSummary": kwargs["direct_route_summary"],
        "eventSignerPublic": kwargs["event_signer_public"],
        "feeRecipients": kwargs["fee_recipients"],
        "acceptModelledBounds": kwargs["accept_modelled_bounds"],
    }


def _entry(entry_id: str, kind: str, bundle: dict[str, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": entry_id,
        "kind": kind,
        "bundle": bundle,
        "options": _options(kwargs),
        "python": _verdict(bundle, kwargs),
    }


def _add_variants(
    entries: list[dict[str, Any]], base: str, kind: str, bundle: dict[str, Any], kwargs: dict[str, Any]
) -> None:
    entries.append(_entry(f"{base}:as_prepared", kind, bundle, kwargs))
    refuse_modelled = {**kwargs, "accept_modelled_bounds": False}
    entries.append(_entry(f"{base}:modelled_bounds_not_accepted", kind, bundle, refuse_modelled))
    for name, tamper in TAMPERS.items():
        for rehashed in (True, False):
            tampered = copy.deepcopy(bundle)
            if not tamper(tampered):
                continue
            if rehashed:
                tampered = rehash(tampered)
            label = f"{base}:{name}{':rehashed' if rehashed else ''}"
            entries.append(_entry(label, kind, tampered, kwargs))


def _pool_fee(quote: dict[str, Any], index: int) -> int | None:
    """The Uniswap fee tier the quote priced the step on, as the session engine reads it (None elsewhere)."""
    for f in quote["cost_summary"]["provider_fee_components"]:
        if f["step_index"] == index and "fee_pips" in f:
            return int(f["fee_pips"])
    return None


def later_steps() -> list[tuple[str, int]]:
    """One route for each kind of action that is a later step of some route (a session's next action)."""
    chosen: dict[str, tuple[str, int]] = {}
    for key in sorted(ROUTES):
        for step in ROUTES[key].steps[1:]:
            chosen.setdefault(action_kind(key, step.index), (key, step.index))
    return sorted(chosen.values())


async def _later_step(
    env: Env, route_key: str, index: int, amount: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A session's later step as the session engine builds it, with the verifier's arguments for that step."""
    route = ROUTES[route_key]
    intent = intent_for(route_key, amount)
    issued = await env.service.quote(parse_quote_request(intent))
    ps = issued.body.pricing.steps[index]
    wallets = wallets_for(route_key)
    signer = EVENT_SIGNER if route.event_signer_required else None
    pool_tick, read = await env.prepare.solana_pool_tick(route, ps.step)
    bundle = env.prepare.build_step(
        route,
        ps,
        minimum_output_base=ps.minimum_output_base,
        wallets=wallets,
        signer=signer,
        pool_fee_pips=_pool_fee(issued.payload, index),
        pool_tick=pool_tick,
        raydium_live=read,
        binding=env.prepare.quote_binding(issued.payload, None),
        summary_steps=issued.payload["direct_route_summary"]["steps"],
        workflow_id="wf-later",
        quote_expiry_unix=None,
        market=issued.payload["market"],
    )
    kwargs = {
        "intent": intent,
        "wallets": wallets,
        "now_unix": int(env.clock.now().timestamp()),
        "approval_v3": None,
        "direct_route_summary": issued.payload["direct_route_summary"],
        "event_signer_public": signer,
        "fee_recipients": FEE_RECIPIENTS,
        "session_actual_input_base": ps.expected_input_base,
        "accept_modelled_bounds": True,  # the embedded market
    }
    return bundle, kwargs


async def corpus() -> list[dict[str, Any]]:
    env = make_env()
    entries: list[dict[str, Any]] = []
    for route_key in sorted(ROUTES):
        for amount in AMOUNTS_USD:
            prepared = await prepare_route(env, route_key, amount)
            kind = action_kind(route_key, prepared.bundle["step_index"])
            _add_variants(entries, f"{route_key}@{amount}", kind, prepared.bundle, prepared.verify_kwargs())
    for route_key, index in later_steps():
        for amount in AMOUNTS_USD:
            bundle, kwargs = await _later_step(env, route_key, index, amount)
            kind = action_kind(route_key, index)
            _add_variants(entries, f"{route_key}#{index}@{amount}", kind, bundle, kwargs)
    entries += await mint_entries(_add_variants, _entry, AMOUNTS_USD)
    entries += settlement_entries()
    return entries
