"""JsonRpcSolanaReader + verify_solana_action on getTransaction answers in the RPC's JSON wire format, and
IrisAttestationReader on `/v2/messages` answers in Circle's documented format (tests/recordings/observe/)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import httpx
import pytest
from solders.pubkey import Pubkey

from routequote.core.sessions.evidence import (
    ObservationRejected,
    verify_solana_action,
    verify_solana_delivery,
)
from routequote.observe.iris import IrisAttestationReader
from routequote.observe.solana import GET_TRANSACTION_CONFIG, JsonRpcSolanaReader, b58decode
from routequote.ports import CctpMessage, ObservationUnavailable, SolanaTransaction

from .support import load, run

USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"


def solana_read(
    rec: dict[str, Any], signature: str | None = None, url: str | None = "http://sol.invalid"
) -> Any:
    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        result = rec["response"]["result"] if body["params"][0] == rec["signature"] else None
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})

    async def go(client: httpx.AsyncClient) -> SolanaTransaction | None:
        return await JsonRpcSolanaReader(url, client).transaction(signature or rec["signature"])

    out = run(go, httpx.MockTransport(handler))
    assert all(b["method"] == "getTransaction" and b["params"][1] == GET_TRANSACTION_CONFIG for b in seen)
    return out


def test_cctp_burn_transaction_is_decoded_and_verified() -> None:
    rec = load("solana_cctp_burn")
    tx = solana_read(rec)
    assert tx is not None and tx.err is None and tx.fee == 10_000
    action = rec["unsigned_action"]
    assert set(action["requiredSigners"]) == set(tx.signers)
    assert tx.instructions[0].program_id == "ComputeBudget111111111111111111111111111111"
    ev = verify_solana_action(action, tx)
    assert (
        ev.status == "final" and ev.tx_ids == (rec["signature"],) and ev.network_fee == {"lamports": 10_000}
    )
    assert ev.actual_input_base == int(action["inputAmount"]) and ev.service_fee_paid_base == int(
        action["routeFee"]
    )
    assert ev.actual_output_base is None and ev.block_times == (1_795_323_300,)
    b = ev.bridge
    assert b is not None and (b["kind"], b["source_domain"], b["destination_domain"]) == ("cctp", 5, 3)
    assert b["burn_amount"] == int(action["netInputAmount"]) and b["max_fee"] == int(action["maxProviderFee"])
    assert b["mint_recipient"] == "0x" + action["recipient"][2:].lower().rjust(64, "0")
    assert b["message_sent_event_account"] == action["requiredSigners"][1]


def test_failed_transaction_is_refused_as_reverted() -> None:
    rec = load("solana_cctp_burn_failed")
    with pytest.raises(ObservationRejected) as err:
        verify_solana_action(rec["unsigned_action"], solana_read(rec))
    assert err.value.reason_class == "observation_reverted"


def test_an_added_instruction_other_than_compute_budget_is_not_the_prepared_action() -> None:
    rec = load("solana_cctp_burn_extra_instruction")
    with pytest.raises(ObservationRejected) as err:
        verify_solana_action(rec["unsigned_action"], solana_read(rec))
    assert err.value.reason_class == "observation_not_prepared_action"


def test_burn_of_another_amount_or_recipient_is_refused() -> None:
    rec = load("solana_cctp_burn")
    tx = solana_read(rec)
    with pytest.raises(ObservationRejected) as err:
        verify_solana_action(dict(rec["unsigned_action"], recipient="0x" + "42" * 20), tx)
    assert err.value.reason_class == "observation_wrong_recipient"
    with pytest.raises(ObservationRejected) as err:
        verify_solana_action(dict(rec["unsigned_action"], routeFee="1"), tx)
    assert err.value.reason_class == "observation_not_prepared_action"


def test_unsigned_by_the_fee_payer_is_refused() -> None:
    rec = load("solana_cctp_burn")
    action = dict(rec["unsigned_action"], feePayer="DevFeeRecipientP1aceho1der11111111111111111")
    with pytest.raises(ObservationRejected) as err:
        verify_solana_action(action, solana_read(rec))
    assert err.value.reason_class == "observation_not_prepared_action"


def test_unknown_or_unfinalized_signature_is_none() -> None:
    rec = load("solana_cctp_burn")
    assert solana_read(rec, signature=load("solana_cctp_burn_failed")["signature"]) is None


def test_loaded_addresses_extend_the_account_index_space() -> None:
    rec = copy.deepcopy(load("solana_cctp_burn"))
    result = rec["response"]["result"]
    msg, meta = result["transaction"]["message"], result["meta"]
    moved = msg["accountKeys"].pop()  # the last readonly key now comes from an address lookup table
    meta["loadedAddresses"] = {"writable": [], "readonly": [moved]}
    result["version"] = 0
    msg["header"]["numReadonlyUnsignedAccounts"] -= 1
    tx = solana_read(rec)
    assert tx is not None and tx.account_keys[-1] == moved
    assert verify_solana_action(rec["unsigned_action"], tx).status == "final"


def test_delivery_counts_only_the_owners_tokens_of_that_mint() -> None:
    rec = load("solana_cctp_burn")
    tx = solana_read(rec)
    fee_owner = rec["unsigned_action"]["feeRecipient"]
    assert verify_solana_delivery(tx, owner=fee_owner, mint=USDC) == int(rec["unsigned_action"]["routeFee"])
    with pytest.raises(ObservationRejected) as err:
        verify_solana_delivery(tx, owner=rec["unsigned_action"]["feePayer"], mint=USDC)
    assert err.value.reason_class == "observation_wrong_recipient"


def test_solana_not_configured_timeout_and_bad_wire_are_unavailable() -> None:
    rec = load("solana_cctp_burn")
    with pytest.raises(ObservationUnavailable) as err:
        solana_read(rec, url=None)
    assert err.value.reason == "chain_rpc_not_configured"

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow")

    async def go(client: httpx.AsyncClient) -> Any:
        return await JsonRpcSolanaReader("http://sol.invalid", client).transaction(rec["signature"])

    with pytest.raises(ObservationUnavailable) as err:
        run(go, httpx.MockTransport(slow))
    assert err.value.reason == "rpc_timeout:solana"
    bad = copy.deepcopy(rec)
    bad["response"]["result"]["meta"]["postTokenBalances"][0]["uiTokenAmount"]["amount"] = 1.5
    with pytest.raises(ObservationUnavailable) as err:
        solana_read(bad)
    assert err.value.reason == "rpc_invalid_response:solana"


def test_b58decode_keeps_leading_zero_bytes() -> None:
    assert b58decode("1112") == b"\x00\x00\x00\x01"
    assert b58decode("") == b""


# ---- Iris ---------------------------------------------------------------------------------------------


def iris_read(
    answer: httpx.Response | Exception, tx: str | None = None
) -> tuple[list[CctpMessage], list[str]]:
    urls: list[str] = []
    rec = load("iris_v2_messages")

    def handler(request: httpx.Request) -> httpx.Response:
        urls.append(str(request.url))
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def go(client: httpx.AsyncClient) -> list[CctpMessage]:
        return await IrisAttestationReader("https://iris.invalid/", client).messages(
            5, tx or rec["source_signature"]
        )

    return run(go, httpx.MockTransport(handler)), urls


def test_iris_complete_message_is_read_from_its_bytes() -> None:
    rec = load("iris_v2_messages")
    msgs, urls = iris_read(httpx.Response(200, json=rec["complete"]))
    assert urls == [f"https://iris.invalid/v2/messages/5?transactionHash={rec['source_signature']}"]
    (m,) = msgs
    action = load("solana_cctp_burn")["unsigned_action"]
    assert m.status == "complete" and m.attestation is not None and len(m.attestation) == 130
    assert (m.source_domain, m.destination_domain) == (5, 3) and m.amount == int(action["netInputAmount"])
    assert (
        m.fee_executed == 9_999
        and m.max_fee == int(action["maxProviderFee"])
        and m.finality_threshold_executed == 1000
    )
    assert m.mint_recipient == "0x" + action["recipient"][2:].lower().rjust(64, "0")
    assert m.message is not None and m.nonce == "0x" + m.message[12:44].hex()


def test_iris_pending_has_no_attestation() -> None:
    (m,), _ = iris_read(httpx.Response(200, json=load("iris_v2_messages")["pending"]))
    assert (
        m.status == "pending_confirmations" and m.attestation is None and m.finality_threshold_executed == 0
    )


def test_iris_decoded_fields_are_the_fallback_without_message_bytes() -> None:
    doc = copy.deepcopy(load("iris_v2_messages")["complete"])
    doc["messages"][0]["message"] = "0x"
    (m,), _ = iris_read(httpx.Response(200, json=doc))
    assert m.message is None and m.amount == 99_990_000 and m.fee_executed == 9_999 and m.source_domain == 5
    assert m.mint_recipient == "0x" + "00" * 12 + "22" * 20  # the decoded 20-byte address, left-padded
    doc["messages"][0]["decodedMessage"]["decodedMessageBody"]["amount"] = 99.99
    with pytest.raises(ObservationUnavailable) as err:
        iris_read(httpx.Response(200, json=doc))
    assert err.value.reason == "iris_invalid_response"


def test_iris_404_is_not_indexed_yet_and_errors_are_unavailable() -> None:
    assert iris_read(httpx.Response(404, json=load("iris_v2_messages")["not_found"]))[0] == []
    cases = {
        "iris_rate_limited": httpx.Response(429, json={}),
        "iris_http_500": httpx.Response(500, text="oops"),
        "iris_timeout": httpx.ReadTimeout("slow"),
        "iris_transport_error": httpx.ConnectError("refused"),
    }
    for reason, answer in cases.items():
        with pytest.raises(ObservationUnavailable) as err:
            iris_read(answer)
        assert err.value.reason == reason


def _preflight_reader(answers: dict[str, Any]) -> Any:
    """A reader whose node answers each method with `answers[method]` (a result)."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        return httpx.Response(
            200, json={"jsonrpc": "2.0", "id": body["id"], "result": answers[body["method"]]}
        )

    return handler


