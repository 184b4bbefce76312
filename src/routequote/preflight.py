"""Preflight: before the caller signs, what each chain of the route will need from them (core/preflight.py).

Reads go through the chain ports (bounded, classified errors, no upstream text relayed); a failed read is a
finding with `code: unknown`, never an error answer. The block is computed wherever any RPC URL is configured,
whatever ROUTEQUOTE_MARKET says (balances, fees and accounts are chain facts, not prices); a chain of the route
without one gives `unknown`. With none (the embedded defaults), no chain call is made and the block is
`checked: false` with the `NO_CHAIN_ACCESS` reason. Advice only: the action and
its hashes are the same with or without it (the block is a response-only member, outside `payload_sha256`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from solders.hash import Hash
from solders.message import Message
from solders.pubkey import Pubkey

from routequote.core.actions.cctp_receive import RECEIVE_PHASE
from routequote.core.actions.cctp_solana_receive import SOLANA_RECEIVE_PHASE
from routequote.core.actions.common import associated_token_address, mint
from routequote.core.actions.solana import instruction_from_dict
from routequote.core.assets import Asset, Chain
from routequote.core.preflight import (
    CODE_GAS,
    CODE_INPUT_ALLOWANCE,
    CODE_INPUT_BALANCE,
    CODE_SOLANA_RENT,
    CODE_TIME,
    CODE_UNKNOWN,
    EVM_GAS_BUDGET,
    FIRST_SIGNATURE_SECONDS,
    FURTHER_TRANSACTION_SECONDS,
    NATIVE_SYMBOL,
    SOLANA_ACTION_FEE_BUDGET_LAMPORTS,
    SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS,
    SignedAction,
    amount_text,
    block,
    created_token_accounts,
    finding,
    not_checked,
    signed_actions,
    steps_text,
)
from routequote.core.routes import Route
from routequote.ports import ObservationUnavailable, SolanaPreflightReader

NO_CHAIN_ACCESS = (
    "no_chain_access: no RPC URL is configured (ROUTEQUOTE_RPC_URL_BASE, ROUTEQUOTE_RPC_URL_ARBITRUM, "
    "ROUTEQUOTE_RPC_URL_ROBINHOOD and ROUTEQUOTE_RPC_URL_SOLANA are all unset, as under the embedded defaults), so "
    "no chain was read; set the RPC URL of each chain a route touches to have its balances, gas, Solana rent and "
    "time checked before signing"
)
APPROVE_SELECTOR = "0x095ea7b3"
RECEIVE_PHASES = (RECEIVE_PHASE, SOLANA_RECEIVE_PHASE)
BALANCE_OF = "0x70a08231"
ALLOWANCE = "0xdd62ed3e"


class EvmPreflightReader(Protocol):
    def configured(self, chain: str) -> bool: ...

    async def call(self, chain: str, to: str, data: str) -> bytes: ...

    async def balance(self, chain: str, address: str) -> int: ...

    async def gas_price(self, chain: str) -> int: ...

    async def estimate_gas(self, chain: str, tx: dict[str, Any]) -> int | None: ...


def _word(address: str) -> str:
    return address.lower().removeprefix("0x").rjust(64, "0")


class _Unknown(Exception):
    pass


class PreflightChecker:
    """Computes the `preflight` block of a prepared action (`check`)."""

    def __init__(
        self,
        *,
        enabled: bool,
        reason: str,
        evm: EvmPreflightReader | None = None,
        solana: SolanaPreflightReader | None = None,
        token_address: Callable[[Asset], str | None] | None = None,
    ) -> None:
        self.enabled, self.reason = enabled, reason
        self.evm, self.solana = evm, solana
        # the ERC-20 the builders use for an asset (the deployment's, which tests point at local contracts)
        self.token_address = token_address or (lambda asset: asset.address)

    async def check(
        self, route: Route, wallets: dict[str, str], bundle: dict[str, Any], now: datetime
    ) -> dict[str, Any]:
        if not self.enabled:
            return not_checked(self.reason)
        findings: list[dict[str, Any]] = []
        action = bundle.get("unsigned_action") or {}
        step_index = int(bundle.get("step_index") or 0)
        step = route.steps[step_index]
        # a CCTP destination mint (a session's later action) runs on the step's target chain and spends nothing
        receive = action.get("phase") in RECEIVE_PHASES
        acts = signed_actions(route)
        pos = next(
            (
                i
                for i, a in enumerate(acts)
                if a.step_index == step_index and (a.kind == "cctp_receive_message") == receive
            ),
            0,
        )
        todo = acts[pos:]  # this action, then every later one the caller signs
        first_chain = todo[0].chain if todo else step.source.chain
        input_base = int(action.get("inputAmount") or 0)
        committed = 0  # native input the first action sends (not available for gas)
        if first_chain is not Chain.SOLANA:
            committed = sum(int(tx.get("value") or 0) for tx in action.get("transactions") or [])
        if not receive:
            findings += await self._input(step.source, wallets, step_index, input_base, action)
        findings += await self._gas(todo, wallets, action, committed)
        sol_input = (
            input_base if not receive and step.source.chain is Chain.SOLANA and step.source.is_native else 0
        )
        accounts = [(i, a) for i, a in created_token_accounts(route) if i >= step_index]
        findings += await self._solana(todo, accounts, wallets, sol_input, action)
        findings.append(self._time(action, step_index, first_chain, now))
        return block(True, findings)

    # ---- reads ---------------------------------------------------------------------------------------

    async def _read(self, work: Any) -> Any:
        try:
            return await work
        except ObservationUnavailable as exc:
            raise _Unknown(exc.reason) from exc

    def _unknown(self, chain: Chain, step_index: int | None, what: str, reason: str) -> dict[str, Any]:
        return finding(
            CODE_UNKNOWN,
            chain,
            step_index,
            None,
            None,
            f"could not read {what} on {chain.value} ({reason})",
            blocking=False,
        )

    async def _evm_balance(self, chain: Chain, asset: Asset, who: str) -> int:
        assert self.evm is not None
        if asset.is_native:
            return int(await self._read(self.evm.balance(chain.value, who)))
        token = str(self.token_address(asset))
        raw = await self._read(self.evm.call(chain.value, token, BALANCE_OF + _word(who)))
        return int.from_bytes(raw[:32], "big")

    async def _input(
        self, asset: Asset, wallets: dict[str, str], step_index: int, needed: int, action: dict[str, Any]
    ) -> list[dict[str, Any]]:
        chain = asset.chain
        who = wallets.get(chain.value, "")
        out: list[dict[str, Any]] = []
        try:
            if chain is not Chain.SOLANA:
                if self.evm is None or not self.evm.configured(chain.value):
                    raise _Unknown(f"no RPC URL for {chain.value}")
                has = await self._evm_balance(chain, asset, who)
            else:
                has = await self._solana_token_balance(asset, who)
        except _Unknown as exc:
            return [self._unknown(chain, step_index, f"the {asset.token.value} balance", str(exc))]
        short = has < needed
        out.append(
            finding(
                CODE_INPUT_BALANCE,
                chain,
                step_index,
                needed,
                has,
                f"you need {needed} base units of {asset.token.value} on {chain.value} for step {step_index + 1}; "
                f"you have {has}"
                if short
                else f"{asset.token.value} balance on {chain.value} covers the input",
                blocking=short,
            )
        )
        txs = action.get("transactions") or []
        approves = any(str(tx.get("data", "")).startswith(APPROVE_SELECTOR) for tx in txs)
        if chain is not Chain.SOLANA and not asset.is_native and txs and not approves:
            # the spender pulls the net input (a service fee, if any, is a transfer of its own before it)
            pulled = int(action.get("netInputAmount") or needed)
            spender = str(txs[-1].get("to", ""))
            try:
                assert self.evm is not None
                raw = await self._read(
                    self.evm.call(
                        chain.value, str(self.token_address(asset)), ALLOWANCE + _word(who) + _word(spender)
                    )
                )
            except _Unknown as exc:
                return [*out, self._unknown(chain, step_index, "the allowance", str(exc))]
            allowed = int.from_bytes(raw[:32], "big")
            out.append(
                finding(
                    CODE_INPUT_ALLOWANCE,
                    chain,
                    step_index,
                    pulled,
                    allowed,
                    f"the action relies on an allowance of {pulled} to {spender}; it is {allowed}",
                    blocking=allowed < pulled,
                )
            )
        return out

    async def _solana_token_balance(self, asset: Asset, who: str) -> int:
        """SOL: the wallet's lamports. An SPL token: the amount in the wallet's associated token account (the
        account the action spends from; none is 0), once it is a token account of that mint and wallet."""
        if self.solana is None:
            raise _Unknown("no RPC URL for solana")
        if asset.is_native:
            acct = await self._read(self.solana.account_info(who))
            return 0 if acct is None else int(acct.lamports)
        ata = str(associated_token_address(who, asset))
        token = await self._read(self.solana.token_account(ata))
        if token is None:
            return 0
        if token.program != str(asset.token_program) or token.mint != str(mint(asset)) or token.owner != who:
            raise _Unknown(f"the account at {ata} is not this wallet's {asset.token.value} token account")
        return int(token.amount)

    async def _gas(
        self, todo: list[SignedAction], wallets: dict[str, str], action: dict[str, Any], committed: int
    ) -> list[dict[str, Any]]:
        """Native balance against the gas of this action (`todo[0]`) and every later one, per EVM chain."""
        per_chain: dict[Chain, list[SignedAction]] = {}
        for signed in todo:
            per_chain.setdefault(signed.chain, []).append(signed)
        out: list[dict[str, Any]] = []
        first = todo[0] if todo else None
        first_chain = first.chain if first else None
        for chain, actions in per_chain.items():
            indices = [a.step_index for a in actions]
            if chain is Chain.SOLANA:
                continue  # fees and rent together: `_solana`
            who = wallets.get(chain.value, "")
            try:
                if self.evm is None or not self.evm.configured(chain.value):
                    raise _Unknown(f"no RPC URL for {chain.value}")
                price = int(await self._read(self.evm.gas_price(chain.value)))
                units, estimated = 0, False
                for a in actions:
                    if a is first:
                        first_units, budgeted = await self._first_action_gas(chain, action)
                        units += first_units
                        estimated = estimated or budgeted
                    else:
                        units += EVM_GAS_BUDGET.get(a.kind, 250_000)
                        estimated = True
                balance = int(await self._read(self.evm.balance(chain.value, who)))
            except _Unknown as exc:
                out.append(self._unknown(chain, min(indices), "the gas balance", str(exc)))
                continue
            needed = units * price
            has = max(0, balance - committed) if chain is first_chain else balance
            sym = NATIVE_SYMBOL[chain]
            where = f"on {chain.value} for {steps_text(indices)}"
            short = has < needed
            out.append(
                finding(
                    CODE_GAS,
                    chain,
                    min(indices),
                    needed,
                    has,
                    (
                        f"you need about {amount_text(needed, chain)} {sym} {where}; you have {amount_text(has, chain)}"
                        if short
                        else f"{sym} {where} covers about {units} gas at the current fee"
                    )
                    + (" (a per-action gas budget times the current fee: an estimate)" if estimated else ""),
                    blocking=short,
                    estimate=estimated,
                )
            )
        return out

    async def _first_action_gas(self, chain: Chain, action: dict[str, Any]) -> tuple[int, bool]:
        """(gas units, estimated from budgets?) of the first action: eth_estimateGas of its first transaction;
        the ones after it (which rely on it, e.g. a swap after its approval) cannot be estimated before it is
        mined and take their kind's budget, as does a first transaction the node will not estimate (an empty
        wallet's)."""
        assert self.evm is not None
        txs = action.get("transactions") or []
        units, budgeted = 0, False
        for i, tx in enumerate(txs):
            data = str(tx.get("data", ""))
            budget = EVM_GAS_BUDGET[
                "erc20_approve" if data.startswith(APPROVE_SELECTOR) else "uniswap_v3_swap"
            ]
            if i == 0:
                call = {
                    "from": tx.get("from"),
                    "to": tx.get("to"),
                    "data": data,
                    "value": hex(int(tx.get("value") or 0)),
                }
                try:
                    estimate = await self._read(self.evm.estimate_gas(chain.value, call))
                except _Unknown:
                    estimate = None
                if estimate is not None:
                    units += int(estimate)
                    continue
            units += budget
            budgeted = True
        return units, budgeted

    async def _solana(
        self,
        todo: list[SignedAction],
        accounts: list[tuple[int, Asset]],
        wallets: dict[str, str],
        sol_input: int,
        action: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """SOL for fees and the rent of each token account the route creates (beyond a SOL input): the first
        action's fee from the node (`getFeeForMessage`), a budget for each later Solana action."""
        actions = [a for a in todo if a.chain is Chain.SOLANA]
        if not actions and not accounts:
            return []
        who = wallets.get(Chain.SOLANA.value, "")
        index = min([a.step_index for a in actions] + [i for i, _ in accounts])
        first_here = bool(actions) and todo[0] is actions[0] and action.get("family") == "solana"
        created = [
            (i, "wSOL" if asset.is_native else asset.token.value, str(associated_token_address(who, asset)))
            for i, asset in accounts
        ]
        fee_account = action.get("feeRecipientTokenAccount") if first_here else None
        if isinstance(fee_account, str):  # the caller creates the fee recipient's account if it is missing
            created.append((actions[0].step_index, "fee recipient's", fee_account))
        try:
            if self.solana is None:
                raise _Unknown("no RPC URL for solana")
            wallet = await self._read(self.solana.account_info(who))
            missing = []
            for i, name, address in created:
                if await self._read(self.solana.account_info(address)) is None:
                    missing.append((i, name, address))
            first_fee = await self._first_solana_fee(action) if first_here else None
        except _Unknown as exc:
            return [self._unknown(Chain.SOLANA, index, "the SOL balance and token accounts", str(exc))]
        has = max(0, (0 if wallet is None else int(wallet.lamports)) - sol_input)
        budgeted = len(actions) - (1 if first_fee is not None else 0)
        fees = (first_fee or 0) + budgeted * SOLANA_ACTION_FEE_BUDGET_LAMPORTS
        rent = len(missing) * SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS
        needed = fees + rent
        names = ", ".join(f"{name} account {address} (step {i + 1})" for i, name, address in missing)
        fee_parts = (
            [f"{first_fee} lamports for this action (the node's fee for its message)"]
            if first_fee is not None
            else []
        ) + (
            [
                f"about {budgeted} x {SOLANA_ACTION_FEE_BUDGET_LAMPORTS} lamports for the later action(s) (a budget)"
            ]
            if budgeted
            else []
        )
        short = has < needed
        return [
            finding(
                CODE_SOLANA_RENT,
                Chain.SOLANA,
                index,
                needed,
                has,
                f"you need {'about ' if budgeted else ''}{amount_text(needed, Chain.SOLANA)} SOL on solana: "
                f"{len(missing)} new token account(s) at {SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS} lamports each"
                + (f" ({names})" if names else "")
                + (f" and fees: {' + '.join(fee_parts)}" if fee_parts else "")
                + f"; you have {amount_text(has, Chain.SOLANA)}"
                + (
                    " (not counted: the rent of the message account a CCTP burn creates, refundable later)"
                    if first_here and "cctp_deposit_for_burn" in (action.get("kinds") or [])
                    else ""
                ),
                blocking=short,
                estimate=budgeted > 0,
            )
        ]

    async def _first_solana_fee(self, action: dict[str, Any]) -> int | None:
        """The node's fee for the first action's message (fresh blockhash; its signatures and any priority fee
        its instructions set); None (the budget is used) where the node will not price it."""
        assert self.solana is not None
        try:
            ixs = [instruction_from_dict(ix) for ix in action.get("instructions") or []]
            payer = Pubkey.from_string(str(action.get("feePayer")))
        except (ValueError, TypeError, KeyError):
            return None

        def message(blockhash: str) -> str:
            compiled = Message.new_with_blockhash(ixs, payer, Hash.from_string(blockhash))
            return base64.b64encode(bytes(compiled)).decode()

        try:
            fee = await self._read(self.solana.fee_for_message(message))
        except _Unknown:
            return None
        return None if fee is None else int(fee)

    def _time(self, action: dict[str, Any], step_index: int, chain: Chain, now: datetime) -> dict[str, Any]:
        timing = (action.get("safety_receipt") or {}).get("timing") or {}
        ends = [
            int(v)
            for v in (timing.get("quote_expiry_unix"), timing.get("action_deadline_unix"))
            if isinstance(v, int) and not isinstance(v, bool)
        ]
        expires_at = timing.get("bundle_expires_at")
        if isinstance(expires_at, str):
            ends.append(int(datetime.fromisoformat(expires_at.replace("Z", "+00:00")).timestamp()))
        left = max(0, min(ends) - int(now.timestamp())) if ends else 0
        txs = len(action.get("transactions") or []) or 1
        needed = FIRST_SIGNATURE_SECONDS + (txs - 1) * FURTHER_TRANSACTION_SECONDS
        short = left < needed
        return finding(
            CODE_TIME,
            chain,
            step_index,
            needed,
            left,
            f"{left} s left on the quote and action; this first action typically needs about {needed} s to sign "
            f"and land" + (": fetch a fresh quote" if short else ""),
            blocking=short,
        )


__all__ = ["EvmPreflightReader", "PreflightChecker"]
