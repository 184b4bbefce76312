"""The Solana payload checks: the fee payer, signers and every instruction (Orca / Raydium swaps with their
pinned pool accounts, the CCTP burn, the fee transfer) against the caller's bounds. The fee part is decoded
and expected by `solana_fee`, never by the service's builders."""

from __future__ import annotations

import base64
import struct
from typing import Any

from routequote.core.actions import common as ak
from routequote.core.actions import solana as sol
from routequote.core.actions import solana_swaps as sw
from routequote.core.actions.common import address_to_bytes32
from routequote.core.actions.plan import CCTP_FAST_FINALITY
from routequote.core.assets import ASSETS, CHAINS, Token
from routequote.core.routes import Action, Provider
from routequote.core.verify.common import (
    Checker,
    StepContext,
    is_int,
    is_solana_key,
)
from routequote.core.verify.solana_fee import check_fee_transfers, expected_fee_instructions


def _swap_args(c: Checker, swap_ix: dict[str, Any] | None, program: Any, decode: Any, what: str) -> Any:
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


def _check_solana_swap(x: StepContext, action: dict[str, Any]) -> None:
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
    if not is_int(tick):
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
    # the expectation: your own wrap and fee instructions, your output token account, the swap re-derived from
    # your inputs and the checked pool accounts, and the unwrap; never the service's `build_solana_swap`
    expected: list[dict[str, Any]] = []
    if src.token is Token.SOL:
        expected += [sol.instruction_dict(i) for i in sol.wrap_sol(x.caller, src, x.input_base)]
    if x.fee:
        expected += expected_fee_instructions(x.caller, x.fee_recipient or "", src, x.fee)
    expected.append(sol.instruction_dict(sol.create_ata_idempotent(x.caller, x.caller, dst)))
    try:
        if raydium_live is not None:
            rp = sw.RAYDIUM_POOLS[pool_id]
            swap = sw.raydium_swap_v2(x.caller, rp, x.net, x.min_out, src.key == rp.token_0, raydium_live)
        else:
            op = sw.ORCA_POOLS[pool_id]
            swap = sw.orca_swap_v2(x.caller, op, x.net, x.min_out, src.key == op.token_a, int(tick))
    except Exception as exc:  # noqa: BLE001
        c.fail("instruction_mismatch", f"cannot derive the expected swap instruction: {exc}")
        return
    expected.append(sol.instruction_dict(swap))
    if dst.token is Token.SOL:
        expected.append(sol.instruction_dict(sol.close_wsol(x.caller, dst)))
    check_fee_transfers(x, action, ixs, src)
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
    x: StepContext, action: dict[str, Any], swap_ix: dict[str, Any] | None, tick: int
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
    live = action.get("poolAccountsFromLiveChainState", action.get("poolAccountsFromSnapshotState"))
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
        and is_solana_key(obs)
        and (ext is None or isinstance(ext, str))
        and isinstance(starts, list)
        and all(is_int(v) for v in starts)
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


def check_solana(x: StepContext, action: dict[str, Any]) -> None:
    c, step = x.c, x.step
    src, dst = step.source, step.target
    if step.action is Action.SWAP:  # a swap starting on Solana: Orca or Raydium
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
        expected += expected_fee_instructions(x.caller, x.fee_recipient, src, x.fee)
    check_fee_transfers(x, action, ixs, src)
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