def test_a_token_account_is_read_from_its_first_72_bytes() -> None:
    owner, mint = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", USDC
    head = (
        bytes(Pubkey.from_string(mint)) + bytes(Pubkey.from_string(owner)) + (1234567).to_bytes(8, "little")
    )

    def account(program: str, data: bytes) -> dict[str, Any]:
        encoded = [base64.b64encode(data).decode(), "base64"]
        return {
            "context": {"slot": 1},
            "value": {"data": encoded, "executable": False, "lamports": 1, "owner": program},
        }

    def read(result: Any) -> Any:
        async def go(client: httpx.AsyncClient) -> Any:
            return await JsonRpcSolanaReader("http://sol.invalid", client).token_account(owner)

        return run(go, httpx.MockTransport(_preflight_reader({"getAccountInfo": result})))

    got = read(account("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", head))
    assert (got.mint, got.owner, got.amount) == (mint, owner, 1234567)
    assert read({"context": {"slot": 1}, "value": None}) is None
    other = read(account("11111111111111111111111111111111", b""))
    assert (other.program, other.mint, other.amount) == ("11111111111111111111111111111111", "", 0)
    with pytest.raises(ObservationUnavailable) as err:  # a token account shorter than its head
        read(account("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", head[:40]))
    assert err.value.reason == "rpc_invalid_response:solana"


