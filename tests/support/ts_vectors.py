"""Shared vectors for the TypeScript verifier: prepared bundles (the first action of every route at two amounts,
through the real PrepareService) and tampered variants of each, with the Python verifier's verdict. Both
verifiers must agree on every entry (tests/integration/test_ts_verifier_equality.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from routequote.core.assets import CHAINS
from routequote.core.routes import ROUTES
from routequote.verify import verify_bundle
from tests.unit.actions.support import make_env, prepare_route, rehash

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
    a = b["unsigned_action"]
    if not a.get("feeRecipient"):
        return False
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


TAMPERS: dict[str, Tamper] = {
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
    """The Python keyword arguments in the TypeScript verifier's names."""
    return {
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


async def corpus() -> list[dict[str, Any]]:
    env = make_env()
    entries: list[dict[str, Any]] = []
    for route_key in sorted(ROUTES):
        for amount in AMOUNTS_USD:
            prepared = await prepare_route(env, route_key, amount)
            kind = action_kind(route_key, prepared.bundle["step_index"])
            kwargs = prepared.verify_kwargs()
            base = f"{route_key}@{amount}"
            entries.append(_entry(f"{base}:as_prepared", kind, prepared.bundle, kwargs))
            refuse_modelled = {**kwargs, "accept_modelled_bounds": False}
            entries.append(
                _entry(f"{base}:modelled_bounds_not_accepted", kind, prepared.bundle, refuse_modelled)
            )
            for name, tamper in TAMPERS.items():
                for rehashed in (True, False):
                    bundle = copy.deepcopy(prepared.bundle)
                    if not tamper(bundle):
                        continue
                    if rehashed:
                        bundle = rehash(bundle)
                    label = f"{base}:{name}{':rehashed' if rehashed else ''}"
                    entries.append(_entry(label, kind, bundle, kwargs))
    return entries
