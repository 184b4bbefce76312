"""The CCTP v2 destination mint as the caller's next unsigned action: `MessageTransmitterV2.receiveMessage(bytes
message, bytes attestation)` on the EVM chain the message is addressed to.

The session engine calls `assemble_receive_bundle` once Iris has attested the burn: it checks the attested
message against the route step and the caller's wallets (the mint must pay the caller, on this chain, for a
burn the caller made of the route's USDC) and returns a complete bundle of the same shape as a prepared
action (version, workflow, unsigned_action with one transaction and its safety_receipt, payload_sha256). The
caller spends nothing (value 0, no approval, no service fee); it receives `amount - feeExecuted`, which is
at least `amount - maxFee`. `routequote.verify` checks such a bundle on the caller's side.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from routequote.core.actions.bundle import (
    ACTION_SHA256_SPEC,
    BUILDER_VERSION,
    EVM_ACTION_VERSION,
    FEE_FORMULA,
    RECEIPT_SCHEMA,
    SERVER_FLAGS,
    action_sha256,
    allowlists,
    iso_ms,
    raw_payload_rows,
    seal_bundle,
    unix,
    workflow_document,
)
from routequote.core.actions.cctp_message import (
    CCTP_V2_BURN_BODY_VERSION,
    CCTP_V2_MESSAGE_VERSION,
    ZERO32,
    CctpMessageError,
    parse_cctp_message,
)
from routequote.core.actions.common import (
    ActionUnavailable,
    address_to_bytes32,
    checksum,
    solana_pubkey_bytes,
)
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmBuild, EvmDeployment, encode_call
from routequote.core.actions.plan import (
    BUNDLE_TTL_SECONDS,
    MAX_DEADLINE_WINDOW_SECONDS,
    ONCHAIN_DEADLINE_SECONDS,
)
from routequote.core.assets import ASSETS, CHAINS, Chain, ChainFamily
from routequote.core.routes import Provider, Route, Step

RECEIVE_KIND = "cctp_receive_message"
RECEIVE_PHASE = "cctp_destination_mint"
ATTESTATION_SIGNATURE_LENGTH = 65  # an attestation is one or more concatenated 65-byte ECDSA signatures
RECEIVE_RISKS = [
    "the_mint_pays_amount_minus_fee_executed_to_the_message_mint_recipient",
    "a_message_already_received_reverts_nothing_is_minted_twice",
    "fast_messages_past_their_expiration_block_revert_and_need_reattestation",
]


# A destination mint spends nothing of the caller's and pays no service fee (the fee is taken on another step):
# the same terms for the mint on EVM and on Solana.
def nothing_spent() -> dict[str, Any]:
    """The spend and approval blocks of a mint action (fresh objects: a bundle may be edited after it is built)."""
    return {
        "spend": {
            "token": {"symbol": None, "address_or_mint": None},
            "exact_amount_base": "0",
            "maximum_amount_base": "0",
        },
        "approval": {
            "required": False,
            "token": None,
            "target": None,
            "exact_allowance_base": "0",
            "transaction_index": None,
        },
    }


def no_fee_on_the_mint(route: Route, native_unit: str) -> dict[str, Any]:
    """The native-value cap (none) and the service-fee block (nothing, on another step) of a mint action."""
    return {
        "native_value_cap": {"maximum_base": "0", "unit": native_unit, "per_transaction_base": ["0"]},
        "service_fee": {
            "basis": {"kind": "none_on_the_destination_mint", "amount_base": "0"},
            "bps": 0,
            "collected_on_this_step": False,
            "fee_collection_step_index": route.fee_step_index,
            "formula": FEE_FORMULA,
            "exact_amount_base": "0",
            "token": None,
            "amount_known_before_execution": True,
            "recipient": None,
            "recipient_token_account": None,
        },
    }


def mint_timing_and_binding(
    action: dict[str, Any],
    *,
    prepared_unix: int,
    deadline: int,
    quote_expiry_unix: int | None,
    expires: datetime,
    expiration_block: Any,
) -> dict[str, Any]:
    """The timing and payload-binding blocks of a mint action, on EVM and on Solana alike."""
    return {
        "timing": {
            "prepared_at_unix": prepared_unix,
            "action_deadline_unix": deadline,
            "deadline_enforced_onchain": False,
            "maximum_deadline_window_seconds": MAX_DEADLINE_WINDOW_SECONDS,
            "across_fill_deadline_unix": None,
            "quote_expiry_unix": quote_expiry_unix,
            "recent_blockhash": None,
            "bundle_expires_at": iso_ms(expires),
            "cctp_expiration_block": str(expiration_block),
        },
        "payload_binding": {
            "canonicalization": ACTION_SHA256_SPEC,
            "action_sha256": action_sha256(action),
            "raw_payloads": raw_payload_rows(action),
        },
    }


def _hex32(b: bytes) -> str:
    return "0x" + b.hex()


def _message(message: bytes) -> dict[str, Any]:
    try:
        return parse_cctp_message(message)
    except CctpMessageError as exc:
        raise ActionUnavailable("cctp_message_malformed", str(exc)) from exc


def build_cctp_receive(
    chain: Chain,
    caller: str,
    message: bytes,
    attestation: bytes,
    deployments: Mapping[Chain, EvmDeployment],
    *,
    prepared_at_unix: int,
    deadline_unix: int,
) -> EvmBuild:
    """One transaction: `receiveMessage(message, attestation)` from `caller` to the pinned MessageTransmitterV2
    of `chain`, value 0. Refuses (ActionUnavailable) unless the message is a CCTP v2 burn message addressed to
    this chain's domain and TokenMessengerV2, minting to `caller`, relayable by anyone or by `caller`, with
    `feeExecuted <= maxFee < amount`, and the attestation is whole 65-byte signatures."""
    dep = {**DEFAULT_DEPLOYMENTS, **deployments}.get(chain)
    domain = CHAINS[chain].cctp_domain
    if dep is None or CHAINS[chain].family is not ChainFamily.EVM or domain is None:
        raise ActionUnavailable("cctp_receive_chain_not_supported", f"no CCTP v2 EVM mint on {chain.value}")
    if dep.message_transmitter_v2 is None:
        raise ActionUnavailable(f"cctp_message_transmitter_not_pinned_on_{chain.value}")
    if not deadline_unix > prepared_at_unix or deadline_unix - prepared_at_unix > MAX_DEADLINE_WINDOW_SECONDS:
        raise ActionUnavailable(
            "cctp_receive_deadline_invalid", "the deadline must follow prepared_at within 300 s"
        )
    m = _message(message)
    burn = m["burn"]
    caller_b32 = _hex32(address_to_bytes32(caller))
    checks = [
        (
            m["version"] == CCTP_V2_MESSAGE_VERSION and burn["version"] == CCTP_V2_BURN_BODY_VERSION,
            "cctp_message_version_unsupported",
            f"versions {m['version']}/{burn['version']}, expected 1/1",
        ),
        (
            m["destination_domain"] == domain,
            "cctp_message_destination_mismatch",
            f"the message is for domain {m['destination_domain']}, {chain.value} is {domain}",
        ),
        (
            dep.token_messenger_v2 is None
            or m["recipient"] == _hex32(address_to_bytes32(dep.token_messenger_v2)),
            "cctp_message_handler_mismatch",
            "the message is not addressed to this chain's TokenMessengerV2",
        ),
        (
            burn["mint_recipient"] == caller_b32,
            "cctp_message_recipient_mismatch",
            "the message mints to another account than the caller's wallet on this chain",
        ),
        (
            m["destination_caller"] in (_hex32(ZERO32), caller_b32),
            "cctp_message_destination_caller_mismatch",
            "only another address may relay this message",
        ),
        (
            0 <= burn["fee_executed"] <= burn["max_fee"] < burn["amount"],
            "cctp_message_fee_invalid",
            "feeExecuted <= maxFee < amount does not hold",
        ),
        (
            len(attestation) > 0 and len(attestation) % ATTESTATION_SIGNATURE_LENGTH == 0,
            "cctp_attestation_malformed",
            "the attestation must be one or more 65-byte signatures",
        ),
    ]
    for ok, reason, detail in checks:
        if not ok:
            raise ActionUnavailable(reason, detail)
    target = checksum(dep.message_transmitter_v2)
    tx = {
        "chainId": dep.chain_id,
        "from": checksum(caller),
        "to": target,
        "value": "0",
        "data": "0x" + encode_call("receiveMessage", bytes(message), bytes(attestation)).hex(),
    }
    return EvmBuild(
        transactions=[tx],
        kinds=[RECEIVE_KIND],
        approval=None,
        spend_token="none",
        protocol_target=target,
        destination={"chain": chain.value, "recipient": checksum(caller), "domain": domain},
    )


def source_checks(
    step: Step, wallets: Mapping[str, str], m: dict[str, Any], deps: Mapping[Chain, EvmDeployment]
) -> None:
    """The message is the route step's burn: from the step's source domain, of the source USDC, by the caller's
    source wallet (and, for an EVM source, emitted by the source chain's TokenMessengerV2)."""
    src = step.source
    burn = m["burn"]
    sender_wallet = wallets[src.chain.value]
    if CHAINS[src.chain].family is ChainFamily.EVM:
        dep = deps[src.chain]
        want_token = _hex32(address_to_bytes32(dep.token(src)))
        want_depositor = _hex32(address_to_bytes32(sender_wallet))
        want_sender = _hex32(address_to_bytes32(dep.token_messenger_v2)) if dep.token_messenger_v2 else None
    else:
        mint = ASSETS[src.key].address
        assert mint is not None
        want_token = _hex32(solana_pubkey_bytes(mint))
        want_depositor = _hex32(solana_pubkey_bytes(sender_wallet))
        want_sender = None  # the Solana program's message sender is not pinned here
    checks = [
        (
            m["source_domain"] == CHAINS[src.chain].cctp_domain,
            "cctp_message_source_mismatch",
            f"the message comes from domain {m['source_domain']}, the step burns on {src.chain.value}",
        ),
        (
            burn["burn_token"] == want_token,
            "cctp_message_token_mismatch",
            "the burned token is not the step's USDC",
        ),
        (
            burn["message_sender"] == want_depositor,
            "cctp_message_depositor_mismatch",
            "the burn was not made by the caller's wallet on the source chain",
        ),
        (
            want_sender is None or m["sender"] == want_sender,
            "cctp_message_sender_mismatch",
            "the message was not sent by the source chain's TokenMessengerV2",
        ),
    ]
    for ok, reason, detail in checks:
        if not ok:
            raise ActionUnavailable(reason, detail)


def message_summary(m: dict[str, Any], attestation: bytes) -> dict[str, Any]:
    """What the bundle states about the message (amounts as decimal strings)."""
    burn = m["burn"]
    return {
        "sourceDomain": m["source_domain"],
        "destinationDomain": m["destination_domain"],
        "nonce": m["nonce"],
        "sender": m["sender"],
        "recipient": m["recipient"],
        "destinationCaller": m["destination_caller"],
        "minFinalityThreshold": m["min_finality_threshold"],
        "finalityThresholdExecuted": m["finality_threshold_executed"],
        "burnToken": burn["burn_token"],
        "mintRecipient": burn["mint_recipient"],
        "amount": str(burn["amount"]),
        "messageSender": burn["message_sender"],
        "maxFee": str(burn["max_fee"]),
        "feeExecuted": str(burn["fee_executed"]),
        "expirationBlock": str(burn["expiration_block"]),
        "hookData": burn["hook_data"],
        "attestationLength": len(attestation),
    }


def assemble_receive_bundle(
    route: Route,
    step: Step,
    wallets: Mapping[str, str],
    message: bytes,
    attestation: bytes,
    deployments: Mapping[Chain, EvmDeployment] | None,
    *,
    workflow_id: str,
    action_id: str,
    prepared_at: datetime,
    quote_binding: dict[str, Any],
    summary_steps: list[dict[str, Any]],
    quote_expiry_unix: int | None = None,
) -> dict[str, Any]:
    """The complete bundle for the caller's `receiveMessage` on the CCTP step's destination chain.

    `step` must be a Circle CCTP step of `route` with an EVM target; `wallets` the caller's wallets (chain ->
    address); `message` / `attestation` the attested bytes from Iris; `deployments` overrides of the pinned
    addresses (None: the pinned mainnet ones); `prepared_at` the caller-handed time (the bundle lives 180 s,
    the advisory deadline is prepared_at + 240 s). Raises ActionUnavailable (snake_case `reason`) when the
    message is not this step's burn to the caller's wallet, or the chain has no pinned transmitter."""
    if step.provider is not Provider.CIRCLE_CCTP or route.steps[step.index] != step:
        raise ActionUnavailable(
            "cctp_receive_not_a_cctp_step", f"step {step.index} of {route.key} is not a CCTP step"
        )
    chain = step.target.chain
    if CHAINS[chain].family is not ChainFamily.EVM:
        raise ActionUnavailable(
            "cctp_receive_on_solana_not_built", "the Solana mint instruction is not built here"
        )
    if set(wallets) != set(route.required_wallet_chains):
        raise ActionUnavailable(
            "wallet_chains_mismatch", f"the route needs wallets on {list(route.required_wallet_chains)}"
        )
    deps = {**DEFAULT_DEPLOYMENTS, **(deployments or {})}
    caller = wallets[chain.value]
    prepared_unix = unix(prepared_at)
    deadline = prepared_unix + ONCHAIN_DEADLINE_SECONDS
    build = build_cctp_receive(
        chain, caller, message, attestation, deps, prepared_at_unix=prepared_unix, deadline_unix=deadline
    )
    m = parse_cctp_message(message)
    source_checks(step, wallets, m, deps)
    burn = m["burn"]
    expected = burn["amount"] - burn["fee_executed"]
    minimum = burn["amount"] - burn["max_fee"]
    expires = prepared_at + timedelta(seconds=BUNDLE_TTL_SECONDS)
    action: dict[str, Any] = {
        "source": step.source.key,
        "destination": step.target.key,
        "chain": chain.value,
        "provider": step.provider.value,
        "step_index": step.index,
        "phase": RECEIVE_PHASE,
        "sender": checksum(caller),
        "recipient": checksum(caller),
        "inputAmount": "0",
        "routeFeeBps": 0,
        "routeFee": "0",
        "feeRecipient": None,
        "netInputAmount": "0",
        "expectedOutput": str(expected),
        "minimumOutput": str(minimum),
        "maxProviderFee": str(burn["max_fee"]),
        "minFinalityThreshold": m["min_finality_threshold"],
        "nativeMessagingFee": None,
        "deadline": deadline,
        "fillDeadline": None,
        "kinds": list(build.kinds),
        "cctpMessage": message_summary(m, attestation),
        "aggregatorApiUsed": False,
        "signed": False,
        "submitted": False,
        "version": EVM_ACTION_VERSION,
        "family": "evm",
        "chainId": deps[chain].chain_id,
        "transactions": build.transactions,
        "requiredSigners": [checksum(caller)],
        "submission": "sequential_in_order_each_after_the_previous_is_confirmed",
    }
    targets, selectors = allowlists(action)
    action["safety_receipt"] = {
        "schema": RECEIPT_SCHEMA,
        "schema_version": 1,
        "generation": "decoded_built_action_only",
        "network": {
            "source_chain": chain.value,
            "source_chain_id": deps[chain].chain_id,
            "destination_chain": chain.value,
            "message_source_chain": step.source.chain.value,
        },
        "action": {
            "kind": RECEIVE_KIND,
            "provider": step.provider.value,
            "builder_version": BUILDER_VERSION,
            "step_index": step.index,
        },
        "parties": {"caller": checksum(caller), "fee_payer": checksum(caller)},
        **nothing_spent(),
        "target_or_program_allowlist": targets,
        "selector_or_instruction_allowlist": selectors,
        **no_fee_on_the_mint(route, "wei"),
        "receive": {
            "token": step.target.key,
            "expected_amount_base": str(expected),
            "minimum_amount_base": str(minimum),
        },
        "destination": build.destination,
        **mint_timing_and_binding(
            action,
            prepared_unix=prepared_unix,
            deadline=deadline,
            quote_expiry_unix=quote_expiry_unix,
            expires=expires,
            expiration_block=burn["expiration_block"],
        ),
        "custody": {**SERVER_FLAGS, "signed": False, "submitted": False},
        "risks": {
            "unpriced": [f"network_gas:{chain.value}"],
            "provider": list(RECEIVE_RISKS),
            "caller_verification_required": True,
        },
    }
    return seal_bundle(
        workflow_id=workflow_id,
        action_id=action_id,
        step_index=step.index,
        route_key=route.key,
        prepared_at=prepared_at,
        expires=expires,
        deadline_unix=deadline,
        quote_binding=quote_binding,
        workflow={
            **workflow_document(
                route,
                wallets,
                step.index,
                workflow_id,
                summary_steps,
                actual_input_base=str(burn["amount"]),
                minimum_output_base=str(minimum),
            ),
            "current_phase": RECEIVE_PHASE,
        },
        action=action,
    )
