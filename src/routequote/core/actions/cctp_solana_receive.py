"""The CCTP v2 mint on Solana as the caller's next unsigned action: MessageTransmitterV2 `receive_message` with
the TokenMessengerMinterV2 accounts, after the recipient's USDC associated token account is created if missing.

Accounts, as Circle's programs derive them (circlefin/solana-cctp-contracts `programs/v2`; cross-checked with
Circle's own builder, `@circle-fin/adapter-solana` `derivePdas` + `buildInstructions`, in
tests/integration/test_cctp_solana_sdk_equality.py):

* `ReceiveMessageContext` (`#[event_cpi]`): payer (signer, writable), caller (signer), authority_pda
  `["message_transmitter_authority", TokenMessengerMinterV2]`, message_transmitter `["message_transmitter"]`,
  used_nonce (writable) `["used_nonce", nonce (32 bytes)]`, receiver = TokenMessengerMinterV2, system_program,
  event_authority `["__event_authority"]`, program = MessageTransmitterV2 (all PDAs under MessageTransmitterV2).
* remaining accounts for `handle_receive_finalized_message` (PDAs under TokenMessengerMinterV2): token_messenger
  `["token_messenger"]`, remote_token_messenger `["remote_token_messenger", source domain as decimal]`,
  token_minter (w) `["token_minter"]`, local_token (w) `["local_token", USDC]`, token_pair
  `["token_pair", source domain as decimal, source burn token (32 bytes)]`, fee_recipient_token_account (w: the
  USDC account of the TokenMessenger's `fee_recipient`, program state the caller passes in), the recipient's
  USDC token account (w), custody (w) `["custody", USDC]`, SPL Token, event_authority `["__event_authority"]`,
  TokenMessengerMinterV2.
* data: `sha256("global:receive_message")[:8]` + borsh `ReceiveMessageParams {message: Vec<u8>, attestation:
  Vec<u8>}` (u32 LE length + bytes each).

The message must be the route step's attested burn: destination domain 5 (Solana), recipient =
TokenMessengerMinterV2, mint recipient = the caller's USDC associated token account, destination caller zero or
the caller, `feeExecuted <= maxFee < amount`, whole 65-byte attestation signatures; and (`cctp_receive`
`source_checks`) from the step's source domain, of the source USDC, burned by the caller's source wallet.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from routequote.core.actions import solana as sol
from routequote.core.actions.bundle import (
    BUILDER_VERSION,
    BUNDLE_VERSION,
    PAYLOAD_SHA256_SPEC,
    RECEIPT_SCHEMA,
    SERVER_FLAGS,
    SOLANA_ACTION_VERSION,
    allowlists,
    iso_ms,
    payload_sha256,
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
from routequote.core.actions.cctp_receive import (
    ATTESTATION_SIGNATURE_LENGTH,
    message_summary,
    mint_timing_and_binding,
    no_fee_on_the_mint,
    nothing_spent,
    source_checks,
)
from routequote.core.actions.common import ActionUnavailable, associated_token_address, mint, pubkey
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmDeployment
from routequote.core.actions.plan import (
    BUNDLE_TTL_SECONDS,
    ONCHAIN_DEADLINE_SECONDS,
)
from routequote.core.assets import ASSETS, CHAINS, Chain
from routequote.core.routes import Provider, Route, Step

MT = sol.CCTP_MESSAGE_TRANSMITTER_V2
TMM = sol.CCTP_TOKEN_MESSENGER_MINTER_V2
SPL_TOKEN = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
RECEIVE_MESSAGE_DISCRIMINATOR = hashlib.sha256(b"global:receive_message").digest()[:8]
SOLANA_RECEIVE_KIND = "cctp_receive_message_solana"
SOLANA_RECEIVE_PHASE = "cctp_destination_mint_solana"
SOLANA_RECEIVE_KINDS = ["create_recipient_usdc_token_account", SOLANA_RECEIVE_KIND]
SOLANA_DOMAIN = 5
NONCE_OFFSET, NONCE_END = 12, 44  # MessageV2: version u32, source u32, destination u32, nonce bytes32
SOLANA_RECEIVE_RISKS = [
    "the_mint_pays_amount_minus_fee_executed_to_the_message_mint_recipient",
    "a_message_already_received_fails_its_used_nonce_account_exists_nothing_is_minted_twice",
    "fee_recipient_token_account_is_cctp_program_state_a_wrong_one_fails_the_mint_never_redirects_it",
    "the_payer_funds_the_used_nonce_account_rent_and_the_token_account_rent_if_created",
]


def _pda(seeds: list[bytes], program: Pubkey) -> Pubkey:
    return Pubkey.find_program_address(seeds, program)[0]


def receive_pdas(source_domain: int, burn_token: bytes, usdc_mint: Pubkey, nonce: bytes) -> dict[str, Pubkey]:
    """Every PDA `receive_message` names, with Circle's seeds."""
    domain = str(source_domain).encode()
    return {
        "authority_pda": _pda([b"message_transmitter_authority", bytes(TMM)], MT),
        "message_transmitter": _pda([b"message_transmitter"], MT),
        "used_nonce": _pda([b"used_nonce", nonce], MT),
        "event_authority": _pda([b"__event_authority"], MT),
        "token_messenger": _pda([b"token_messenger"], TMM),
        "remote_token_messenger": _pda([b"remote_token_messenger", domain], TMM),
        "token_minter": _pda([b"token_minter"], TMM),
        "local_token": _pda([b"local_token", bytes(usdc_mint)], TMM),
        "token_pair": _pda([b"token_pair", domain, burn_token], TMM),
        "custody": _pda([b"custody", bytes(usdc_mint)], TMM),
        "tmm_event_authority": _pda([b"__event_authority"], TMM),
    }


