"""SIMULATED Solana programs for the route suite's VM (`_solana_vm.py`): what no package ships, applied as the
program would apply it, from the instruction's own data (decoded by the test, `_bridge_wire.py`) and from what
the source chain really emitted, never from the service's action fields or its math.

* Raydium CLMM / Orca Whirlpool `swap_v2`: amount and other_amount_threshold from the instruction data; the
  output from the venue's own SDK math (`_venue_model.VenueSdk`) on the pool state the instruction names (by
  its pool account); output below the threshold fails the transaction (Raydium `TooLittleOutputReceived`,
  Orca `AmountOutBelowMinimum`); tokens move between the wallet's accounts and the pool's vaults.
* CCTP TokenMessengerMinterV2 `deposit_for_burn`: burns the instruction's amount from its burn token account and
  writes the `MessageSent` account (the message Circle's program emits, encoded by the test).
* CCTP MessageTransmitterV2 `receive_message`: only a message the test's Iris attested, once per nonce; mints
  amount - feeExecuted to the message's mintRecipient and feeExecuted to Circle's fee account.
* USDG OFT `lz_receive`: only a packet the endpoint on anvil emitted (`PacketSent`), once per GUID; mints the
  packet's amountSD to the associated token account of its sendTo.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Any

from _bridge_wire import (
    CctpBurn,
    Packet,
    anchor,
    decode_cctp,
    parse_deposit_for_burn,
    parse_lz_receive,
    parse_receive_message,
)
from _solana_vm import Effect, ProgramFailure, SolanaVm, ata, mint_of
from _venue_model import VenueSdk
from solders.account import Account as SolAccount
from solders.instruction import Instruction
from solders.pubkey import Pubkey

from routequote.core.assets import ASSETS

RAYDIUM = "CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK"
ORCA = "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc"
CCTP_TMM = "CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe"
CCTP_MTV2 = "CCTPV2Sm4AdWt5296sk4P66VBZ7bEhcARwFaaS9YPbeC"
SOLANA_DOMAIN = 5
EVENT_RENT = 3_900_000  # the MessageSent account's rent, paid by the burn's event_rent_payer
MESSAGE_SENT_ACCOUNT = hashlib.sha256(b"account:MessageSent").digest()[:8]
TOO_LITTLE_OUTPUT = {RAYDIUM: 6022, ORCA: 6036}


@dataclass
class SimulatedPrograms:
    """The run's simulated programs. `pools`: pool account -> the pool state (what the service priced, read
    from the same market); `remote_messengers`: CCTP domain -> its TokenMessengerV2 (bytes32);
    `circle_fee_account`: where Circle's fee is minted; `oft_program`: the configured USDG OFT program id."""

    sdk: VenueSdk
    pools: dict[str, Any]
    remote_messengers: dict[int, bytes]
    circle_fee_account: Pubkey
    oft_program: str
    attested: dict[bytes, bytes] = field(default_factory=dict)  # message -> the attestation Iris published
    committed: dict[bytes, Packet] = field(default_factory=dict)  # GUID -> packet the endpoint emitted
    swaps: list[dict[str, int]] = field(default_factory=list)  # what each simulated swap took and paid

    def existing(self, vm: SolanaVm, ix: Instruction) -> None:
        """A swap's pool vaults are on chain before the swap (created here holding a reserve)."""
        a = [m.pubkey for m in ix.accounts]
        if str(ix.program_id) == RAYDIUM:
            vm.vault(a[5], a[11])
            vm.vault(a[6], a[12])
        elif str(ix.program_id) == ORCA:
            vm.vault(a[8], a[5])
            vm.vault(a[10], a[6])

    def effects(self) -> dict[str, Effect]:
        return {
            RAYDIUM: self.raydium_swap,
            ORCA: self.orca_swap,
            CCTP_TMM: self.deposit_for_burn,
            CCTP_MTV2: self.receive_message,
            self.oft_program: self.lz_receive,
        }

    # -- swaps ------------------------------------------------------------------------------------------------
    def _swap(
        self,
        vm: SolanaVm,
        ix: Instruction,
        pool_key: Pubkey,
        zero_for_one: bool,
        user_in: Pubkey,
        user_out: Pubkey,
        vault_in: Pubkey,
        vault_out: Pubkey,
        mint_in: Pubkey,
        mint_out: Pubkey,
    ) -> list[str]:
        data = bytes(ix.data)
        assert data[:8] == anchor("swap_v2"), "a swap_v2 instruction"
        amount, threshold = struct.unpack_from("<QQ", data, 8)
        pool = self.pools.get(str(pool_key))
        if pool is None:
            raise ProgramFailure(3012, f"pool {pool_key} is not one the market priced")
        venue = "raydium_clmm" if str(ix.program_id) == RAYDIUM else "orca_whirlpool"
        out = self.sdk.swap(venue, pool.clmm, zero_for_one, amount)
        if out < threshold:
            raise ProgramFailure(
                TOO_LITTLE_OUTPUT[str(ix.program_id)], f"too little output: {out} < threshold {threshold}"
            )
        vm.move(user_in, vm.vault(vault_in, mint_in), amount)
        vm.move(vm.vault(vault_out, mint_out), user_out, out)
        self.swaps.append({"amount_in": amount, "amount_out": out, "threshold": threshold})
        return [
            f"Program log: SIMULATED {venue} swap_v2 (venue SDK math): in {amount} out {out} min {threshold}"
        ]

    def raydium_swap(self, vm: SolanaVm, ix: Instruction) -> list[str]:
        """accounts: payer, amm_config, pool_state, input_token_account, output_token_account, input_vault,
        output_vault, observation_state, token_program, token_program_2022, memo_program, input_vault_mint,
        output_vault_mint, then tick arrays; data: amount, other_amount_threshold, sqrt_price_limit_x64,
        is_base_input (must be true: exact input)."""
        a = [m.pubkey for m in ix.accounts]
        if bytes(ix.data)[40] != 1:
            raise ProgramFailure(6000, "the suite only carries exact-input swaps")
        pool = self.pools.get(str(a[2]))
        zero_for_one = pool is not None and mint_of(ASSETS[pool.token0]) == a[11]
        return self._swap(vm, ix, a[2], zero_for_one, a[3], a[4], a[5], a[6], a[11], a[12])

    def orca_swap(self, vm: SolanaVm, ix: Instruction) -> list[str]:
        """accounts: token_program_a, token_program_b, memo_program, token_authority, whirlpool, token_mint_a,
        token_mint_b, token_owner_account_a, token_vault_a, token_owner_account_b, token_vault_b, tick arrays,
        oracle; data: amount, other_amount_threshold, sqrt_price_limit, amount_specified_is_input, a_to_b."""
        a = [m.pubkey for m in ix.accounts]
        data = bytes(ix.data)
        if data[40] != 1:
            raise ProgramFailure(6000, "the suite only carries exact-input swaps")
        a_to_b = data[41] == 1
        if a_to_b:
            return self._swap(vm, ix, a[4], True, a[7], a[9], a[8], a[10], a[5], a[6])
        return self._swap(vm, ix, a[4], False, a[9], a[7], a[10], a[8], a[6], a[5])

    # -- CCTP -----------------------------------------------------------------------------------------------------
    def deposit_for_burn(self, vm: SolanaVm, ix: Instruction) -> list[str]:
        """accounts (Circle's IDL): owner, event_rent_payer, sender_authority_pda, burn_token_account,
        denylist_account, message_transmitter, token_messenger, remote_token_messenger, token_minter, local_token,
        burn_token_mint, message_sent_event_data (signer), ..."""
        a = [m.pubkey for m in ix.accounts]
        burn = parse_deposit_for_burn(bytes(ix.data))
        usdc = ASSETS["solana:USDC"]
        if a[10] != mint_of(usdc):
            raise ProgramFailure(6001, "burn_token_mint is not USDC")
        remote = self.remote_messengers.get(burn["domain"])
        if remote is None:
            raise ProgramFailure(6002, f"no remote token messenger for domain {burn['domain']}")
        vm.burn_from(a[3], usdc, burn["amount"])
        message = CctpBurn(
            source_domain=SOLANA_DOMAIN,
            destination_domain=burn["domain"],
            nonce=bytes(32),
            sender=bytes(Pubkey.from_string(CCTP_TMM)),
            recipient=remote,
            destination_caller=burn["destination_caller"],
            min_finality=burn["min_finality"],
            finality_executed=0,
            burn_token=bytes(mint_of(usdc)),
            mint_recipient=burn["mint_recipient"],
            amount=burn["amount"],
            message_sender=bytes(a[0]),
            max_fee=burn["max_fee"],
            fee_executed=0,
            expiration_block=0,
        ).encode()
        payer = vm.account(a[1])
        assert payer is not None
        vm.svm.set_account(
            a[1],
            SolAccount(payer.lamports - EVENT_RENT, bytes(payer.data), payer.owner, False, payer.rent_epoch),
        )
        data = (
            MESSAGE_SENT_ACCOUNT
            + bytes(a[1])
            + struct.pack("<q", 0)
            + struct.pack("<I", len(message))
            + message
        )
        vm.svm.set_account(a[11], SolAccount(EVENT_RENT, data, Pubkey.from_string(CCTP_MTV2), False, 0))
        return [f"Program log: SIMULATED DepositForBurn: burned {burn['amount']} for domain {burn['domain']}"]

    @staticmethod
    def sent_message(vm: SolanaVm, event_account: Pubkey) -> bytes:
        """The message a burn wrote to its MessageSent account (what Iris reads)."""
        acct = vm.account(event_account)
        assert acct is not None, "the burn wrote no MessageSent account"
        data = bytes(acct.data)
        assert data[:8] == MESSAGE_SENT_ACCOUNT
        (n,) = struct.unpack_from("<I", data, 48)
        return data[52 : 52 + n]

    def receive_message(self, vm: SolanaVm, ix: Instruction) -> list[str]:
        message, attestation = parse_receive_message(bytes(ix.data))
        if self.attested.get(message) != attestation:
            raise ProgramFailure(7001, "the attestation is not Circle's for this message")
        burn = decode_cctp(message)
        if burn.destination_domain != SOLANA_DOMAIN:
            raise ProgramFailure(7002, f"destination domain {burn.destination_domain}")
        used = b"cctp" + burn.source_domain.to_bytes(4, "big") + burn.nonce
        if used in vm.consumed:
            raise ProgramFailure(7003, "nonce already used")
        recipient = Pubkey(burn.mint_recipient)
        if recipient not in [m.pubkey for m in ix.accounts if m.is_writable]:
            raise ProgramFailure(7004, "the mint recipient's token account is not in the instruction")
        usdc = ASSETS["solana:USDC"]
        acct = vm.account(recipient)
        if acct is None:
            raise ProgramFailure(3012, "the mint recipient's token account does not exist")
        vm.consumed.add(used)
        vm.mint_to(recipient, usdc, Pubkey(bytes(acct.data)[32:64]), burn.amount - burn.fee_executed)
        if burn.fee_executed:
            vm.mint_to(self.circle_fee_account, usdc, Pubkey.default(), burn.fee_executed)
        return [
            f"Program log: SIMULATED ReceiveMessage: minted {burn.amount - burn.fee_executed} "
            f"(fee {burn.fee_executed}) to {recipient}"
        ]

    # -- LayerZero OFT --------------------------------------------------------------------------------------------
    def lz_receive(self, vm: SolanaVm, ix: Instruction) -> list[str]:
        got = parse_lz_receive(bytes(ix.data))
        sent = self.committed.get(got.guid)
        if sent is None or (got.src_eid, got.sender, got.nonce, got.message) != (
            sent.src_eid,
            sent.sender,
            sent.nonce,
            sent.message,
        ):
            raise ProgramFailure(8001, "no such packet was committed on the endpoint")
        if b"oft" + got.guid in vm.consumed:
            raise ProgramFailure(8002, "packet already delivered")
        vm.consumed.add(b"oft" + got.guid)
        usdg = ASSETS["solana:USDG"]
        owner = Pubkey(sent.send_to)
        amount = sent.amount_sd * 10 ** (usdg.decimals - 6)  # USDG's shared decimals are 6
        vm.mint_to(ata(owner, usdg), usdg, owner, amount)
        return [f"Program log: SIMULATED lz_receive: minted {amount} to {owner}"]
