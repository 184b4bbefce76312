"""Bridge fees and USD prices from their public sources.

* Circle Iris `GET /v2/burn/USDC/fees/{srcDomain}/{dstDomain}` -> `[{"finalityThreshold": 1000,
  "minimumFee": <bps, may be fractional>, ...}, {"finalityThreshold": 2000, ...}]` (developers.circle.com,
  CCTP "get transfer fee"). The fast fee (threshold <= 1000) is kept per source domain, as thousandths of a bp.
* Across `GET /suggested-fees?inputToken&outputToken&originChainId&destinationChainId&amount` ->
  `{totalRelayFee, relayerCapitalFee, relayerGasFee, lpFee: {pct, total}, timestamp, isAmountTooLow,
  quoteBlock, estimatedFillTimeSec, limits{minDeposit, maxDeposit, ...}, ...}` (docs.across.to; the
  `SuggestedFeesResponse` type of across-protocol/toolkit). `pct` values are 1e18-scaled fractions.
* LayerZero OFT `quoteSend((uint32 dstEid, bytes32 to, uint256 amountLD, uint256 minAmountLD, bytes extraOptions,
  bytes composeMsg, bytes oftCmd), bool payInLzToken) -> (uint256 nativeFee, uint256 lzTokenFee)` by `eth_call`
  on the Robinhood USDG OFT wrapper (LayerZero `IOFT.sol`).
* Chainlink `latestRoundData() -> (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt,
  uint80 answeredInRound)` and `decimals() -> uint8` by `eth_call` (AggregatorV3Interface).
* Pyth Hermes `GET /v2/updates/price/latest?ids[]=<id>&parsed=true` -> `{parsed: [{id, price: {price, conf,
  expo, publish_time}, ...}]}`; value = price x 10^expo (docs.pyth.network, Hermes).

Every reader returns integers (USD with 8 decimals, base units, wei, ppm) and the time its data is from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from math import ceil
from typing import Any

import httpx
from eth_abi.abi import encode

from routequote.core.assets import Token
from routequote.market.jsonrpc import (
    JsonRpcClient,
    RpcCallError,
    RpcRateLimited,
    RpcTimeout,
    RpcTooLarge,
    RpcTransportError,
    SourceDataError,
)
from routequote.market.live_evm import abi_decode, eth_call, parse_block, selector
from routequote.market.upstream import ResponseTooLarge, fetch_bounded, loads

USD_E8_DECIMALS = 8


async def get_json(client: httpx.AsyncClient, url: str, params: Any, timeout: float) -> Any:
    """GET a JSON document (body bounded, `market.upstream`); typed errors as the JSON-RPC client, the
    upstream's own words kept apart for the log. Floats parse as Decimal (no binary rounding)."""
    host = httpx.URL(url).host
    try:
        resp = await fetch_bounded(
            client, "GET", url, params=params, timeout=timeout, headers={"accept": "application/json"}
        )
    except ResponseTooLarge as exc:
        raise RpcTooLarge(f"{host}: {exc}") from exc
    except httpx.TimeoutException as exc:
        raise RpcTimeout(f"no answer from {host} within {timeout:g} s") from exc
    except httpx.HTTPError as exc:
        raise RpcTransportError(f"transport error talking to {host}: {type(exc).__name__}") from exc
    if resp.status_code == 429:
        raise RpcRateLimited(f"{host} rate-limited the request (HTTP 429)")
    if resp.status_code >= 500:
        raise RpcTransportError(f"{host} answered HTTP {resp.status_code}")
    if resp.status_code != 200:
        refused = SourceDataError(f"{host} answered HTTP {resp.status_code}")
        refused.upstream = resp.body[:400].decode("utf-8", "replace")
        raise refused
    try:
        return await loads(resp.body, parse_float=Decimal)
    except ValueError as exc:
        raise SourceDataError(f"{host} answered with a body that is not JSON") from exc


def _int(value: Any, what: str) -> int:
    """An integer from a JSON number or decimal string (no fractional part allowed)."""
    if isinstance(value, bool):
        raise SourceDataError(f"{what}: not a number")
    try:
        d = Decimal(str(value))
    except InvalidOperation as exc:
        raise SourceDataError(f"{what}: {value!r} is not a number") from exc
    if not d.is_finite() or d != d.to_integral_value():
        raise SourceDataError(f"{what}: {value!r} is not an integer")
    return int(d)


