"""Caller-side rule for a CCTP mint-on-Solana bundle (`cctp_solana_receive.assemble_solana_receive_bundle`).

Pure and free of server imports, so the caller's verifier runs it: `routequote.verify.verify_bundle` calls
`check_solana_receive_bundle` for a bundle whose `unsigned_action.phase` is `SOLANA_RECEIVE_PHASE` and turns
each (code, message) into an error finding. Everything is re-derived from the bundle's own message and
attestation and your wallets: the hashes, the two instructions byte for byte (token account creation, then
`receive_message` with Circle's PDAs), the message rules (destination Solana, TokenMessengerMinterV2, minting to
your USDC account, relayable by you, fee bounds) and the route step (source domain, source USDC, burned by your
source wallet), zero spend, the stated amounts and times. The one account that cannot be re-derived offline is
the CCTP program's fee recipient token account (program state): it is taken as stated; a wrong one makes the
program refuse the mint, it cannot redirect it (the attested message fixes the recipient).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from solders.pubkey import Pubkey

from routequote.core.actions.bundle import (
    BUNDLE_VERSION,
    SOLANA_ACTION_VERSION,
    action_sha256,
    allowlists,
    payload_sha256,
    raw_payload_rows,
)
from routequote.core.actions.cctp_message import parse_cctp_message
from routequote.core.actions.cctp_receive import source_checks
from routequote.core.actions.cctp_solana_receive import (
    MT,
    SOLANA_RECEIVE_KIND,
    SOLANA_RECEIVE_KINDS,
    SOLANA_RECEIVE_PHASE,
    build_solana_receive_instructions,
    decode_receive_message_data,
)
from routequote.core.actions.common import ActionUnavailable
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmDeployment
from routequote.core.actions.plan import (
    BUNDLE_TTL_SECONDS,
    MAX_DEADLINE_WINDOW_SECONDS,
    ONCHAIN_DEADLINE_SECONDS,
)
from routequote.core.assets import Chain
from routequote.core.routes import Provider, Route, Step

FEE_ACCOUNT_INDEX = 14  # fee_recipient_token_account in receive_message's account list


def is_solana_receive(bundle: Any) -> bool:
    action = bundle.get("unsigned_action") if isinstance(bundle, dict) else None
    return isinstance(action, dict) and (
        action.get("phase") == SOLANA_RECEIVE_PHASE or SOLANA_RECEIVE_KIND in (action.get("kinds") or [])
    )


def _ts(text: Any) -> int | None:
    try:
        return int(datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def check_solana_receive_bundle(
    bundle: Any,
    *,
    route: Route,
    step: Step,
    wallets: Mapping[str, str],
    now_unix: int,
    approval_v3: Mapping[str, Any] | None = None,
    deployments: Mapping[Chain, EvmDeployment] | None = None,
) -> list[tuple[str, str]]:
    """Every rule the bundle breaks, as (code, message); empty when it may be signed."""
    out: list[tuple[str, str]] = []

    def expect(ok: bool, code: str, message: str) -> bool:
        if not ok:
            out.append((code, message))
        return ok

    if not isinstance(bundle, dict) or not isinstance(bundle.get("unsigned_action"), dict):
        return [("bundle_malformed", "not a bundle")]
    action: dict[str, Any] = bundle["unsigned_action"]
    receipt = action.get("safety_receipt") if isinstance(action.get("safety_receipt"), dict) else {}
    assert isinstance(receipt, dict)
    caller = wallets.get(Chain.SOLANA.value)
    if not expect(
        step.provider is Provider.CIRCLE_CCTP and step.target.chain is Chain.SOLANA and caller is not None,
        "step_mismatch",
        "this bundle is a CCTP mint on Solana: the step must be a CCTP step to Solana and you need a Solana wallet",
    ):
        return out
    assert caller is not None
    # ---- hashes and custody flags ------------------------------------------------------------------
    expect(bundle.get("payload_sha256") == payload_sha256(bundle), "payload_sha256_mismatch", "payload hash")
    binding = receipt.get("payload_binding", {})
    expect(binding.get("action_sha256") == action_sha256(action), "action_sha256_mismatch", "action hash")
    expect(binding.get("raw_payloads") == raw_payload_rows(action), "raw_payload_mismatch", "payload rows")
    targets, selectors = allowlists(action)
    expect(
        receipt.get("target_or_program_allowlist") == targets,
        "allowlist_mismatch",
        "the receipt's program allowlist differs from the instructions",
    )
    expect(receipt.get("selector_or_instruction_allowlist") == selectors, "allowlist_mismatch", "selectors")
    flags = [(bundle, f) for f in ("server_signing", "server_submission", "signed", "submitted")]
    flags += [(action, f) for f in ("signed", "submitted")]
    for obj, flag in flags:
        expect(obj.get(flag) is False, "custody_flag_not_false", f"{flag} must be false")
    # ---- shape -------------------------------------------------------------------------------------
    expect(
        bundle.get("version") == BUNDLE_VERSION
        and action.get("version") == SOLANA_ACTION_VERSION
        and action.get("family") == "solana"
        and action.get("chainId") == "mainnet-beta",
        "bundle_version_unsupported",
        "unknown bundle or action version",
    )
    expect(
        bundle.get("route") == route.key
        and bundle.get("step_index") == step.index == action.get("step_index"),
        "route_mismatch",
        "the bundle is for another route or step",
    )
    expect(
        action.get("phase") == SOLANA_RECEIVE_PHASE and action.get("kinds") == SOLANA_RECEIVE_KINDS,
        "receipt_action_mismatch",
        "the action must be exactly: create your USDC account, receive_message",
    )
    expect(
        action.get("recentBlockhash") is None
        and action.get("feePayer") == caller
        and action.get("requiredSigners") == [caller],
        "signers_mismatch",
        "your wallet alone signs and pays; no blockhash is set by the service",
    )
    # ---- the instructions, re-derived --------------------------------------------------------------
    ixs = action.get("instructions")
    if not expect(
        isinstance(ixs, list) and len(ixs) == 2 and all(isinstance(i, dict) for i in ixs),
        "instructions_missing",
        "exactly two instructions are expected",
    ):
        return out
    assert isinstance(ixs, list)
    receive = ixs[1]
    try:
        decoded = decode_receive_message_data(base64.b64decode(receive.get("data", ""), validate=True))
        keys = receive.get("keys") or []
        fee_account = str(Pubkey.from_string(keys[FEE_ACCOUNT_INDEX]["pubkey"]))
    except (ValueError, TypeError, IndexError, KeyError):
        decoded, fee_account = None, ""
    if not expect(
        receive.get("programId") == str(MT) and decoded is not None and fee_account != "",
        "instruction_not_allowed",
        "the second instruction must be MessageTransmitterV2 receive_message",
    ):
        return out
    assert decoded is not None
    message, attestation = decoded
    try:
        expected_ixs = build_solana_receive_instructions(caller, message, attestation, fee_account)
        m = parse_cctp_message(message)
        source_checks(step, wallets, m, {**DEFAULT_DEPLOYMENTS, **(deployments or {})})
    except ActionUnavailable as exc:
        out.append((exc.reason, exc.detail))
        return out
    expect(
        ixs == expected_ixs,
        "instruction_mismatch",
        "the instructions differ from those derived from the message",
    )
    expect(
        action.get("sender") == caller
        and action.get("recipient") == caller
        and action.get("recipientTokenAccount") == expected_ixs[1]["keys"][15]["pubkey"],
        "recipient_mismatch",
        "the action must name your Solana wallet as sender and recipient, and its own USDC account",
    )
    expect(
        fee_account != expected_ixs[1]["keys"][15]["pubkey"],
        "fee_account_is_your_token_account",
        "the CCTP fee recipient account must not be your own token account",
    )
    # ---- amounts and times -------------------------------------------------------------------------
    burn = m["burn"]
    expected, minimum = burn["amount"] - burn["fee_executed"], burn["amount"] - burn["max_fee"]
    expect(
        action.get("inputAmount") == "0" == action.get("netInputAmount")
        and action.get("expectedOutput") == str(expected)
        and action.get("minimumOutput") == str(minimum),
        "amount_mismatch",
        "the mint spends nothing and receives amount - feeExecuted (at least amount - maxFee)",
    )
    expect(  # as on an EVM chain: a stated fee recipient on a step that pays no fee is refused
        action.get("routeFee") == "0"
        and action.get("feeRecipient") is None
        and action.get("feeRecipientTokenAccount") is None,
        "receive_spends",
        "a destination mint spends nothing and pays no fee",
    )
    spend, recv = receipt.get("spend", {}), receipt.get("receive", {})
    expect(
        spend.get("exact_amount_base") == "0" == spend.get("maximum_amount_base")
        and recv.get("expected_amount_base") == str(expected)
        and recv.get("minimum_amount_base") == str(minimum)
        and receipt.get("approval", {}).get("required") is False
        and receipt.get("service_fee", {}).get("exact_amount_base") == "0",
        "receipt_mismatch",
        "the receipt must state a zero spend, no approval, no fee and the message's amounts",
    )
    if approval_v3 is not None and len(route.steps) == 1:
        expect(
            minimum >= int(approval_v3["minimum_output_base"]),
            "minimum_output_below_bound",
            "amount - maxFee is below your approved minimum output",
        )
    prepared, expires = _ts(bundle.get("prepared_at")), _ts(bundle.get("expires_at"))
    deadline = action.get("deadline")
    if not expect(
        prepared is not None and expires is not None and isinstance(deadline, int),
        "timing_malformed",
        "prepared_at / expires_at / deadline are malformed",
    ):
        return out
    assert prepared is not None and expires is not None and isinstance(deadline, int)
    expect(expires - prepared == BUNDLE_TTL_SECONDS, "bundle_lifetime_mismatch", "a bundle lives 180 s")
    expect(now_unix < expires, "bundle_expired", "the bundle has expired")
    expect(
        deadline <= prepared + ONCHAIN_DEADLINE_SECONDS
        and deadline <= now_unix + MAX_DEADLINE_WINDOW_SECONDS,
        "deadline_too_late",
        "the deadline is later than allowed",
    )
    return out
