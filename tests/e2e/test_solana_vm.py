"""The route suite's Solana VM and simulated programs (`_solana_vm.py`, `_solana_programs.py`) do what the programs
would: a swap pays the venue SDK's output and fails below its instruction's minimum (every account restored, the
fee still paid), a CCTP message mints once, and only a packet the endpoint emitted is delivered."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator

import pytest
from _bridge_wire import CctpBurn, Packet, anchor, lz_receive_data, receive_message_data
from _evm import ToolchainUnavailable
from _solana_programs import CCTP_MTV2, RAYDIUM, SimulatedPrograms
from _solana_vm import SIG_FEE, SolanaVm, ata, mint_of
from _venue_model import VenueSdk
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from routequote.core.assets import ASSETS
from routequote.market.snapshot import EmbeddedSnapshot

pytestmark = pytest.mark.node
USDC, SOL, USDG = ASSETS["solana:USDC"], ASSETS["solana:SOL"], ASSETS["solana:USDG"]
OFT = str(Pubkey(hashlib.sha256(b"test oft").digest()))
CIRCLE_FEE = Pubkey(hashlib.sha256(b"test circle fee account").digest())


@pytest.fixture(scope="module")
def sdk() -> Iterator[VenueSdk]:
    try:
        model = VenueSdk()
    except ToolchainUnavailable as e:
        pytest.skip(f"the venues' SDKs are unavailable: {e}")
    yield model
    model.close()


def rig(sdk: VenueSdk) -> tuple[SolanaVm, SimulatedPrograms, Keypair, object]:
    vm = SolanaVm(Pubkey(hashlib.sha256(b"test fee owner").digest()))
    wallet = Keypair()
    vm.fund(wallet.pubkey(), 10**10, {"solana:USDC": 10**10})
    vm.token_account(ata(wallet.pubkey(), SOL), SOL, wallet.pubkey(), 0)
    vm.token_account(CIRCLE_FEE, USDC, Pubkey.default(), 0)
    pool = EmbeddedSnapshot().current().pools["solana:raydium_clmm:SOL-USDC"]
    programs = SimulatedPrograms(sdk, {str(pool.address): pool}, {}, CIRCLE_FEE, OFT)
    return vm, programs, wallet, pool


def raydium_usdc_to_sol(wallet: Keypair, pool: object, amount: int, threshold: int) -> Instruction:
    """swap_v2 USDC -> wSOL, in the program's account order, data written here."""
    u = Pubkey.new_unique
    keys = [
        (wallet.pubkey(), True, True),
        (u(), False, False),
        (Pubkey.from_string(pool.address), False, True),  # type: ignore[attr-defined]
        (ata(wallet.pubkey(), USDC), False, True),
        (ata(wallet.pubkey(), SOL), False, True),
        (Pubkey(hashlib.sha256(b"vault usdc").digest()), False, True),
        (Pubkey(hashlib.sha256(b"vault sol").digest()), False, True),
        (u(), False, True),
        (Pubkey.from_string(str(USDC.token_program)), False, False),
        (Pubkey.from_string(str(USDG.token_program)), False, False),
        (u(), False, False),
        (mint_of(USDC), False, False),
        (mint_of(SOL), False, False),
    ]
    data = anchor("swap_v2") + struct.pack("<QQ", amount, threshold) + bytes(16) + b"\x01"
    return Instruction(Pubkey.from_string(RAYDIUM), data, [AccountMeta(k, s, w) for k, s, w in keys])


