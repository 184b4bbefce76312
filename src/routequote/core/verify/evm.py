"""The EVM payload checks: each transaction's chain, sender, value and calldata, decoded and compared with
the pinned contracts (Uniswap v3, CCTP, Across, the USDG OFT) and the caller's bounds."""

from __future__ import annotations

from typing import Any

from routequote.core.actions import common as ak
from routequote.core.actions.common import ZERO_BYTES32, address_to_bytes32
from routequote.core.actions.evm import (
    LZ_EID,
    ROUTER_ADDRESS_THIS,
    EvmDeployment,
    decode_call,
)
from routequote.core.actions.plan import (
    ACROSS_FILL_DEADLINE_SECONDS,
    CCTP_FAST_FINALITY,
    MAX_ACROSS_FILL_DEADLINE_SECONDS,
)
from routequote.core.assets import CHAINS, Chain
from routequote.core.providers import PROVIDERS
from routequote.core.routes import Provider
from routequote.core.verify.common import (
    CLOCK_SKEW_SECONDS,
    StepContext,
    same_address,
    strict_eq,
)

MAX_OFT_NATIVE_FEE_WEI = 10**16  # 0.01 ETH: a verifier-side cap on the LayerZero fee sent as value
UNISWAP_FEE_TIERS = frozenset({100, 500, 3000, 10000})


def check_evm(x: StepContext, action: dict[str, Any], deps: dict[Chain, EvmDeployment]) -> None:
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
            strict_eq(tx.get("chainId"), dep.chain_id),
            "chain_id_mismatch",
            f"{where}: chainId must be {dep.chain_id}",
        )
        c.expect(
            same_address(tx.get("from"), x.caller), "sender_mismatch", f"{where}: from is not your wallet"
        )
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
            ok = src.is_native and x.fee_recipient is not None and same_address(to, x.fee_recipient)
            c.expect(ok, "unexpected_native_transfer", f"{where}: a plain value transfer that is not the fee")
            fee_paid += value
            continue
        if call.name == "transfer":
            kinds.append("fee")
            c.expect(same_address(to, src_token), "target_not_allowed", f"{where}: transfer on another token")
            c.expect(
                x.fee_recipient is not None and same_address(call.args[0], x.fee_recipient),
                "fee_recipient_mismatch",
                f"{where}: the transfer does not go to the fee recipient",
            )
            c.expect(value == 0, "native_value_not_allowed", f"{where}: value must be 0")
            fee_paid += int(call.args[1])
            continue
        if call.name == "approve":
            kinds.append("approve")
            c.expect(same_address(to, src_token), "target_not_allowed", f"{where}: approve on another token")
            c.expect(
                same_address(call.args[0], protocol),
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
            same_address(to, protocol),
            "target_not_allowed",
            f"{where}: target {to} is not the pinned {protocol}",
        )
        spec = PROVIDERS[step.provider]
        expected_value = x.net if (spec.native_input_as_value and src.is_native) else 0
        if spec.native_messaging_fee and call.name == "send":
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
    x: StepContext,
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
        try:
            inner = [decode_call(bytes(d)) for d in args[1]]
        except Exception as exc:  # noqa: BLE001 - hostile inner calldata is a finding, never an exception
            c.fail("calldata_undecodable", f"{where}: inner call: {exc}")
            return
        names = [d.name if d else None for d in inner]
        want = ["exactInputSingle", "unwrapWETH9"] if dst.is_native else ["exactInputSingle"]
        if not c.expect(
            names == want, "selector_not_allowed", f"{where}: inner calls {names}, expected {want}"
        ):
            return
        assert inner[0] is not None
        t_in, t_out, fee_tier, rcpt, amount_in, amount_min, limit = inner[0].args[0]
        c.expect(
            same_address(t_in, dep.token(src)) and same_address(t_out, dep.token(dst)),
            "token_mismatch",
            f"{where}: tokens",
        )
        c.expect(int(fee_tier) in UNISWAP_FEE_TIERS, "pool_fee_invalid", f"{where}: fee tier {fee_tier}")
        want_rcpt = ROUTER_ADDRESS_THIS if dst.is_native else x.recipient
        c.expect(same_address(rcpt, want_rcpt), "recipient_mismatch", f"{where}: swap recipient {rcpt}")
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
                int(inner[1].args[0]) == x.min_out and same_address(inner[1].args[1], x.recipient),
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
        c.expect(same_address(burn_token, dep.token(src)), "token_mismatch", f"{where}: burnToken")
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
            same_address(refund, x.caller),
            "refund_address_mismatch",
            f"{where}: refundAddress is not your wallet",
        )
        _ = native_fee
