"""Our CCTP v2 `receive_message` on Solana against Circle's own builder (`@circle-fin/adapter-solana`
`derivePdas` + `buildInstructions`, run unchanged by tests/reference/solana_sdk/cctp_receive_ix.cjs).

What is compared, per case: every account Circle's code names (payer, caller, authority_pda,
message_transmitter, used_nonce, receiver, system_program) with ours at the same role; the 11 remaining accounts
(token_messenger ... TokenMessengerMinterV2) in order with their signer / writable flags; and the message and
attestation arguments against the bytes our instruction data carries. What Circle's builder leaves to the
program's IDL (fetched over RPC there) is not compared here: the order and flags of the named accounts, the
`#[event_cpi]` pair and the borsh encoding; ours follow Circle's program source (`ReceiveMessageContext`).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from solders.pubkey import Pubkey

from routequote.core.actions import cctp_solana_receive as rx
from routequote.core.actions.cctp_message import encode_cctp_burn_message
from routequote.core.actions.common import associated_token_address
from routequote.core.assets import ASSETS

pytestmark = pytest.mark.node

SDK_DIR = Path(__file__).resolve().parents[1] / "reference" / "solana_sdk"
USDC = ASSETS["solana:USDC"]
SOURCES = {  # CCTP domain -> that chain's USDC (the burn token)
    0: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
    3: "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
    6: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
}
NAMED_POSITION = {
    "payer": 0,
    "caller": 1,
    "authorityPda": 2,
    "messageTransmitter": 3,
    "usedNonce": 4,
    "receiver": 5,
    "systemProgram": 6,
}


@pytest.fixture(scope="module")
def circle() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not found on PATH: cannot run Circle's Solana CCTP builder")
    needed = SDK_DIR / "node_modules" / "@circle-fin" / "adapter-solana"
    if not needed.exists():
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--cache", str(SDK_DIR / ".npm-cache")],
            cwd=SDK_DIR,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0 or not needed.exists():
            pytest.skip(f"npm install in tests/reference/solana_sdk failed (offline?): {proc.stderr[-400:]}")
    return SDK_DIR / "cctp_receive_ix.cjs"


def test_receive_message_accounts_equal_circles_builder(circle: Path) -> None:
    rng = random.Random(18_003)
    cases: list[dict[str, Any]] = []
    ours: list[Any] = []
    for i in range(24):
        domain = [0, 3, 6][i % 3]
        owner = str(Pubkey.new_unique())
        payer = owner if i % 2 else str(Pubkey.new_unique())  # a relayer may pay for someone else's mint
        nonce = rng.randbytes(32)
        amount = rng.randint(10**4, 10**13)
        max_fee = rng.randint(0, amount // 100)
        msg = encode_cctp_burn_message(
            source_domain=domain,
            destination_domain=5,
            nonce=nonce,
            sender=rng.randbytes(32),
            recipient=bytes(rx.TMM),
            destination_caller=b"\x00" * 32,
            min_finality_threshold=1000,
            finality_threshold_executed=1000,
            burn_token=b"\x00" * 12 + bytes.fromhex(SOURCES[domain][2:]),
            mint_recipient=bytes(associated_token_address(owner, USDC)),
            amount=amount,
            message_sender=b"\x00" * 12 + rng.randbytes(20),
            max_fee=max_fee,
            fee_executed=rng.randint(0, max_fee),
            expiration_block=rng.randint(0, 10**9),
        )
        attestation = rng.randbytes(65 * rng.randint(1, 3))
        fee_account = str(associated_token_address(str(Pubkey.new_unique()), USDC))
        cases.append(
            {
                "payer": payer,
                "recipient_owner": owner,
                "usdc_mint": USDC.address,
                "source_usdc": SOURCES[domain],
                "source_domain": domain,
                "message": "0x" + msg.hex(),
                "attestation": "0x" + attestation.hex(),
                "event_nonce": "0x" + nonce.hex(),
                "fee_recipient_token_account": fee_account,
            }
        )
        ours.append((rx.receive_message_ix(payer, owner, msg, attestation, fee_account), msg, attestation))
    proc = subprocess.run(
        ["node", str(circle)],
        input=json.dumps({"cases": cases}),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    results = json.loads(proc.stdout)["results"]
    assert len(results) == len(cases) == 24
    for got, (ix, msg, attestation) in zip(results, ours, strict=True):
        assert got["ok"], got.get("error")
        keys = [str(a.pubkey) for a in ix.accounts]
        assert set(got["accounts"]) == set(NAMED_POSITION)
        for name, pos in NAMED_POSITION.items():
            assert got["accounts"][name] == keys[pos], name
        remaining = [
            {"pubkey": str(a.pubkey), "isSigner": a.is_signer, "isWritable": a.is_writable}
            for a in ix.accounts[9:]
        ]
        assert got["remaining"] == remaining
        assert (bytes.fromhex(got["message"]), bytes.fromhex(got["attestation"])) == (msg, attestation)
        assert rx.decode_receive_message_data(bytes(ix.data)) == (msg, attestation)
