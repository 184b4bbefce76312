"""Parsers of the bridge fee and price sources: exact integer conversions and refusals of bad data."""

from __future__ import annotations

from decimal import Decimal

import pytest
from tests.recordings.fake_upstreams import load

from routequote.core.assets import Token
from routequote.market.jsonrpc import SourceDataError
from routequote.market.live_bridges import (
    AcrossFeesSource,
    IrisFeesSource,
    OftQuoteSource,
    PythHermesSource,
    to_e8,
)


@pytest.mark.parametrize(
    ("fee", "milli"),
    [
        (1, 1000),
        (Decimal("1.3"), 1300),
        (Decimal("1.2345"), 1235),
        (0, 0),
        (Decimal("0.0001"), 1),
        ("1.3", 1300),
    ],
)
def test_iris_fast_fee_to_thousandths_of_a_bp_rounded_up(fee: object, milli: int) -> None:
    doc = [{"finalityThreshold": 2000, "minimumFee": 0}, {"finalityThreshold": 1000, "minimumFee": fee}]
    assert IrisFeesSource.fast_fee_bps_milli(doc, 6, 5) == milli


@pytest.mark.parametrize(
    "doc",
    [
        {},
        [],
        [{"finalityThreshold": 2000, "minimumFee": 0}],
        [{"finalityThreshold": 1000, "minimumFee": "abc"}],
        [{"finalityThreshold": 1000, "minimumFee": -1}],
        [{"finalityThreshold": 1000, "minimumFee": "NaN"}],
    ],
)
def test_iris_rejects_malformed_documents(doc: object) -> None:
    with pytest.raises(SourceDataError):
        IrisFeesSource.fast_fee_bps_milli(doc, 6, 5)


def test_across_recorded_response_parses_to_ppm_and_base_units() -> None:
    fees = AcrossFeesSource.parse(load("across_get_suggested_fees.json")["responses"]["8453"])
    assert (fees.lp_fee_ppm, fees.relayer_capital_fee_ppm, fees.relayer_gas_fee_base) == (100, 400, 15210)
    assert (fees.fill_seconds, fees.min_deposit_base, fees.quote_block) == (4, 134210, 23812345)
    assert fees.as_of_unix == 1795176000 - 12


def test_across_pct_rounds_up_and_bad_documents_are_refused() -> None:
    doc = load("across_get_suggested_fees.json")["responses"]["8453"]
    doc = {**doc, "lpFee": {"pct": "1000000000001", "total": "1"}}  # 1.000000000001 ppm
    assert AcrossFeesSource.parse(doc).lp_fee_ppm == 2
    for broken in (
        {**doc, "lpFee": {"total": "1"}},
        {**doc, "relayerGasFee": {"pct": "0"}},
        {**doc, "limits": None},
        {**doc, "lpFee": {"pct": "1.5"}},
        {**doc, "lpFee": {"pct": str(2 * 10**18)}},
    ):
        with pytest.raises(SourceDataError):
            AcrossFeesSource.parse(broken)


def test_pyth_exact_e8_conversion_and_refusals() -> None:
    doc = load("pyth_get_updates_price_latest.json")["response"]
    prices = PythHermesSource.parse(doc, [Token.SOL])
    assert prices.prices_usd_e8 == {Token.SOL: 15243217000} and prices.as_of_unix == 1795176000 - 3
    p = doc["parsed"][0]
    assert (
        PythHermesSource.parse(
            {"parsed": [{**p, "price": {**p["price"], "price": "1524321", "expo": -4}}]}, [Token.SOL]
        ).prices_usd_e8[Token.SOL]
        == 15243210000
    )
    assert (
        PythHermesSource.parse(
            {"parsed": [{**p, "price": {**p["price"], "price": "152432171234", "expo": -11}}]}, [Token.SOL]
        ).prices_usd_e8[Token.SOL]
        == 152432171
    )
    for bad in (
        {"parsed": []},
        {"parsed": [{**p, "price": {**p["price"], "price": "-5"}}]},
        {"x": 1},
        {"parsed": [{**p, "price": {**p["price"], "price": "1.5"}}]},
    ):
        with pytest.raises(SourceDataError):
            PythHermesSource.parse(bad, [Token.SOL])


def test_chainlink_decimals_to_e8() -> None:
    assert to_e8(312055000000, 8) == 312055000000
    assert to_e8(3120550000000000000000, 18) == 312055000000
    assert to_e8(312055, 2) == 312055000000


def test_oft_quote_send_calldata_layout() -> None:
    from eth_abi.abi import decode

    src = OftQuoteSource(
        rpc=None,
        oft_address="0x0d54755f5106BfdB43f7a35f5D49a23F940628d1",
        dst_eid=30168,  # type: ignore[arg-type]
        amount_ld=1_000_000_000,
    )
    data = src.calldata()
    from eth_utils.abi import function_signature_to_4byte_selector

    sel = function_signature_to_4byte_selector(
        "quoteSend((uint32,bytes32,uint256,uint256,bytes,bytes,bytes),bool)"
    )
    assert data[2:10] == sel.hex()
    (param, pay_in_lz) = decode(
        ["(uint32,bytes32,uint256,uint256,bytes,bytes,bytes)", "bool"], bytes.fromhex(data[10:])
    )
    assert param[0] == 30168 and param[2] == param[3] == 1_000_000_000 and pay_in_lz is False
