"""The CCTP v2 destination mint (receiveMessage): one EVM transaction that spends nothing; its message must
carry the caller's burn to the caller's wallet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solders.pubkey import Pubkey

from routequote.core.actions.bundle import (
    BUNDLE_VERSION,
    EVM_ACTION_VERSION,
    RECEIPT_SCHEMA,
)
from routequote.core.actions.cctp_message import (
    CCTP_V2_BURN_BODY_VERSION,
    CCTP_V2_MESSAGE_VERSION,
    CctpMessageError,
    parse_cctp_message,
)
from routequote.core.actions.cctp_receive import RECEIVE_KIND, RECEIVE_PHASE
from routequote.core.actions.common import ZERO_BYTES32, address_to_bytes32
from routequote.core.actions.evm import (
    EvmDeployment,
    decode_call,
)
from routequote.core.assets import ASSETS, CHAINS, Chain, ChainFamily
from routequote.core.routes import Provider, Route, Step
from routequote.core.verify.common import (
    Checker,
    check_timing,
    is_solana_key,
    same_address,
    strict_eq,
)


def is_receive(action: dict[str, Any], receipt: dict[str, Any]) -> bool:
    """The bundle says it is a CCTP destination mint. Such a bundle is held to the receive rules only: one
    `receiveMessage` call on the pinned transmitter with value 0, so a mislabelled spend is refused."""
    kind = receipt.get("action", {}).get("kind") if isinstance(receipt.get("action"), dict) else None
    return (
        kind == RECEIVE_KIND or action.get("kinds") == [RECEIVE_KIND] or action.get("phase") == RECEIVE_PHASE
    )


def _b32hex(b: bytes) -> str:
    return "0x" + b.hex()


@dataclass(frozen=True, slots=True)
class _Mint:
    """What every group of the destination-mint checks reads: the bundle's parts, the step and where it mints."""

    c: Checker
    bundle: dict[str, Any]
    action: dict[str, Any]
    receipt: dict[str, Any]
    route: Route
    step: Step
    wallets: dict[str, str]
    deps: dict[Chain, EvmDeployment]
    approval_v3: dict[str, Any] | None
    chain: Chain
    dep: EvmDeployment
    caller: str
    transmitter: str


def verify_receive(
    c: Checker,
    bundle: dict[str, Any],
    action: dict[str, Any],
    receipt: dict[str, Any],
    route: Route,
    step: Step,
    wallets: dict[str, str],
    now_unix: int,
    approval_v3: dict[str, Any] | None,
    deps: dict[Chain, EvmDeployment],
) -> None:
    """`receiveMessage(message, attestation)` on the step's destination chain, decoded and checked against your
    wallets and the pinned contracts: target = the pinned MessageTransmitterV2, value 0, the message's
    destination domain = the chain's CCTP domain, its mintRecipient = your wallet there (bytes32-padded), its
    destinationCaller zero or you, addressed to that chain's TokenMessengerV2, a burn of the step's USDC from
    its source domain by your source wallet, and every amount the action and receipt state = the message's.
    The attestation's signatures are checked on chain by the transmitter, not here."""
    x = _mint_context(c, bundle, action, receipt, route, step, wallets, approval_v3, deps)
    if x is None:
        return
    deadline = _check_mint_action(x, now_unix)
    call = _receive_call(x)
    if call is None:
        return
    message, attestation = call
    try:
        m = parse_cctp_message(message)
    except CctpMessageError as exc:
        c.fail("cctp_message_malformed", f"transaction 0: {exc}")
        return
    _check_message_addressing(x, m)
    _check_burn_origin(x, m["burn"])
    expected, minimum = _check_mint_amounts(x, m["burn"], attestation)
    _check_receipt_identity(x)
    _check_receipt_amounts(x, expected, minimum, deadline)