# ---- Circle Iris ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CctpFees:
    fast_fee_bps_milli: dict[int, int]  # by source domain: the highest fast fee over its destinations
    as_of_unix: int | None = None  # Iris has no data time: the read time is used


@dataclass
class IrisFeesSource:
    client: httpx.AsyncClient
    base_url: str
    pairs: Sequence[tuple[int, int]]
    timeout: float = 1.5

    async def fetch(self) -> CctpFees:
        import asyncio

        docs = await asyncio.gather(
            *(
                get_json(
                    self.client, f"{self.base_url.rstrip('/')}/v2/burn/USDC/fees/{s}/{d}", None, self.timeout
                )
                for s, d in self.pairs
            )
        )
        fees: dict[int, int] = {}
        for (src, dst), doc in zip(self.pairs, docs, strict=True):
            fees[src] = max(fees.get(src, 0), self.fast_fee_bps_milli(doc, src, dst))
        return CctpFees(fees)

    @staticmethod
    def fast_fee_bps_milli(doc: Any, src: int, dst: int) -> int:
        if not isinstance(doc, list):
            raise SourceDataError(f"Iris fees {src}->{dst}: expected a JSON array")
        fast = [
            e
            for e in doc
            if isinstance(e, dict) and _int(e.get("finalityThreshold"), "finalityThreshold") <= 1000
        ]
        if not fast:
            raise SourceDataError(f"Iris fees {src}->{dst}: no fast-transfer (finalityThreshold 1000) entry")
        fee = fast[0].get("minimumFee")
        try:
            bps = Decimal(str(fee))
        except InvalidOperation as exc:
            raise SourceDataError(f"Iris fees {src}->{dst}: minimumFee {fee!r} is not a number") from exc
        if not bps.is_finite() or bps < 0 or bps > 100:
            raise SourceDataError(f"Iris fees {src}->{dst}: minimumFee {fee!r} bps out of range")
        return ceil(bps * 1000)  # thousandths of a bp, rounded against the caller


# ---- Across --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AcrossRoute:
    origin_chain_id: int
    input_token: str
    output_token: str
    destination_chain_id: int


@dataclass(frozen=True, slots=True)
class AcrossFees:
    lp_fee_ppm: int
    relayer_capital_fee_ppm: int
    relayer_gas_fee_base: int
    fill_seconds: int
    min_deposit_base: int
    max_deposit_base: int
    quote_block: int
    as_of_unix: int | None


