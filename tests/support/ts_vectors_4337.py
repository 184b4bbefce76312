"""Shared vectors for the TypeScript verifier's ERC-4337 settlement check (`verify_settlement_plan`): plans built
by `build_settlement_plan` (account to deploy and deployed, on Base and Arbitrum, at two amounts), before and
after the wallet's permit signature (a test key, eth_account), and tampered plans and caller values, with the
Python verifier's verdict. Amount-like options travel as decimal strings (bigint on the TypeScript side)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_utils import keccak

from routequote.core.actions import erc4337 as aa
from routequote.verify import verify_settlement_plan

OWNER = Account.from_key("0x" + keccak(text="routequote ts vectors erc4337 owner").hex())
ACCOUNT = "0xA11cea11CEA11CEA11cEa11CeA11ceA11CEA11Ce"
OTHER = "0x000000000000000000000000000000000000dEaD"
NOW = 1_790_000_000
CHAINS = {  # chain id -> (USDC, WETH, SwapRouter02)
    8453: (
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        "0x4200000000000000000000000000000000000006",
        "0x2626664c2603336E57B271c5C0b26F421741e481",
    ),
    42161: (
        "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
        "0x82aF49447D8a07e3bd95BD0d56f35241523fBab1",
        "0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45",
    ),
}
AMOUNTS = ((99_876_543, 31_000_000_000_000_000), (750_000_000, 233_000_000_000_000_000))

Plan = dict[str, Any]
Tamper = Callable[[Plan, dict[str, Any]], Plan]


def _request(chain_id: int, amount: int, min_out: int, deployed: bool) -> aa.SettlementRequest:
    usdc, weth, router = CHAINS[chain_id]
    return aa.SettlementRequest(
        chain_id=chain_id,
        wallet=OWNER.address,
        smart_account=ACCOUNT,
        account_deployed=deployed,
        entry_point_nonce=0 if not deployed else 4,
        permit_nonce=3,
        usdc=usdc,
        weth=weth,
        router=router,
        pool_fee=500,
        amount_in=amount,
        minimum_eth_out=min_out,
        now_unix=NOW,
        deadline_unix=NOW + 240,
        salt=7,
    )


def _sign(plan: Plan) -> Plan:
    signed = Account.sign_message(encode_typed_data(full_message=plan["permit"]["typedData"]), OWNER.key)
    return aa.attach_permit_signature(plan, "0x" + signed.signature.hex())


def _kwargs(req: aa.SettlementRequest) -> dict[str, Any]:
    return {
        "wallet": req.wallet,
        "smart_account": req.smart_account,
        "chain_id": req.chain_id,
        "entry_point": aa.ENTRY_POINT_V07,
        "usdc": req.usdc,
        "router": req.router,
        "weth": req.weth,
        "minimum_eth_out": req.minimum_eth_out,
        "now_unix": NOW + 5,
        "amount_in": req.amount_in,
        "factory": aa.SIMPLE_ACCOUNT_FACTORY_V07,
        "salt": req.salt,
    }


def _set(path: str, value: Any) -> Tamper:
    def tamper(plan: Plan, _kw: dict[str, Any]) -> Plan:
        node = plan
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
        return plan

    return tamper


def _flip(path: str) -> Tamper:
    """One byte of a hex field flipped in its middle."""

    def tamper(plan: Plan, _kw: dict[str, Any]) -> Plan:
        node = plan
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        raw = bytearray(bytes.fromhex(node[last][2:]))
        raw[len(raw) // 2] ^= 0x01
        node[last] = "0x" + raw.hex()
        return plan

    return tamper


def _template(req: aa.SettlementRequest, **changes: Any) -> Tamper:
    """callDataTemplate rewritten as the service could, the bounds left as they were."""

    def tamper(plan: Plan, _kw: dict[str, Any]) -> Plan:
        args: dict[str, Any] = {
            "usdc": req.usdc,
            "router": req.router,
            "weth": req.weth,
            "wallet": req.wallet,
            "account": req.smart_account,
            "amount_in": req.amount_in,
            "minimum_eth_out": req.minimum_eth_out,
            "pool_fee": req.pool_fee,
            "deadline": NOW + 240,
            **changes,
        }
        plan["callDataTemplate"] = "0x" + aa.settlement_calls(**args).call_data.hex()
        return plan

    return tamper


def _high_s(plan: Plan, _kw: dict[str, Any]) -> Plan:
    sig = bytes.fromhex(plan["permit"]["signature"][2:])
    plan["permit"]["signature"] = "0x" + (sig[:32] + b"\xff" * 32 + sig[64:]).hex()
    return plan


def tampers(req: aa.SettlementRequest) -> dict[str, Tamper]:
    return {
        "recipient_bound": _set("bounds.ethRecipient", OTHER),
        "amount_bound": _set("bounds.exactUsdcIn", str(req.amount_in + 1)),
        "minimum_bound": _set("bounds.minimumEthOut", str(req.minimum_eth_out - 1)),
        "targets": _set("bounds.targets", [req.usdc, OTHER]),
        "deadline_bound": _set("bounds.swapDeadline", NOW + 3600),
        "pool_fee": _set("bounds.poolFee", 600),
        "service_fee": _set("bounds.serviceFee", "1"),
        "recipient_in_calldata": _template(req, wallet=OTHER),
        "amount_in_calldata": _template(req, amount_in=req.amount_in * 2),
        "minimum_in_calldata": _template(req, minimum_eth_out=1),
        "target_in_calldata": _template(req, router=OTHER),
        "template_byte": _flip("callDataTemplate"),
        "call_data_byte": _flip("userOperation.callData"),
        "user_op_hash_byte": _flip("userOpHash"),
        "permit_digest_byte": _flip("permit.digest"),
        "permit_spender": _set("permit.typedData.message.spender", OTHER),
        "permit_domain_name": _set("permit.typedData.domain.name", "USDC"),
        "init_code_owner": _set(
            "userOperation.initCode", "0x" + aa.init_code(aa.SIMPLE_ACCOUNT_FACTORY_V07, OTHER, 7).hex()
        ),
        "paymaster": _set("userOperation.paymasterAndData", "0x" + "11" * 52),
        "gas_fees": _set("userOperation.gasFees", "0x" + aa.pack_uint128_pair(10**6, 10**12).hex()),
        "gas_limits_short": _set("userOperation.accountGasLimits", "0x" + "00" * 31 + "01"),
        "owner_signature": _set("userOperation.signature", "0x" + "11" * 65),
        "sender": _set("userOperation.sender", OTHER),
        "custody": _set("serverSigning", True),
        "kind": _set("kind", "erc4337_settlement_v0"),
        "salt_bool": _set("salt", True),
        "bounds_not_object": _set("bounds", "x"),
        "permit_signature_high_s": _high_s,
    }


CALLER_CHANGES: dict[str, dict[str, Any]] = {
    "caller_amount": {"amount_in": 1},
    "caller_minimum_higher": {"minimum_eth_out": 10**18},
    "caller_account": {"smart_account": "0x000000000000000000000000000000000000bEEF"},
    "caller_chain": {"chain_id": 10},
    "caller_salt": {"salt": 8},
    "caller_factory": {"factory": OTHER},
    "caller_late": {"now_unix": NOW + 241},
    "caller_early": {"now_unix": NOW - 100},
    "caller_entry_point": {"entry_point": OTHER},
}


def _options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The Python keyword arguments in the TypeScript option names (bigint-valued ones as decimal strings)."""
    names = {
        "wallet": "wallet",
        "smart_account": "smartAccount",
        "chain_id": "chainId",
        "entry_point": "entryPoint",
        "usdc": "usdc",
        "router": "router",
        "weth": "weth",
        "minimum_eth_out": "minimumEthOut",
        "now_unix": "nowUnix",
        "amount_in": "amountIn",
        "factory": "factory",
        "salt": "salt",
    }
    big = {"minimum_eth_out", "amount_in", "salt"}
    return {names[k]: str(v) if k in big else v for k, v in kwargs.items()}


