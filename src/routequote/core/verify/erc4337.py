"""The v1 corridor's destination settlement (ERC-4337 user operation, EntryPoint v0.7): the plan checked
against the caller's own values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from routequote.core.actions import common as ak
from routequote.core.actions import erc4337 as aa
from routequote.core.verify.common import (
    CLOCK_SKEW_SECONDS,
    Checker,
    Finding,
)


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
    c = Checker()
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


@dataclass(frozen=True, slots=True)
class _Yours:
    """The caller's own values the plan is held to (wallet, account and token addresses checksummed)."""

    wallet: str
    smart_account: str
    chain_id: int
    entry_point: str
    usdc: str
    router: str
    weth: str
    minimum_eth_out: int
    now_unix: int
    amount_in: int | None
    factory: str | None
    salt: int | None
    permit_domain: tuple[str, str] | None
    max_gas_cost_wei: int


def _verify_settlement_plan(
    c: Checker,
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
    y = _Yours(
        wallet,
        smart_account,
        chain_id,
        entry_point,
        usdc,
        router,
        weth,
        minimum_eth_out,
        now_unix,
        amount_in,
        factory,
        salt,
        permit_domain,
        max_gas_cost_wei,
    )
    _check_parties(c, plan, v, y)
    _check_plan_bounds(c, plan["bounds"], v, y)
    _check_init_code(c, v, y)
    _check_gas(c, v, y)
    _check_permit(c, plan, v, y)
    _check_call_data(c, plan, v, y)


def _check_parties(c: Checker, plan: Any, v: aa.PlanView, y: _Yours) -> None:
    """No server custody; your chain and EntryPoint; your wallet; your smart account as the sender; your
    USDC, router and WETH."""
    for key in ("serverSigning", "serverSubmission"):
        c.expect(plan.get(key) is False, "custody_flag_not_false", f"{key} must be false")
    c.expect(
        v.chain_id == y.chain_id, "settlement_wrong_chain", f"chainId {v.chain_id}, expected {y.chain_id}"
    )
    c.expect(
        v.entry_point == ak.checksum(y.entry_point),
        "settlement_wrong_entry_point",
        f"EntryPoint {v.entry_point}",
    )
    c.expect(v.wallet == y.wallet, "settlement_wrong_wallet", f"the plan's wallet {v.wallet} is not yours")
    c.expect(
        y.smart_account != y.wallet, "settlement_wrong_account", "the smart account cannot be the wallet"
    )
    c.expect(
        v.smart_account == y.smart_account and v.sender == y.smart_account,
        "settlement_wrong_account",
        f"the operation's sender {v.sender} is not your smart account {y.smart_account}",
    )
    c.expect(
        (v.usdc, v.router, v.weth) == (y.usdc, y.router, y.weth),
        "settlement_wrong_target",
        "the plan's USDC / router / WETH are not the ones you named",
    )


def _check_plan_bounds(c: Checker, b: Any, v: aa.PlanView, y: _Yours) -> None:
    """The plan's bounds: targets [USDC, router], the ETH to your wallet, no service fee, your amount and
    minimum, a known pool fee, one deadline in the permit window."""
    c.expect(
        [str(t) for t in b.get("targets") or []] == [y.usdc, y.router],
        "settlement_wrong_target",
        "targets must be exactly [USDC, router]",
    )
    c.expect(
        str(b.get("ethRecipient")) == y.wallet, "settlement_wrong_recipient", "the ETH must go to your wallet"
    )
    c.expect(str(b.get("serviceFee")) == "0", "settlement_service_fee", "the settlement takes no service fee")
    if y.amount_in is not None:
        c.expect(
            v.amount_in == y.amount_in,
            "settlement_amount_mismatch",
            f"the plan spends {v.amount_in} USDC, expected exactly {y.amount_in}",
        )
    c.expect(v.amount_in > 0, "settlement_amount_mismatch", "the USDC amount must be positive")
    c.expect(
        v.minimum_eth_out >= y.minimum_eth_out > 0,
        "settlement_minimum_below_yours",
        f"minimum ETH out {v.minimum_eth_out} is below your {y.minimum_eth_out}",
    )
    c.expect(v.pool_fee in aa.UNISWAP_FEE_TIERS, "settlement_pool_fee_unknown", f"pool fee {v.pool_fee}")
    deadlines = {b.get("permitDeadline"), b.get("swapDeadline"), b.get("validUntil")}
    c.expect(
        deadlines == {v.deadline},
        "settlement_deadline_out_of_bounds",
        "permit, swap and validity deadlines differ",
    )
    c.expect(
        y.now_unix < v.deadline <= y.now_unix + aa.MAX_PERMIT_WINDOW_SECONDS + CLOCK_SKEW_SECONDS,
        "settlement_deadline_out_of_bounds",
        f"deadline {v.deadline} must be in the future and at most {aa.MAX_PERMIT_WINDOW_SECONDS} s ahead",
    )


def _check_init_code(c: Checker, v: aa.PlanView, y: _Yours) -> None:
    """initCode: empty for a deployed account, else exactly factory ‖ createAccount(your wallet, salt);
    paymasterAndData empty."""
    if y.factory is not None:
        c.expect(v.factory == ak.checksum(y.factory), "settlement_init_code_mismatch", f"factory {v.factory}")
    if y.salt is not None:
        c.expect(v.salt == y.salt, "settlement_init_code_mismatch", f"salt {v.salt}")
    want_init = b"" if v.account_deployed else aa.init_code(v.factory, y.wallet, v.salt)
    c.expect(
        v.init_code == want_init,
        "settlement_init_code_mismatch",
        "initCode must be empty (deployed account) or factory ‖ createAccount(your wallet, salt)",
    )
    c.expect(v.paymaster_and_data == b"", "settlement_paymaster_not_empty", "paymasterAndData must be empty")


def _check_gas(c: Checker, v: aa.PlanView, y: _Yours) -> None:
    """The packed gas fields are bytes32 and every gas limit and price is within the bounds."""
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
    for code, message in aa.check_gas(gas, y.max_gas_cost_wei):
        c.fail(code, message)


def _check_permit(c: Checker, plan: Any, v: aa.PlanView, y: _Yours) -> None:
    """The permit: its domain the pinned (or your) one, typed data and digest re-derived from your values."""
    domain = y.permit_domain or aa.USDC_PERMIT_DOMAIN.get(y.chain_id)
    if c.expect(
        domain is not None, "settlement_permit_mismatch", f"no pinned USDC permit domain on {y.chain_id}"
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
        "chain_id": y.chain_id,
        "token": y.usdc,
        "owner": y.wallet,
        "spender": y.smart_account,
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


def _check_call_data(c: Checker, plan: Any, v: aa.PlanView, y: _Yours) -> None:
    """The callData template byte for byte; no owner signature; with a permit signature, the callData and
    the userOpHash re-derived from it (without one, both null)."""
    derive: dict[str, Any] = {
        "usdc": y.usdc,
        "router": y.router,
        "weth": y.weth,
        "wallet": y.wallet,
        "account": y.smart_account,
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
