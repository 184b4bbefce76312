"""The bundle-level checks: hashes, intent, route and step, amounts and bounds, timing, the fee recipient
and the safety receipt; then the chain family's payload checks (evm.py, solana.py) or a CCTP destination mint
(cctp_receive.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from routequote.core.actions.bundle import (
    action_sha256,
    allowlists,
    payload_sha256,
    raw_payload_rows,
)
from routequote.core.actions.cctp_solana_receive_check import check_solana_receive_bundle, is_solana_receive
from routequote.core.actions.evm import (
    DEFAULT_DEPLOYMENTS,
    EvmDeployment,
)
from routequote.core.assets import CHAINS, Chain, ChainFamily
from routequote.core.hashing import canonical_sha256
from routequote.core.routes import ROUTES, Route, Step
from routequote.core.verify.bounds import check_bounds
from routequote.core.verify.cctp_receive import is_receive, verify_receive
from routequote.core.verify.common import (
    BundleRejected,
    Checker,
    Finding,
    StepContext,
    check_timing,
    is_int,
    same_address,
    same_wallets,
    scan_flags,
    service_fee_base,
    strict_eq,
)
from routequote.core.verify.evm import check_evm
from routequote.core.verify.receipt import check_receipt
from routequote.core.verify.solana import check_solana


def verify_bundle(bundle: Any, **kwargs: Any) -> list[Finding]:
    """All findings about `bundle` (errors and warnings). The bundle is safe to sign only if none is an error.

    Keyword arguments: `intent` (the caller's 5 quote fields), `wallets` (chain -> public address),
    `now_unix`, and optionally `approval_v3`, `direct_route_summary` (from the approved quote),
    `event_signer_public`, `fee_recipients` ({"evm": ..., "solana": ...} as the operator published them),
    `deployments` (contract addresses; default: the pinned mainnet ones) and, for a session's later step,
    `session_actual_input_base` (the verified output of the previous step, which that step must spend; the
    last step must then also meet approval_v3.minimum_output_base) and `accept_modelled_bounds` (default
    False: a bundle whose receipt says its bounds are modelled from the embedded snapshot, or does not say,
    is refused with `bounds_modelled_not_live`; True reports it as the warning `bounds_modelled_accepted`).
    Hostile or malformed input
    yields findings, never an exception.
    """
    c = Checker()
    try:
        return _verify_bundle(c, bundle, **kwargs)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        c.fail("bundle_malformed", f"the bundle cannot be read: {type(exc).__name__}: {str(exc)[:200]}")
        return c.findings


@dataclass(frozen=True, slots=True)
class _Amounts:
    """The action's stated amounts, read as integers."""

    input_base: int
    fee: int
    net: int
    min_out: int

    def fields(self) -> tuple[int, int, int, int]:
        return self.input_base, self.fee, self.net, self.min_out


@dataclass(frozen=True, slots=True)
class _Yours:
    """What the caller knows and hands the verifier (the deployments merged over the pinned ones)."""

    intent: dict[str, Any]
    wallets: dict[str, str]
    now_unix: int
    approval_v3: dict[str, Any] | None
    direct_route_summary: dict[str, Any] | None
    event_signer_public: str | None
    fee_recipients: dict[str, str] | None
    deps: dict[Chain, EvmDeployment]
    session_actual_input_base: int | None
    accept_modelled_bounds: bool


def _verify_bundle(
    c: Checker,
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
    accept_modelled_bounds: bool = False,
) -> list[Finding]:
    if not isinstance(bundle, dict):
        return [Finding("bundle_not_object", "the bundle must be a JSON object")]
    y = _Yours(
        intent,
        wallets,
        now_unix,
        approval_v3,
        direct_route_summary,
        event_signer_public,
        fee_recipients,
        {**DEFAULT_DEPLOYMENTS, **(deployments or {})},
        session_actual_input_base,
        accept_modelled_bounds,
    )
    _verify_checks(c, bundle, y)
    return c.findings


def _verify_checks(c: Checker, bundle: dict[str, Any], y: _Yours) -> None:
    """The groups in order; a group whose failure leaves nothing to check against ends the run."""
    scan_flags(bundle, "bundle", c)
    bound = _check_hashes(c, bundle)
    if bound is None:
        return
    action, receipt = bound
    located = _route_step(c, bundle, action, y.intent)
    if located is None:
        return
    route, step = located
    if set(y.wallets) != set(route.required_wallet_chains):
        c.fail(
            "wallet_chains_mismatch",
            f"the route needs wallets on exactly {list(route.required_wallet_chains)}",
        )
        return
    if _verified_as_mint(c, bundle, action, receipt, route, step, y):
        return
    parties = _check_parties(c, bundle, action, step, y.wallets)
    x = _check_amounts(c, action, step)
    if x is None:
        return
    min_bound = _summary_bound(
        c, route, step, x, y.approval_v3, y.direct_route_summary, y.session_actual_input_base
    )
    _check_approval(c, bundle, route, step, x, min_bound, y.approval_v3, y.session_actual_input_base)
    deadline = check_timing(c, bundle, action, y.now_unix)
    if deadline is None:
        return
    family = CHAINS[step.source.chain].family
    fee_recipient = _fee_recipient(c, action, receipt, x.fee, family, y.fee_recipients)
    check_receipt(
        c, bundle, action, receipt, step, x.input_base, x.fee, x.net, x.min_out, deadline, family, y.deps
    )
    check_bounds(c, action, receipt, step, accept_modelled=y.accept_modelled_bounds)
    ctx = StepContext(
        c, route, step, *parties, *x.fields(), deadline, y.now_unix, fee_recipient, y.event_signer_public
    )
    if family is ChainFamily.EVM:
        check_evm(ctx, action, y.deps)
    else:
        check_solana(ctx, action)


def _check_hashes(c: Checker, bundle: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The payload hash, the action hash, the per-payload rows and the receipt's allowlists. The unsigned
    action and its receipt, or None when either is missing or the payloads cannot be read."""
    c.expect(
        bundle.get("payload_sha256") == payload_sha256(bundle),
        "payload_sha256_mismatch",
        "payload_sha256 does not equal sha256 of the canonical bundle without it",
    )
    action = bundle.get("unsigned_action")
    if not isinstance(action, dict) or not isinstance(action.get("safety_receipt"), dict):
        c.fail("unsigned_action_missing", "bundle.unsigned_action with a safety_receipt is required")
        return None
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
        return None
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
    return action, receipt


def _route_step(
    c: Checker, bundle: dict[str, Any], action: dict[str, Any], intent: dict[str, Any]
) -> tuple[Route, Step] | None:
    """The route your intent names and the step the bundle is for, which the action must match."""
    route_key = f"{intent.get('from_chain')}:{intent.get('from_token')}->{intent.get('to_chain')}:{intent.get('to_token')}"
    route = ROUTES.get(route_key)
    if route is None:
        c.fail("intent_route_unknown", f"no route {route_key}")
        return None
    c.expect(bundle.get("route") == route.key, "route_mismatch", "bundle.route differs from the intent")
    idx = bundle.get("step_index")
    if not is_int(idx) or not 0 <= idx < len(route.steps):
        c.fail("step_index_invalid", "bundle.step_index is not a step of the route")
        return None
    step = route.steps[idx]
    c.expect(
        strict_eq(action.get("step_index"), idx), "step_index_mismatch", "unsigned_action.step_index differs"
    )
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
    return route, step


def _verified_as_mint(
    c: Checker,
    bundle: dict[str, Any],
    action: dict[str, Any],
    receipt: dict[str, Any],
    route: Route,
    step: Step,
    y: _Yours,
) -> bool:
    """A CCTP destination mint is held to its own rules (on Solana, re-deriving both instructions): True when
    the bundle is one and has been checked as one."""
    if is_solana_receive(bundle):
        for code, message in check_solana_receive_bundle(
            bundle,
            route=route,
            step=step,
            wallets=y.wallets,
            now_unix=y.now_unix,
            approval_v3=y.approval_v3,
            deployments=y.deps,
        ):
            c.fail(code, message)
        return True
    if is_receive(action, receipt):
        verify_receive(c, bundle, action, receipt, route, step, y.wallets, y.now_unix, y.approval_v3, y.deps)
        return True
    return False


def _check_parties(
    c: Checker, bundle: dict[str, Any], action: dict[str, Any], step: Step, wallets: dict[str, str]
) -> tuple[str, str]:
    """Sender, recipient and the workflow's wallets are yours. Your (caller, recipient) for this step."""
    caller, recipient = wallets[step.source.chain.value], wallets[step.target.chain.value]
    c.expect(
        same_address(action.get("sender"), caller),
        "sender_mismatch",
        "unsigned_action.sender is not your wallet",
    )
    c.expect(
        same_address(action.get("recipient"), recipient),
        "recipient_mismatch",
        "unsigned_action.recipient is not your wallet on the step's target chain",
    )
    wf = bundle.get("workflow", {})
    c.expect(
        isinstance(wf, dict) and same_wallets(wf.get("wallets"), wallets),
        "workflow_wallets_mismatch",
        "workflow.wallets differs from your wallets",
    )
    return caller, recipient


def _check_amounts(c: Checker, action: dict[str, Any], step: Step) -> _Amounts | None:
    """The amounts are decimal strings, the fee is the 1 bp formula on the fee step, net = input - fee."""
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
        return None
    want_fee = service_fee_base(input_base, step.fee_step)
    c.expect(
        fee == want_fee,
        "service_fee_mismatch",
        f"the fee must be floor(input/10000) = {want_fee} on the fee step and 0 elsewhere, not {fee}",
    )
    c.expect(net == input_base - fee, "net_input_mismatch", "netInputAmount must be inputAmount - routeFee")
    return _Amounts(input_base, fee, net, min_out)


def _summary_bound(
    c: Checker,
    route: Route,
    step: Step,
    x: _Amounts,
    approval_v3: dict[str, Any] | None,
    summary: dict[str, Any] | None,
    session_actual_input_base: int | None,
) -> int:
    """Against the approved quote's direct_route_summary (when given): its hash, route, the step's provider
    and input. The minimum output the summary holds the step to (1 without one)."""
    if summary is None:
        return 1
    if approval_v3 is not None:
        c.expect(
            canonical_sha256(summary) == approval_v3.get("direct_route_summary_sha256"),
            "summary_hash_mismatch",
            "direct_route_summary does not hash to approval_v3's summary hash",
        )
    c.expect(summary.get("route") == route.key, "summary_route_mismatch", "summary is for another route")
    s_steps = summary.get("steps") or []
    if step.index >= len(s_steps):
        return 1
    ss = s_steps[step.index]
    c.expect(
        ss.get("provider") == step.provider.value, "summary_provider_mismatch", "summary provider differs"
    )
    if session_actual_input_base is not None and step.index > 0:
        # a session step spends what the previous step verifiably delivered, not the quoted estimate
        c.expect(
            x.input_base == session_actual_input_base,
            "input_amount_mismatch",
            f"inputAmount {x.input_base} differs from the verified actual input {session_actual_input_base}",
        )
    else:
        c.expect(
            str(x.input_base) == ss.get("expected_input_base"),
            "input_amount_mismatch",
            f"inputAmount {x.input_base} differs from the quoted {ss.get('expected_input_base')}",
        )
    return max(1, int(ss.get("minimum_output_base", "1")))


def _check_approval(
    c: Checker,
    bundle: dict[str, Any],
    route: Route,
    step: Step,
    x: _Amounts,
    min_bound: int,
    approval_v3: dict[str, Any] | None,
    session_actual_input_base: int | None,
) -> None:
    """Against approval_v3 (when given): the first step's maximum input, the quote binding, and the approved
    minimum output on a route's last step; minimumOutput at or above every bound that applies."""
    if approval_v3 is not None:
        if step.index == 0:
            c.expect(
                x.input_base <= int(approval_v3["maximum_input_base"]),
                "input_above_approved_maximum",
                "inputAmount exceeds approval_v3.maximum_input_base",
            )
        last_of_session = session_actual_input_base is not None and step.index == len(route.steps) - 1
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
        x.min_out >= min_bound,
        "minimum_output_below_bound",
        f"minimumOutput {x.min_out} is below the bound {min_bound}",
    )


def _fee_recipient(
    c: Checker,
    action: dict[str, Any],
    receipt: dict[str, Any],
    fee: int,
    family: ChainFamily,
    fee_recipients: dict[str, str] | None,
) -> str | None:
    """The recipient the payloads must pay: the one you pinned for the family, else (unpinned) the one the
    receipt names, which must be the action's. The receipt's fee must be the action's."""
    fee_recipient: str | None = receipt.get("service_fee", {}).get("recipient")
    if fee_recipients is not None:
        pinned = fee_recipients.get(family.value)
        if fee and not same_address(action.get("feeRecipient"), pinned):
            c.fail("fee_recipient_mismatch", "the fee goes to another recipient than the one you pinned")
        fee_recipient = pinned if fee else None
    elif fee:
        c.warn(
            "fee_recipient_not_pinned", "no fee recipient pinned by the caller; checked for consistency only"
        )
    if receipt.get("service_fee", {}).get("exact_amount_base") != str(fee):
        c.fail("receipt_fee_mismatch", "the receipt's fee differs from the action's")
    return fee_recipient


def assert_bundle_ok(bundle: Any, **kwargs: Any) -> list[Finding]:
    """verify_bundle, raising BundleRejected if any finding is an error. Returns the warnings."""
    findings = verify_bundle(bundle, **kwargs)
    if any(f.severity == "error" for f in findings):
        raise BundleRejected(findings)
    return findings