def _mint_context(
    c: Checker,
    bundle: dict[str, Any],
    action: dict[str, Any],
    receipt: dict[str, Any],
    route: Route,
    step: Step,
    wallets: dict[str, str],
    approval_v3: dict[str, Any] | None,
    deps: dict[Chain, EvmDeployment],
) -> _Mint | None:
    """The step mints by CCTP on an EVM chain with a pinned MessageTransmitterV2: what the checks read, else None."""
    if not c.expect(
        step.provider is Provider.CIRCLE_CCTP and CHAINS[step.target.chain].family is ChainFamily.EVM,
        "receive_step_invalid",
        f"step {step.index} has no CCTP mint on an EVM chain",
    ):
        return None
    chain = step.target.chain
    dep = deps[chain]
    caller = wallets[chain.value]
    transmitter = dep.message_transmitter_v2
    if not c.expect(
        transmitter is not None,
        "protocol_contract_not_pinned",
        f"no pinned MessageTransmitterV2 on {chain.value}",
    ):
        return None
    assert transmitter is not None
    return _Mint(
        c, bundle, action, receipt, route, step, wallets, deps, approval_v3, chain, dep, caller, transmitter
    )


def _check_mint_action(x: _Mint, now_unix: int) -> int | None:
    """The unsigned action's header: an EVM action on the destination chain, from and to your wallet there,
    signed by you alone, spending nothing; its timing; its binding to your approved quote. The deadline."""
    c, action, caller = x.c, x.action, x.caller
    c.expect(
        action.get("version") == EVM_ACTION_VERSION and action.get("family") == "evm",
        "action_version_unsupported",
        "unknown unsigned action version or family",
    )
    c.expect(
        strict_eq(action.get("chainId"), x.dep.chain_id),
        "chain_id_mismatch",
        "unsigned_action.chainId differs",
    )
    c.expect(
        same_address(action.get("sender"), caller) and same_address(action.get("recipient"), caller),
        "sender_mismatch",
        "the mint's sender and recipient must be your wallet on the destination chain",
    )
    signers = action.get("requiredSigners")
    c.expect(
        isinstance(signers, list) and len(signers) == 1 and same_address(signers[0], caller),
        "signers_mismatch",
        "requiredSigners must be exactly your wallet",
    )
    c.expect(
        action.get("inputAmount") == "0"
        and action.get("routeFee") == "0"
        and action.get("netInputAmount") == "0"
        and action.get("feeRecipient") is None,
        "receive_spends",
        "a destination mint spends nothing and pays no fee",
    )
    deadline = check_timing(c, x.bundle, action, now_unix)
    if x.approval_v3 is not None:
        qb = x.bundle.get("quote_binding", {})
        c.expect(
            isinstance(qb, dict)
            and qb.get("quote_id") == x.approval_v3.get("quote_id")
            and qb.get("quote_fingerprint") == x.approval_v3.get("quote_fingerprint"),
            "quote_binding_mismatch",
            "the bundle is not bound to your approved quote",
        )
    return deadline


def _receive_call(x: _Mint) -> tuple[bytes, bytes] | None:
    """The one transaction: on the destination chain, from you, to the pinned transmitter, value 0, calling
    `receiveMessage`. Its (message, attestation), or None when it cannot be read as that call."""
    c, dep = x.c, x.dep
    txs = x.action.get("transactions")
    if not c.expect(
        isinstance(txs, list) and len(txs) == 1 and isinstance(txs[0], dict),
        "unexpected_transaction_sequence",
        "a destination mint is exactly one transaction",
    ):
        return None
    assert isinstance(txs, list)  # checked just above
    tx = txs[0]
    c.expect(
        strict_eq(tx.get("chainId"), dep.chain_id),
        "chain_id_mismatch",
        f"transaction 0: chainId must be {dep.chain_id}",
    )
    c.expect(
        same_address(tx.get("from"), x.caller), "sender_mismatch", "transaction 0: from is not your wallet"
    )
    c.expect(
        same_address(tx.get("to"), x.transmitter),
        "target_not_allowed",
        f"transaction 0: target {tx.get('to')} is not the pinned MessageTransmitterV2 {x.transmitter}",
    )
    c.expect(tx.get("value") == "0", "native_value_not_allowed", 'transaction 0: value must be "0"')
    try:
        call = decode_call(bytes.fromhex(str(tx.get("data", "0x"))[2:]))
    except Exception as exc:  # noqa: BLE001 - any decoding failure refuses the payload
        c.fail("calldata_undecodable", f"transaction 0: {exc}")
        return None
    if not c.expect(
        call is not None and call.name == "receiveMessage",
        "selector_not_allowed",
        "transaction 0: expected MessageTransmitterV2.receiveMessage",
    ):
        return None
    assert call is not None
    return bytes(call.args[0]), bytes(call.args[1])


