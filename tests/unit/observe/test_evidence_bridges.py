"""Bridge evidence: event topics against the published ABIs, CCTP burn / mint, Across deposit / fill, OFT send.

The CCTP and OFT transactions are built here from the golden prepared bundles (tests/golden/actions_bundles.json)
with logs ABI-encoded from the contracts' event declarations (no deployable bytecode is available offline); the
Across deposit is anvil's recorded answer for a deposit on Across' own SpokePool bytecode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from eth_abi import encode
from eth_utils import keccak

from routequote.core.sessions.evidence import (
    EVENT_SIGNATURES,
    TOPIC0,
    ObservationRejected,
    across_fill_topics,
    address_topic,
    cctp_received_topics,
    parse_cctp_message,
    uint_topic,
    verify_across_fill,
    verify_cctp_mint,
    verify_evm_action,
)
from routequote.observe.evm import JsonRpcEvmReader
from routequote.ports import EvmLog, EvmTransaction

from .support import FakeEvmNode, load, run

GOLDEN = json.loads((Path(__file__).resolve().parents[2] / "golden" / "actions_bundles.json").read_text())

# topic0 literals as published by independent sources (chains.md §4 for FundsDeposited, explorers/indexers for the
# rest), checked against keccak of the canonical signatures read from Circle evm-cctp-contracts src/v2,
# @across-protocol/contracts 5.0.27's SpokePool ABI, LayerZero devtools IOFT.sol and the WETH9 artifact.
PUBLISHED_TOPIC0 = {
    "Transfer": "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
    "Withdrawal": "0x7fcf532c15f0a6db0bd6d0e038bea71d30d808c7d98cb3bf7268a95bf5081b65",
    "DepositForBurn": "0x0c8c1cbdc5190613ebd485511d4e2812cfa45eecb79d845893331fedad5130a5",
    "MessageSent": "0x8c5261668696ce22758910d05bab8f186d6eb247ceac2af2e82c7dc17669b036",
    "MessageReceived": "0xff48c13eda96b1cceacc6b9edeedc9e9db9d6226afbc30146b720c19d3addb1c",
    "MintAndWithdraw": "0x50c55e915134d457debfa58eb6f4342956f8b0616d51a89a3659360178e1ab63",
    "FundsDeposited": "0x32ed1a409ef04c7b0227189c3a103dc5ac10e775a15b785dcc510201f7c25ad3",
    "FilledRelay": "0x44b559f101f8fbcc8a0ea43fa91a05a729a5ea6e14a7c75aa750374690137208",
    "OFTSent": "0x85496b760a4b7f8d66384b9df21b381f5d1b1e79f229a47aaf4c232edc2fe59a",
    "OFTReceived": "0xefed6d3500546b29533b128a29e3a94d70788727f0507505ac12eaf2e578fd9c",
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_TOPIC0))
def test_topic0_is_keccak_of_the_canonical_signature_and_the_published_value(name: str) -> None:
    assert TOPIC0[name] == "0x" + keccak(text=EVENT_SIGNATURES[name]).hex() == PUBLISHED_TOPIC0[name]


def _action(route: str) -> dict[str, Any]:
    return {k: v for k, v in GOLDEN[route]["unsigned_action"].items() if k != "safety_receipt"}


def _tx(
    p: dict[str, Any], i: int, logs: list[EvmLog], *, status: int = 1, confirmations: int = 5
) -> EvmTransaction:
    h = "0x" + keccak(text=f"{p['data']}{i}").hex()
    return EvmTransaction(
        chain_id=p["chainId"],
        tx_hash=h,
        sender=p["from"],
        to=p["to"],
        value=int(p["value"]),
        input=bytes.fromhex(p["data"][2:]),
        status=status,
        block_number=100 + i,
        block_timestamp=1_795_320_000 + i,
        confirmations=confirmations,
        gas_used=60_000,
        effective_gas_price=10**7,
        logs=tuple(EvmLog(lg.address, lg.topics, lg.data, lg.log_index, h, 100 + i) for lg in logs),
    )


def _log(address: str, name: str, topics: list[str], data: bytes, index: int = 0) -> EvmLog:
    return EvmLog(address, (TOPIC0[name], *topics), data, index, "0x" + "00" * 32, 0)


def _transfer(token: str, frm: str, to: str, value: int) -> EvmLog:
    return _log(token, "Transfer", [address_topic(frm), address_topic(to)], encode(["uint256"], [value]))


def _step_txs(
    action: dict[str, Any], protocol_logs: list[EvmLog], *, fee_ok: bool = True
) -> list[EvmTransaction]:
    txs = action["transactions"]
    token, sender = txs[0]["to"], txs[0]["from"]
    fee = int(action["routeFee"]) if fee_ok else int(action["routeFee"]) - 1
    return [
        _tx(txs[0], 0, [_transfer(token, sender, action["feeRecipient"], fee)]),
        _tx(txs[1], 1, []),
        _tx(txs[2], 2, protocol_logs),
    ]


def _burn_logs(action: dict[str, Any], *, amount_delta: int = 0) -> list[EvmLog]:
    from routequote.core.actions.evm import decode_call

    call = decode_call(bytes.fromhex(action["transactions"][2]["data"][2:]))
    assert call is not None
    amount, domain, recipient, token, caller, max_fee, finality = call.args
    sender, messenger = action["transactions"][2]["from"], action["transactions"][2]["to"]
    data = encode(
        ["uint256", "bytes32", "uint32", "bytes32", "bytes32", "uint256", "bytes"],
        [amount + amount_delta, recipient, domain, b"\x01" * 32, caller, max_fee, b""],
    )
    return [
        _transfer(token, sender, "0x00000000000000000000000000000000000000aa", amount),
        _log(
            "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64",
            "MessageSent",
            [],
            encode(["bytes"], [b"\x00" * 376]),
            1,
        ),
        _log(
            messenger,
            "DepositForBurn",
            [address_topic(token), address_topic(sender), uint_topic(finality)],
            data,
            2,
        ),
    ]


def test_cctp_burn_gives_the_message_to_follow_and_no_output_yet() -> None:
    action = _action("arbitrum:USDC->solana:USDC")
    ev = verify_evm_action(action, _step_txs(action, _burn_logs(action)), required_confirmations=1)
    assert ev.status == "final" and ev.actual_output_base is None
    assert ev.actual_input_base == int(action["inputAmount"]) and ev.service_fee_paid_base == int(
        action["routeFee"]
    )
    b = ev.bridge
    assert b is not None and b["kind"] == "cctp" and (b["source_domain"], b["destination_domain"]) == (3, 5)
    assert b["burn_amount"] == int(action["netInputAmount"]) and b["max_fee"] == int(action["maxProviderFee"])
    assert b["min_finality_threshold"] == 1000 and b["message_sent"] == "0x" + "00" * 376
    json.dumps(b)  # JSON-able as stored


def test_cctp_burn_event_that_disagrees_with_the_action_is_a_bridge_mismatch() -> None:
    action = _action("arbitrum:USDC->solana:USDC")
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(
            action, _step_txs(action, _burn_logs(action, amount_delta=-1)), required_confirmations=1
        )
    assert err.value.reason_class == "observation_bridge_mismatch"


def test_fee_transfer_of_another_amount_is_refused() -> None:
    action = _action("arbitrum:USDC->solana:USDC")
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(
            action, _step_txs(action, _burn_logs(action), fee_ok=False), required_confirmations=1
        )
    assert err.value.reason_class == "observation_not_prepared_action"


def _oft_logs(action: dict[str, Any], received: int) -> list[EvmLog]:
    p = action["transactions"][2]
    data = encode(["uint32", "uint256", "uint256"], [30168, int(action["netInputAmount"]), received])
    return [_log(p["to"], "OFTSent", ["0x" + "77" * 32, address_topic(p["from"])], data)]


def test_oft_send_gives_the_guid_to_follow() -> None:
    action = _action("robinhood:USDG->solana:USDG")
    ev = verify_evm_action(
        action, _step_txs(action, _oft_logs(action, int(action["netInputAmount"]))), required_confirmations=1
    )
    b = ev.bridge
    assert b is not None and b["kind"] == "oft" and b["guid"] == "0x" + "77" * 32 and b["dst_eid"] == 30168
    assert b["to"] == action["recipient"] and b["amount_received"] == int(action["netInputAmount"])
    assert ev.network_fee["layerzero_native_fee_sent_wei"] == int(action["nativeMessagingFee"])


def test_oft_send_delivering_below_the_minimum_is_refused() -> None:
    action = _action("robinhood:USDG->solana:USDG")
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(
            action,
            _step_txs(action, _oft_logs(action, int(action["minimumOutput"]) - 1)),
            required_confirmations=1,
        )
    assert err.value.reason_class == "observation_below_step_minimum"


def _read_recorded(name: str) -> tuple[dict[str, Any], list[EvmTransaction]]:
    rec = load(name)

    async def go(client: httpx.AsyncClient) -> list[EvmTransaction]:
        reader = JsonRpcEvmReader({"base": "http://node.invalid"}, client)
        out = [await reader.transaction("base", h) for h in rec["tx_hashes"]]
        return [t for t in out if t is not None]

    return rec, run(go, FakeEvmNode(rec).transport())


def test_recorded_across_deposit_gives_the_deposit_to_follow() -> None:
    rec, txs = _read_recorded("evm_across_deposit")
    action = rec["unsigned_action"]
    ev = verify_evm_action(action, txs, required_confirmations=1)
    b = ev.bridge
    assert (
        b is not None
        and b["kind"] == "across"
        and b["origin_chain_id"] == 8453
        and b["destination_chain_id"] == 4663
    )
    assert b["output_amount"] == int(action["minimumOutput"]) and b["input_amount"] == int(
        action["netInputAmount"]
    )
    assert b["recipient"] == action["recipient"] and b["spoke_pool"] == rec["local_contracts"]["local_spoke"]
    assert ev.actual_input_base == -rec["wallet_change"]["usdc_base"] == int(action["inputAmount"])
    assert isinstance(b["deposit_id"], int)


def _fill(
    bridge: dict[str, Any],
    spoke: str,
    *,
    recipient: str | None = None,
    amount: int | None = None,
    deposit_id: int | None = None,
) -> EvmLog:
    def b32(addr: str) -> bytes:
        return bytes.fromhex(addr[2:]).rjust(32, b"\x00")

    out = bridge["output_amount"] if amount is None else amount
    rcpt = b32(recipient or bridge["recipient"])
    data = encode(
        [
            "bytes32",
            "bytes32",
            "uint256",
            "uint256",
            "uint256",
            "uint32",
            "uint32",
            "bytes32",
            "bytes32",
            "bytes32",
            "bytes32",
            "(bytes32,bytes32,uint256,uint8)",
        ],
        [
            bytes.fromhex(bridge["input_token"][2:]),
            b32(bridge["output_token"]),
            bridge["input_amount"],
            bridge["output_amount"],
            8453,
            bridge["fill_deadline"],
            0,
            bytes(32),
            bytes.fromhex(bridge["depositor"][2:]),
            rcpt,
            bytes(32),
            (rcpt, bytes(32), out, 0),
        ],
    )
    topics = across_fill_topics(
        dict(bridge, deposit_id=bridge["deposit_id"] if deposit_id is None else deposit_id)
    )
    return EvmLog(spoke, (*[t for t in topics if t], "0x" + "02" * 32), data, 3, "0x" + "fa" * 32, 9)


def test_across_fill_is_found_by_origin_and_deposit_id() -> None:
    rec, txs = _read_recorded("evm_across_deposit")
    bridge = verify_evm_action(rec["unsigned_action"], txs, required_confirmations=1).bridge
    assert bridge is not None
    spoke = "0xd29c85f15Df544bA632C9E25829fd29d767d7978"
    assert verify_across_fill([], bridge, spoke_pool=spoke) is None
    other = _fill(bridge, spoke, deposit_id=bridge["deposit_id"] + 1)
    assert verify_across_fill([other], bridge, spoke_pool=spoke) is None
    assert verify_across_fill([_fill(bridge, spoke)], bridge, spoke_pool="0x" + "99" * 20) is None
    assert verify_across_fill([other, _fill(bridge, spoke)], bridge, spoke_pool=spoke) == (
        bridge["output_amount"],
        "0x" + "fa" * 32,
    )
    # a fill of other relay data (here another recipient) under the same ids is not this deposit's fill
    assert (
        verify_across_fill([_fill(bridge, spoke, recipient="0x" + "42" * 20)], bridge, spoke_pool=spoke)
        is None
    )
    assert verify_across_fill(
        [_fill(bridge, spoke, recipient="0x" + "42" * 20), _fill(bridge, spoke)], bridge, spoke_pool=spoke
    ) == (bridge["output_amount"], "0x" + "fa" * 32)


def _message(recipient: str, amount: int, fee_executed: int, nonce: bytes = b"\x05" * 32) -> bytes:
    header = (
        (1).to_bytes(4, "big")
        + (5).to_bytes(4, "big")
        + (3).to_bytes(4, "big")
        + nonce
        + b"\x0a" * 32
        + bytes.fromhex("28b5a0e9C621a5BadaA536219b3a228C8168cf5d").rjust(32, b"\x00")
        + bytes(32)
        + (1000).to_bytes(4, "big")
        + (1000).to_bytes(4, "big")
    )
    body = (
        (1).to_bytes(4, "big")
        + b"\x0b" * 32
        + bytes.fromhex(recipient[2:]).rjust(32, b"\x00")
        + amount.to_bytes(32, "big")
        + b"\x0c" * 32
        + (12_000).to_bytes(32, "big")
        + fee_executed.to_bytes(32, "big")
        + (0).to_bytes(32, "big")
    )
    return header + body


TRANSMITTER = "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64"
USDC_ARB = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"
WALLET = "0x2222222222222222222222222222222222222222"


def _mint_tx(
    message: bytes, *, minted_to: str = WALLET, status: int = 1, confirmations: int = 3
) -> EvmTransaction:
    m = parse_cctp_message(message)
    received = _log(
        TRANSMITTER,
        "MessageReceived",
        [address_topic(WALLET), m["nonce"], uint_topic(1000)],
        encode(["uint32", "bytes32", "bytes"], [5, b"\x0a" * 32, m["message_body"]]),
        2,
    )
    fee = 9_999
    logs = [
        _transfer(USDC_ARB, "0x" + "00" * 20, minted_to, m["amount"] - fee),
        _transfer(USDC_ARB, "0x" + "00" * 20, "0x" + "fe" * 20, fee),
        _log(
            "0x28b5a0e9C621a5BadaA536219b3a228C8168cf5d",
            "MintAndWithdraw",
            [address_topic(minted_to), address_topic(USDC_ARB)],
            encode(["uint256", "uint256"], [m["amount"] - fee, fee]),
            3,
        ),
        received,
    ]
    data = "0x57ecfd28" + encode(["bytes", "bytes"], [message, b"\x11" * 130]).hex()
    p = {"chainId": 42161, "from": WALLET, "to": TRANSMITTER, "value": "0", "data": data}
    return _tx(p, 7, logs, status=status, confirmations=confirmations)


def test_cctp_mint_output_is_the_usdc_minted_to_the_recipient() -> None:
    message = _message(WALLET, 99_990_000, 9_999)
    assert cctp_received_topics(message) == [TOPIC0["MessageReceived"], None, "0x" + "05" * 32]
    kw: dict[str, Any] = {
        "attestation": b"\x11" * 130,
        "usdc": USDC_ARB,
        "recipient": WALLET,
        "transmitter": TRANSMITTER,
        "required_confirmations": 2,
    }
    ev = verify_cctp_mint(_mint_tx(message), message=message, **kw)
    assert ev.status == "final" and ev.actual_output_base == 99_990_000 - 9_999
    assert ev.bridge is not None and ev.bridge["fee_executed"] == 9_999 and ev.bridge["source_domain"] == 5
    assert verify_cctp_mint(_mint_tx(message, confirmations=1), message=message, **kw).status == "pending"
    with pytest.raises(ObservationRejected) as err:
        verify_cctp_mint(_mint_tx(message), message=message, minimum_output=99_990_000, **kw)
    assert err.value.reason_class == "observation_below_step_minimum"
    with pytest.raises(ObservationRejected) as err:
        verify_cctp_mint(_mint_tx(message, minted_to="0x" + "42" * 20), message=message, **kw)
    assert err.value.reason_class == "observation_wrong_recipient"
    with pytest.raises(ObservationRejected) as err:
        verify_cctp_mint(_mint_tx(message, status=0), message=message, **kw)
    assert err.value.reason_class == "observation_reverted"
    other = _message(WALLET, 99_990_000, 9_999, nonce=b"\x06" * 32)
    with pytest.raises(ObservationRejected) as err:
        verify_cctp_mint(_mint_tx(message), message=other, **kw)
    assert err.value.reason_class == "observation_not_prepared_action"


def test_parse_cctp_message_reads_header_and_burn_body() -> None:
    m = parse_cctp_message(_message(WALLET, 1234, 5))
    assert (m["version"], m["source_domain"], m["destination_domain"]) == (1, 5, 3)
    assert m["amount"] == 1234 and m["fee_executed"] == 5 and m["max_fee"] == 12_000
    assert m["mint_recipient"] == "0x" + WALLET[2:].rjust(64, "0") and m["min_finality_threshold"] == 1000
    with pytest.raises(ValueError):
        parse_cctp_message(b"\x00" * 300)