def _entry(entry_id: str, plan: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    findings = verify_settlement_plan(plan, **kwargs)
    return {
        "id": entry_id,
        "kind": "erc4337_settlement",
        "check": "settlement",
        "plan": plan,
        "options": _options(kwargs),
        "python": [[f.code, f.severity] for f in findings],
    }


def settlement_entries() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for chain_id in CHAINS:
        for amount, min_out in AMOUNTS:
            for deployed in (False, True):
                req = _request(chain_id, amount, min_out, deployed)
                unsigned = aa.build_settlement_plan(req)
                for stage, plan in (("unsigned", unsigned), ("signed", _sign(unsigned))):
                    base = f"erc4337#{chain_id}:{'deployed' if deployed else 'new'}@{amount}:{stage}"
                    kwargs = _kwargs(req)
                    entries.append(_entry(f"{base}:as_built", plan, kwargs))
                    for name, tamper in tampers(req).items():
                        try:
                            tampered = tamper(copy.deepcopy(plan), kwargs)
                        except (KeyError, TypeError, ValueError):
                            continue  # the field is absent at this stage (no signature before signing)
                        entries.append(_entry(f"{base}:{name}", tampered, kwargs))
                    for name, change in CALLER_CHANGES.items():
                        entries.append(_entry(f"{base}:{name}", plan, {**kwargs, **change}))
                    if stage == "unsigned":
                        fresh = aa.build_settlement_plan(replace(req, minimum_eth_out=min_out - 1))
                        entries.append(_entry(f"{base}:rebuilt_below_minimum", fresh, kwargs))
    for junk_id, junk in (("none", None), ("list", []), ("kind_only", {"kind": aa.PLAN_KIND})):
        entries.append(_entry(f"erc4337#junk:{junk_id}", junk, _kwargs(_request(8453, *AMOUNTS[0], False))))
    return entries
