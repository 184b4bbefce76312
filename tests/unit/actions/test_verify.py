"""The caller-side verifier: accepts every honest bundle, rejects each kind of tampering (re-hashed or not)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from solders.pubkey import Pubkey
from tests.unit.actions.support import Prepared, make_env, prepare_route, rehash

from routequote.core.actions.evm import decode_call, encode_call
from routequote.core.routes import ROUTES
from routequote.verify import BundleRejected, assert_bundle_ok, verify_bundle


def errors(p: Prepared, bundle: dict[str, Any] | None = None, **overrides: Any) -> set[str]:
    kwargs = {**p.verify_kwargs(), **overrides}
    return {
        f.code
        for f in verify_bundle(bundle if bundle is not None else p.bundle, **kwargs)
        if f.severity == "error"
    }


async def test_verifier_accepts_every_honest_bundle_of_every_prepare_ready_route() -> None:
    env = make_env()
    ready = sorted(env.prepare.supported_routes())
    assert len(ready) == 72  # every first step, Solana swaps from the snapshot included
    for key in ready:
        for amount in (1, 250, 1000):
            p = await prepare_route(env, key, amount)
            assert errors(p) == set(), (key, amount, errors(p))


def test_verify_module_imports_without_server_dependencies() -> None:
    code = (
        "import sys, routequote.verify; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('fastapi','starlette','sqlalchemy','mcp','a2a','httpx')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _txs(b: dict[str, Any]) -> list[dict[str, Any]]:
    txs: list[dict[str, Any]] = b["unsigned_action"]["transactions"]
    return txs


def _data(tx: dict[str, Any]) -> bytes:
    return bytes.fromhex(tx["data"][2:])


def _set(tx: dict[str, Any], data: bytes) -> None:
    tx["data"] = "0x" + data.hex()


def _replace_call(tx: dict[str, Any], fn: Callable[[list[Any]], None]) -> None:
    call = decode_call(_data(tx))
    assert call is not None
    args = list(call.args)
    fn(args)
    _set(tx, encode_call(call.name, *args))


def _swap_recipient(b: dict[str, Any]) -> None:
    tx = _txs(b)[-1]

    def change(args: list[Any]) -> None:
        inner = decode_call(bytes(args[1][0]))
        assert inner is not None
        params = list(inner.args[0])
        params[3] = "0x9999999999999999999999999999999999999999"
        args[1] = [encode_call("exactInputSingle", tuple(params)), *args[1][1:]]

    _replace_call(tx, change)


def _swap_amount(b: dict[str, Any]) -> None:
    def change(args: list[Any]) -> None:
        inner = decode_call(bytes(args[1][0]))
        assert inner is not None
        params = list(inner.args[0])
        params[4] = params[4] * 2
        args[1] = [encode_call("exactInputSingle", tuple(params)), *args[1][1:]]

    _replace_call(_txs(b)[-1], change)


def _approve_more(b: dict[str, Any]) -> None:
    tx = next(t for t in _txs(b) if _data(t)[:4] == bytes.fromhex("095ea7b3"))
    _replace_call(tx, lambda a: a.__setitem__(1, a[1] + 1))


def _other_target(b: dict[str, Any]) -> None:
    _txs(b)[-1]["to"] = "0x9999999999999999999999999999999999999999"


def _value_on_approve(b: dict[str, Any]) -> None:
    next(t for t in _txs(b) if _data(t)[:4] == bytes.fromhex("095ea7b3"))["value"] = "1"


def _later_deadline(b: dict[str, Any]) -> None:
    b["unsigned_action"]["deadline"] += 3600
    _replace_call(_txs(b)[-1], lambda a: a.__setitem__(0, a[0] + 3600))


def _fee_changed(b: dict[str, Any]) -> None:
    _replace_call(_txs(b)[0], lambda a: a.__setitem__(1, a[1] + 1))
    b["unsigned_action"]["routeFee"] = str(int(b["unsigned_action"]["routeFee"]) + 1)


def _fee_recipient_changed(b: dict[str, Any]) -> None:
    _replace_call(_txs(b)[0], lambda a: a.__setitem__(0, "0x9999999999999999999999999999999999999999"))
    b["unsigned_action"]["feeRecipient"] = "0x9999999999999999999999999999999999999999"


def _min_out_lowered(b: dict[str, Any]) -> None:
    b["unsigned_action"]["minimumOutput"] = "1"

    def change(args: list[Any]) -> None:
        inner = decode_call(bytes(args[1][0]))
        assert inner is not None
        params = list(inner.args[0])
        params[5] = 1
        args[1] = [encode_call("exactInputSingle", tuple(params)), *args[1][1:]]

    _replace_call(_txs(b)[-1], change)


def _extra_tx(b: dict[str, Any]) -> None:
    _txs(b).append(dict(_txs(b)[0]))


def _signed_true(b: dict[str, Any]) -> None:
    b["signed"] = True


USDC_TO_ETH_TAMPERS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "swap_recipient": (_swap_recipient, "recipient_mismatch"),
    "swap_amount_in": (_swap_amount, "amount_mismatch"),
    "approve_larger_amount": (_approve_more, "approval_amount_mismatch"),
    "other_target": (_other_target, "target_not_allowed"),
    "native_value_on_approve": (_value_on_approve, "native_value_not_allowed"),
    "later_deadline": (_later_deadline, "deadline_too_late"),
    "fee_amount": (_fee_changed, "service_fee_mismatch"),
    "fee_recipient": (_fee_recipient_changed, "fee_recipient_mismatch"),
    "minimum_output_lowered": (_min_out_lowered, "minimum_output_below_bound"),
    "extra_transaction": (_extra_tx, "unexpected_transaction_sequence"),
    "signed_flag": (_signed_true, "custody_flag_not_false"),
}


@pytest.fixture(scope="module")
def usdc_eth() -> Prepared:
    return asyncio.run(prepare_route(make_env(), "base:USDC->base:ETH", 100))


@pytest.mark.parametrize("name", sorted(USDC_TO_ETH_TAMPERS))
async def test_rehashed_tamper_is_rejected_by_its_rule(usdc_eth: Prepared, name: str) -> None:
    fn, code = USDC_TO_ETH_TAMPERS[name]
    bundle = copy.deepcopy(usdc_eth.bundle)
    fn(bundle)
    rehash(bundle)
    found = errors(usdc_eth, bundle)
    assert code in found, found
    with pytest.raises(BundleRejected):
        assert_bundle_ok(bundle, **usdc_eth.verify_kwargs())


@pytest.mark.parametrize("name", sorted(USDC_TO_ETH_TAMPERS))
async def test_unrehashed_tamper_breaks_a_hash(usdc_eth: Prepared, name: str) -> None:
    fn, _ = USDC_TO_ETH_TAMPERS[name]
    bundle = copy.deepcopy(usdc_eth.bundle)
    fn(bundle)
    assert "payload_sha256_mismatch" in errors(usdc_eth, bundle)


async def test_tampered_payload_hash_alone_is_rejected(usdc_eth: Prepared) -> None:
    bundle = copy.deepcopy(usdc_eth.bundle)
    bundle["payload_sha256"] = "0" * 64
    assert errors(usdc_eth, bundle) == {"payload_sha256_mismatch"}
    bundle = copy.deepcopy(usdc_eth.bundle)
    bundle["unsigned_action"]["safety_receipt"]["payload_binding"]["raw_payloads"][0]["raw_sha256"] = "0" * 64
    bundle["payload_sha256"] = __import__("routequote.core.actions.bundle", fromlist=["x"]).payload_sha256(
        bundle
    )
    assert errors(usdc_eth, bundle) == {"raw_payload_hash_mismatch"}


async def test_eth_input_native_value_only_where_due() -> None:
    p = await prepare_route(make_env(), "base:ETH->base:USDC", 100)
    assert errors(p) == set()
    txs = _txs(p.bundle)
    assert [int(t["value"]) > 0 for t in txs] == [True, True]  # native fee, native swap input
    bundle = copy.deepcopy(p.bundle)
    _txs(bundle)[-1]["value"] = str(int(_txs(bundle)[-1]["value"]) + 1)
    assert "native_value_not_allowed" in errors(p, rehash(bundle))


async def test_wrong_wallet_or_approval_or_summary_is_rejected(usdc_eth: Prepared) -> None:
    other = {"base": "0x4444444444444444444444444444444444444444"}
    assert "sender_mismatch" in errors(usdc_eth, wallets=other)
    stricter = {
        **usdc_eth.approval,
        "minimum_output_base": str(int(usdc_eth.approval["minimum_output_base"]) + 1),
    }
    assert "minimum_output_below_bound" in errors(usdc_eth, approval_v3=stricter)
    smaller = {
        **usdc_eth.approval,
        "maximum_input_base": str(int(usdc_eth.approval["maximum_input_base"]) - 1),
    }
    assert "input_above_approved_maximum" in errors(usdc_eth, approval_v3=smaller)
    assert "bundle_expired" in errors(usdc_eth, now_unix=usdc_eth.now_unix + 181)


async def test_cctp_tampers_rejected() -> None:
    p = await prepare_route(make_env(), "base:USDC->arbitrum:USDC", 100)
    assert errors(p) == set()
    for index, change, code in (
        (2, "0x" + "99" * 20, "recipient_mismatch"),
        (5, None, "max_fee_too_high"),
        (6, 2000, "finality_mismatch"),
        (1, 5, "destination_mismatch"),
    ):
        bundle = copy.deepcopy(p.bundle)

        def edit(args: list[Any], index: int = index, change: Any = change) -> None:
            if index == 2:
                args[2] = b"\x00" * 12 + bytes.fromhex(str(change)[2:])
            elif index == 5:
                args[5] = args[0] - 1
            else:
                args[index] = change

        _replace_call(_txs(bundle)[-1], edit)
        assert code in errors(p, rehash(bundle)), code


async def test_across_output_amount_and_fill_deadline_tampers_rejected() -> None:
    p = await prepare_route(make_env(), "base:USDC->robinhood:USDG", 100)
    assert errors(p) == set()
    bundle = copy.deepcopy(p.bundle)
    _replace_call(_txs(bundle)[-1], lambda a: a.__setitem__(5, a[5] - 1))
    assert "minimum_output_mismatch" in errors(p, rehash(bundle))
    bundle = copy.deepcopy(p.bundle)
    _replace_call(_txs(bundle)[-1], lambda a: a.__setitem__(9, a[9] + 86400))
    assert "deadline_too_late" in errors(p, rehash(bundle))


async def test_oft_refund_and_value_tampers_rejected() -> None:
    p = await prepare_route(make_env(), "robinhood:USDG->solana:USDG", 100)
    assert errors(p) == set()
    bundle = copy.deepcopy(p.bundle)
    _replace_call(_txs(bundle)[-1], lambda a: a.__setitem__(2, "0x9999999999999999999999999999999999999999"))
    assert "refund_address_mismatch" in errors(p, rehash(bundle))
    bundle = copy.deepcopy(p.bundle)
    _txs(bundle)[-1]["value"] = str(10**18)
    assert "native_value_not_allowed" in errors(p, rehash(bundle))


async def test_solana_tampers_rejected() -> None:
    p = await prepare_route(make_env(), "solana:USDC->base:USDC", 100)
    assert errors(p) == set()
    ixs = p.bundle["unsigned_action"]["instructions"]
    assert [ix["programId"][:6] for ix in ixs] == ["ATokenG"[:6], "Tokenk", "CCTPV2"]
    # fee amount
    bundle = copy.deepcopy(p.bundle)
    ix = bundle["unsigned_action"]["instructions"][1]
    data = bytearray(base64.b64decode(ix["data"]))
    struct.pack_into("<Q", data, 1, struct.unpack_from("<Q", data, 1)[0] + 1)
    ix["data"] = base64.b64encode(bytes(data)).decode()
    assert "instruction_mismatch" in errors(p, rehash(bundle))
    # another program
    bundle = copy.deepcopy(p.bundle)
    bundle["unsigned_action"]["instructions"][1]["programId"] = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
    assert "program_not_allowed" in errors(p, rehash(bundle))
    # burn recipient
    bundle = copy.deepcopy(p.bundle)
    ix = bundle["unsigned_action"]["instructions"][2]
    data = bytearray(base64.b64decode(ix["data"]))
    data[40] ^= 0xFF
    ix["data"] = base64.b64encode(bytes(data)).decode()
    assert "recipient_mismatch" in errors(p, rehash(bundle))
    # a different event signer than the caller generated
    assert "signers_mismatch" in errors(p, event_signer_public=str(Pubkey(bytes([7] * 32))))


def test_route_count_sanity() -> None:
    assert len(ROUTES) == 72


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += [prefix + (k,)] + _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += [prefix + (i,)] + _paths(v, prefix + (i,))
    return out


# Safety-relevant fields: a consistent (re-hashed) change to any of them must still be refused.
REHASHED_PREFIXES = (
    ("version",),
    ("route",),
    ("step_index",),
    ("prepared_at",),
    ("expires_at",),
    ("signed",),
    ("submitted",),
    ("server_signing",),
    ("server_submission",),
    ("unsigned_action", "transactions"),
    *(
        (("unsigned_action", k),)
        for k in (
            "sender",
            "recipient",
            "inputAmount",
            "routeFee",
            "feeRecipient",
            "netInputAmount",
            "minimumOutput",
            "deadline",
            "chainId",
            "source",
            "destination",
            "provider",
            "step_index",
            "signed",
            "submitted",
            "version",
            "family",
        )
    ),
    *(
        (("unsigned_action", "safety_receipt", k),)
        for k in ("spend", "approval", "native_value_cap", "custody", "network", "schema")
    ),
    ("unsigned_action", "safety_receipt", "service_fee", "exact_amount_base"),
    ("unsigned_action", "safety_receipt", "service_fee", "recipient"),
    ("unsigned_action", "safety_receipt", "receive", "minimum_amount_base"),
    ("unsigned_action", "safety_receipt", "timing", "action_deadline_unix"),
)


def _mutate(bundle: dict[str, Any], path: tuple[Any, ...], new: Any) -> bool:
    target: Any = bundle
    for key in path[:-1]:
        target = target[key]
    if target[path[-1]] == new and type(target[path[-1]]) is type(new):
        return False
    target[path[-1]] = new
    return True


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.text(max_size=50),
    st.just("0x"),
    st.just({}),
    st.just([]),
    st.just("0x9999999999999999999999999999999999999999"),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_single_mutation_breaks_the_payload_hash_and_never_crashes(
    usdc_eth: Prepared, data: st.DataObject
) -> None:
    # the response-only members (the replay flag, the preflight advice) sit outside the payload hash
    paths = [p for p in _paths(usdc_eth.bundle) if p[0] not in ("idempotent_replay", "preflight")]
    path = data.draw(st.sampled_from(paths))
    bundle = copy.deepcopy(usdc_eth.bundle)
    if _mutate(bundle, path, data.draw(VALUES)):
        found = verify_bundle(bundle, **usdc_eth.verify_kwargs())
        assert "payload_sha256_mismatch" in {f.code for f in found}, path


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_rehashed_mutation_of_a_safety_field_is_refused(usdc_eth: Prepared, data: st.DataObject) -> None:
    paths = [p for p in _paths(usdc_eth.bundle) if any(p[: len(x)] == x for x in REHASHED_PREFIXES)]
    path = data.draw(st.sampled_from(paths))
    new = data.draw(VALUES)
    bundle = copy.deepcopy(usdc_eth.bundle)
    if not _mutate(bundle, path, new):
        return
    with contextlib.suppress(Exception):  # a mutation may make re-hashing itself impossible
        rehash(bundle)
    found = verify_bundle(bundle, **usdc_eth.verify_kwargs())
    assert any(f.severity == "error" for f in found), (path, new)
