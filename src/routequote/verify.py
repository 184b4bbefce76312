"""Caller-side verification of an unsigned action bundle, run by an agent before it signs anything.

Imports only the standard library, eth_abi / eth_utils / solders and `routequote.core`: no server
stack. `verify_bundle` re-derives every hash, decodes every EVM calldata and Solana instruction and
checks them against what the caller itself knows (its intent, its wallets, its approval_v3 bounds and
the quote's direct_route_summary), against the pinned contracts and programs, the 1 bp fee formula
and the deadlines. It returns findings; an empty list of errors means "nothing found wrong".
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeGuard

from solders.pubkey import Pubkey

from routequote.core.actions import common as ak
from routequote.core.actions import solana as sol
from routequote.core.actions import solana_swaps as sw
from routequote.core.actions.bundle import (
    BUNDLE_VERSION,
    EVM_ACTION_VERSION,
    FEE_FORMULA,
    RECEIPT_SCHEMA,
    SOLANA_ACTION_VERSION,
    action_sha256,
    allowlists,
    payload_sha256,
    raw_payload_rows,
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
    DEFAULT_DEPLOYMENTS,
    LZ_EID,
    ROUTER_ADDRESS_THIS,
    EvmDeployment,
    decode_call,
)
from routequote.core.actions.plan import (
    ACROSS_FILL_DEADLINE_SECONDS,
    BUNDLE_TTL_SECONDS,
    CCTP_FAST_FINALITY,
    MAX_ACROSS_FILL_DEADLINE_SECONDS,
    MAX_DEADLINE_WINDOW_SECONDS,
    ONCHAIN_DEADLINE_SECONDS,
    StepPlan,
)
from routequote.core.assets import ASSETS, CHAINS, Chain, ChainFamily
from routequote.core.hashing import canonical_sha256
from routequote.core.routes import ROUTES, Provider, Route, Step

MAX_OFT_NATIVE_FEE_WEI = 10**16  # 0.01 ETH: a verifier-side cap on the LayerZero fee sent as value
UNISWAP_FEE_TIERS = frozenset({100, 500, 3000, 10000})
SECRET_WORDS = ("private", "secret", "seed", "mnemonic", "signature", "signed_transaction", "keypair")
CLOCK_SKEW_SECONDS = 60

__all__ = [
    "Finding",
    "BundleRejected",
    "verify_bundle",
    "assert_bundle_ok",
    "verification_context",
    "check_verification_context",
]

from routequote.core.actions.approval import check_verification_context, verification_context  # noqa: E402


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    severity: str = "error"  # "error" refuses the bundle; "warning" is reported only

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "severity": self.severity}


class BundleRejected(Exception):
    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(f"{f.code}: {f.message}" for f in findings if f.severity == "error"))
        self.findings = findings


def _ts(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


class _Checker:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def fail(self, code: str, message: str) -> None:
        self.findings.append(Finding(code, message))

    def warn(self, code: str, message: str) -> None:
        self.findings.append(Finding(code, message, "warning"))

    def expect(self, ok: bool, code: str, message: str) -> bool:
        if not ok:
            self.fail(code, message)
        return ok


def _scan_flags(value: Any, path: str, c: _Checker) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            lk = str(k).lower()
            if lk in ("server_signing", "server_submission", "signed", "submitted") and v is not False:
                c.fail("custody_flag_not_false", f"{path}.{k} must be false")
            if any(w in lk for w in SECRET_WORDS):
                c.fail("secret_looking_field", f"{path}.{k} looks like secret material")
            _scan_flags(v, f"{path}.{k}", c)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _scan_flags(v, f"{path}[{i}]", c)


def verify_bundle(bundle: Any, **kwargs: Any) -> list[Finding]:
    """All findings about `bundle` (errors and warnings). The bundle is safe to sign only if none is an error.

    Keyword arguments: `intent` (the caller's 5 quote fields), `wallets` (chain -> public address),
    `now_unix`, and optionally `approval_v3`, `direct_route_summary` (from the approved quote),
    `event_signer_public`, `fee_recipients` ({"evm": ..., "solana": ...} as the operator published them),
    `deployments` (contract addresses; default: the pinned mainnet ones) and, for a session's later step,
    `session_actual_input_base` (the verified output of the previous step, which that step must spend; the
    last step must then also meet approval_v3.minimum_output_base). Hostile or malformed input
    yields findings, never an exception.
    """
    c = _Checker()
    try:
        return _verify_bundle(c, bundle, **kwargs)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        c.fail("bundle_malformed", f"the bundle cannot be read: {type(exc).__name__}: {str(exc)[:200]}")
        return c.findings


def _verify_bundle(
    c: _Checker,
    bundle: Any,
    *,
    intent: dict[str, Any],
    wallets: dict[str, str],
    now_unix: int,
    approval_v3: dict[str, Any] | None = None,
    direct_route_summary: dict[str, Any] | None = None,
    event_signer_public: str | None = None,
    fee_recipients: dict[str, str] | None = None,
    deployments: dict[Chain, EvmDeployment] | None = None,
    session_actual_input_base: int | None = None,
) -> list[Finding]:
    if not isinstance(bundle, dict):
        return [Finding("bundle_not_object", "the bundle must be a JSON object")]
    deps = {**DEFAULT_DEPLOYMENTS, **(deployments or {})}
    _scan_flags(bundle, "bundle", c)
    # ---- hashes -------------------------------------------------------------------------------------
    c.expect(
        bundle.get("payload_sha256") == payload_sha256(bundle),
        "payload_sha256_mismatch",
        "payload_sha256 does not equal sha256 of the canonical bundle without it",
    )
    action = bundle.get("unsigned_action")
    if not isinstance(action, dict) or not isinstance(action.get("safety_receipt"), dict):
        c.fail("unsigned_action_missing", "bundle.unsigned_action with a safety_receipt is required")
        return c.findings
    receipt = action["safety_receipt"]
    binding = receipt.get("payload_binding", {})
    c.expect(
        binding.get("action_sha256") == action_sha256(action),
        "action_sha256_mismatch",
        "safety_receipt.payload_binding.action_sha256 does not match the unsigned action",
    )
    try:
        rows = raw_payload_rows(action)
        targets, selectors = allowlists(action)
    except (ValueError, KeyError, TypeError) as exc:
        c.fail("payload_malformed", f"cannot read the payloads: {exc}")
        return c.findings
    c.expect(
        binding.get("raw_payloads") == rows,
        "raw_payload_hash_mismatch",
        "per-payload raw_sha256 / data_sha256 rows do not match the payloads",
    )
    c.expect(
        receipt.get("target_or_program_allowlist") == targets,
        "receipt_allowlist_mismatch",
        "the receipt's target allowlist does not list exactly the payload targets",
    )
    c.expect(
        receipt.get("selector_or_instruction_allowlist") == selectors,
        "receipt_allowlist_mismatch",
        "the receipt's selector allowlist does not list exactly the payload selectors",
    )
    # ---- intent, route, step ------------------------------------------------------------------------
    route_key = f"{intent.get('from_chain')}:{intent.get('from_token')}->{intent.get('to_chain')}:{intent.get('to_token')}"
    route = ROUTES.get(route_key)
    if route is None:
        c.fail("intent_route_unknown", f"no route {route_key}")
        return c.findings
    c.expect(bundle.get("route") == route.key, "route_mismatch", "bundle.route differs from the intent")
    idx = bundle.get("step_index")
    if not _is_int(idx) or not 0 <= idx < len(route.steps):
        c.fail("step_index_invalid", "bundle.step_index is not a step of the route")
        return c.findings
    step = route.steps[idx]
    c.expect(_eq(action.get("step_index"), idx), "step_index_mismatch", "unsigned_action.step_index differs")
    c.expect(
        action.get("provider") == step.provider.value,
        "provider_mismatch",
        f"step {idx} must use {step.provider.value}",
    )
    c.expect(
        (action.get("source"), action.get("destination")) == (step.source.key, step.target.key),
        "step_endpoints_mismatch",
        "unsigned action endpoints differ from the route step",
    )
    if set(wallets) != set(route.required_wallet_chains):
        c.fail(
            "wallet_chains_mismatch",
            f"the route needs wallets on exactly {list(route.required_wallet_chains)}",
        )
        return c.findings
    if _is_receive(action, receipt):
        _verify_receive(c, bundle, action, receipt, route, step, wallets, now_unix, approval_v3, deps)
        return c.findings
    caller, recipient = wallets[step.source.chain.value], wallets[step.target.chain.value]
    c.expect(
        _same(action.get("sender"), caller), "sender_mismatch", "unsigned_action.sender is not your wallet"
    )
    c.expect(
        _same(action.get("recipient"), recipient),
        "recipient_mismatch",
        "unsigned_action.recipient is not your wallet on the step's target chain",
    )
    wf = bundle.get("workflow", {})
    c.expect(
        isinstance(wf, dict) and wf.get("wallets") == dict(sorted(wallets.items())),
        "workflow_wallets_mismatch",
        "workflow.wallets differs from your wallets",
    )
    # ---- amounts and bounds -------------------------------------------------------------------------
    try:
        input_base = int(action["inputAmount"])
        fee = int(action["routeFee"])
        net = int(action["netInputAmount"])
        min_out = int(action["minimumOutput"])
    except (KeyError, TypeError, ValueError):
        c.fail(
            "amounts_malformed",
            "inputAmount / routeFee / netInputAmount / minimumOutput must be decimal strings",
        )
        return c.findings
    want_fee = input_base // 10_000 if step.fee_step else 0
    c.expect(
        fee == want_fee,
        "service_fee_mismatch",
        f"the fee must be floor(input/10000) = {want_fee} on the fee step and 0 elsewhere, not {fee}",
    )
    c.expect(net == input_base - fee, "net_input_mismatch", "netInputAmount must be inputAmount - routeFee")
    min_bound = 1
    if direct_route_summary is not None:
        if approval_v3 is not None:
            c.expect(
                canonical_sha256(direct_route_summary) == approval_v3.get("direct_route_summary_sha256"),
                "summary_hash_mismatch",
                "direct_route_summary does not hash to approval_v3's summary hash",
            )
        c.expect(
            direct_route_summary.get("route") == route.key,
            "summary_route_mismatch",
            "summary is for another route",
        )
        s_steps = direct_route_summary.get("steps") or []
        if idx < len(s_steps):
            ss = s_steps[idx]
            c.expect(
                ss.get("provider") == step.provider.value,
                "summary_provider_mismatch",
                "summary provider differs",
            )
            if session_actual_input_base is not None and idx > 0:
                # a session step spends what the previous step verifiably delivered, not the quoted estimate
                c.expect(
                    input_base == session_actual_input_base,
                    "input_amount_mismatch",
                    f"inputAmount {input_base} differs from the verified actual input {session_actual_input_base}",
                )
            else:
                c.expect(
                    str(input_base) == ss.get("expected_input_base"),
                    "input_amount_mismatch",
                    f"inputAmount {input_base} differs from the quoted {ss.get('expected_input_base')}",
                )
            min_bound = max(min_bound, int(ss.get("minimum_output_base", "1")))
    if approval_v3 is not None:
        if idx == 0:
            c.expect(
                input_base <= int(approval_v3["maximum_input_base"]),
                "input_above_approved_maximum",
                "inputAmount exceeds approval_v3.maximum_input_base",
            )
        last_of_session = session_actual_input_base is not None and idx == len(route.steps) - 1
        if len(route.steps) == 1 or last_of_session:
            min_bound = max(min_bound, int(approval_v3["minimum_output_base"]))
        qb = bundle.get("quote_binding", {})
        c.expect(
            isinstance(qb, dict)
            and qb.get("quote_id") == approval_v3.get("quote_id")
            and qb.get("quote_fingerprint") == approval_v3.get("quote_fingerprint"),
            "quote_binding_mismatch",
            "the bundle is not bound to your approved quote",
        )
    else:
        c.warn(
            "no_approval_v3",
            "no approval_v3 given: the bundle is legacy_advisory and not bound to your quote",
        )
    c.expect(
        min_out >= min_bound,
        "minimum_output_below_bound",
        f"minimumOutput {min_out} is below the bound {min_bound}",
    )
    # ---- timing -------------------------------------------------------------------------------------
    deadline = _check_timing(c, bundle, action, now_unix)
    if deadline is None:
        return c.findings
    # ---- fee recipient ------------------------------------------------------------------------------
    family = CHAINS[step.source.chain].family
    fee_recipient = action.get("feeRecipient")
    if fee_recipients is not None:
        pinned = fee_recipients.get(family.value)
        if fee and not _same(fee_recipient, pinned):
            c.fail("fee_recipient_mismatch", "the fee goes to another recipient than the one you pinned")
        fee_recipient = pinned if fee else None
    elif fee:
        c.warn(
            "fee_recipient_not_pinned", "no fee recipient pinned by the caller; checked for consistency only"
        )
    if receipt.get("service_fee", {}).get("exact_amount_base") != str(fee):
        c.fail("receipt_fee_mismatch", "the receipt's fee differs from the action's")
    _check_receipt(c, bundle, action, receipt, step, input_base, fee, net, min_out, deadline, family, deps)
    # ---- payloads -----------------------------------------------------------------------------------
    ctx = _Ctx(
        c,
        route,
        step,
        caller,
        recipient,
        input_base,
        fee,
        net,
        min_out,
        deadline,
        now_unix,
        fee_recipient,
        event_signer_public,
    )
    if family is ChainFamily.EVM:
        _check_evm(ctx, action, deps)
    else:
        _check_solana(ctx, action)
    return c.findings


def _check_receipt(
    c: _Checker,
    bundle: dict[str, Any],
    action: dict[str, Any],
    receipt: dict[str, Any],
    step: Step,
    input_base: int,
    fee: int,
    net: int,
    min_out: int,
    deadline: int,
    family: ChainFamily,
    deps: dict[Chain, EvmDeployment],
) -> None:
    """The receipt is what an agent reads: every safety statement in it must match the payloads."""
    is_evm = family is ChainFamily.EVM
    c.expect(bundle.get("version") == BUNDLE_VERSION, "bundle_version_unsupported", "unknown bundle version")
    want_action_version = EVM_ACTION_VERSION if is_evm else SOLANA_ACTION_VERSION
    c.expect(
        action.get("version") == want_action_version and action.get("family") == family.value,
        "action_version_unsupported",
        "unknown unsigned action version or family",
    )
    want_chain_id: Any = deps[step.source.chain].chain_id if is_evm else "mainnet-beta"
    c.expect(
        _eq(action.get("chainId"), want_chain_id), "chain_id_mismatch", "unsigned_action.chainId differs"
    )
    c.expect(
        receipt.get("schema") == RECEIPT_SCHEMA and _eq(receipt.get("schema_version"), 1),
        "receipt_schema_unsupported",
        "unknown safety receipt schema",
    )
    net_block = receipt.get("network", {})
    c.expect(
        net_block.get("source_chain") == step.source.chain.value
        and net_block.get("destination_chain") == step.target.chain.value
        and _eq(net_block.get("source_chain_id"), want_chain_id),
        "receipt_network_mismatch",
        "the receipt names other chains",
    )
    spend = receipt.get("spend", {})
    c.expect(
        spend.get("exact_amount_base") == str(input_base) == spend.get("maximum_amount_base"),
        "receipt_spend_mismatch",
        "the receipt's spend differs from inputAmount",
    )
    txs = action.get("transactions") or []
    values = [str(tx.get("value")) for tx in txs]
    cap = receipt.get("native_value_cap", {})
    c.expect(
        cap.get("per_transaction_base") == values
        and cap.get("maximum_base") == str(max((int(v) for v in values), default=0)),
        "receipt_native_value_mismatch",
        "the receipt's native value cap differs from the transactions",
    )
    approval = receipt.get("approval", {})
    if is_evm and not step.source.is_native:
        dep = deps[step.source.chain]
        idx = next((i for i, tx in enumerate(txs) if str(tx.get("data", ""))[:10] == "0x095ea7b3"), None)
        c.expect(
            approval.get("required") is True
            and _same(approval.get("token"), dep.token(step.source))
            and _same(approval.get("target"), dep.contract(step.provider))
            and approval.get("exact_allowance_base") == str(net)
            and _eq(approval.get("transaction_index"), idx),
            "receipt_approval_mismatch",
            "the receipt's approval statement differs from the approve call",
        )
    else:
        c.expect(approval.get("required") is False, "receipt_approval_mismatch", "no approval is due")
    fee_block = receipt.get("service_fee", {})
    c.expect(
        fee_block.get("formula") == FEE_FORMULA
        and fee_block.get("bps") == (1 if step.fee_step else 0)
        and fee_block.get("basis", {}).get("amount_base") == str(input_base)
        and fee_block.get("recipient") == action.get("feeRecipient"),
        "receipt_fee_mismatch",
        "the receipt's fee statement differs from the action",
    )
    receive = receipt.get("receive", {})
    c.expect(
        receive.get("minimum_amount_base") == str(min_out) and receive.get("token") == step.target.key,
        "receipt_receive_mismatch",
        "the receipt's receive bound differs from minimumOutput",
    )
    timing = receipt.get("timing", {})
    c.expect(
        _eq(timing.get("action_deadline_unix"), deadline)
        and timing.get("bundle_expires_at") == bundle.get("expires_at")
        and timing.get("recent_blockhash") is None,
        "receipt_timing_mismatch",
        "the receipt's timing differs from the action",
    )
    c.expect(
        fee + net == input_base and _eq(bundle.get("step_index"), step.index),
        "receipt_internal",
        "inconsistent",
    )


def _check_timing(c: _Checker, bundle: dict[str, Any], action: dict[str, Any], now_unix: int) -> int | None:
    """Bundle lifetime and action deadline against your clock; the deadline, or None when unreadable."""
    try:
        prepared, expires = _ts(bundle["prepared_at"]), _ts(bundle["expires_at"])
        deadline = action["deadline"]
        if not _is_int(deadline):
            raise TypeError("deadline must be an integer")
    except (KeyError, TypeError, ValueError):
        c.fail("timing_malformed", "prepared_at / expires_at / deadline are required")
        return None
    c.expect(prepared <= now_unix + CLOCK_SKEW_SECONDS, "prepared_in_future", "prepared_at is in the future")
    c.expect(
        expires - prepared <= BUNDLE_TTL_SECONDS, "bundle_ttl_too_long", "the bundle lives longer than 180 s"
    )
    c.expect(now_unix < expires, "bundle_expired", "the bundle has expired; prepare again")
    c.expect(
        deadline <= prepared + ONCHAIN_DEADLINE_SECONDS
        and deadline <= now_unix + MAX_DEADLINE_WINDOW_SECONDS,
        "deadline_too_late",
        f"deadline {deadline} is later than allowed",
    )
    c.expect(deadline > now_unix, "deadline_passed", "the action deadline has passed")
    return int(deadline)


# ---- CCTP v2 destination mint (receiveMessage) -------------------------------------------------------


def _is_receive(action: dict[str, Any], receipt: dict[str, Any]) -> bool:
    """The bundle says it is a CCTP destination mint. Such a bundle is held to the receive rules only: one
    `receiveMessage` call on the pinned transmitter with value 0, so a mislabelled spend is refused."""
    kind = receipt.get("action", {}).get("kind") if isinstance(receipt.get("action"), dict) else None
    return (
        kind == RECEIVE_KIND or action.get("kinds") == [RECEIVE_KIND] or action.get("phase") == RECEIVE_PHASE
    )


def _b32hex(b: bytes) -> str:
    return "0x" + b.hex()


def _verify_receive(
    c: _Checker,
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
    src, dst = step.source, step.target
    if not c.expect(
        step.provider is Provider.CIRCLE_CCTP and CHAINS[dst.chain].family is ChainFamily.EVM,
        "receive_step_invalid",
        f"step {step.index} has no CCTP mint on an EVM chain",
    ):
        return
    chain = dst.chain
    dep = deps[chain]
    domain = CHAINS[chain].cctp_domain
    caller = wallets[chain.value]
    transmitter = dep.message_transmitter_v2
    if not c.expect(
        transmitter is not None,
        "protocol_contract_not_pinned",
        f"no pinned MessageTransmitterV2 on {chain.value}",
    ):
        return
    assert transmitter is not None
    c.expect(
        action.get("version") == EVM_ACTION_VERSION and action.get("family") == "evm",
        "action_version_unsupported",
        "unknown unsigned action version or family",
    )
    c.expect(_eq(action.get("chainId"), dep.chain_id), "chain_id_mismatch", "unsigned_action.chainId differs")
    c.expect(
        _same(action.get("sender"), caller) and _same(action.get("recipient"), caller),
        "sender_mismatch",
        "the mint's sender and recipient must be your wallet on the destination chain",
    )
    signers = action.get("requiredSigners")
    c.expect(
        isinstance(signers, list) and len(signers) == 1 and _same(signers[0], caller),
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
    deadline = _check_timing(c, bundle, action, now_unix)
    if approval_v3 is not None:
        qb = bundle.get("quote_binding", {})
        c.expect(
            isinstance(qb, dict)
            and qb.get("quote_id") == approval_v3.get("quote_id")
            and qb.get("quote_fingerprint") == approval_v3.get("quote_fingerprint"),
            "quote_binding_mismatch",
            "the bundle is not bound to your approved quote",
        )
    # ---- the one transaction -----------------------------------------------------------------------
    txs = action.get("transactions")
    if not c.expect(
        isinstance(txs, list) and len(txs) == 1 and isinstance(txs[0], dict),
        "unexpected_transaction_sequence",
        "a destination mint is exactly one transaction",
    ):
        return
    assert isinstance(txs, list)  # checked just above
    tx = txs[0]
    c.expect(
        _eq(tx.get("chainId"), dep.chain_id),
        "chain_id_mismatch",
        f"transaction 0: chainId must be {dep.chain_id}",
    )
    c.expect(_same(tx.get("from"), caller), "sender_mismatch", "transaction 0: from is not your wallet")
    c.expect(
        _same(tx.get("to"), transmitter),
        "target_not_allowed",
        f"transaction 0: target {tx.get('to')} is not the pinned MessageTransmitterV2 {transmitter}",
    )
    c.expect(tx.get("value") == "0", "native_value_not_allowed", 'transaction 0: value must be "0"')
    try:
        call = decode_call(bytes.fromhex(str(tx.get("data", "0x"))[2:]))
    except Exception as exc:  # noqa: BLE001 - any decoding failure refuses the payload
        c.fail("calldata_undecodable", f"transaction 0: {exc}")
        return
    if not c.expect(
        call is not None and call.name == "receiveMessage",
        "selector_not_allowed",
        "transaction 0: expected MessageTransmitterV2.receiveMessage",
    ):
        return
    assert call is not None
    message, attestation = bytes(call.args[0]), bytes(call.args[1])
    try:
        m = parse_cctp_message(message)
    except CctpMessageError as exc:
        c.fail("cctp_message_malformed", f"transaction 0: {exc}")
        return
    burn = m["burn"]
    c.expect(
        m["version"] == CCTP_V2_MESSAGE_VERSION and burn["version"] == CCTP_V2_BURN_BODY_VERSION,
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
    mine = _b32hex(address_to_bytes32(caller))
    c.expect(
        burn["mint_recipient"] == mine,
        "recipient_mismatch",
        "the message mints to someone else than your wallet",
    )
    c.expect(
        m["destination_caller"] in (_b32hex(ZERO_BYTES32), mine),
        "destination_caller_not_allowed",
        "destinationCaller must be zero or your wallet",
    )
    if dep.token_messenger_v2 is not None:
        c.expect(
            m["recipient"] == _b32hex(address_to_bytes32(dep.token_messenger_v2)),
            "message_handler_mismatch",
            "the message is not addressed to the destination's TokenMessengerV2",
        )
    src_wallet = wallets[src.chain.value]
    if CHAINS[src.chain].family is ChainFamily.EVM:
        c.expect(
            burn["burn_token"] == _b32hex(address_to_bytes32(deps[src.chain].token(src))),
            "token_mismatch",
            "the burned token is not the step's USDC",
        )
        c.expect(
            burn["message_sender"] == _b32hex(address_to_bytes32(src_wallet)),
            "depositor_mismatch",
            "the burn was not made by your source wallet",
        )
    else:
        mint = ASSETS[src.key].address or ""
        c.expect(
            burn["burn_token"] == _b32hex(bytes(Pubkey.from_string(mint))),
            "token_mismatch",
            "the burned token is not the step's USDC",
        )
        c.expect(
            _valid_key(src_wallet)
            and burn["message_sender"] == _b32hex(bytes(Pubkey.from_string(src_wallet))),
            "depositor_mismatch",
            "the burn was not made by your source wallet",
        )
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
    if approval_v3 is not None and len(route.steps) == 1:
        c.expect(
            minimum >= int(approval_v3["minimum_output_base"]),
            "minimum_output_below_bound",
            "amount - maxFee is below your approved minimum output",
        )
    # ---- the receipt ---------------------------------------------------------------------------------
    c.expect(bundle.get("version") == BUNDLE_VERSION, "bundle_version_unsupported", "unknown bundle version")
    c.expect(
        receipt.get("schema") == RECEIPT_SCHEMA and _eq(receipt.get("schema_version"), 1),
        "receipt_schema_unsupported",
        "unknown safety receipt schema",
    )
    c.expect(
        receipt.get("action", {}).get("kind") == RECEIVE_KIND and action.get("kinds") == [RECEIVE_KIND],
        "receipt_action_mismatch",
        "the receipt and the action must both name cctp_receive_message",
    )
    net_block = receipt.get("network", {})
    c.expect(
        net_block.get("source_chain") == chain.value == net_block.get("destination_chain")
        and _eq(net_block.get("source_chain_id"), dep.chain_id),
        "receipt_network_mismatch",
        "the receipt names other chains",
    )
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
        receive.get("token") == dst.key
        and receive.get("expected_amount_base") == str(expected)
        and receive.get("minimum_amount_base") == str(minimum),
        "receipt_receive_mismatch",
        "the receipt's receive statement differs from the message",
    )
    timing = receipt.get("timing", {})
    c.expect(
        deadline is not None
        and _eq(timing.get("action_deadline_unix"), deadline)
        and timing.get("bundle_expires_at") == bundle.get("expires_at"),
        "receipt_timing_mismatch",
        "the receipt's timing differs from the action",
    )


def assert_bundle_ok(bundle: Any, **kwargs: Any) -> list[Finding]:
    """verify_bundle, raising BundleRejected if any finding is an error. Returns the warnings."""
    findings = verify_bundle(bundle, **kwargs)
    if any(f.severity == "error" for f in findings):
        raise BundleRejected(findings)
    return findings


def _is_int(x: object) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _eq(a: Any, b: Any) -> bool:
    """Equality without Python's True == 1 and 1 == 1.0 coercions."""
    return type(a) is type(b) and a == b


def _same(a: Any, b: Any) -> bool:
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    if a.startswith("0x") and b.startswith("0x"):
        return a.lower() == b.lower()
    return a == b


@dataclass
class _Ctx:
    c: _Checker
    route: Route
    step: Step
    caller: str
    recipient: str
    input_base: int
    fee: int
    net: int
    min_out: int
    deadline: int
    now: int
    fee_recipient: str | None
    event_signer: str | None


def _check_evm(x: _Ctx, action: dict[str, Any], deps: dict[Chain, EvmDeployment]) -> None:
    c, step = x.c, x.step
    src, dst = step.source, step.target
    dep = deps[src.chain]
    protocol = dep.contract(step.provider)
    if protocol is None:
        c.fail(
            "protocol_contract_not_pinned", f"no pinned {step.provider.value} contract on {src.chain.value}"
        )
        return
    src_token = None if src.is_native else dep.token(src)
    txs = action.get("transactions")
    if not isinstance(txs, list) or not txs:
        c.fail("transactions_missing", "no transactions")
        return
    kinds: list[str] = []
    fee_paid = 0
    for i, tx in enumerate(txs):
        where = f"transaction {i}"
        c.expect(
            _eq(tx.get("chainId"), dep.chain_id),
            "chain_id_mismatch",
            f"{where}: chainId must be {dep.chain_id}",
        )
        c.expect(_same(tx.get("from"), x.caller), "sender_mismatch", f"{where}: from is not your wallet")
        to = tx.get("to", "")
        raw_value = tx.get("value")
        # wire form is a decimal string; anything else (a JSON number, hex, a bool) is not what was built
        c.expect(
            isinstance(raw_value, str) and raw_value.isdigit(),
            "native_value_malformed",
            f"{where}: value must be a decimal string",
        )
        value = int(raw_value) if isinstance(raw_value, str) and raw_value.isdigit() else -1
        try:
            call = decode_call(bytes.fromhex(str(tx.get("data", "0x"))[2:]))
        except Exception as exc:  # noqa: BLE001 - any decoding failure refuses the payload
            c.fail("calldata_undecodable", f"{where}: {exc}")
            continue
        if call is None:
            kinds.append("native_fee")
            ok = src.is_native and x.fee_recipient is not None and _same(to, x.fee_recipient)
            c.expect(ok, "unexpected_native_transfer", f"{where}: a plain value transfer that is not the fee")
            fee_paid += value
            continue
        if call.name == "transfer":
            kinds.append("fee")
            c.expect(_same(to, src_token), "target_not_allowed", f"{where}: transfer on another token")
            c.expect(
                x.fee_recipient is not None and _same(call.args[0], x.fee_recipient),
                "fee_recipient_mismatch",
                f"{where}: the transfer does not go to the fee recipient",
            )
            c.expect(value == 0, "native_value_not_allowed", f"{where}: value must be 0")
            fee_paid += int(call.args[1])
            continue
        if call.name == "approve":
            kinds.append("approve")
            c.expect(_same(to, src_token), "target_not_allowed", f"{where}: approve on another token")
            c.expect(
                _same(call.args[0], protocol),
                "approval_target_mismatch",
                f"{where}: approval to {call.args[0]}, expected the pinned {protocol}",
            )
            c.expect(
                int(call.args[1]) == x.net,
                "approval_amount_mismatch",
                f"{where}: allowance must be exactly {x.net}",
            )
            c.expect(value == 0, "native_value_not_allowed", f"{where}: value must be 0")
            continue
        kinds.append("protocol")
        c.expect(
            _same(to, protocol), "target_not_allowed", f"{where}: target {to} is not the pinned {protocol}"
        )
        expected_value = x.net if (step.provider is Provider.UNISWAP_V3 and src.is_native) else 0
        if step.provider is Provider.PAXOS_OFT and call.name == "send":
            expected_value = int(call.args[1][0])
            c.expect(
                expected_value <= MAX_OFT_NATIVE_FEE_WEI,
                "native_value_above_cap",
                f"{where}: LayerZero fee above {MAX_OFT_NATIVE_FEE_WEI} wei",
            )
        c.expect(
            value == expected_value,
            "native_value_not_allowed",
            f"{where}: value {value}, expected {expected_value}",
        )
        _check_protocol_call(x, call.name, call.args, dep, deps, where)
    want = (["fee"] if x.fee else []) + ([] if src.is_native else ["approve"]) + ["protocol"]
    if src.is_native and x.fee:
        want[0] = "native_fee"
    c.expect(kinds == want, "unexpected_transaction_sequence", f"transactions {kinds}, expected {want}")
    c.expect(fee_paid == x.fee, "service_fee_mismatch", f"fee paid {fee_paid}, expected {x.fee}")
    _ = dst


def _check_protocol_call(
    x: _Ctx,
    name: str,
    args: tuple[Any, ...],
    dep: EvmDeployment,
    deps: dict[Chain, EvmDeployment],
    where: str,
) -> None:
    c, step = x.c, x.step
    src, dst = step.source, step.target
    p = step.provider
    if p is Provider.UNISWAP_V3:
        if not c.expect(
            name == "multicall", "selector_not_allowed", f"{where}: expected SwapRouter02 multicall"
        ):
            return
        c.expect(int(args[0]) == x.deadline, "deadline_mismatch", f"{where}: multicall deadline differs")
        inner = [decode_call(bytes(d)) for d in args[1]]
        names = [d.name if d else None for d in inner]
        want = ["exactInputSingle", "unwrapWETH9"] if dst.is_native else ["exactInputSingle"]
        if not c.expect(
            names == want, "selector_not_allowed", f"{where}: inner calls {names}, expected {want}"
        ):
            return
        assert inner[0] is not None
        t_in, t_out, fee_tier, rcpt, amount_in, amount_min, limit = inner[0].args[0]
        c.expect(
            _same(t_in, dep.token(src)) and _same(t_out, dep.token(dst)), "token_mismatch", f"{where}: tokens"
        )
        c.expect(int(fee_tier) in UNISWAP_FEE_TIERS, "pool_fee_invalid", f"{where}: fee tier {fee_tier}")
        want_rcpt = ROUTER_ADDRESS_THIS if dst.is_native else x.recipient
        c.expect(_same(rcpt, want_rcpt), "recipient_mismatch", f"{where}: swap recipient {rcpt}")
        c.expect(
            int(amount_in) == x.net, "amount_mismatch", f"{where}: amountIn {amount_in}, expected {x.net}"
        )
        c.expect(
            int(amount_min) == x.min_out, "minimum_output_mismatch", f"{where}: amountOutMinimum differs"
        )
        c.expect(int(limit) == 0, "price_limit_not_allowed", f"{where}: sqrtPriceLimitX96 must be 0")
        if dst.is_native:
            assert inner[1] is not None
            c.expect(
                int(inner[1].args[0]) == x.min_out and _same(inner[1].args[1], x.recipient),
                "recipient_mismatch",
                f"{where}: unwrapWETH9 must pay at least the minimum to your wallet",
            )
    elif p is Provider.CIRCLE_CCTP:
        if not c.expect(
            name == "depositForBurn", "selector_not_allowed", f"{where}: expected depositForBurn"
        ):
            return
        amount, domain, mint_rcpt, burn_token, caller_b32, max_fee, finality = args
        c.expect(int(amount) == x.net, "amount_mismatch", f"{where}: burn amount {amount}, expected {x.net}")
        c.expect(domain == CHAINS[dst.chain].cctp_domain, "destination_mismatch", f"{where}: domain {domain}")
        if dst.chain is Chain.SOLANA:
            want_b32 = bytes(ak.associated_token_address(x.recipient, dst))
        else:
            want_b32 = address_to_bytes32(x.recipient)
        c.expect(bytes(mint_rcpt) == want_b32, "recipient_mismatch", f"{where}: mintRecipient is not yours")
        c.expect(_same(burn_token, dep.token(src)), "token_mismatch", f"{where}: burnToken")
        c.expect(
            bytes(caller_b32) == ZERO_BYTES32, "destination_caller_not_allowed", f"{where}: destinationCaller"
        )
        c.expect(
            0 < int(max_fee) < int(amount) and int(amount) - int(max_fee) >= x.min_out,
            "max_fee_too_high",
            f"{where}: maxFee {max_fee} would let the output fall below {x.min_out}",
        )
        c.expect(
            finality == CCTP_FAST_FINALITY, "finality_mismatch", f"{where}: minFinalityThreshold {finality}"
        )
    elif p is Provider.ACROSS:
        if not c.expect(name == "deposit", "selector_not_allowed", f"{where}: expected SpokePool deposit"):
            return
        (
            depositor,
            rcpt,
            t_in,
            t_out,
            amount,
            out_amount,
            dest_id,
            excl,
            quote_ts,
            fill_deadline,
            excl_param,
            message,
        ) = args
        dst_dep = deps[dst.chain]
        c.expect(
            bytes(depositor) == address_to_bytes32(x.caller), "depositor_mismatch", f"{where}: depositor"
        )
        c.expect(bytes(rcpt) == address_to_bytes32(x.recipient), "recipient_mismatch", f"{where}: recipient")
        c.expect(bytes(t_in) == address_to_bytes32(dep.token(src)), "token_mismatch", f"{where}: inputToken")
        c.expect(
            bytes(t_out) == address_to_bytes32(dst_dep.token(dst)), "token_mismatch", f"{where}: outputToken"
        )
        c.expect(int(amount) == x.net, "amount_mismatch", f"{where}: inputAmount {amount}, expected {x.net}")
        c.expect(int(out_amount) == x.min_out, "minimum_output_mismatch", f"{where}: outputAmount differs")
        c.expect(
            dest_id == dst_dep.chain_id, "destination_mismatch", f"{where}: destinationChainId {dest_id}"
        )
        c.expect(
            bytes(excl) == ZERO_BYTES32 and excl_param == 0,
            "exclusivity_not_allowed",
            f"{where}: exclusivity",
        )
        c.expect(
            x.now - 3600 <= quote_ts <= x.now + CLOCK_SKEW_SECONDS,
            "quote_timestamp_invalid",
            f"{where}: quoteTimestamp",
        )
        c.expect(
            fill_deadline <= x.now + MAX_ACROSS_FILL_DEADLINE_SECONDS,
            "deadline_too_late",
            f"{where}: fillDeadline later than {MAX_ACROSS_FILL_DEADLINE_SECONDS} s",
        )
        c.expect(fill_deadline > x.now, "deadline_passed", f"{where}: fillDeadline passed")
        c.expect(bytes(message) == b"", "message_not_allowed", f"{where}: message must be empty")
        _ = ACROSS_FILL_DEADLINE_SECONDS
    elif p is Provider.PAXOS_OFT:
        if not c.expect(name == "send", "selector_not_allowed", f"{where}: expected OFT send"):
            return
        (eid, to, amount_ld, min_ld, options, compose, cmd), (native_fee, lz_fee), refund = args
        from solders.pubkey import Pubkey

        c.expect(eid == LZ_EID[dst.chain], "destination_mismatch", f"{where}: dstEid {eid}")
        c.expect(bytes(to) == bytes(Pubkey.from_string(x.recipient)), "recipient_mismatch", f"{where}: to")
        c.expect(
            int(amount_ld) == x.net, "amount_mismatch", f"{where}: amountLD {amount_ld}, expected {x.net}"
        )
        c.expect(int(min_ld) == x.min_out, "minimum_output_mismatch", f"{where}: minAmountLD differs")
        c.expect(
            bytes(compose) == b"" and bytes(cmd) == b"" and bytes(options) == b"",
            "compose_not_allowed",
            f"{where}: extraOptions/composeMsg/oftCmd must be empty",
        )
        c.expect(lz_fee == 0, "lz_token_fee_not_allowed", f"{where}: lzTokenFee")
        c.expect(
            _same(refund, x.caller), "refund_address_mismatch", f"{where}: refundAddress is not your wallet"
        )
        _ = native_fee


def _swap_args(c: _Checker, swap_ix: dict[str, Any] | None, program: Any, decode: Any, what: str) -> Any:
    """The decoded arguments of the swap instruction, or None after recording why it is refused: it must be
    an instruction of the pinned `program` whose data `decode` accepts."""
    if not c.expect(
        swap_ix is not None and swap_ix.get("programId") == str(program),
        "program_not_allowed",
        f"the swap must be an instruction of the pinned program {program}",
    ):
        return None
    assert swap_ix is not None
    try:
        data = base64.b64decode(swap_ix["data"], validate=True)
    except Exception:  # noqa: BLE001 - undecodable data is refused below
        data = b""
    args = decode(data)
    c.expect(args is not None, "instruction_not_allowed", f"the swap must be {what}")
    return args


def _check_solana_swap(x: _Ctx, action: dict[str, Any]) -> None:
    """Orca Whirlpool / Raydium CLMM swap steps: the swap instruction is decoded on its own (pinned program,
    discriminator, exact input = net, minimum output, direction, no price limit, the caller's own token
    accounts, the pinned pool / vaults / oracle), then the whole instruction list must equal the one derived
    from your inputs and the bundle's `poolTickCurrent` (which only picks the tick arrays: a wrong tick can
    make the swap fail, never pay out less than the minimum)."""
    c, step = x.c, x.step
    src, dst = step.source, step.target
    c.expect(
        action.get("recentBlockhash") is None, "blockhash_present", "the service must not set a blockhash"
    )
    c.expect(
        action.get("requiredSigners") == [x.caller],
        "signers_mismatch",
        "requiredSigners must be exactly your wallet",
    )
    ixs = action.get("instructions")
    tick = action.get("poolTickCurrent")
    if not isinstance(ixs, list) or not ixs or not all(isinstance(i, dict) for i in ixs):
        c.fail("instructions_missing", "no instructions")
        return
    if not _is_int(tick):
        c.fail(
            "pool_tick_missing", "a Solana swap action must state the poolTickCurrent its tick arrays follow"
        )
        return
    if x.fee and x.fee_recipient is None:
        c.fail("fee_recipient_unknown", "cannot check the fee instruction without a fee recipient")
        return
    pool_id = step.pool_id or ""
    raydium_live: sw.RaydiumLiveAccounts | None = None
    swap_ix = next(
        (
            i
            for i in ixs
            if i.get("programId") in (str(sw.ORCA_WHIRLPOOL_PROGRAM), str(sw.RAYDIUM_CLMM_PROGRAM))
        ),
        None,
    )
    if step.provider is Provider.ORCA_WHIRLPOOL and pool_id in sw.ORCA_POOLS:
        op = sw.ORCA_POOLS[pool_id]
        a_to_b = src.key == op.token_a
        args = _swap_args(
            c, swap_ix, sw.ORCA_WHIRLPOOL_PROGRAM, sw.decode_orca_swap_v2, "Orca Whirlpool swap_v2 (43 bytes)"
        )
        if args is None:
            return
        assert swap_ix is not None
        amount, threshold, limit, exact_in, got_a_to_b = args
        c.expect(amount == x.net, "amount_mismatch", f"swap amount {amount}, expected {x.net}")
        c.expect(
            threshold == x.min_out,
            "minimum_output_mismatch",
            f"other_amount_threshold {threshold} differs from minimumOutput {x.min_out}",
        )
        c.expect(
            exact_in and got_a_to_b == a_to_b,
            "direction_mismatch",
            "the swap direction / exact-input flag differ",
        )
        c.expect(
            limit == (sw.ORCA_MIN_SQRT_PRICE_X64 if a_to_b else sw.ORCA_MAX_SQRT_PRICE_X64),
            "price_limit_mismatch",
            "the sqrt price limit must be the program's bound",
        )
        keys = [k.get("pubkey") for k in swap_ix.get("keys", []) if isinstance(k, dict)]
        a, b = ASSETS[op.token_a], ASSETS[op.token_b]
        own = [str(ak.associated_token_address(x.caller, a)), str(ak.associated_token_address(x.caller, b))]
        c.expect(
            len(keys) == 15 and keys[3] == x.caller and [keys[7], keys[9]] == own,
            "token_owner_mismatch",
            "the swap's authority and token accounts must be your wallet's own",
        )
        c.expect(
            len(keys) == 15
            and keys[4] == op.whirlpool
            and [keys[8], keys[10]] == [op.vault_a, op.vault_b]
            and keys[14] == op.oracle == sw.orca_oracle_address(op.whirlpool),
            "pool_accounts_mismatch",
            "the swap's pool, vaults or oracle are not the pinned ones",
        )
    elif step.provider is Provider.RAYDIUM_CLMM and pool_id in sw.RAYDIUM_POOLS:
        raydium_live = _check_raydium_swap(x, action, swap_ix, int(tick))
        if raydium_live is None:
            return
    else:
        c.fail("provider_not_verifiable", f"no pinned, buildable pool for {step.provider.value} {pool_id}")
        return
    plan = StepPlan(
        route=x.route,
        step=step,
        input_base=x.input_base,
        fee_base=x.fee,
        minimum_output_base=x.min_out,
        expected_output_base=0,
        max_provider_fee_base=0,
        native_fee_wei=0,
        wallets={src.chain.value: x.caller, dst.chain.value: x.recipient},
        fee_recipient=x.fee_recipient or "",
        event_signer_public=None,
        prepared_at_unix=0,
        deadline_unix=x.deadline,
        fill_deadline_unix=0,
        pool_fee_pips=None,
        pool_tick_current=int(tick),
        raydium_live=raydium_live,
    )
    try:
        expected = sol.build_solana_swap(plan).instructions
    except Exception as exc:  # noqa: BLE001
        c.fail("instruction_mismatch", f"cannot derive the expected instructions: {exc}")
        return
    allowed = {
        str(sol.ATA_PROGRAM),
        str(ak.token_program(src)),
        str(ak.token_program(dst)),
        str(sol.SYSTEM_PROGRAM),
        str(
            sw.ORCA_WHIRLPOOL_PROGRAM if step.provider is Provider.ORCA_WHIRLPOOL else sw.RAYDIUM_CLMM_PROGRAM
        ),
    }
    for i, ix in enumerate(ixs):
        c.expect(ix.get("programId") in allowed, "program_not_allowed", f"instruction {i}: program")
    c.expect(
        ixs == expected,
        "instruction_mismatch",
        "instructions differ from the exact fee / token-account / swap instructions derived from your inputs",
    )


def _check_raydium_swap(
    x: _Ctx, action: dict[str, Any], swap_ix: dict[str, Any] | None, tick: int
) -> sw.RaydiumLiveAccounts | None:
    """Raydium CLMM `swap_v2` on the pinned pool: data (discriminator, amount, minimum, no price limit, base
    input), the caller's own token accounts, the pinned amm_config / pool / vaults in swap direction, and the
    accounts the bundle states it took from the server's live read (`poolAccountsFromLiveChainState`): the
    observation is the one stated, the bitmap extension (if passed) is the pool's PDA, and every tick array is
    the pinned pool's PDA for its stated start index, ordered in swap direction from the current tick. Those
    live accounts cannot be checked further here: a wrong one makes the program refuse the swap, and the
    minimum output (checked above) bounds what it pays. Returns them for rebuilding, or None after a failure."""
    c, step = x.c, x.step
    src, dst = step.source, step.target
    rp = sw.RAYDIUM_POOLS[step.pool_id or ""]
    zero_for_one = src.key == rp.token_0
    args = _swap_args(
        c, swap_ix, sw.RAYDIUM_CLMM_PROGRAM, sw.decode_raydium_swap_v2, "Raydium CLMM swap_v2 (41 bytes)"
    )
    if args is None:
        return None
    assert swap_ix is not None
    amount, threshold, limit, base_input = args
    c.expect(amount == x.net, "amount_mismatch", f"swap amount {amount}, expected {x.net}")
    c.expect(
        threshold == x.min_out,
        "minimum_output_mismatch",
        f"other_amount_threshold {threshold} differs from minimumOutput {x.min_out}",
    )
    c.expect(base_input, "direction_mismatch", "the swap must be exact input (is_base_input)")
    c.expect(limit == 0, "price_limit_mismatch", "the sqrt price limit must be 0 (none: no partial fill)")
    keys = [k.get("pubkey") for k in swap_ix.get("keys", []) if isinstance(k, dict)]
    live = action.get("poolAccountsFromLiveChainState")
    if not c.expect(
        isinstance(live, dict),
        "live_pool_accounts_missing",
        "a Raydium swap action must state poolAccountsFromLiveChainState",
    ):
        return None
    assert isinstance(live, dict)
    obs, ext, starts = (
        live.get("observationState"),
        live.get("tickArrayBitmapExtension"),
        live.get("tickArrayStartIndexes"),
    )
    if not (
        isinstance(obs, str)
        and _valid_key(obs)
        and (ext is None or isinstance(ext, str))
        and isinstance(starts, list)
        and all(_is_int(v) for v in starts)
    ):
        c.fail("live_pool_accounts_malformed", "poolAccountsFromLiveChainState is malformed")
        return None
    n_fixed = sw.RAYDIUM_FIXED_ACCOUNTS + (1 if ext is not None else 0)
    if not c.expect(
        len(keys) == n_fixed + len(starts),
        "pool_accounts_mismatch",
        "the swap's account count differs from the stated live accounts",
    ):
        return None
    src_a, dst_a = ASSETS[src.key], ASSETS[dst.key]
    own = [
        str(ak.associated_token_address(x.caller, src_a)),
        str(ak.associated_token_address(x.caller, dst_a)),
    ]
    c.expect(
        keys[0] == x.caller and keys[3:5] == own,
        "token_owner_mismatch",
        "the swap's payer and token accounts must be your wallet's own",
    )
    vaults = [rp.vault_0, rp.vault_1] if zero_for_one else [rp.vault_1, rp.vault_0]
    c.expect(
        keys[1] == rp.amm_config and keys[2] == rp.pool and keys[5:7] == vaults,
        "pool_accounts_mismatch",
        "the swap's amm_config, pool or vaults are not the pinned ones in swap direction",
    )
    c.expect(
        keys[11:13] == [str(ak.mint(src_a)), str(ak.mint(dst_a))],
        "direction_mismatch",
        "the swap's input / output mints do not follow your direction",
    )
    c.expect(keys[7] == obs, "observation_mismatch", "the swap's observation account is not the one stated")
    if ext is not None:
        c.expect(
            ext == rp.bitmap_extension == sw.raydium_bitmap_extension_address(rp.pool) and keys[13] == ext,
            "bitmap_extension_mismatch",
            "the bitmap extension is not the pinned pool's PDA",
        )
    pdas = [sw.raydium_tick_array_address(rp.pool, int(v)) for v in starts]
    c.expect(
        keys[n_fixed:] == pdas and live.get("tickArrays") == pdas and live.get("pool") == rp.pool,
        "tick_array_mismatch",
        "a tick array is not the pinned pool's PDA for its stated start index",
    )
    c.expect(
        sw.raydium_tick_arrays_in_swap_direction(
            [int(v) for v in starts], tick, rp.tick_spacing, zero_for_one
        ),
        "tick_arrays_not_in_swap_direction",
        "the stated tick arrays are not array starts ordered in swap direction from poolTickCurrent",
    )
    return sw.RaydiumLiveAccounts(obs, tuple(int(v) for v in starts), ext)


def _valid_key(text: str) -> bool:
    try:
        return len(bytes(Pubkey.from_string(text))) == 32
    except ValueError:
        return False


def _check_solana(x: _Ctx, action: dict[str, Any]) -> None:
    c, step = x.c, x.step
    src, dst = step.source, step.target
    if step.provider in (Provider.ORCA_WHIRLPOOL, Provider.RAYDIUM_CLMM):
        _check_solana_swap(x, action)
        return
    if step.provider is not Provider.CIRCLE_CCTP:
        c.fail(
            "provider_not_verifiable",
            f"{step.provider.value} instructions are not verifiable by this verifier",
        )
        return
    if not c.expect(x.event_signer is not None, "event_signer_missing", "pass your event_signer_public"):
        return
    assert x.event_signer is not None
    c.expect(
        action.get("recentBlockhash") is None, "blockhash_present", "the service must not set a blockhash"
    )
    c.expect(
        action.get("requiredSigners") == [x.caller, x.event_signer],
        "signers_mismatch",
        "requiredSigners must be exactly your wallet and your event signer",
    )
    ixs = action.get("instructions")
    if not isinstance(ixs, list):
        c.fail("instructions_missing", "no instructions")
        return
    expected: list[dict[str, Any]] = []
    if x.fee:
        if x.fee_recipient is None:
            c.fail("fee_recipient_unknown", "cannot check the fee instruction without a fee recipient")
            return
        expected.append(sol.instruction_dict(sol.create_ata_idempotent(x.caller, x.fee_recipient, src)))
        expected.append(sol.instruction_dict(sol.transfer_checked(x.caller, x.fee_recipient, src, x.fee)))
    domain = CHAINS[dst.chain].cctp_domain
    # decode the burn independently before comparing the whole instruction
    if ixs:
        last = ixs[-1]
        try:
            data = base64.b64decode(last["data"], validate=True)
        except Exception:  # noqa: BLE001
            data = b""
        if c.expect(
            len(data) == 96 and data[:8] == sol.DEPOSIT_FOR_BURN_DISCRIMINATOR,
            "instruction_not_allowed",
            "the last instruction must be CCTP v2 deposit_for_burn (96 bytes)",
        ):
            amount, dom = struct.unpack_from("<QI", data, 8)
            mint_rcpt, dest_caller = data[20:52], data[52:84]
            max_fee, finality = struct.unpack_from("<QI", data, 84)
            c.expect(amount == x.net, "amount_mismatch", f"burn amount {amount}, expected {x.net}")
            c.expect(dom == domain, "destination_mismatch", f"destination_domain {dom}")
            c.expect(
                mint_rcpt == address_to_bytes32(x.recipient),
                "recipient_mismatch",
                "mint_recipient is not yours",
            )
            c.expect(
                dest_caller == bytes(32), "destination_caller_not_allowed", "destination_caller must be empty"
            )
            c.expect(
                0 < max_fee < amount and amount - max_fee >= x.min_out,
                "max_fee_too_high",
                f"max_fee {max_fee} would let the output fall below {x.min_out}",
            )
            c.expect(
                finality == CCTP_FAST_FINALITY, "finality_mismatch", f"min_finality_threshold {finality}"
            )
            assert domain is not None
            expected.append(
                sol.instruction_dict(
                    sol.cctp_deposit_for_burn(
                        x.caller, x.event_signer, src, amount, domain, mint_rcpt, max_fee
                    )
                )
            )
    allowed_programs = {
        str(sol.ATA_PROGRAM),
        str(ak.token_program(src)),
        str(sol.CCTP_TOKEN_MESSENGER_MINTER_V2),
    }
    for i, ix in enumerate(ixs):
        c.expect(ix.get("programId") in allowed_programs, "program_not_allowed", f"instruction {i}: program")
    c.expect(
        ixs == expected,
        "instruction_mismatch",
        "instructions differ from the exact fee / token-account / burn instructions derived from your inputs",
    )


# ---- the v1 corridor's destination settlement (ERC-4337 user operation, EntryPoint v0.7) -------------

from routequote.core.actions import erc4337 as aa  # noqa: E402


def verify_settlement_plan(
    plan: Any,
    *,
    wallet: str,
    smart_account: str,
    chain_id: int,
    entry_point: str,
    usdc: str,
    router: str,
    weth: str,
    minimum_eth_out: int,
    now_unix: int,
    amount_in: int | None = None,
    factory: str | None = None,
    salt: int | None = None,
    permit_domain: tuple[str, str] | None = None,
    max_gas_cost_wei: int = aa.MAX_GAS_COST_WEI,
) -> list[Finding]:
    """Findings about an unsigned ERC-4337 settlement plan (`routequote.core.actions.erc4337`), before the
    wallet signs its permit or its userOpHash. Every value the caller knows is its own: its wallet, its smart
    account (`factory.getAddress(wallet, salt)`, read by the caller), the chain, the EntryPoint, USDC, the
    router, WETH, its minimum ETH out and, optionally, the exact USDC amount (the verified mint), the factory
    and salt and the USDC permit domain (default: the pinned one for the chain). The callData is re-derived
    from these and the plan's bounds and compared byte for byte (with the permit signature when attached);
    the permit typed data and digest and the userOpHash are recomputed; targets, values, the ETH recipient,
    the deadline window (at most `MAX_PERMIT_WINDOW_SECONDS` ahead, not past), initCode, the empty paymaster
    and the gas bounds are checked. Hostile or malformed input yields findings, never an exception."""
    c = _Checker()
    try:
        _verify_settlement_plan(
            c,
            plan,
            wallet=wallet,
            smart_account=smart_account,
            chain_id=chain_id,
            entry_point=entry_point,
            usdc=usdc,
            router=router,
            weth=weth,
            minimum_eth_out=minimum_eth_out,
            now_unix=now_unix,
            amount_in=amount_in,
            factory=factory,
            salt=salt,
            permit_domain=permit_domain,
            max_gas_cost_wei=max_gas_cost_wei,
        )
    except Exception as exc:  # noqa: BLE001 - hostile input is a finding, never a crash
        c.fail("settlement_plan_malformed", f"the plan could not be checked: {exc}")
    return c.findings


def _verify_settlement_plan(
    c: _Checker,
    plan: Any,
    *,
    wallet: str,
    smart_account: str,
    chain_id: int,
    entry_point: str,
    usdc: str,
    router: str,
    weth: str,
    minimum_eth_out: int,
    now_unix: int,
    amount_in: int | None,
    factory: str | None,
    salt: int | None,
    permit_domain: tuple[str, str] | None,
    max_gas_cost_wei: int,
) -> None:
    try:
        v = aa.PlanView.parse(plan)
    except (ValueError, TypeError) as exc:
        c.fail("settlement_plan_malformed", str(exc))
        return
    wallet, smart_account = ak.checksum(wallet), ak.checksum(smart_account)
    usdc, router, weth = ak.checksum(usdc), ak.checksum(router), ak.checksum(weth)
    for key in ("serverSigning", "serverSubmission"):
        c.expect(plan.get(key) is False, "custody_flag_not_false", f"{key} must be false")
    c.expect(v.chain_id == chain_id, "settlement_wrong_chain", f"chainId {v.chain_id}, expected {chain_id}")
    c.expect(
        v.entry_point == ak.checksum(entry_point),
        "settlement_wrong_entry_point",
        f"EntryPoint {v.entry_point}",
    )
    c.expect(v.wallet == wallet, "settlement_wrong_wallet", f"the plan's wallet {v.wallet} is not yours")
    c.expect(smart_account != wallet, "settlement_wrong_account", "the smart account cannot be the wallet")
    c.expect(
        v.smart_account == smart_account and v.sender == smart_account,
        "settlement_wrong_account",
        f"the operation's sender {v.sender} is not your smart account {smart_account}",
    )
    c.expect(
        (v.usdc, v.router, v.weth) == (usdc, router, weth),
        "settlement_wrong_target",
        "the plan's USDC / router / WETH are not the ones you named",
    )
    b = plan["bounds"]
    c.expect(
        [str(t) for t in b.get("targets") or []] == [usdc, router],
        "settlement_wrong_target",
        "targets must be exactly [USDC, router]",
    )
    c.expect(
        str(b.get("ethRecipient")) == wallet, "settlement_wrong_recipient", "the ETH must go to your wallet"
    )
    c.expect(str(b.get("serviceFee")) == "0", "settlement_service_fee", "the settlement takes no service fee")
    if amount_in is not None:
        c.expect(
            v.amount_in == amount_in,
            "settlement_amount_mismatch",
            f"the plan spends {v.amount_in} USDC, expected exactly {amount_in}",
        )
    c.expect(v.amount_in > 0, "settlement_amount_mismatch", "the USDC amount must be positive")
    c.expect(
        v.minimum_eth_out >= minimum_eth_out > 0,
        "settlement_minimum_below_yours",
        f"minimum ETH out {v.minimum_eth_out} is below your {minimum_eth_out}",
    )
    c.expect(v.pool_fee in aa.UNISWAP_FEE_TIERS, "settlement_pool_fee_unknown", f"pool fee {v.pool_fee}")
    deadlines = {b.get("permitDeadline"), b.get("swapDeadline"), b.get("validUntil")}
    c.expect(
        deadlines == {v.deadline},
        "settlement_deadline_out_of_bounds",
        "permit, swap and validity deadlines differ",
    )
    c.expect(
        now_unix < v.deadline <= now_unix + aa.MAX_PERMIT_WINDOW_SECONDS + CLOCK_SKEW_SECONDS,
        "settlement_deadline_out_of_bounds",
        f"deadline {v.deadline} must be in the future and at most {aa.MAX_PERMIT_WINDOW_SECONDS} s ahead",
    )
    # initCode: empty for a deployed account, else exactly factory ‖ createAccount(your wallet, salt)
    if factory is not None:
        c.expect(v.factory == ak.checksum(factory), "settlement_init_code_mismatch", f"factory {v.factory}")
    if salt is not None:
        c.expect(v.salt == salt, "settlement_init_code_mismatch", f"salt {v.salt}")
    want_init = b"" if v.account_deployed else aa.init_code(v.factory, wallet, v.salt)
    c.expect(
        v.init_code == want_init,
        "settlement_init_code_mismatch",
        "initCode must be empty (deployed account) or factory ‖ createAccount(your wallet, salt)",
    )
    c.expect(v.paymaster_and_data == b"", "settlement_paymaster_not_empty", "paymasterAndData must be empty")
    vgl, cgl = aa.unpack_uint128_pair(v.account_gas_limits)
    prio, max_fee = aa.unpack_uint128_pair(v.gas_fees)
    gas = {
        "verificationGasLimit": vgl,
        "callGasLimit": cgl,
        "preVerificationGas": v.pre_verification_gas,
        "maxFeePerGas": max_fee,
        "maxPriorityFeePerGas": prio,
    }
    c.expect(
        len(v.account_gas_limits) == 32 and len(v.gas_fees) == 32,
        "user_op_gas_out_of_bounds",
        "accountGasLimits and gasFees are bytes32",
    )
    for code, message in aa.check_gas(gas, max_gas_cost_wei):
        c.fail(code, message)
    # the permit: typed data and digest re-derived from your values
    domain = permit_domain or aa.USDC_PERMIT_DOMAIN.get(chain_id)
    if c.expect(
        domain is not None, "settlement_permit_mismatch", f"no pinned USDC permit domain on {chain_id}"
    ):
        assert domain is not None
        c.expect(
            (v.permit_name, v.permit_version) == domain,
            "settlement_permit_mismatch",
            f"permit domain {(v.permit_name, v.permit_version)}, expected {domain}",
        )
    permit: dict[str, Any] = {
        "name": v.permit_name,
        "version": v.permit_version,
        "chain_id": chain_id,
        "token": usdc,
        "owner": wallet,
        "spender": smart_account,
        "value": v.amount_in,
        "nonce": v.permit_nonce,
        "deadline": v.deadline,
    }
    c.expect(
        plan["permit"].get("typedData") == aa.permit_typed_data(**permit),
        "settlement_permit_mismatch",
        "the permit typed data is not permit(your wallet -> your account, exact amount, deadline)",
    )
    c.expect(
        str(plan["permit"].get("digest")) == "0x" + aa.permit_digest(**permit).hex(),
        "settlement_permit_mismatch",
        "the permit digest does not match its typed data",
    )
    # the callData, byte for byte
    derive: dict[str, Any] = {
        "usdc": usdc,
        "router": router,
        "weth": weth,
        "wallet": wallet,
        "account": smart_account,
        "amount_in": v.amount_in,
        "minimum_eth_out": v.minimum_eth_out,
        "pool_fee": v.pool_fee,
        "deadline": v.deadline,
    }
    template = aa.settlement_calls(**derive).call_data
    c.expect(
        str(plan.get("callDataTemplate")) == "0x" + template.hex(),
        "settlement_calldata_mismatch",
        "callDataTemplate differs from permit / transferFrom / approve / swap derived from your values",
    )
    c.expect(
        plan["userOperation"].get("signature") in (None, "0x"),
        "settlement_owner_signature_present",
        "an unsigned plan carries no owner signature",
    )
    if v.permit_signature is None:
        c.expect(
            v.call_data is None and plan.get("userOpHash") is None,
            "settlement_calldata_mismatch",
            "without a permit signature callData and userOpHash must be null",
        )
        return
    try:
        vrs = aa.split_signature(v.permit_signature)
    except ValueError as exc:
        c.fail("settlement_permit_signature_malformed", str(exc))
        return
    call_data = aa.settlement_calls(**derive, permit_vrs=vrs).call_data
    if not c.expect(
        v.call_data == call_data,
        "settlement_calldata_mismatch",
        "callData differs from the batch derived from your values and the permit signature",
    ):
        return
    c.expect(
        str(plan.get("userOpHash")).lower() == "0x" + v.user_op_hash(call_data).hex(),
        "settlement_user_op_hash_mismatch",
        "userOpHash is not the EntryPoint v0.7 hash of this operation",
    )


__all__ += ["verify_settlement_plan"]
