"""One LiteSVM per route run: the Solana chain the route suite measures, as anvil is for EVM.

The wallet's, the configured fee recipient's and Circle's token accounts live in this VM for the whole run, and
every Solana balance the suite holds against a receipt is read from its account data (SPL token account amount,
lamports). A prepared transaction runs here instruction by instruction: System, SPL Token, Token-2022, ATA and
ComputeBudget instructions execute in LiteSVM; an instruction of a program no package ships (Raydium CLMM,
Orca Whirlpool, CCTP v2, the USDG OFT) is SIMULATED by an `Effect` that parses the instruction's own data
and moves tokens between the VM's real accounts, failing the whole transaction where the program would (its
accounts restored, the fee still charged). The transaction's `getTransaction` answer (wire format) is read off
the VM's accounts before and after.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from _solana_sim import PLACEHOLDER_ACCOUNT, PLACEHOLDER_PROGRAM, SIG_FEE, _result, ui_amount
from solders.account import Account as SolAccount
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from solders.token.state import Mint, TokenAccount, TokenAccountState
from solders.transaction import Transaction

from routequote.core.assets import ASSETS, Asset

TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
SYSTEM_PROGRAM = "11111111111111111111111111111111"
SOLANA_ASSETS = ("solana:USDC", "solana:USDG", "solana:SOL")
VAULT_RESERVE = 10**15  # what a simulated pool vault holds when first seen (its amount never prices a swap)


class ProgramFailure(Exception):
    """A simulated program refused its instruction: the transaction fails as on chain."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# An effect: (vm, instruction) -> log lines; raises ProgramFailure where the program would fail.
Effect = Callable[["SolanaVm", Instruction], list[str]]


def mint_of(a: Asset) -> Pubkey:
    return Pubkey.from_string(str(a.address or a.wrapped_address))


def ata(owner: Pubkey | str, a: Asset) -> Pubkey:
    o = Pubkey.from_string(owner) if isinstance(owner, str) else owner
    return get_associated_token_address(o, mint_of(a), Pubkey.from_string(str(a.token_program)))


@dataclass
class Executed:
    signature: str
    result: dict[str, Any]  # the getTransaction answer
    failed: bool