def _check_message_addressing(x: _Mint, m: dict[str, Any]) -> None:
    """A CCTP v2 burn message from the step's source domain to this chain's, minting to your wallet, relayed
    by anyone or you, handled by this chain's TokenMessengerV2."""
    c, chain, src = x.c, x.chain, x.step.source
    domain = CHAINS[chain].cctp_domain
    c.expect(
        m["version"] == CCTP_V2_MESSAGE_VERSION and m["burn"]["version"] == CCTP_V2_BURN_BODY_VERSION,
        "cctp_message_version_unsupported",
        "not a CCTP v2 burn message",
    )
    c.expect(
        m["destination_domain"] == domain,
        "destination_mismatch",
        f"the message is for domain {m['destination_domain']}, {chain.value} is {domain}",
    )
    c.expect(
        m["source_domain"] == CHAINS[src.chain].cctp_domain,
        "source_domain_mismatch",
        f"the message comes from domain {m['source_domain']}, not {src.chain.value}",
    )
    mine = _b32hex(address_to_bytes32(x.caller))
    c.expect(
        m["burn"]["mint_recipient"] == mine,
        "recipient_mismatch",
        "the message mints to someone else than your wallet",
    )
    c.expect(
        m["destination_caller"] in (_b32hex(ZERO_BYTES32), mine),
        "destination_caller_not_allowed",
        "destinationCaller must be zero or your wallet",
    )
    if x.dep.token_messenger_v2 is not None:
        c.expect(
            m["recipient"] == _b32hex(address_to_bytes32(x.dep.token_messenger_v2)),
            "message_handler_mismatch",
            "the message is not addressed to the destination's TokenMessengerV2",
        )


def _check_burn_origin(x: _Mint, burn: dict[str, Any]) -> None:
    """The burn was of the step's USDC, by your wallet on the source chain (EVM address or Solana key)."""
    c, src = x.c, x.step.source
    src_wallet = x.wallets[src.chain.value]
    if CHAINS[src.chain].family is ChainFamily.EVM:
        c.expect(
            burn["burn_token"] == _b32hex(address_to_bytes32(x.deps[src.chain].token(src))),
            "token_mismatch",
            "the burned token is not the step's USDC",
        )
        c.expect(
            burn["message_sender"] == _b32hex(address_to_bytes32(src_wallet)),
            "depositor_mismatch",
            "the burn was not made by your source wallet",
        )
        return
    mint = ASSETS[src.key].address or ""
    c.expect(
        burn["burn_token"] == _b32hex(bytes(Pubkey.from_string(mint))),
        "token_mismatch",
        "the burned token is not the step's USDC",
    )
    c.expect(
        is_solana_key(src_wallet)
        and burn["message_sender"] == _b32hex(bytes(Pubkey.from_string(src_wallet))),
        "depositor_mismatch",
        "the burn was not made by your source wallet",
    )


