"""JsonRpcEvmReader + verify_evm_action on anvil's recorded answers (tests/recordings/observe/evm_*.json)."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from routequote.core.sessions.evidence import ObservationRejected, StepEvidence, verify_evm_action
from routequote.errors import InvalidRequest
from routequote.observe.evm import JsonRpcEvmReader
from routequote.ports import EvmTransaction, ObservationUnavailable

from .support import FakeEvmNode, load, run


def read(node: FakeEvmNode, hashes: list[str], **kw: Any) -> list[EvmTransaction | None]:
    async def go(client: httpx.AsyncClient) -> list[EvmTransaction | None]:
        reader = JsonRpcEvmReader({"base": "http://node.invalid"}, client, **kw)
        return [await reader.transaction("base", h) for h in hashes]

    return run(go, node.transport())


def read_all(rec: dict[str, Any], **node_kw: Any) -> list[EvmTransaction]:
    out = read(FakeEvmNode(rec, **node_kw), rec["tx_hashes"])
    assert all(t is not None for t in out)
    return [t for t in out if t is not None]


def test_eth_to_usdc_output_is_the_wallets_recorded_usdc_change() -> None:
    rec = load("evm_eth_to_usdc")
    txs = read_all(rec)
    assert [t.chain_id for t in txs] == [8453, 8453] and all(t.status == 1 for t in txs)
    ev = verify_evm_action(rec["unsigned_action"], txs, required_confirmations=1)
    assert ev.status == "final" and ev.tx_ids == tuple(h.lower() for h in rec["tx_hashes"])
    assert (
        ev.actual_output_base
        == rec["wallet_change"]["usdc_base"]
        >= int(rec["unsigned_action"]["minimumOutput"])
    )
    assert ev.actual_input_base + ev.network_fee["wei"] == -rec["wallet_change"]["eth_wei"]
    assert ev.service_fee_paid_base == int(rec["unsigned_action"]["routeFee"])
    assert ev.network_fee["wei"] == sum(t.gas_used * t.effective_gas_price for t in txs) > 0


def test_usdc_to_eth_output_is_the_recorded_weth_withdrawal_the_wallet_received() -> None:
    rec = load("evm_usdc_to_eth")
    txs = read_all(rec)
    ev = verify_evm_action(rec["unsigned_action"], txs, required_confirmations=1)
    assert ev.actual_output_base == rec["wallet_change"]["eth_wei"] + ev.network_fee["wei"]
    assert (
        ev.actual_input_base
        == -rec["wallet_change"]["usdc_base"]
        == int(rec["unsigned_action"]["inputAmount"])
    )
    assert len(ev.block_times) == 3


def test_reader_uses_one_batch_and_one_block_read_per_transaction() -> None:
    rec = load("evm_usdc_to_eth")
    node = FakeEvmNode(rec)
    tx = read(node, rec["tx_hashes"][-1:])[0]
    assert node.requests == 2 and tx is not None
    assert tx.sender == rec["unsigned_action"]["transactions"][-1]["from"]  # checksummed like the action
    assert all(lg.topics[0] == lg.topics[0].lower() for lg in tx.logs)


def test_reverted_prepared_swap_is_refused() -> None:
    rec = load("evm_usdc_to_eth_reverted")
    txs = read_all(rec)
    assert [t.status for t in txs] == [1, 1, 0]
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(rec["unsigned_action"], txs, required_confirmations=1)
    assert err.value.reason_class == "observation_reverted"
    assert err.value.body()["error"] == "invalid_request"


def test_unknown_hash_reads_as_none() -> None:
    rec = load("evm_eth_to_usdc")
    assert read(FakeEvmNode(rec), ["0x" + "ab" * 32]) == [None]


def test_confirmations_below_the_required_depth_are_pending() -> None:
    rec = load("evm_eth_to_usdc")
    last_block = int(rec["rpc"]["eth_blockNumber"], 16)
    txs = read_all(rec, latest=last_block)
    assert txs[-1].confirmations == 1
    ev = verify_evm_action(rec["unsigned_action"], txs, required_confirmations=3)
    assert ev == StepEvidence.pending(tuple(h.lower() for h in rec["tx_hashes"]))
    assert ev.actual_output_base is None
    deeper = read_all(rec, latest=last_block + 2)
    assert verify_evm_action(rec["unsigned_action"], deeper, required_confirmations=3).status == "final"


def test_transaction_of_another_action_is_not_evidence() -> None:
    eth_in, usdc_in = load("evm_eth_to_usdc"), load("evm_usdc_to_eth")
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(usdc_in["unsigned_action"], read_all(eth_in), required_confirmations=1)
    assert err.value.reason_class == "observation_not_prepared_action"


def test_different_calldata_is_not_evidence() -> None:
    rec = copy.deepcopy(load("evm_usdc_to_eth"))
    swap = rec["rpc"]["transactions"][rec["tx_hashes"][-1]]["eth_getTransactionByHash"]
    swap["input"] = swap["input"][:-2] + ("01" if swap["input"][-2:] != "01" else "02")
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(rec["unsigned_action"], read_all(rec), required_confirmations=1)
    assert err.value.reason_class == "observation_not_prepared_action"


def test_missing_fee_transaction_is_incomplete() -> None:
    rec = load("evm_usdc_to_eth")
    txs = read_all(rec)[1:]
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(rec["unsigned_action"], txs, required_confirmations=1)
    assert err.value.reason_class == "observation_incomplete"
    assert err.value.details["observation"]["missing_transaction_indexes"] == [0]


def test_output_below_the_step_minimum_is_refused() -> None:
    rec = load("evm_eth_to_usdc")
    action = dict(rec["unsigned_action"], minimumOutput=str(rec["wallet_change"]["usdc_base"] + 1))
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(action, read_all(rec), required_confirmations=1)
    assert err.value.reason_class == "observation_below_step_minimum"


@pytest.mark.parametrize("name", ["evm_eth_to_usdc", "evm_usdc_to_eth"])
def test_output_to_another_wallet_is_refused(name: str) -> None:
    rec = load(name)
    action = dict(rec["unsigned_action"], recipient="0x000000000000000000000000000000000000bEEF")
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(action, read_all(rec), required_confirmations=1)
    assert err.value.reason_class == "observation_wrong_recipient"


def test_transaction_on_another_chain_is_refused() -> None:
    rec = load("evm_eth_to_usdc")
    action = dict(rec["unsigned_action"], chainId=42161)
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(action, read_all(rec), required_confirmations=1)
    assert err.value.reason_class == "observation_wrong_chain"


def test_fee_transfer_of_another_amount_is_refused() -> None:
    rec = load("evm_usdc_to_eth")
    action = dict(rec["unsigned_action"], routeFee=str(int(rec["unsigned_action"]["routeFee"]) + 1))
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(action, read_all(rec), required_confirmations=1)
    assert err.value.reason_class == "observation_not_prepared_action"


def test_rpc_timeout_is_unavailable_with_the_chain_in_the_reason() -> None:
    rec = load("evm_eth_to_usdc")
    node = FakeEvmNode(rec)
    node.fail_with = httpx.ReadTimeout("slow")
    with pytest.raises(ObservationUnavailable) as err:
        read(node, rec["tx_hashes"][:1])
    assert err.value.reason == "rpc_timeout:base"


def test_chain_without_rpc_url_is_unavailable() -> None:
    async def go(client: httpx.AsyncClient) -> Any:
        return await JsonRpcEvmReader({"base": "http://node.invalid"}, client).transaction(
            "arbitrum", "0x" + "11" * 32
        )

    with pytest.raises(ObservationUnavailable) as err:
        run(go, httpx.MockTransport(lambda r: pytest.fail("no request may be made")))
    assert err.value.reason == "chain_rpc_not_configured" and "arbitrum" in err.value.message


def test_node_of_another_chain_is_unavailable() -> None:
    rec = load("evm_eth_to_usdc")
    with pytest.raises(ObservationUnavailable) as err:
        read(FakeEvmNode(rec, chain_id="0xa4b1"), rec["tx_hashes"][:1])
    assert err.value.reason == "rpc_wrong_chain:base"


def test_non_hex_quantity_is_an_invalid_response() -> None:
    rec = copy.deepcopy(load("evm_eth_to_usdc"))
    rec["rpc"]["transactions"][rec["tx_hashes"][0]]["eth_getTransactionReceipt"]["status"] = "1"
    with pytest.raises(ObservationUnavailable) as err:
        read(FakeEvmNode(rec), rec["tx_hashes"][:1])
    assert err.value.reason == "rpc_invalid_response:base"


def test_malformed_hash_is_a_caller_error() -> None:
    rec = load("evm_eth_to_usdc")
    with pytest.raises(InvalidRequest) as err:
        read(FakeEvmNode(rec), ["0x1234"])
    assert err.value.reason_class == "invalid_transaction_hash"


def test_breaker_opens_after_consecutive_failures_then_probes_after_cooldown() -> None:
    rec = load("evm_eth_to_usdc")
    node = FakeEvmNode(rec)
    node.fail_with = httpx.ConnectError("refused")
    now = [100.0]
    counts: list[int] = []

    async def go(client: httpx.AsyncClient) -> list[str]:
        reader = JsonRpcEvmReader(
            {"base": "http://node.invalid"},
            client,
            failure_threshold=2,
            cooldown_seconds=10,
            clock=lambda: now[0],
        )
        reasons = []
        for step in range(4):
            counts.append(node.requests)
            if step == 3:
                now[0] += 11
                node.fail_with = None
            try:
                await reader.transaction("base", rec["tx_hashes"][0])
                reasons.append("ok")
            except ObservationUnavailable as e:
                reasons.append(e.reason)
        return reasons

    reasons = run(go, node.transport())
    assert reasons == ["rpc_transport_error:base", "rpc_transport_error:base", "rpc_circuit_open:base", "ok"]
    assert counts[3] == counts[2] > counts[1] > counts[0] == 0  # no request at all while open
    assert node.requests > counts[3]  # the probe after the cooldown reached the node


def test_logs_are_filtered_by_topics_and_parsed() -> None:
    rec = load("evm_across_deposit")
    spoke = rec["local_contracts"]["local_spoke"]
    from routequote.core.sessions.evidence import TOPIC0

    async def go(client: httpx.AsyncClient) -> Any:
        return await JsonRpcEvmReader({"base": "http://node.invalid"}, client).logs(
            "base", spoke, [TOPIC0["FundsDeposited"]], 0
        )

    logs = run(go, FakeEvmNode(rec).transport())
    assert (
        len(logs) == 1
        and logs[0].topics[0] == TOPIC0["FundsDeposited"]
        and logs[0].address.lower() == spoke.lower()
    )
