"""CCTP v2 destination mint: the message parser, the `receiveMessage` builder, the bundle the session engine
assembles, and the caller-side verifier.

The message is written byte by byte following circlefin/evm-cctp-contracts `src/messages/v2/MessageV2.sol`
(148-byte header: version u32 @0, sourceDomain u32 @4, destinationDomain u32 @8, nonce bytes32 @12, sender @44,
recipient @76, destinationCaller @108, minFinalityThreshold u32 @140, finalityThresholdExecuted u32 @144,
messageBody @148) and `BurnMessageV2.sol` (version u32 @0, burnToken @4, mintRecipient @36, amount u256 @68,
messageSender @100, maxFee u256 @132, feeExecuted u256 @164, expirationBlock u256 @196, hookData @228).
Golden tests/golden/actions_cctp_receive.json; regenerate with REGEN_GOLDEN_ACTIONS=1 and review the diff.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from eth_abi import decode
from eth_utils import function_signature_to_4byte_selector
from solders.pubkey import Pubkey
from tests.unit.actions.support import (
    EVM_WALLETS,
    SOLANA_WALLET,
    START,
    approval_for,
    intent_for,
    make_env,
    prepare_route,
    rehash,
    wallets_for,
)

from routequote.core.actions.cctp_message import (
    CctpMessageError,
    encode_cctp_burn_message,
    parse_cctp_message,
)
from routequote.core.actions.cctp_receive import assemble_receive_bundle, build_cctp_receive
from routequote.core.actions.common import ActionUnavailable
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, encode_call
from routequote.core.assets import Chain
from routequote.core.routes import ROUTES
from routequote.verify import verify_bundle

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actions_cctp_receive.json"
REGEN = os.environ.get("REGEN_GOLDEN_ACTIONS") == "1"
TRANSMITTER = "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64"
MESSENGER_HEX = "28b5a0e9c621a5badaa536219b3a228c8168cf5d"  # TokenMessengerV2, same on every EVM mainnet
ARB_USDC_HEX = "af88d065e77c8cc2239327c5edb3a432268e5831"
BASE_WALLET_HEX = EVM_WALLETS["base"][2:].lower()
ARB_WALLET_HEX = EVM_WALLETS["arbitrum"][2:].lower()
AMOUNT, MAX_FEE, FEE_EXECUTED = 99_990_000, 15_600, 12_999
NONCE = bytes.fromhex("5e" * 16 + "a1" * 16)
ATTESTATION = bytes(range(65)) + bytes(
    range(100, 165)
)  # two 65-byte signatures (shape only; checked on chain)
NOW = int(START.timestamp()) + 10


def pad(hex20: str) -> bytes:
    return bytes(12) + bytes.fromhex(hex20)


def u32(v: int) -> bytes:
    return bytes.fromhex(f"{v:08x}")


def u256(v: int) -> bytes:
    return bytes.fromhex(f"{v:064x}")


def hand_message(
    *,
    source_domain: int = 3,
    destination_domain: int = 6,
    recipient: bytes | None = None,
    destination_caller: bytes = bytes(32),
    burn_token: bytes | None = None,
    mint_recipient: bytes | None = None,
    message_sender: bytes | None = None,
    amount: int = AMOUNT,
    max_fee: int = MAX_FEE,
    fee_executed: int = FEE_EXECUTED,
    hook_data: bytes = b"",
) -> bytes:
    """An attested arbitrum -> base burn message, field by field."""
    header = (
        u32(1)  # version
        + u32(source_domain)  # sourceDomain (Arbitrum = 3)
        + u32(destination_domain)  # destinationDomain (Base = 6)
        + NONCE  # nonce, filled in by the attester
        + pad(MESSENGER_HEX)  # sender: TokenMessengerV2 on the source chain
        + (
            recipient if recipient is not None else pad(MESSENGER_HEX)
        )  # recipient: TokenMessengerV2 on the destination
        + destination_caller  # destinationCaller: zero = anyone may relay
        + u32(1000)  # minFinalityThreshold: Fast
        + u32(1000)  # finalityThresholdExecuted
    )
    body = (
        u32(1)  # body version
        + (burn_token if burn_token is not None else pad(ARB_USDC_HEX))  # burnToken: Arbitrum USDC
        + (
            mint_recipient if mint_recipient is not None else pad(BASE_WALLET_HEX)
        )  # mintRecipient: your base wallet
        + u256(amount)
        + (
            message_sender if message_sender is not None else pad(ARB_WALLET_HEX)
        )  # messageSender: the depositor
        + u256(max_fee)
        + u256(fee_executed)
        + u256(0)  # expirationBlock
        + hook_data
    )
    assert len(header) == 148 and len(body) == 228 + len(hook_data)
    return header + body


# ---- parser -------------------------------------------------------------------------------------------


def test_parser_reads_a_hand_built_message_at_circles_offsets() -> None:
    msg = hand_message(hook_data=b"\x01\x02")
    m = parse_cctp_message(msg)
    assert (m["version"], m["source_domain"], m["destination_domain"]) == (1, 3, 6)
    assert m["nonce"] == "0x" + NONCE.hex()
    assert m["sender"] == m["recipient"] == "0x" + "00" * 12 + MESSENGER_HEX
    assert m["destination_caller"] == "0x" + "00" * 32
    assert (m["min_finality_threshold"], m["finality_threshold_executed"]) == (1000, 1000)
    assert m["message_body"] == "0x" + msg[148:].hex()
    b = m["burn"]
    assert b["version"] == 1 and b["burn_token"] == "0x" + "00" * 12 + ARB_USDC_HEX
    assert b["mint_recipient"] == "0x" + "00" * 12 + BASE_WALLET_HEX
    assert b["message_sender"] == "0x" + "00" * 12 + ARB_WALLET_HEX
    assert (b["amount"], b["max_fee"], b["fee_executed"], b["expiration_block"]) == (
        AMOUNT,
        MAX_FEE,
        FEE_EXECUTED,
        0,
    )
    assert b["hook_data"] == "0x0102"
    # spot-check raw offsets against the contracts' index constants
    assert (
        msg[8:12] == u32(6)
        and msg[148 + 68 : 148 + 100] == u256(AMOUNT)
        and msg[148 + 164 : 148 + 196] == u256(FEE_EXECUTED)
    )


def test_encoder_is_the_inverse_of_the_parser() -> None:
    msg = hand_message(hook_data=b"\xca\xfe")
    m = parse_cctp_message(msg)
    b = m["burn"]
    again = encode_cctp_burn_message(
        source_domain=m["source_domain"],
        destination_domain=m["destination_domain"],
        nonce=m["nonce"],
        sender=m["sender"],
        recipient=m["recipient"],
        destination_caller=m["destination_caller"],
        min_finality_threshold=m["min_finality_threshold"],
        finality_threshold_executed=m["finality_threshold_executed"],
        burn_token=b["burn_token"],
        mint_recipient=b["mint_recipient"],
        amount=b["amount"],
        message_sender=b["message_sender"],
        max_fee=b["max_fee"],
        fee_executed=b["fee_executed"],
        expiration_block=b["expiration_block"],
        hook_data=bytes.fromhex(b["hook_data"][2:]),
    )
    assert again == msg


def test_parser_refuses_what_is_not_a_v2_burn_message() -> None:
    msg = hand_message()
    with pytest.raises(CctpMessageError, match="at least 148"):
        parse_cctp_message(msg[:147])
    with pytest.raises(CctpMessageError, match="at least 228"):
        parse_cctp_message(msg[: 148 + 227])
    generic = parse_cctp_message(msg[: 148 + 10], require_burn=False)
    assert generic["burn"] is None and generic["message_body"] == "0x" + msg[148:158].hex()
    with pytest.raises(CctpMessageError):
        parse_cctp_message("0x00")  # type: ignore[arg-type]


# ---- builder ------------------------------------------------------------------------------------------


def _build(
    msg: bytes, caller: str = EVM_WALLETS["base"], attestation: bytes = ATTESTATION, chain: Chain = Chain.BASE
) -> Any:
    return build_cctp_receive(
        chain, caller, msg, attestation, {}, prepared_at_unix=NOW, deadline_unix=NOW + 240
    )


def test_builder_makes_one_receive_message_call_on_the_pinned_transmitter() -> None:
    msg = hand_message()
    build = _build(msg)
    (tx,) = build.transactions
    assert tx["to"] == TRANSMITTER == DEFAULT_DEPLOYMENTS[Chain.BASE].message_transmitter_v2
    assert (tx["chainId"], tx["from"], tx["value"]) == (8453, EVM_WALLETS["base"], "0")
    data = bytes.fromhex(tx["data"][2:])
    assert (
        data[:4]
        == function_signature_to_4byte_selector("receiveMessage(bytes,bytes)")
        == bytes.fromhex("57ecfd28")
    )
    assert decode(["bytes", "bytes"], data[4:]) == (msg, ATTESTATION)
    assert build.kinds == ["cctp_receive_message"] and build.approval is None and build.spend_token == "none"
    assert build.destination == {"chain": "base", "recipient": EVM_WALLETS["base"], "domain": 6}


@pytest.mark.parametrize(
    ("msg", "caller", "attestation", "reason"),
    [
        (
            hand_message(mint_recipient=pad("44" * 20)),
            EVM_WALLETS["base"],
            ATTESTATION,
            "cctp_message_recipient_mismatch",
        ),
        (
            hand_message(destination_domain=3),
            EVM_WALLETS["base"],
            ATTESTATION,
            "cctp_message_destination_mismatch",
        ),
        (
            hand_message(destination_caller=pad("55" * 20)),
            EVM_WALLETS["base"],
            ATTESTATION,
            "cctp_message_destination_caller_mismatch",
        ),
        (
            hand_message(recipient=pad("66" * 20)),
            EVM_WALLETS["base"],
            ATTESTATION,
            "cctp_message_handler_mismatch",
        ),
        (
            hand_message(fee_executed=MAX_FEE + 1),
            EVM_WALLETS["base"],
            ATTESTATION,
            "cctp_message_fee_invalid",
        ),
        (hand_message(max_fee=AMOUNT), EVM_WALLETS["base"], ATTESTATION, "cctp_message_fee_invalid"),
        (hand_message(), EVM_WALLETS["base"], ATTESTATION[:64], "cctp_attestation_malformed"),
        (hand_message(), EVM_WALLETS["base"], b"", "cctp_attestation_malformed"),
        (hand_message()[:200], EVM_WALLETS["base"], ATTESTATION, "cctp_message_malformed"),
        (
            b"\x00\x00\x00\x02" + hand_message()[4:],
            EVM_WALLETS["base"],
            ATTESTATION,
            "cctp_message_version_unsupported",
        ),
    ],
)
def test_builder_refuses_a_message_that_is_not_the_callers_mint(
    msg: bytes, caller: str, attestation: bytes, reason: str
) -> None:
    with pytest.raises(ActionUnavailable) as err:
        _build(msg, caller, attestation)
    assert err.value.reason == reason


def test_builder_allows_the_caller_as_destination_caller_and_refuses_chains_without_a_transmitter() -> None:
    assert _build(hand_message(destination_caller=pad(BASE_WALLET_HEX))).transactions
    with pytest.raises(ActionUnavailable) as err:
        _build(hand_message(), chain=Chain.ROBINHOOD)
    assert err.value.reason == "cctp_receive_chain_not_supported"
    unpinned = {Chain.BASE: DEFAULT_DEPLOYMENTS[Chain.BASE].with_overrides(message_transmitter_v2=None)}
    with pytest.raises(ActionUnavailable) as err:
        build_cctp_receive(
            Chain.BASE,
            EVM_WALLETS["base"],
            hand_message(),
            ATTESTATION,
            unpinned,
            prepared_at_unix=NOW,
            deadline_unix=NOW + 240,
        )
    assert err.value.reason == "cctp_message_transmitter_not_pinned_on_base"


# ---- bundle and verifier ------------------------------------------------------------------------------


class Receive:
    def __init__(self, route_key: str, msg: bytes, step_index: int = 0) -> None:
        env = make_env()
        quote = asyncio.run(env.service.quote_request(intent_for(route_key, 100)))
        self.route = ROUTES[route_key]
        self.step = self.route.steps[step_index]
        self.wallets = wallets_for(route_key)
        self.approval = approval_for(quote)
        self.quote = quote
        self.intent = intent_for(route_key, 100)
        self.msg = msg
        binding = {
            "quote_id": quote["quote_id"],
            "quote_fingerprint": quote["continuation_v3"]["quote_fingerprint"],
            "selected_mode": "session",
        }
        self.bundle = assemble_receive_bundle(
            self.route,
            self.step,
            self.wallets,
            msg,
            ATTESTATION,
            None,
            workflow_id="wf-1",
            action_id="act-2",
            prepared_at=START,
            quote_binding=binding,
            summary_steps=quote["direct_route_summary"]["steps"],
        )

    def errors(self, bundle: dict[str, Any] | None = None, **overrides: Any) -> set[str]:
        kwargs: dict[str, Any] = {
            "intent": self.intent,
            "wallets": self.wallets,
            "now_unix": NOW,
            "approval_v3": self.approval,
            "direct_route_summary": self.quote["direct_route_summary"],
        }
        kwargs.update(overrides)
        found = verify_bundle(self.bundle if bundle is None else bundle, **kwargs)
        return {f.code for f in found if f.severity == "error"}


@pytest.fixture(scope="module")
def arb_to_base_eth() -> Receive:
    return Receive("arbitrum:USDC->base:ETH", hand_message())


def test_receive_bundle_golden_and_accepted_by_the_verifier(arb_to_base_eth: Receive) -> None:
    b = arb_to_base_eth.bundle
    action, receipt = b["unsigned_action"], b["unsigned_action"]["safety_receipt"]
    assert b["step_index"] == 0 and b["workflow"]["current_phase"] == "cctp_destination_mint"
    assert (action["chain"], action["sender"], action["recipient"]) == (
        "base",
        EVM_WALLETS["base"],
        EVM_WALLETS["base"],
    )
    assert (action["inputAmount"], action["routeFee"], action["feeRecipient"]) == ("0", "0", None)
    assert action["expectedOutput"] == str(AMOUNT - FEE_EXECUTED) and action["minimumOutput"] == str(
        AMOUNT - MAX_FEE
    )
    assert (
        receipt["action"]["kind"] == "cctp_receive_message" and receipt["spend"]["exact_amount_base"] == "0"
    )
    assert (
        receipt["service_fee"]["exact_amount_base"] == "0"
        and receipt["native_value_cap"]["maximum_base"] == "0"
    )
    assert receipt["receive"] == {
        "token": "base:USDC",
        "expected_amount_base": str(AMOUNT - FEE_EXECUTED),
        "minimum_amount_base": str(AMOUNT - MAX_FEE),
    }
    assert receipt["target_or_program_allowlist"] == [TRANSMITTER]
    assert receipt["selector_or_instruction_allowlist"] == [f"{TRANSMITTER}:0x57ecfd28"]
    assert arb_to_base_eth.errors() == set()
    golden = {
        "message_hex": "0x" + arb_to_base_eth.msg.hex(),
        "parsed": parse_cctp_message(arb_to_base_eth.msg),
        "payload_sha256": b["payload_sha256"],
        "unsigned_action": action,
    }
    if REGEN:
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    assert golden == json.loads(GOLDEN.read_text())


def test_receive_from_a_solana_burn_checks_the_solana_depositor_and_mint() -> None:
    usdc_mint = bytes(Pubkey.from_string("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"))
    msg = hand_message(
        source_domain=5,
        burn_token=usdc_mint,
        message_sender=bytes(Pubkey.from_string(SOLANA_WALLET)),
        max_fee=9_000,
        fee_executed=8_000,
    )
    r = Receive("solana:USDC->base:USDC", msg)
    assert r.errors() == set()
    with pytest.raises(ActionUnavailable) as err:
        Receive(
            "solana:USDC->base:USDC",
            hand_message(source_domain=5, burn_token=usdc_mint, max_fee=9_000, fee_executed=8_000),
        )
    assert err.value.reason == "cctp_message_depositor_mismatch"


def test_single_step_route_holds_amount_minus_max_fee_to_the_approved_minimum() -> None:
    base = Receive("arbitrum:USDC->base:USDC", hand_message(max_fee=1, fee_executed=0))
    bound = int(base.approval["minimum_output_base"])
    ok = Receive("arbitrum:USDC->base:USDC", hand_message(max_fee=AMOUNT - bound, fee_executed=0))
    assert ok.errors() == set()
    low = Receive("arbitrum:USDC->base:USDC", hand_message(max_fee=AMOUNT - bound + 1, fee_executed=0))
    assert low.errors() == {"minimum_output_below_bound"}


def test_assembly_refuses_a_burn_of_another_token_or_domain_or_a_non_cctp_step() -> None:
    for msg, reason in (
        (hand_message(burn_token=pad("77" * 20)), "cctp_message_token_mismatch"),
        (hand_message(source_domain=0), "cctp_message_source_mismatch"),
        (hand_message(message_sender=pad("88" * 20)), "cctp_message_depositor_mismatch"),
    ):
        with pytest.raises(ActionUnavailable) as err:
            Receive("arbitrum:USDC->base:ETH", msg)
        assert err.value.reason == reason
    with pytest.raises(ActionUnavailable) as err:
        Receive("arbitrum:USDC->base:ETH", hand_message(), step_index=1)
    assert err.value.reason == "cctp_receive_not_a_cctp_step"
    with pytest.raises(ActionUnavailable) as err:
        Receive("base:USDC->solana:USDC", hand_message())
    assert err.value.reason == "cctp_receive_on_solana_not_built"


def _with_tx(r: Receive, **changes: Any) -> dict[str, Any]:
    b = copy.deepcopy(r.bundle)
    b["unsigned_action"]["transactions"][0].update(changes)
    return rehash(b)


def _with_message(r: Receive, msg: bytes) -> dict[str, Any]:
    return _with_tx(r, data="0x" + encode_call("receiveMessage", msg, ATTESTATION).hex())


def test_verifier_refuses_tampered_receive_bundles(arb_to_base_eth: Receive) -> None:
    r = arb_to_base_eth
    assert r.errors(_with_message(r, hand_message(mint_recipient=pad("44" * 20)))) == {"recipient_mismatch"}
    assert r.errors(_with_message(r, hand_message(destination_domain=2))) == {"destination_mismatch"}
    assert r.errors(_with_message(r, hand_message(source_domain=0))) == {"source_domain_mismatch"}
    assert r.errors(_with_message(r, hand_message(destination_caller=pad("55" * 20)))) == {
        "destination_caller_not_allowed"
    }
    assert r.errors(_with_message(r, hand_message(recipient=pad("66" * 20)))) == {"message_handler_mismatch"}
    assert r.errors(_with_tx(r, to="0x" + "99" * 20)) == {"target_not_allowed"}
    assert r.errors(_with_tx(r, value="1")) == {"native_value_not_allowed"}
    assert r.errors(_with_tx(r, data="0x" + encode_call("transfer", "0x" + "44" * 20, 5).hex())) == {
        "selector_not_allowed"
    }
    # an honest message with more fee taken than the action states: the receive amounts no longer match
    more_fee = r.errors(_with_message(r, hand_message(fee_executed=FEE_EXECUTED + 1)))
    assert more_fee == {"receive_amount_mismatch", "receipt_receive_mismatch"}
    # not re-hashed: the payload hash refuses it
    raw = copy.deepcopy(r.bundle)
    raw["unsigned_action"]["transactions"][0]["value"] = "1"
    assert {"payload_sha256_mismatch", "action_sha256_mismatch", "native_value_not_allowed"} <= r.errors(raw)
    # another wallet of yours on base: the message does not mint to it
    other = {**r.wallets, "base": "0x" + "12" * 20}
    assert "recipient_mismatch" in r.errors(wallets=other)
    # an extra transaction, or a second spend smuggled in
    extra = copy.deepcopy(r.bundle)
    extra["unsigned_action"]["transactions"].append(dict(extra["unsigned_action"]["transactions"][0]))
    assert "unexpected_transaction_sequence" in r.errors(rehash(extra))
    # stale
    assert "bundle_expired" in r.errors(now_unix=NOW + 400)


def test_a_spend_relabelled_as_a_receive_is_refused() -> None:
    p = asyncio.run(prepare_route(make_env(), "arbitrum:USDC->base:ETH", 100))
    b = copy.deepcopy(p.bundle)
    b["unsigned_action"]["safety_receipt"]["action"]["kind"] = "cctp_receive_message"
    found = {f.code for f in verify_bundle(rehash(b), **p.verify_kwargs()) if f.severity == "error"}
    assert {"unexpected_transaction_sequence", "sender_mismatch", "receive_spends"} <= found


def test_receive_bundle_times_follow_prepared_at(arb_to_base_eth: Receive) -> None:
    b = arb_to_base_eth.bundle
    assert b["deadline_unix"] == int(START.timestamp()) + 240 == b["unsigned_action"]["deadline"]
    assert b["expires_at"] == (START + timedelta(seconds=180)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