@dataclass
class SolanaVm:
    """The run's Solana chain. `fee_owner`: the configured service fee recipient (the setting, not an action)."""

    fee_owner: Pubkey
    svm: LiteSVM = field(default_factory=LiteSVM)
    slot: int = 390_000_000
    consumed: set[bytes] = field(default_factory=set)  # CCTP nonces / OFT GUIDs already delivered

    def __post_init__(self) -> None:
        for key in SOLANA_ASSETS:
            a = ASSETS[key]
            authority = (
                None
                if a.address is None
                else Pubkey(hashlib.sha256(b"mint authority" + key.encode()).digest())
            )
            self.svm.set_account(
                mint_of(a),
                SolAccount(
                    self.svm.minimum_balance_for_rent_exemption(82),
                    bytes(Mint(authority, 0, a.decimals, True, None)),
                    Pubkey.from_string(str(a.token_program)),
                    False,
                    0,
                ),
            )
        for key in SOLANA_ASSETS:  # the operator's token accounts exist before any route runs
            self.token_account(ata(self.fee_owner, ASSETS[key]), ASSETS[key], self.fee_owner, 0)

    # -- accounts -------------------------------------------------------------------------------------------
    def account(self, key: Pubkey) -> SolAccount | None:
        acct = self.svm.get_account(key)
        return None if acct is None or (acct.lamports == 0 and not bytes(acct.data)) else acct

    def token_account(self, address: Pubkey, a: Asset, owner: Pubkey, amount: int) -> None:
        rent = self.svm.minimum_balance_for_rent_exemption(165)
        native = a.address is None
        state = TokenAccount(
            mint_of(a), owner, amount, None, TokenAccountState.Initialized, rent if native else None, 0, None
        )
        lamports = rent + (amount if native else 0)
        self.svm.set_account(
            address, SolAccount(lamports, bytes(state), Pubkey.from_string(str(a.token_program)), False, 0)
        )

    def token_amount(self, address: Pubkey) -> int:
        acct = self.account(address)
        if acct is None or len(bytes(acct.data)) < 165:
            return 0
        return int(TokenAccount.from_bytes(bytes(acct.data)[:165]).amount)

    def lamports(self, address: Pubkey) -> int:
        acct = self.account(address)
        return 0 if acct is None else int(acct.lamports)

    def balance(self, owner: str, asset_key: str) -> int:
        """What `owner` holds of the asset, read from the VM: its associated token account's amount; for SOL its
        lamports plus those held in its token accounts (rent deposits and wrapped SOL stay the wallet's)."""
        a = ASSETS[asset_key]
        if a.address is not None:
            return self.token_amount(ata(owner, a))
        return self.lamports(Pubkey.from_string(owner)) + sum(
            self.lamports(ata(owner, ASSETS[k])) for k in SOLANA_ASSETS
        )

    def fee_balance(self, asset_key: str) -> int:
        """The configured fee recipient's token account of the asset (wrapped SOL for SOL)."""
        return self.token_amount(ata(self.fee_owner, ASSETS[asset_key]))

    def fund(self, owner: Pubkey, lamports: int, tokens: dict[str, int]) -> None:
        self.svm.airdrop(owner, lamports)
        for key, amount in tokens.items():
            self.mint_to(ata(owner, ASSETS[key]), ASSETS[key], owner, amount)

    def _set_token(self, address: Pubkey, delta: int) -> None:
        acct = self.account(address)
        if acct is None or len(bytes(acct.data)) < 165:
            raise ProgramFailure(3012, f"{address} is not an initialized token account")
        data = bytearray(bytes(acct.data))
        amount = int.from_bytes(data[64:72], "little") + delta
        if amount < 0:
            raise ProgramFailure(1, f"{address}: insufficient funds")
        data[64:72] = amount.to_bytes(8, "little")
        native = bytes(data[:32]) == bytes(mint_of(ASSETS["solana:SOL"]))
        lamports = acct.lamports + (
            delta if native else 0
        )  # a wrapped SOL account's lamports carry its amount
        self.svm.set_account(
            address, SolAccount(lamports, bytes(data), acct.owner, acct.executable, acct.rent_epoch)
        )

    def _set_supply(self, a: Asset, delta: int) -> None:
        m = mint_of(a)
        acct = self.account(m)
        assert acct is not None
        data = bytearray(bytes(acct.data))
        data[36:44] = (int.from_bytes(data[36:44], "little") + delta).to_bytes(8, "little")
        self.svm.set_account(
            m, SolAccount(acct.lamports, bytes(data), acct.owner, acct.executable, acct.rent_epoch)
        )

    def mint_to(self, address: Pubkey, a: Asset, owner: Pubkey, amount: int) -> None:
        if self.account(address) is None:
            self.token_account(address, a, owner, 0)
        self._set_token(address, amount)
        if a.address is not None:
            self._set_supply(a, amount)

    def burn_from(self, address: Pubkey, a: Asset, amount: int) -> None:
        self._set_token(address, -amount)
        self._set_supply(a, -amount)

    def move(self, source: Pubkey, destination: Pubkey, amount: int) -> None:
        """A program's token transfer between two of the VM's accounts (same mint)."""
        src, dst = self.account(source), self.account(destination)
        if dst is None:
            raise ProgramFailure(3012, f"{destination} does not exist")
        assert src is not None and bytes(src.data)[:32] == bytes(dst.data)[:32], "a transfer within one mint"
        self._set_token(source, -amount)
        self._set_token(destination, amount)

    def vault(self, address: Pubkey, mint: Pubkey) -> Pubkey:
        """A pool's vault: created holding VAULT_RESERVE the first time a simulated swap names it."""
        if self.account(address) is None:
            a = next(ASSETS[k] for k in SOLANA_ASSETS if mint_of(ASSETS[k]) == mint)
            self.token_account(address, a, Pubkey(hashlib.sha256(bytes(address)).digest()), VAULT_RESERVE)
        return address

    # -- transactions ---------------------------------------------------------------------------------------
    def execute(
        self,
        ixs: list[Instruction],
        signers: list[Keypair],
        effects: dict[str, Effect],
        *,
        fee_payer: Keypair | None = None,
        existing: Callable[[SolanaVm, Instruction], None] | None = None,
    ) -> Executed:
        """Run one transaction: LiteSVM executes every instruction whose program is not in `effects` (by program
        id); the others are applied by their effect. All or nothing: a failing instruction restores every
        account the transaction names, and the fee payer still pays the fee. `existing(vm, ix)` creates, before
        the transaction, the state a simulated program's instruction names that is already on chain (a pool's
        vaults)."""
        for ix in ixs:
            if existing is not None and str(ix.program_id) in effects:
                existing(self, ix)
        payer = fee_payer or signers[0]
        self.svm.expire_blockhash()
        blockhash = self.svm.latest_blockhash()
        message = Message.new_with_blockhash(ixs, payer.pubkey(), blockhash)
        needed = list(message.account_keys[: message.header.num_required_signatures])
        by_key = {k.pubkey(): k for k in [payer, *signers]}
        signed = Transaction([by_key[k] for k in needed], message, blockhash)
        pubkeys = list(message.account_keys)
        before = {k: self.svm.get_account(k) for k in pubkeys}
        payer_before = self.lamports(payer.pubkey())
        consumed_before = set(self.consumed)
        assert payer_before > 0, f"the fee payer {payer.pubkey()} has no lamports in the VM"
        logs: list[str] = []
        failed: tuple[int, int] | None = None
        pending: list[tuple[int, Instruction]] = []
        segment_fees = [0]

        def flush() -> tuple[int, int] | None:
            if not pending:
                return None
            self.svm.expire_blockhash()  # each executed segment is its own LiteSVM transaction
            segment_hash = self.svm.latest_blockhash()
            msg = Message.new_with_blockhash([ix for _, ix in pending], payer.pubkey(), segment_hash)
            keys = list(msg.account_keys[: msg.header.num_required_signatures])
            meta = self.svm.send_transaction(Transaction([by_key[k] for k in keys], msg, segment_hash))
            segment_fees[0] += SIG_FEE * len(keys)
            first = pending[0][0]
            pending.clear()
            if hasattr(meta, "err"):
                logs.extend(meta.meta().logs())
                logs.append(f"Program log: (LiteSVM) {meta.err()}")
                return (first, 1)
            logs.extend(meta.logs())
            return None

        for i, ix in enumerate(ixs):
            effect = effects.get(str(ix.program_id))
            if effect is None:
                pending.append((i, ix))
                continue
            failed = flush()
            if failed is not None:
                break
            logs.append(f"Program {ix.program_id} invoke [1]")
            try:
                logs.extend(effect(self, ix))
            except ProgramFailure as e:
                logs += [
                    f"Program log: {e}",
                    f"Program {ix.program_id} failed: custom program error: {e.code:#x}",
                ]
                failed = (i, e.code)
                break
            logs.append(f"Program {ix.program_id} success")
        else:
            failed = flush()
        fee = SIG_FEE * message.header.num_required_signatures
        if failed is not None:  # nothing happened but the fee
            self.consumed = consumed_before
            for k, acct in before.items():
                gone = SolAccount(0, b"", Pubkey.from_string(SYSTEM_PROGRAM), False, 0)
                self.svm.set_account(k, acct if acct is not None else gone)
        payer_acct = self.svm.get_account(payer.pubkey())
        assert payer_acct is not None
        # each executed segment paid its own fee; the one transaction pays one fee
        lamports = payer_before - fee if failed is not None else payer_acct.lamports + segment_fees[0] - fee
        self.svm.set_account(
            payer.pubkey(),
            SolAccount(
                lamports,
                bytes(payer_acct.data),
                payer_acct.owner,
                payer_acct.executable,
                payer_acct.rent_epoch,
            ),
        )
        after = {k: self.svm.get_account(k) for k in pubkeys}
        self.slot += 10
        result = _result(
            message,
            blockhash,
            signed,
            fee=fee,
            pre=self._lamports_row(message, before, after),
            post=self._lamports_row(message, after, before),
            pre_tokens=self._token_rows(pubkeys, before),
            post_tokens=self._token_rows(pubkeys, after),
            logs=logs,
            units=150_000,
            slot=self.slot,
        )
        if failed is not None:
            result["meta"]["err"] = {"InstructionError": [failed[0], {"Custom": failed[1]}]}
            result["meta"]["status"] = {"Err": result["meta"]["err"]}
        return Executed(str(signed.signatures[0]), result, failed is not None)

    @staticmethod
    def _lamports_row(
        message: Message, accounts: dict[Pubkey, SolAccount | None], other: dict[Pubkey, SolAccount | None]
    ) -> list[int]:
        """Lamports per account key; the programs and accounts the VM does not hold (a simulated program and
        its state) get a fixed placeholder on both sides."""
        row = []
        for i, k in enumerate(message.account_keys):
            a, b = accounts[k], other[k]
            if (a is None or a.lamports == 0) and (b is None or b.lamports == 0):
                row.append(
                    PLACEHOLDER_PROGRAM if message.is_key_called_as_program(i) else PLACEHOLDER_ACCOUNT
                )
            else:
                row.append(0 if a is None else int(a.lamports))
        return row

    def _token_rows(
        self, pubkeys: list[Pubkey], accounts: dict[Pubkey, SolAccount | None]
    ) -> list[dict[str, Any]]:
        rows = []
        for i, k in enumerate(pubkeys):
            acct = accounts[k]
            if (
                acct is None
                or len(bytes(acct.data)) < 165
                or str(acct.owner) not in (TOKEN_PROGRAM, TOKEN_2022)
            ):
                continue
            tok = TokenAccount.from_bytes(bytes(acct.data)[:165])
            mint = self.account(tok.mint)
            decimals = Mint.from_bytes(bytes(mint.data)[:82]).decimals if mint is not None else 0
            rows.append(
                {
                    "accountIndex": i,
                    "mint": str(tok.mint),
                    "owner": str(tok.owner),
                    "programId": str(acct.owner),
                    "uiTokenAmount": ui_amount(int(tok.amount), decimals),
                }
            )
        return rows
