"""EVM unsigned transactions: exact calldata for ERC-20, Uniswap v3 SwapRouter02, CCTP v2, Across and
LayerZero OFT, built with eth_abi from the published function signatures.

Contract addresses are an input (`EvmDeployment`, defaulting to the pinned mainnet addresses), so
tests can point the same builder at contracts deployed on a local chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from eth_abi.abi import decode, encode
from eth_utils.abi import function_signature_to_4byte_selector

from routequote.core.actions.common import (
    ZERO_BYTES32,
    ActionUnavailable,
    address_to_bytes32,
    associated_token_address,
    checksum,
    solana_pubkey_bytes,
)
from routequote.core.actions.plan import CCTP_FAST_FINALITY, StepPlan
from routequote.core.assets import ASSETS, CHAINS, Asset, Chain, Token
from routequote.core.providers import PROVIDERS
from routequote.core.routes import Provider

# SwapRouter02 (swap-router-contracts Constants.sol): recipient placeholder meaning "the router itself"
ROUTER_ADDRESS_THIS = "0x0000000000000000000000000000000000000002"

SIGNATURES: dict[str, str] = {
    "approve": "approve(address,uint256)",
    "transfer": "transfer(address,uint256)",
    "multicall": "multicall(uint256,bytes[])",
    "exactInputSingle": "exactInputSingle((address,address,uint24,address,uint256,uint256,uint160))",
    "unwrapWETH9": "unwrapWETH9(uint256,address)",
    "depositForBurn": "depositForBurn(uint256,uint32,bytes32,address,bytes32,uint256,uint32)",
    "deposit": (
        "deposit(bytes32,bytes32,bytes32,bytes32,uint256,uint256,uint256,bytes32,uint32,uint32,uint32,bytes)"
    ),
    "send": "send((uint32,bytes32,uint256,uint256,bytes,bytes,bytes),(uint256,uint256),address)",
    "receiveMessage": "receiveMessage(bytes,bytes)",  # CCTP v2 MessageTransmitterV2: the destination mint
}


def arg_types(signature: str) -> list[str]:
    """The top-level argument types of a function signature (tuples kept whole)."""
    inner = signature[signature.index("(") + 1 : -1]
    out: list[str] = []
    depth, cur = 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur:
        out.append(cur)
    return out


SELECTORS: dict[str, bytes] = {
    name: function_signature_to_4byte_selector(sig) for name, sig in SIGNATURES.items()
}
_BY_SELECTOR: dict[bytes, str] = {sel: name for name, sel in SELECTORS.items()}
ARG_TYPES: dict[str, list[str]] = {name: arg_types(sig) for name, sig in SIGNATURES.items()}

# LayerZero v2 endpoint ids (chains.md §1)
LZ_EID: dict[Chain, int] = {
    Chain.SOLANA: 30168,
    Chain.BASE: 30184,
    Chain.ARBITRUM: 30110,
    Chain.ROBINHOOD: 30416,
}


def encode_call(name: str, *args: Any) -> bytes:
    return SELECTORS[name] + encode(ARG_TYPES[name], list(args))


@dataclass(frozen=True, slots=True)
class DecodedCall:
    name: str
    selector: str  # 0x + 8 hex
    args: tuple[Any, ...]


def decode_call(data: bytes) -> DecodedCall | None:
    """Decode calldata of one of the known functions; None for empty data (a plain value transfer)."""
    if not data:
        return None
    name = _BY_SELECTOR.get(data[:4])
    if name is None:
        raise ValueError(f"unknown selector 0x{data[:4].hex()}")
    args = decode(ARG_TYPES[name], data[4:])
    if encode(ARG_TYPES[name], list(args)) != data[4:]:
        raise ValueError(f"non-canonical calldata for {name}")
    return DecodedCall(name, "0x" + data[:4].hex(), tuple(args))


@dataclass(frozen=True, slots=True)
class EvmDeployment:
    """Contract addresses on one EVM chain. A protocol entry of None is not pinned: its steps are not built."""

    chain: Chain
    chain_id: int
    tokens: dict[str, str]  # USDC / USDG / WETH -> ERC-20 address
    swap_router02: str | None = None
    token_messenger_v2: str | None = None
    across_spoke_pool: str | None = None
    usdg_oft: str | None = None
    message_transmitter_v2: str | None = (
        None  # CCTP v2 destination mint (receiveMessage); not a route step's target
    )
    unpinned_reasons: dict[str, str] = field(default_factory=dict)

    def token(self, a: Asset) -> str:
        key = "WETH" if a.is_native else a.token.value
        return checksum(self.tokens[key])

    def contract(self, provider: Provider) -> str | None:
        """The pinned contract a step of `provider` calls here: the deployment field its spec names."""
        name = PROVIDERS[provider].evm_contract
        found: str | None = getattr(self, name) if name else None
        return None if found is None else checksum(found)

    def with_overrides(self, **changes: Any) -> EvmDeployment:
        return replace(self, **changes)


def _tokens(chain: Chain) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in ASSETS.values():
        if a.chain is chain:
            if a.is_native and a.wrapped_address:
                out["WETH"] = a.wrapped_address
            elif a.address:
                out[a.token.value] = a.address
    return out


TOKEN_MESSENGER_V2 = "0x28b5a0e9C621a5BadaA536219b3a228C8168cf5d"  # same address on every EVM mainnet [O]
MESSAGE_TRANSMITTER_V2 = "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64"  # same address on every EVM mainnet [O]
DEFAULT_DEPLOYMENTS: dict[Chain, EvmDeployment] = {
    Chain.BASE: EvmDeployment(
        Chain.BASE,
        8453,
        _tokens(Chain.BASE),
        swap_router02="0x2626664c2603336E57B271c5C0b26F421741e481",
        token_messenger_v2=TOKEN_MESSENGER_V2,
        message_transmitter_v2=MESSAGE_TRANSMITTER_V2,
        across_spoke_pool="0x09aea4b2242abC8bb4BB78D537A67a245A7bEC64",
    ),
    Chain.ARBITRUM: EvmDeployment(
        Chain.ARBITRUM,
        42161,
        _tokens(Chain.ARBITRUM),
        swap_router02="0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45",
        token_messenger_v2=TOKEN_MESSENGER_V2,
        message_transmitter_v2=MESSAGE_TRANSMITTER_V2,
        across_spoke_pool="0xe35e9842fceaCA96570B734083f4a58e8F7C5f2A",
    ),
    # Uniswap v3 on Robinhood Chain: SwapRouter02 and Factory agree in two independent catalogs (chains.md §6,
    # the second citing Uniswap's Robinhood deployment page); the pinned WETH/USDG pools follow from that Factory
    # by CREATE2 (re-derived in tests/unit/actions/test_robinhood_uniswap.py). Only SwapRouter02 is called, never
    # Robinhood's modified Universal Router.
    Chain.ROBINHOOD: EvmDeployment(
        Chain.ROBINHOOD,
        4663,
        _tokens(Chain.ROBINHOOD),
        swap_router02="0xCaf681a66D020601342297493863E78C959E5cb2",
        usdg_oft="0x0d54755f5106BfdB43f7a35f5D49a23F940628d1",
    ),
}


@dataclass(frozen=True, slots=True)
class EvmBuild:
    transactions: list[dict[str, Any]]
    kinds: list[str]
    approval: dict[str, Any] | None
    spend_token: str  # ERC-20 address or "native"
    protocol_target: str
    destination: dict[str, Any]


def evm_step_supported(
    provider: Provider, chain: Chain, deployments: dict[Chain, EvmDeployment]
) -> str | None:
    """None when the step can be built on `chain`; otherwise the reason it cannot."""
    dep = deployments.get(chain)
    if dep is None:
        return f"no_deployment_for_{chain.value}"
    if dep.contract(provider) is None:
        return dep.unpinned_reasons.get(
            provider.value, f"{provider.value}_contract_not_pinned_on_{chain.value}"
        )
    return None


def _tx(plan: StepPlan, dep: EvmDeployment, to: str, data: bytes, value: int = 0) -> dict[str, Any]:
    return {
        "chainId": dep.chain_id,
        "from": checksum(plan.caller),
        "to": checksum(to),
        "value": str(value),
        "data": "0x" + data.hex(),
    }


def mint_recipient_bytes32(plan: StepPlan) -> bytes:
    """CCTP mintRecipient: an EVM address left-padded, or on Solana the recipient's USDC token account."""
    target = plan.step.target
    if target.chain is Chain.SOLANA:
        return bytes(associated_token_address(plan.recipient, target))
    return address_to_bytes32(plan.recipient)