def test_a_swap_pays_the_sdk_output_and_fails_below_its_minimum(sdk: VenueSdk) -> None:
    vm, programs, wallet, pool = rig(sdk)
    owner = str(wallet.pubkey())
    amount = 1_000 * 10**6
    out = sdk.swap("raydium_clmm", pool.clmm, False, amount)  # type: ignore[attr-defined]  # USDC is token1
    usdc0, sol0, lamports0 = (
        vm.balance(owner, "solana:USDC"),
        vm.token_amount(ata(owner, SOL)),
        vm.lamports(wallet.pubkey()),
    )
    too_much = raydium_usdc_to_sol(wallet, pool, amount, out + 1)
    failed = vm.execute([too_much], [wallet], programs.effects(), existing=programs.existing)
    assert failed.failed and failed.result["meta"]["err"] is not None
    assert "too little output" in " ".join(failed.result["meta"]["logMessages"])
    assert (vm.balance(owner, "solana:USDC"), vm.token_amount(ata(owner, SOL))) == (usdc0, sol0)
    assert vm.lamports(wallet.pubkey()) == lamports0 - SIG_FEE  # a failed transaction still pays its fee
    ok = vm.execute(
        [raydium_usdc_to_sol(wallet, pool, amount, out)],
        [wallet],
        programs.effects(),
        existing=programs.existing,
    )
    assert not ok.failed
    assert vm.balance(owner, "solana:USDC") == usdc0 - amount
    assert vm.token_amount(ata(owner, SOL)) == sol0 + out


def test_a_cctp_message_mints_once_and_only_when_attested(sdk: VenueSdk) -> None:
    vm, programs, wallet, _pool = rig(sdk)
    recipient = ata(wallet.pubkey(), USDC)
    message = CctpBurn(
        6,
        5,
        b"\x07" * 32,
        bytes(32),
        bytes(32),
        bytes(32),
        1000,
        1000,
        bytes(mint_of(USDC)),
        bytes(recipient),
        5_000_000,
        bytes(32),
        700,
        650,
        0,
    ).encode()
    ix = Instruction(
        Pubkey.from_string(CCTP_MTV2),
        receive_message_data(message, b"sig"),
        [AccountMeta(wallet.pubkey(), True, True), AccountMeta(recipient, False, True)],
    )
    before = vm.token_amount(recipient)
    assert vm.execute([ix], [wallet], programs.effects()).failed  # not attested
    programs.attested[message] = b"sig"
    assert not vm.execute([ix], [wallet], programs.effects()).failed
    assert vm.token_amount(recipient) == before + 5_000_000 - 650 and vm.token_amount(CIRCLE_FEE) == 650
    again = vm.execute([ix], [wallet], programs.effects())
    assert again.failed and vm.token_amount(recipient) == before + 5_000_000 - 650


def test_only_a_packet_the_endpoint_emitted_is_delivered(sdk: VenueSdk) -> None:
    vm, programs, wallet, _pool = rig(sdk)
    executor = Keypair()
    vm.svm.airdrop(executor.pubkey(), 10**9)
    sent = Packet(
        1,
        30101,
        b"\x01" * 32,
        30168,
        b"\x02" * 32,
        b"\x03" * 32,
        bytes(wallet.pubkey()) + (42).to_bytes(8, "big"),
    )
    forged = Packet(
        1,
        30101,
        b"\x01" * 32,
        30168,
        b"\x02" * 32,
        b"\x03" * 32,
        bytes(wallet.pubkey()) + (43).to_bytes(8, "big"),
    )
    programs.committed[sent.guid] = sent
    metas = [AccountMeta(executor.pubkey(), True, True)]
    owner = str(wallet.pubkey())
    assert vm.execute(
        [Instruction(Pubkey.from_string(OFT), lz_receive_data(forged), metas)], [executor], programs.effects()
    ).failed
    assert vm.balance(owner, "solana:USDG") == 0
    assert not vm.execute(
        [Instruction(Pubkey.from_string(OFT), lz_receive_data(sent), metas)], [executor], programs.effects()
    ).failed
    assert vm.balance(owner, "solana:USDG") == 42
    assert vm.execute(
        [Instruction(Pubkey.from_string(OFT), lz_receive_data(sent), metas)], [executor], programs.effects()
    ).failed
