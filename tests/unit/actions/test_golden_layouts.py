"""Golden files for the built actions, and field-by-field decoding with the protocols' published ABIs.

* tests/golden/actions_solana_cctp.json: the CCTP v2 `deposit_for_burn` instruction for fixed inputs, each
  account named after DepositForBurnContext (circlefin/solana-cctp-contracts, programs/v2/
  token-messenger-minter-v2/.../deposit_for_burn.rs), with its signer / writable flags.
* tests/golden/actions_bundles.json: whole bundles of representative routes (fixed clock and ids).
Regenerate with REGEN_GOLDEN_ACTIONS=1 after an intended change, and review the diff.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

from eth_abi import decode
from eth_utils import function_signature_to_4byte_selector
from solders.pubkey import Pubkey
from tests.unit.actions.support import EVENT_SIGNER, FEE_RECIPIENTS, SOLANA_WALLET, make_env, prepare_route

from routequote.core.actions import common as ak
from routequote.core.actions import solana as sol
from routequote.core.assets import ASSETS

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
REGEN = os.environ.get("REGEN_GOLDEN_ACTIONS") == "1"
BUNDLE_ROUTES = (
    "base:ETH->base:USDC",
    "base:USDC->base:ETH",
    "arbitrum:USDC->solana:USDC",
    "base:USDC->robinhood:USDG",
    "robinhood:ETH->robinhood:USDG",
    "robinhood:USDG->solana:USDG",
    "solana:USDC->arbitrum:USDC",
)
# Published ABIs (JSON fragments as the protocols' artifacts list them)
TOKEN_MESSENGER_V2_DEPOSIT_FOR_BURN = {
    "name": "depositForBurn",
    "inputs": [
        {"name": "amount", "type": "uint256"},
        {"name": "destinationDomain", "type": "uint32"},
        {"name": "mintRecipient", "type": "bytes32"},
        {"name": "burnToken", "type": "address"},
        {"name": "destinationCaller", "type": "bytes32"},
        {"name": "maxFee", "type": "uint256"},
        {"name": "minFinalityThreshold", "type": "uint32"},
    ],
}
OFT_SEND = {
    "name": "send",
    "inputs": [
        {
            "name": "_sendParam",
            "type": "tuple",
            "components": [
                {"name": "dstEid", "type": "uint32"},
                {"name": "to", "type": "bytes32"},
                {"name": "amountLD", "type": "uint256"},
                {"name": "minAmountLD", "type": "uint256"},
                {"name": "extraOptions", "type": "bytes"},
                {"name": "composeMsg", "type": "bytes"},
                {"name": "oftCmd", "type": "bytes"},
            ],
        },
        {
            "name": "_fee",
            "type": "tuple",
            "components": [
                {"name": "nativeFee", "type": "uint256"},
                {"name": "lzTokenFee", "type": "uint256"},
            ],
        },
        {"name": "_refundAddress", "type": "address"},
    ],
}


def _type(p: dict[str, Any]) -> str:
    if p["type"] == "tuple":
        return "(" + ",".join(_type(c) for c in p["components"]) + ")"
    return str(p["type"])


def abi_decode(fragment: dict[str, Any], data: bytes) -> dict[str, Any]:
    types = [_type(p) for p in fragment["inputs"]]
    selector = function_signature_to_4byte_selector(f"{fragment['name']}({','.join(types)})")
    assert data[:4] == selector, (data[:4].hex(), selector.hex())
    values = decode(types, data[4:])
    return {p["name"]: v for p, v in zip(fragment["inputs"], values, strict=True)}


def _golden(name: str, value: Any) -> Any:
    path = GOLDEN / name
    if REGEN:
        path.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n")
    return json.loads(path.read_text())


def test_solana_cctp_deposit_for_burn_layout_matches_golden() -> None:
    usdc = ASSETS["solana:USDC"]
    recipient = ak.address_to_bytes32("0x1111111111111111111111111111111111111111")
    ix = sol.cctp_deposit_for_burn(SOLANA_WALLET, EVENT_SIGNER, usdc, 99_990_000, 6, recipient, 12_000)
    d = sol.instruction_dict(ix)
    named = [{"name": n, **k} for n, k in zip(sol.CCTP_ACCOUNT_NAMES, d["keys"], strict=True)]
    doc = {"programId": d["programId"], "data": d["data"], "accounts": named}
    assert doc == _golden("actions_solana_cctp.json", doc)
    # independent of the golden: discriminator, 96-byte borsh params, flags of the Anchor context
    data = bytes(ix.data)
    assert data[:8] == hashlib.sha256(b"global:deposit_for_burn").digest()[:8] and len(data) == 96
    assert struct.unpack_from("<QI", data, 8) == (99_990_000, 6)
    assert data[20:52] == recipient and data[52:84] == bytes(32)
    assert struct.unpack_from("<QI", data, 84) == (12_000, 1000)
    flags = {a["name"]: (a["isSigner"], a["isWritable"]) for a in named}
    assert flags["owner"] == (True, False)
    assert flags["event_rent_payer"] == (True, True)
    assert flags["message_sent_event_data"] == (True, True)
    assert {n for n, (_, w) in flags.items() if w} == {
        "event_rent_payer",
        "burn_token_account",
        "message_transmitter",
        "local_token",
        "burn_token_mint",
        "message_sent_event_data",
    }
    tmm = sol.CCTP_TOKEN_MESSENGER_MINTER_V2
    by_name = {a["name"]: a["pubkey"] for a in named}
    assert by_name["message_sent_event_data"] == EVENT_SIGNER
    assert by_name["burn_token_account"] == str(ak.associated_token_address(SOLANA_WALLET, usdc))
    assert by_name["local_token"] == str(
        Pubkey.find_program_address([b"local_token", bytes(ak.mint(usdc))], tmm)[0]
    )
    assert by_name["remote_token_messenger"] == str(
        Pubkey.find_program_address([b"remote_token_messenger", b"6"], tmm)[0]
    )
    assert by_name["program"] == by_name["token_messenger_minter_program"] == str(tmm)


def test_bundles_match_golden() -> None:
    env = make_env()
    out = {}
    for key in BUNDLE_ROUTES:
        p = asyncio.run(prepare_route(env, key, 100))
        out[key] = {
            "payload_sha256": p.bundle["payload_sha256"],
            "unsigned_action": p.bundle["unsigned_action"],
        }
    assert out == _golden("actions_bundles.json", out)


def test_cctp_evm_calldata_decoded_with_published_abi() -> None:
    p = asyncio.run(prepare_route(make_env(), "arbitrum:USDC->solana:USDC", 100))
    action = p.bundle["unsigned_action"]
    burn = action["transactions"][-1]
    assert burn["to"] == "0x28b5a0e9C621a5BadaA536219b3a228C8168cf5d" and burn["value"] == "0"
    f = abi_decode(TOKEN_MESSENGER_V2_DEPOSIT_FOR_BURN, bytes.fromhex(burn["data"][2:]))
    step = p.quote["direct_route_summary"]["steps"][0]
    assert f["amount"] == int(step["expected_input_base"]) - int(step["expected_input_base"]) // 10_000
    assert f["destinationDomain"] == 5
    assert f["mintRecipient"] == bytes(ak.associated_token_address(SOLANA_WALLET, ASSETS["solana:USDC"]))
    assert f["burnToken"].lower() == ASSETS["arbitrum:USDC"].address.lower()  # type: ignore[union-attr]
    assert f["destinationCaller"] == bytes(32)
    assert 0 < f["maxFee"] < f["amount"] and f["amount"] - f["maxFee"] >= int(step["minimum_output_base"])
    assert f["minFinalityThreshold"] == 1000
    approve = action["transactions"][1]
    spender, allowance = decode(["address", "uint256"], bytes.fromhex(approve["data"][10:]))
    assert spender.lower() == burn["to"].lower() and allowance == f["amount"]
    fee = action["transactions"][0]
    to, amount = decode(["address", "uint256"], bytes.fromhex(fee["data"][10:]))
    assert (
        to.lower() == FEE_RECIPIENTS["evm"].lower() and amount == int(step["expected_input_base"]) // 10_000
    )


def test_oft_send_calldata_decoded_with_published_abi() -> None:
    p = asyncio.run(prepare_route(make_env(), "robinhood:USDG->solana:USDG", 100))
    action = p.bundle["unsigned_action"]
    send = action["transactions"][-1]
    f = abi_decode(OFT_SEND, bytes.fromhex(send["data"][2:]))
    dst_eid, to, amount_ld, min_ld, options, compose, cmd = f["_sendParam"]
    step = p.quote["direct_route_summary"]["steps"][0]
    assert dst_eid == 30168
    assert to == bytes(Pubkey.from_string(SOLANA_WALLET))
    assert amount_ld == int(step["expected_input_base"]) - int(step["expected_input_base"]) // 10_000
    assert min_ld == int(step["minimum_output_base"]) and min_ld <= amount_ld
    assert (options, compose, cmd) == (b"", b"", b"")
    native_fee, lz_fee = f["_fee"]
    assert int(send["value"]) == native_fee > 0 and lz_fee == 0
    assert f["_refundAddress"].lower() == p.wallets["robinhood"].lower()