def build_evm(plan: StepPlan, deployments: dict[Chain, EvmDeployment]) -> EvmBuild:
    step = plan.step
    chain = step.source.chain
    reason = evm_step_supported(step.provider, chain, deployments)
    if reason:
        raise ActionUnavailable(reason)
    dep = deployments[chain]
    target = dep.contract(step.provider)
    assert target is not None
    src, dst = step.source, step.target
    txs: list[dict[str, Any]] = []
    kinds: list[str] = []
    net = plan.net_input_base
    if net <= 0:
        raise ActionUnavailable("amount_below_route_minimum")
    if plan.fee_base:
        if src.is_native:
            txs.append(_tx(plan, dep, plan.fee_recipient, b"", plan.fee_base))
        else:
            txs.append(
                _tx(
                    plan,
                    dep,
                    dep.token(src),
                    encode_call("transfer", checksum(plan.fee_recipient), plan.fee_base),
                )
            )
        kinds.append("service_fee_transfer")
    approval: dict[str, Any] | None = None
    if not src.is_native:
        approval = {
            "required": True,
            "token": dep.token(src),
            "target": target,
            "exact_allowance_base": str(net),
            "transaction_index": len(txs),
        }
        txs.append(_tx(plan, dep, dep.token(src), encode_call("approve", target, net)))
        kinds.append("erc20_approve")
    destination: dict[str, Any]
    if step.provider is Provider.UNISWAP_V3:
        if plan.pool_fee_pips is None:
            raise ActionUnavailable("uniswap_pool_fee_unknown")
        to_self = dst.is_native
        swap = encode_call(
            "exactInputSingle",
            (
                dep.token(src),
                dep.token(dst),
                plan.pool_fee_pips,
                ROUTER_ADDRESS_THIS if to_self else checksum(plan.recipient),
                net,
                plan.minimum_output_base,
                0,
            ),
        )
        calls = [swap]
        if to_self:
            calls.append(encode_call("unwrapWETH9", plan.minimum_output_base, checksum(plan.recipient)))
        data = encode_call("multicall", plan.deadline_unix, calls)
        txs.append(_tx(plan, dep, target, data, net if src.is_native else 0))
        kinds.append("uniswap_v3_swap")
        destination = {"chain": dst.chain.value, "recipient": checksum(plan.recipient), "domain": None}
    elif step.provider is Provider.CIRCLE_CCTP:
        domain = CHAINS[dst.chain].cctp_domain
        assert domain is not None
        if not 0 < plan.max_provider_fee_base < net:
            raise ActionUnavailable("cctp_max_fee_not_below_amount")
        data = encode_call(
            "depositForBurn",
            net,
            domain,
            mint_recipient_bytes32(plan),
            dep.token(src),
            ZERO_BYTES32,
            plan.max_provider_fee_base,
            CCTP_FAST_FINALITY,
        )
        txs.append(_tx(plan, dep, target, data))
        kinds.append("cctp_deposit_for_burn")
        destination = {"chain": dst.chain.value, "recipient": plan.recipient, "domain": domain}
    elif step.provider is Provider.ACROSS:
        dst_dep = deployments.get(dst.chain) or DEFAULT_DEPLOYMENTS[dst.chain]
        data = encode_call(
            "deposit",
            address_to_bytes32(plan.caller),
            address_to_bytes32(plan.recipient),
            address_to_bytes32(dep.token(src)),
            address_to_bytes32(dst_dep.token(dst)),
            net,
            plan.minimum_output_base,
            dst_dep.chain_id,
            ZERO_BYTES32,
            plan.prepared_at_unix,
            plan.fill_deadline_unix,
            0,
            b"",
        )
        txs.append(_tx(plan, dep, target, data))
        kinds.append("across_deposit")
        destination = {
            "chain": dst.chain.value,
            "recipient": checksum(plan.recipient),
            "domain": dst_dep.chain_id,
        }
    elif step.provider is Provider.PAXOS_OFT:
        if dst.chain is not Chain.SOLANA or dst.token is not Token.USDG:
            raise ActionUnavailable("oft_destination_not_peered")
        to = solana_pubkey_bytes(plan.recipient)
        data = encode_call(
            "send",
            (LZ_EID[dst.chain], to, net, plan.minimum_output_base, b"", b"", b""),
            (plan.native_fee_wei, 0),
            checksum(plan.caller),
        )
        txs.append(_tx(plan, dep, target, data, plan.native_fee_wei))
        kinds.append("oft_send")
        destination = {"chain": dst.chain.value, "recipient": plan.recipient, "domain": LZ_EID[dst.chain]}
    else:
        raise ActionUnavailable(f"{step.provider.value}_is_not_an_evm_step")
    return EvmBuild(
        transactions=txs,
        kinds=kinds,
        approval=approval,
        spend_token="native" if src.is_native else dep.token(src),
        protocol_target=target,
        destination=destination,
    )