def test_the_fee_for_a_message_and_the_wire_it_refuses() -> None:
    blockhash = "4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofM"
    seen: list[str] = []

    def fee(answers: dict[str, Any]) -> Any:
        async def go(client: httpx.AsyncClient) -> Any:
            return await JsonRpcSolanaReader("http://sol.invalid", client).fee_for_message(
                lambda bh: seen.append(bh) or "AQAB"
            )

        return run(go, httpx.MockTransport(_preflight_reader(answers)))

    latest = {"context": {"slot": 1}, "value": {"blockhash": blockhash, "lastValidBlockHeight": 9}}
    assert fee({"getLatestBlockhash": latest, "getFeeForMessage": {"context": {}, "value": 10000}}) == 10000
    assert seen == [blockhash]  # the message is built on the node's blockhash
    assert fee({"getLatestBlockhash": latest, "getFeeForMessage": {"context": {}, "value": None}}) is None
    for answers in (
        {"getLatestBlockhash": {"value": None}},
        {"getLatestBlockhash": latest, "getFeeForMessage": {"context": {}}},
        {"getLatestBlockhash": latest, "getFeeForMessage": {"context": {}, "value": 1.5}},
    ):
        with pytest.raises(ObservationUnavailable) as err:
            fee(answers)
        assert err.value.reason == "rpc_invalid_response:solana"