def receive_message_data(message: bytes, attestation: bytes) -> bytes:
    return (
        RECEIVE_MESSAGE_DISCRIMINATOR
        + struct.pack("<I", len(message))
        + message
        + struct.pack("<I", len(attestation))
        + attestation
    )


def decode_receive_message_data(data: bytes) -> tuple[bytes, bytes] | None:
    """(message, attestation) of a `receive_message` instruction's data, or None if it is not one exactly."""
    if data[:8] != RECEIVE_MESSAGE_DISCRIMINATOR or len(data) < 16:
        return None
    (n,) = struct.unpack_from("<I", data, 8)
    if len(data) < 16 + n:
        return None
    message = data[12 : 12 + n]
    (k,) = struct.unpack_from("<I", data, 12 + n)
    attestation = data[16 + n : 16 + n + k]
    if len(data) != 16 + n + k:
        return None
    return bytes(message), bytes(attestation)


def receive_message_ix(
    payer: str | Pubkey,
    recipient_owner: str | Pubkey,
    message: bytes,
    attestation: bytes,
    fee_recipient_token_account: str | Pubkey,
) -> Instruction:
    """MessageTransmitterV2 `receive_message` of `message` minting USDC to `recipient_owner`'s token account."""
    m = parse_cctp_message(message)
    usdc = ASSETS["solana:USDC"]
    p = receive_pdas(
        m["source_domain"],
        bytes.fromhex(m["burn"]["burn_token"][2:]),
        mint(usdc),
        message[NONCE_OFFSET:NONCE_END],
    )
    payer_key = pubkey(payer)
    metas = [
        AccountMeta(payer_key, True, True),
        AccountMeta(payer_key, True, False),  # caller: the payer relays its own mint
        AccountMeta(p["authority_pda"], False, False),
        AccountMeta(p["message_transmitter"], False, False),
        AccountMeta(p["used_nonce"], False, True),
        AccountMeta(TMM, False, False),
        AccountMeta(sol.SYSTEM_PROGRAM, False, False),
        AccountMeta(p["event_authority"], False, False),
        AccountMeta(MT, False, False),
        AccountMeta(p["token_messenger"], False, False),
        AccountMeta(p["remote_token_messenger"], False, False),
        AccountMeta(p["token_minter"], False, True),
        AccountMeta(p["local_token"], False, True),
        AccountMeta(p["token_pair"], False, False),
        AccountMeta(pubkey(fee_recipient_token_account), False, True),
        AccountMeta(associated_token_address(recipient_owner, usdc), False, True),
        AccountMeta(p["custody"], False, True),
        AccountMeta(SPL_TOKEN, False, False),
        AccountMeta(p["tmm_event_authority"], False, False),
        AccountMeta(TMM, False, False),
    ]
    return Instruction(MT, receive_message_data(message, attestation), metas)