def _check_mint_amounts(x: _Mint, burn: dict[str, Any], attestation: bytes) -> tuple[int, int]:
    """Fees below the amount, a well-formed attestation, and the action's outputs = the message's amount less
    its fees (at least your approved minimum on a one-step route). The (expected, minimum) minted."""
    c, action = x.c, x.action
    amount, max_fee, fee_executed = burn["amount"], burn["max_fee"], burn["fee_executed"]
    c.expect(
        0 <= fee_executed <= max_fee < amount, "max_fee_too_high", "feeExecuted <= maxFee < amount must hold"
    )
    c.expect(
        len(attestation) > 0 and len(attestation) % 65 == 0,
        "attestation_malformed",
        "the attestation must be one or more 65-byte signatures",
    )
    expected, minimum = amount - fee_executed, amount - max_fee
    c.expect(
        action.get("expectedOutput") == str(expected) and action.get("minimumOutput") == str(minimum),
        "receive_amount_mismatch",
        "expectedOutput / minimumOutput differ from the message's amount and fees",
    )
    if x.approval_v3 is not None and len(x.route.steps) == 1:
        c.expect(
            minimum >= int(x.approval_v3["minimum_output_base"]),
            "minimum_output_below_bound",
            "amount - maxFee is below your approved minimum output",
        )
    return expected, minimum


def _check_receipt_identity(x: _Mint) -> None:
    """The bundle and receipt versions, the receipt naming a mint, and its network: the destination chain only."""
    c, bundle, receipt = x.c, x.bundle, x.receipt
    c.expect(bundle.get("version") == BUNDLE_VERSION, "bundle_version_unsupported", "unknown bundle version")
    c.expect(
        receipt.get("schema") == RECEIPT_SCHEMA and strict_eq(receipt.get("schema_version"), 1),
        "receipt_schema_unsupported",
        "unknown safety receipt schema",
    )
    c.expect(
        receipt.get("action", {}).get("kind") == RECEIVE_KIND and x.action.get("kinds") == [RECEIVE_KIND],
        "receipt_action_mismatch",
        "the receipt and the action must both name cctp_receive_message",
    )
    net_block = receipt.get("network", {})
    c.expect(
        net_block.get("source_chain") == x.chain.value == net_block.get("destination_chain")
        and strict_eq(net_block.get("source_chain_id"), x.dep.chain_id),
        "receipt_network_mismatch",
        "the receipt names other chains",
    )


def _check_receipt_amounts(x: _Mint, expected: int, minimum: int, deadline: int | None) -> None:
    """The receipt states no spend, approval, native value or fee; the message's receive; the action's timing."""
    c, receipt = x.c, x.receipt
    spend = receipt.get("spend", {})
    c.expect(
        spend.get("exact_amount_base") == "0" == spend.get("maximum_amount_base"),
        "receipt_spend_mismatch",
        "the receipt must state a zero spend",
    )
    c.expect(
        receipt.get("approval", {}).get("required") is False,
        "receipt_approval_mismatch",
        "no approval is due",
    )
    cap = receipt.get("native_value_cap", {})
    c.expect(
        cap.get("maximum_base") == "0" and cap.get("per_transaction_base") == ["0"],
        "receipt_native_value_mismatch",
        "the receipt's native value cap must be zero",
    )
    fee_block = receipt.get("service_fee", {})
    c.expect(
        fee_block.get("exact_amount_base") == "0"
        and fee_block.get("bps") == 0
        and fee_block.get("recipient") is None,
        "receipt_fee_mismatch",
        "no service fee is due on a destination mint",
    )
    receive = receipt.get("receive", {})
    c.expect(
        receive.get("token") == x.step.target.key
        and receive.get("expected_amount_base") == str(expected)
        and receive.get("minimum_amount_base") == str(minimum),
        "receipt_receive_mismatch",
        "the receipt's receive statement differs from the message",
    )
    timing = receipt.get("timing", {})
    c.expect(
        deadline is not None
        and strict_eq(timing.get("action_deadline_unix"), deadline)
        and timing.get("bundle_expires_at") == x.bundle.get("expires_at"),
        "receipt_timing_mismatch",
        "the receipt's timing differs from the action",
    )
