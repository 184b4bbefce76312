"""The Solana fee instructions execute in LiteSVM (solders 0.29) for both token programs: the fee
recipient's associated token account is created (idempotently) and receives exactly floor(input/10000);
the wallet loses exactly that and nothing else moves. The wallet signs; the service never does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from solders.account import Account
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.token.state import Mint, TokenAccount, TokenAccountState
from solders.transaction import Transaction
from tests.unit.actions.support import EVENT_SIGNER, SETTINGS, make_env, prepare_route

from routequote.core.actions import common as ak
from routequote.core.actions import solana as sol
from routequote.core.assets import ASSETS, Asset
from routequote.core.pricing import service_fee

START_BALANCE = 5_000_000_000


def _chain(asset: Asset, wallet: Pubkey) -> LiteSVM:
    svm = LiteSVM()
    svm.airdrop(wallet, 10 * 10**9)
    program = ak.token_program(asset)
    mint = Mint(Pubkey.new_unique(), 10**15, asset.decimals, True, None)
    svm.set_account(ak.mint(asset), Account(10**9, bytes(mint), program, False, 0))
    acct = TokenAccount(
        ak.mint(asset), wallet, START_BALANCE, None, TokenAccountState.Initialized, None, 0, None
    )
    svm.set_account(
        ak.associated_token_address(wallet, asset), Account(10**9, bytes(acct), program, False, 0)
    )
    return svm


def _send(svm: LiteSVM, kp: Keypair, ixs: list[Any]) -> None:
    msg = Message.new_with_blockhash(ixs, kp.pubkey(), svm.latest_blockhash())
    result = svm.send_transaction(Transaction([kp], msg, svm.latest_blockhash()))
    assert not hasattr(result, "err"), result.err()  # FailedTransactionMetadata has .err()


def _amount(svm: LiteSVM, address: Pubkey) -> int:
    acct = svm.get_account(address)
    assert acct is not None
    return int(TokenAccount.from_bytes(bytes(acct.data)[:165]).amount)


@pytest.mark.parametrize("endpoint", ["solana:USDC", "solana:USDG"])
def test_fee_transfer_and_token_account_creation_execute(endpoint: str) -> None:
    asset = ASSETS[endpoint]
    kp = Keypair()
    svm = _chain(asset, kp.pubkey())
    recipient = Pubkey.from_string(SETTINGS.fee_recipient_solana)
    fee_ata = ak.associated_token_address(recipient, asset)
    assert svm.get_account(fee_ata) is None
    input_base = 123_456_789
    fee = service_fee(input_base)
    ixs = [
        sol.create_ata_idempotent(kp.pubkey(), recipient, asset),
        sol.transfer_checked(kp.pubkey(), recipient, asset, fee),
    ]
    assert ixs[1].program_id == ak.token_program(asset)
    _send(svm, kp, ixs)
    assert _amount(svm, fee_ata) == fee == 12_345
    assert _amount(svm, ak.associated_token_address(kp.pubkey(), asset)) == START_BALANCE - fee
    owner = svm.get_account(fee_ata)
    assert owner is not None and owner.owner == ak.token_program(asset)
    # idempotent: a second fee payment with the account already present also succeeds
    svm.expire_blockhash()
    _send(svm, kp, ixs)
    assert _amount(svm, fee_ata) == 2 * fee


def test_wrong_decimals_are_refused_by_the_token_program() -> None:
    asset = ASSETS["solana:USDC"]
    kp = Keypair()
    svm = _chain(asset, kp.pubkey())
    recipient = Pubkey.from_string(SETTINGS.fee_recipient_solana)
    bad = sol.transfer_checked(kp.pubkey(), recipient, asset, 100)
    data = bytearray(bytes(bad.data))
    data[-1] = 9
    from solders.instruction import Instruction

    tampered = Instruction(bad.program_id, bytes(data), bad.accounts)
    msg = Message.new_with_blockhash(
        [sol.create_ata_idempotent(kp.pubkey(), recipient, asset), tampered],
        kp.pubkey(),
        svm.latest_blockhash(),
    )
    result = svm.send_transaction(Transaction([kp], msg, svm.latest_blockhash()))
    assert hasattr(result, "err")


def test_prepared_solana_bundle_fee_instructions_execute_and_burn_is_last() -> None:
    """The prepare service's own instructions (solana:USDC -> base:USDC): the first two run in LiteSVM
    signed by the wallet; the CCTP burn (no program binary offline) is checked by the golden layout test."""
    kp = Keypair()
    asset = ASSETS["solana:USDC"]
    env = make_env()
    wallets = {"solana": str(kp.pubkey()), "base": "0x1111111111111111111111111111111111111111"}
    p = asyncio.run(prepare_route(env, "solana:USDC->base:USDC", 250, wallets=wallets))
    action = p.bundle["unsigned_action"]
    assert action["recentBlockhash"] is None
    assert action["requiredSigners"] == [str(kp.pubkey()), EVENT_SIGNER]
    ixs = [sol.instruction_from_dict(d) for d in action["instructions"]]
    assert [sol.instruction_dict(ix) for ix in ixs] == action["instructions"]
    fee = int(action["routeFee"])
    assert fee == int(action["inputAmount"]) // 10_000 > 0
    svm = _chain(asset, kp.pubkey())
    _send(svm, kp, ixs[:2])
    recipient = Pubkey.from_string(SETTINGS.fee_recipient_solana)
    assert _amount(svm, ak.associated_token_address(recipient, asset)) == fee
    assert action["feeRecipientTokenAccount"] == str(ak.associated_token_address(recipient, asset))
    assert ixs[2].program_id == sol.CCTP_TOKEN_MESSENGER_MINTER_V2