def _hex32(b: bytes) -> str:
    return "0x" + b.hex()


def check_solana_receive_message(caller: str, message: bytes, attestation: bytes) -> dict[str, Any]:
    """The parsed message if it may be minted by `caller` on Solana (see the module docstring); else raises
    ActionUnavailable with the rule it breaks."""
    try:
        m = parse_cctp_message(message)
    except CctpMessageError as exc:
        raise ActionUnavailable("cctp_message_malformed", str(exc)) from exc
    burn = m["burn"]
    caller_b32 = _hex32(bytes(pubkey(caller)))
    recipient_ata = _hex32(bytes(associated_token_address(caller, ASSETS["solana:USDC"])))
    checks = [
        (
            m["version"] == CCTP_V2_MESSAGE_VERSION and burn["version"] == CCTP_V2_BURN_BODY_VERSION,
            "cctp_message_version_unsupported",
            f"versions {m['version']}/{burn['version']}, expected 1/1",
        ),
        (
            m["destination_domain"] == SOLANA_DOMAIN == CHAINS[Chain.SOLANA].cctp_domain,
            "cctp_message_destination_mismatch",
            f"the message is for domain {m['destination_domain']}, Solana is {SOLANA_DOMAIN}",
        ),
        (
            m["recipient"] == _hex32(bytes(TMM)),
            "cctp_message_handler_mismatch",
            "the message is not addressed to TokenMessengerMinterV2",
        ),
        (
            burn["mint_recipient"] == recipient_ata,
            "cctp_message_recipient_mismatch",
            "the message mints to another account than your USDC token account on Solana",
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
    return m


def build_solana_receive_instructions(
    caller: str, message: bytes, attestation: bytes, fee_recipient_token_account: str
) -> list[dict[str, Any]]:
    """The two instructions: create the caller's USDC token account if missing, then `receive_message`."""
    check_solana_receive_message(caller, message, attestation)
    usdc = ASSETS["solana:USDC"]
    ixs = [
        sol.create_ata_idempotent(caller, caller, usdc),
        receive_message_ix(caller, caller, message, attestation, fee_recipient_token_account),
    ]
    return [sol.instruction_dict(ix) for ix in ixs]


def assemble_solana_receive_bundle(
    route: Route,
    step: Step,
    wallets: Mapping[str, str],
    message: bytes,
    attestation: bytes,
    fee_recipient_token_account: str,
    *,
    workflow_id: str,
    action_id: str,
    prepared_at: datetime,
    quote_binding: dict[str, Any],
    summary_steps: list[dict[str, Any]],
    quote_expiry_unix: int | None = None,
    deployments: Mapping[Chain, EvmDeployment] | None = None,
) -> dict[str, Any]:
    """The complete bundle for the caller's CCTP mint on Solana (same shape and hashes as every prepared
    action). `fee_recipient_token_account` is the TokenMessenger's fee recipient USDC account (program state,
    read by the caller of this function). Raises ActionUnavailable when the message is not this step's burn to
    the caller's Solana USDC account."""
    if step.provider is not Provider.CIRCLE_CCTP or route.steps[step.index] != step:
        raise ActionUnavailable(
            "cctp_receive_not_a_cctp_step", f"step {step.index} of {route.key} is not a CCTP step"
        )
    if step.target.chain is not Chain.SOLANA:
        raise ActionUnavailable("cctp_receive_not_on_solana", "this builder mints on Solana only")
    if set(wallets) != set(route.required_wallet_chains):
        raise ActionUnavailable(
            "wallet_chains_mismatch", f"the route needs wallets on {list(route.required_wallet_chains)}"
        )
    caller = wallets[Chain.SOLANA.value]
    instructions = build_solana_receive_instructions(
        caller, message, attestation, fee_recipient_token_account
    )
    m = parse_cctp_message(message)
    source_checks(step, wallets, m, {**DEFAULT_DEPLOYMENTS, **(deployments or {})})
    burn = m["burn"]
    expected = burn["amount"] - burn["fee_executed"]
    minimum = burn["amount"] - burn["max_fee"]
    prepared_unix = unix(prepared_at)
    deadline = prepared_unix + ONCHAIN_DEADLINE_SECONDS
    expires = prepared_at + timedelta(seconds=BUNDLE_TTL_SECONDS)
    recipient_account = str(associated_token_address(caller, ASSETS["solana:USDC"]))
    action: dict[str, Any] = {
        "source": step.source.key,
        "destination": step.target.key,
        "chain": Chain.SOLANA.value,
        "provider": step.provider.value,
        "step_index": step.index,
        "phase": SOLANA_RECEIVE_PHASE,
        "sender": caller,
        "recipient": caller,
        "recipientTokenAccount": recipient_account,
        "feeRecipientTokenAccountOfTheCctpProgram": fee_recipient_token_account,
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
        "kinds": list(SOLANA_RECEIVE_KINDS),
        "cctpMessage": message_summary(m, attestation),
        "aggregatorApiUsed": False,
        "signed": False,
        "submitted": False,
        "version": SOLANA_ACTION_VERSION,
        "family": "solana",
        "chainId": "mainnet-beta",
        "feePayer": caller,
        "recentBlockhash": None,
        "instructions": instructions,
        "requiredSigners": [caller],
        "feeRecipientTokenAccount": None,
        "submission": "one_transaction_all_instructions_in_order_caller_adds_fresh_blockhash",
    }
    targets, selectors = allowlists(action)
    action["safety_receipt"] = {
        "schema": RECEIPT_SCHEMA,
        "schema_version": 1,
        "generation": "decoded_built_action_only",
        "network": {
            "source_chain": Chain.SOLANA.value,
            "source_chain_id": "mainnet-beta",
            "destination_chain": Chain.SOLANA.value,
            "message_source_chain": step.source.chain.value,
        },
        "action": {
            "kind": SOLANA_RECEIVE_KIND,
            "provider": step.provider.value,
            "builder_version": BUILDER_VERSION,
            "step_index": step.index,
        },
        "parties": {"caller": caller, "fee_payer": caller},
        **nothing_spent(),
        "target_or_program_allowlist": targets,
        "selector_or_instruction_allowlist": selectors,
        **no_fee_on_the_mint(route, "lamports"),
        "receive": {
            "token": step.target.key,
            "token_account": recipient_account,
            "expected_amount_base": str(expected),
            "minimum_amount_base": str(minimum),
        },
        "destination": {"chain": Chain.SOLANA.value, "recipient": caller, "domain": SOLANA_DOMAIN},
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
            "unpriced": ["solana_priority_fee", "solana_rent:used_nonce_and_token_account"],
            "provider": list(SOLANA_RECEIVE_RISKS),
            "caller_verification_required": True,
        },
    }
    bundle: dict[str, Any] = {
        "version": BUNDLE_VERSION,
        "status": "pass",
        "workflow_id": workflow_id,
        "action_id": action_id,
        "step_index": step.index,
        "route": route.key,
        "prepared_at": iso_ms(prepared_at),
        "expires_at": iso_ms(expires),
        "expires_in_seconds": BUNDLE_TTL_SECONDS,
        "deadline_unix": deadline,
        "quote_binding": quote_binding,
        "workflow": {
            **workflow_document(
                route,
                wallets,
                step.index,
                workflow_id,
                summary_steps,
                actual_input_base=str(burn["amount"]),
                minimum_output_base=str(minimum),
            ),
            "current_phase": SOLANA_RECEIVE_PHASE,
        },
        "unsigned_action": action,
        "payload_sha256_spec": PAYLOAD_SHA256_SPEC,
        **SERVER_FLAGS,
        "signed": False,
        "submitted": False,
    }
    bundle["payload_sha256"] = payload_sha256(bundle)
    return bundle


def instruction_data(ix: Mapping[str, Any]) -> bytes:
    return base64.b64decode(ix["data"], validate=True)