def _pct_ppm(obj: Any, what: str) -> int:
    if not isinstance(obj, dict) or "pct" not in obj:
        raise SourceDataError(f"Across suggested-fees: {what}.pct missing")
    pct = _int(obj["pct"], f"{what}.pct")
    if pct < 0 or pct > 10**18:
        raise SourceDataError(f"Across suggested-fees: {what}.pct {pct} out of range")
    return -(-pct // 10**12)  # 1e18 = 100 % -> ppm, rounded up


@dataclass
class AcrossFeesSource:
    client: httpx.AsyncClient
    base_url: str
    routes: Sequence[AcrossRoute]
    amount_base: int  # a representative deposit (base units of the input token)
    timeout: float = 1.5

    async def fetch(self) -> AcrossFees:
        import asyncio

        docs = await asyncio.gather(
            *(
                get_json(
                    self.client,
                    f"{self.base_url.rstrip('/')}/suggested-fees",
                    {
                        "inputToken": r.input_token,
                        "outputToken": r.output_token,
                        "originChainId": r.origin_chain_id,
                        "destinationChainId": r.destination_chain_id,
                        "amount": str(self.amount_base),
                    },
                    self.timeout,
                )
                for r in self.routes
            )
        )
        parsed = [self.parse(doc) for doc in docs]
        # one model for every origin: the most expensive answer, the narrowest limits, the oldest time
        times = [p.as_of_unix for p in parsed if p.as_of_unix is not None]
        return AcrossFees(
            lp_fee_ppm=max(p.lp_fee_ppm for p in parsed),
            relayer_capital_fee_ppm=max(p.relayer_capital_fee_ppm for p in parsed),
            relayer_gas_fee_base=max(p.relayer_gas_fee_base for p in parsed),
            fill_seconds=max(p.fill_seconds for p in parsed),
            min_deposit_base=max(p.min_deposit_base for p in parsed),
            max_deposit_base=min(p.max_deposit_base for p in parsed),
            quote_block=min(p.quote_block for p in parsed),
            as_of_unix=min(times) if times else None,
        )

    @staticmethod
    def parse(doc: Any) -> AcrossFees:
        if not isinstance(doc, dict):
            raise SourceDataError("Across suggested-fees: expected a JSON object")
        gas = doc.get("relayerGasFee")
        if not isinstance(gas, dict) or "total" not in gas:
            raise SourceDataError("Across suggested-fees: relayerGasFee.total missing")
        limits = doc.get("limits")
        if not isinstance(limits, dict):
            raise SourceDataError("Across suggested-fees: limits missing")
        fill = doc.get("estimatedFillTimeSec")
        return AcrossFees(
            lp_fee_ppm=_pct_ppm(doc.get("lpFee"), "lpFee"),
            relayer_capital_fee_ppm=_pct_ppm(doc.get("relayerCapitalFee"), "relayerCapitalFee"),
            relayer_gas_fee_base=_int(gas["total"], "relayerGasFee.total"),
            fill_seconds=_int(fill, "estimatedFillTimeSec") if fill is not None else 0,
            min_deposit_base=_int(limits.get("minDeposit"), "limits.minDeposit"),
            max_deposit_base=_int(limits.get("maxDeposit"), "limits.maxDeposit"),
            quote_block=_int(doc.get("quoteBlock", 0), "quoteBlock"),
            as_of_unix=_int(doc["timestamp"], "timestamp") if "timestamp" in doc else None,
        )


# ---- LayerZero OFT -------------------------------------------------------------------------------

SEL_QUOTE_SEND = selector("quoteSend((uint32,bytes32,uint256,uint256,bytes,bytes,bytes),bool)")


@dataclass(frozen=True, slots=True)
class OftFee:
    native_fee_wei: int
    block_number: int
    as_of_unix: int


@dataclass
class OftQuoteSource:
    rpc: JsonRpcClient
    oft_address: str
    dst_eid: int
    amount_ld: int
    recipient32: bytes = b"\x11" * 32  # any non-zero recipient: the fee does not depend on it
    extra_options: bytes = b""  # the OApp's enforced options apply

    def calldata(self) -> str:
        send_param = (
            self.dst_eid,
            self.recipient32,
            self.amount_ld,
            self.amount_ld,
            self.extra_options,
            b"",
            b"",
        )
        args = encode(["(uint32,bytes32,uint256,uint256,bytes,bytes,bytes)", "bool"], [send_param, False])
        return SEL_QUOTE_SEND + args.hex()

    async def fetch(self) -> OftFee:
        head, res = await self.rpc.batch(
            [
                ("eth_getBlockByNumber", ["latest", False]),
                eth_call(self.oft_address, self.calldata(), "latest"),
            ],
            return_exceptions=True,
        )
        block = parse_block(head)
        if isinstance(res, RpcCallError):
            raise SourceDataError(f"OFT quoteSend reverted: {res.rpc_message}")
        native, _lz = abi_decode(["uint256", "uint256"], res, "quoteSend")
        if native <= 0:
            raise SourceDataError("OFT quoteSend returned a zero native fee")
        return OftFee(int(native), block.number, block.timestamp)


# ---- Chainlink -----------------------------------------------------------------------------------

SEL_LATEST_ROUND_DATA = selector("latestRoundData()")
SEL_DECIMALS = selector("decimals()")


@dataclass(frozen=True, slots=True)
class FeedPrices:
    prices_usd_e8: dict[Token, int]
    as_of_unix: int  # the oldest update among the feeds read
    key: int  # block number / publish time


def to_e8(value: int, decimals: int) -> int:
    if decimals >= USD_E8_DECIMALS:
        return int(value // 10 ** (decimals - USD_E8_DECIMALS))
    return int(value * 10 ** (USD_E8_DECIMALS - decimals))


@dataclass
class ChainlinkSource:
    rpc: JsonRpcClient
    feeds: dict[Token, str]  # token -> aggregator (proxy) address, all on this RPC's chain

    async def fetch(self) -> FeedPrices:
        tokens = list(self.feeds)
        calls = [("eth_getBlockByNumber", ["latest", False])]
        for t in tokens:
            calls += [
                eth_call(self.feeds[t], SEL_DECIMALS, "latest"),
                eth_call(self.feeds[t], SEL_LATEST_ROUND_DATA, "latest"),
            ]
        res = await self.rpc.batch(calls, return_exceptions=True)
        block = parse_block(res[0])
        prices: dict[Token, int] = {}
        oldest = block.timestamp
        for i, t in enumerate(tokens):
            dec_r, round_r = res[1 + 2 * i], res[2 + 2 * i]
            for r in (dec_r, round_r):
                if isinstance(r, RpcCallError):
                    raise SourceDataError(f"Chainlink {t.value}/USD: {r.rpc_message}")
            (dec,) = abi_decode(["uint8"], dec_r, f"Chainlink {t.value}/USD decimals")
            _rid, answer, _started, updated, _air = abi_decode(
                ["uint80", "int256", "uint256", "uint256", "uint80"], round_r, f"Chainlink {t.value}/USD"
            )
            if answer <= 0 or updated == 0:
                raise SourceDataError(
                    f"Chainlink {t.value}/USD: answer {answer} / updatedAt {updated} is not valid"
                )
            prices[t] = to_e8(int(answer), int(dec))
            oldest = min(oldest, int(updated))
        return FeedPrices(prices, oldest, block.number)


# ---- Pyth Hermes ---------------------------------------------------------------------------------

PYTH_FEED_IDS = {
    Token.SOL: "ef0d8b6fda2ceba41da15d4095d1da392a0d2f8ed0c6c7bc0f4cfac8c280b56d",
    Token.ETH: "ff61491a931112ddf1bd8147cd1b641375f79f5825126d665480874634fd0ace",
    Token.USDC: "eaa020c61cc479712813461ce153894a96a6c00b21ed0cfc2798d1f9a9e9c94a",
}


@dataclass
class PythHermesSource:
    client: httpx.AsyncClient
    base_url: str
    tokens: Sequence[Token]
    timeout: float = 1.5

    async def fetch(self) -> FeedPrices:
        ids = [PYTH_FEED_IDS[t] for t in self.tokens]
        doc = await get_json(
            self.client,
            f"{self.base_url.rstrip('/')}/v2/updates/price/latest",
            [("ids[]", "0x" + i) for i in ids] + [("parsed", "true")],
            self.timeout,
        )
        return self.parse(doc, self.tokens)

    @staticmethod
    def parse(doc: Any, tokens: Sequence[Token]) -> FeedPrices:
        if not isinstance(doc, dict) or not isinstance(doc.get("parsed"), list):
            raise SourceDataError("Pyth Hermes: response lacks the parsed price list")
        by_id = {
            str(p.get("id", "")).lower().removeprefix("0x"): p for p in doc["parsed"] if isinstance(p, dict)
        }
        prices: dict[Token, int] = {}
        oldest: int | None = None
        for t in tokens:
            p = by_id.get(PYTH_FEED_IDS[t])
            if p is None or not isinstance(p.get("price"), dict):
                raise SourceDataError(f"Pyth Hermes: no price for {t.value}/USD")
            px = p["price"]
            price, expo = _int(px.get("price"), "price.price"), _int(px.get("expo"), "price.expo")
            when = _int(px.get("publish_time"), "price.publish_time")
            if price <= 0 or not -30 <= expo <= 10:
                raise SourceDataError(f"Pyth Hermes: {t.value}/USD price {price}e{expo} is not valid")
            shift = expo + USD_E8_DECIMALS
            prices[t] = price * 10**shift if shift >= 0 else price // 10 ** (-shift)
            oldest = when if oldest is None else min(oldest, when)
        assert oldest is not None
        return FeedPrices(prices, oldest, oldest)
