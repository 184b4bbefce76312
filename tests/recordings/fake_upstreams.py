"""Upstreams for the live-market tests, served to the real httpx client through `httpx.MockTransport`.

Hosts (use them as the LiveConfig URLs):

* `rpc-base.test`, `rpc-arbitrum.test`, `rpc-robinhood.test`: an EVM JSON-RPC node (single and batch
  requests). Uniswap v3 pools answer `slot0 / liquidity / tickSpacing / fee / token0 / tickBitmap / ticks`
  from a ClmmPool (the embedded snapshot's pools by default); Chainlink feeds and the OFT answer from
  `evm_eth_call.json`; `eth_getBlockByNumber` gives a block whose time follows the test clock.
* `rpc-solana.test`: `getMultipleAccounts` assembled from `solana_getMultipleAccounts.json`.
* `iris.test`, `across.test/api`, `hermes.test`: the recorded Iris / Across / Pyth responses.

Faults per host (`faults[host] = ...`): `timeout` (httpx.ReadTimeout), `hang` (never answers; under the
market's `source_deadline=fake.deadline` the fetch waiting for it times out at once, see `deadline`),
`garbage` (an HTML body with status 200), `http500`, `429`, `stale` (EVM: a block an hour old;
Solana: a slot lower than the last one served; Pyth: an hour-old publish time).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import httpx
from eth_abi.abi import decode, encode

from routequote.core.assets import ASSETS, Chain
from routequote.core.clmm import ClmmPool
from routequote.market.live_config import LiveConfig
from routequote.market.live_evm import (
    SEL_FEE,
    SEL_LIQUIDITY,
    SEL_SLOT0,
    SEL_TICK_BITMAP,
    SEL_TICK_SPACING,
    SEL_TICKS,
    SEL_TOKEN0,
)
from routequote.market.snapshot import EmbeddedSnapshot

HERE = Path(__file__).resolve().parent
EVM_HOSTS = {
    "rpc-base.test": Chain.BASE,
    "rpc-arbitrum.test": Chain.ARBITRUM,
    "rpc-robinhood.test": Chain.ROBINHOOD,
}


def load(name: str) -> Any:
    return json.loads((HERE / name).read_text())


def live_config(**overrides: Any) -> LiveConfig:
    sol = load("solana_getMultipleAccounts.json")["pool_accounts"]
    kw: dict[str, Any] = {
        "rpc_urls": {
            Chain.SOLANA: "http://rpc-solana.test",
            Chain.BASE: "http://rpc-base.test",
            Chain.ARBITRUM: "http://rpc-arbitrum.test",
            Chain.ROBINHOOD: "http://rpc-robinhood.test",
        },
        "iris_url": "http://iris.test",
        "across_url": "http://across.test/api",
        "hermes_url": "http://hermes.test",
        "solana_pools": dict(sol),
    }
    kw.update(overrides)
    return LiveConfig(**kw)


# the time the recordings were made (tests/recordings/*.json): 2026-11-20 12:00 UTC
RECORDED_UNIX = 1_795_176_000
# the expiry of the source deadline a fetch runs under (`FakeUpstreams.deadline`), seen by its requests
_EXPIRE: ContextVar[Callable[[], None] | None] = ContextVar("fake_upstream_deadline", default=None)
# bounds a fetch under `FakeUpstreams.deadline` that never reaches a hanging request (a bug, not a timing)
HANG_BOUND_SECONDS = 60.0
# A request is answered once no other arrived for this many turns of the event loop (at most SETTLE_LIMIT in
# all): the requests a fetch sends together are all in flight before any answer, counted in turns, not time
SETTLE_TURNS, SETTLE_LIMIT = 20, 2_000


def _word(v: int) -> str:
    return "0x" + encode(["uint256"], [v]).hex()


class FakeUpstreams:
    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.faults: dict[str, str] = {}
        self.requests: Counter[str] = Counter()
        self.inflight = 0
        self.max_inflight = 0
        self.started = 0  # requests so far (the settling below watches it)
        self.deadlines_ended = 0  # source deadlines a hanging request ended (`deadline`)
        self.blocks = {c: 30_000_000 + i * 1000 for i, c in enumerate(EVM_HOSTS.values())}
        snap = EmbeddedSnapshot().current()
        self.evm_pools: dict[Chain, dict[str, tuple[ClmmPool, str]]] = {}
        for p in snap.pools.values():
            if p.clmm.venue == "uniswap_v3" and p.address:
                a0 = ASSETS[p.token0]
                chain = Chain(p.pool_id.split(":")[0])
                self.evm_pools.setdefault(chain, {})[p.address.lower()] = (
                    p.clmm,
                    a0.wrapped_address or a0.address or "",
                )
        self.eth_calls = load("evm_eth_call.json")["results"]
        self.solana = load("solana_getMultipleAccounts.json")
        self.slot = int(self.solana["context"]["slot"])
        self.iris = load("iris_get_burn_usdc_fees.json")["responses"]
        self.across = load("across_get_suggested_fees.json")["responses"]
        self.pyth = load("pyth_get_updates_price_latest.json")["response"]

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    def _since_recorded(self) -> int:
        """Seconds the test clock stands past the recordings' time: the recorded Pyth and Across answers are
        replayed as of the test clock (as the EVM blocks are), so a clock that follows the wall clock through a
        long run on a busy machine does not age them past their bounds (Pyth's is 120 s)."""
        return int(self.clock.now().timestamp()) - RECORDED_UNIX

    @contextlib.asynccontextmanager
    async def deadline(self, seconds: float) -> AsyncIterator[None]:
        """The market's source deadline (`LiveMarket(source_deadline=...)`) kept by these upstreams instead of
        the wall clock: it passes when one of the fetch's requests hangs (fault `hang`), and never while an
        answer is on its way, however slowly a busy machine runs this loop. `seconds` (the configured source
        timeout) is what a real upstream would get; HANG_BOUND_SECONDS only bounds a test that went wrong."""
        loop = asyncio.get_running_loop()
        inside = True

        def expire() -> None:
            if inside:  # a request left behind by a finished fetch ends nothing
                self.deadlines_ended += 1
                cut.reschedule(loop.time())

        async with asyncio.timeout(HANG_BOUND_SECONDS) as cut:
            token = _EXPIRE.set(expire)
            try:
                yield
            finally:
                inside = False
                _EXPIRE.reset(token)

    async def settled(self) -> None:
        """Until no request has arrived for SETTLE_TURNS turns of the loop, so concurrent requests overlap as
        on a network. A busy machine slows the senders and these turns alike; a wall-clock pause did not."""
        seen, turns = -1, 0
        while seen != self.started and turns < SETTLE_LIMIT:
            seen = self.started
            for _ in range(SETTLE_TURNS):
                await asyncio.sleep(0)
            turns += SETTLE_TURNS

    async def handler(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        self.requests[host] += 1
        self.started += 1
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            await self.settled()
            fault = self.faults.get(host)
            if fault == "timeout":
                raise httpx.ReadTimeout("simulated read timeout", request=request)
            if fault == "hang":
                expire = _EXPIRE.get()
                if expire is not None:
                    expire()  # the source's time is up: nothing will come
                await asyncio.sleep(30)
            if fault == "garbage":
                return httpx.Response(200, content=b"<html><body>502 Bad Gateway</body></html>")
            if fault == "http500":
                return httpx.Response(500, json={"message": "internal error"})
            if fault == "429":
                return httpx.Response(429, json={"message": "Too Many Requests"})
            stale = fault == "stale"
            if host in EVM_HOSTS:
                return self._jsonrpc(request, lambda m, p: self._evm(EVM_HOSTS[host], m, p, stale))
            if host == "rpc-solana.test":
                return self._jsonrpc(request, lambda m, p: self._solana(m, p, stale))
            if host == "iris.test":
                parts = request.url.path.strip("/").split("/")  # v2/burn/USDC/fees/{s}/{d}
                body = self.iris.get(f"{parts[-2]}/{parts[-1]}")
                return (
                    httpx.Response(200, json=body)
                    if body is not None
                    else httpx.Response(404, json={"message": "no route"})
                )
            if host == "across.test":
                origin = request.url.params.get("originChainId", "")
                body = self.across.get(origin)
                if body is None:
                    return httpx.Response(400, json={"message": "Unsupported route"})
                if "timestamp" in body:
                    body = {**body, "timestamp": str(int(body["timestamp"]) + self._since_recorded())}
                return httpx.Response(200, json=body)
            if host == "hermes.test":
                body = copy.deepcopy(self.pyth)
                for p in body["parsed"]:
                    p["price"]["publish_time"] += self._since_recorded() - (3600 if stale else 0)
                return httpx.Response(200, json=body)
            return httpx.Response(404, json={"message": f"unknown host {host}"})
        finally:
            self.inflight -= 1

    # ---- JSON-RPC --------------------------------------------------------------------------------------

    def _jsonrpc(self, request: httpx.Request, answer: Any) -> httpx.Response:
        payload = json.loads(request.content)

        def one(req: dict[str, Any]) -> dict[str, Any]:
            try:
                return {
                    "jsonrpc": "2.0",
                    "id": req["id"],
                    "result": answer(req["method"], req.get("params", [])),
                }
            except _Revert as e:
                return {
                    "jsonrpc": "2.0",
                    "id": req["id"],
                    "error": {"code": 3, "message": f"execution reverted: {e}"},
                }

        if isinstance(payload, list):
            return httpx.Response(200, json=[one(r) for r in payload])
        return httpx.Response(200, json=one(payload))

    def _evm(self, chain: Chain, method: str, params: list[Any], stale: bool) -> Any:
        if method == "eth_getBlockByNumber":
            n = self.blocks[chain]
            ts = int(self.clock.now().timestamp()) - (3600 if stale else 1)
            return {
                "number": hex(n),
                "hash": "0x" + hashlib.sha256(f"{chain}{n}".encode()).hexdigest(),
                "timestamp": hex(ts),
            }
        if method != "eth_call":
            raise _Revert(f"unsupported method {method}")
        to, data = params[0]["to"].lower(), params[0]["data"]
        pool = self.evm_pools.get(chain, {}).get(to)
        if pool is not None:
            return self._pool_call(pool[0], pool[1], data)
        for r in self.eth_calls:
            if r["chain"] == chain.value and r["to"].lower() == to and data.startswith(r["data"]):
                return r["result"]
        raise _Revert("no contract")

    @staticmethod
    def _pool_call(pool: ClmmPool, token0: str, data: str) -> str:
        sel, args = data[:10], bytes.fromhex(data[10:])
        if sel == SEL_SLOT0:
            return (
                "0x"
                + encode(
                    ["uint160", "int24", "uint16", "uint16", "uint16", "uint8", "bool"],
                    [pool.sqrt_price, pool.tick_current, 0, 1, 1, 0, True],
                ).hex()
            )
        if sel == SEL_LIQUIDITY:
            return _word(pool.liquidity)
        if sel == SEL_TICK_SPACING:
            return "0x" + encode(["int24"], [pool.tick_spacing]).hex()
        if sel == SEL_FEE:
            return _word(pool.fee_pips)
        if sel == SEL_TOKEN0:
            return "0x" + encode(["address"], [token0]).hex()
        if sel == SEL_TICK_BITMAP:
            (word,) = decode(["int16"], args)
            bits = 0
            for t, _ in pool.ticks:
                c = t // pool.tick_spacing
                if c >> 8 == word:
                    bits |= 1 << (c & 255)
            return _word(bits)
        if sel == SEL_TICKS:
            (tick,) = decode(["int24"], args)
            net = dict(pool.ticks).get(tick, 0)
            return (
                "0x"
                + encode(
                    ["uint128", "int128", "uint256", "uint256", "int56", "uint160", "uint32", "bool"],
                    [abs(net), net, 0, 0, 0, 0, 0, net != 0],
                ).hex()
            )
        raise _Revert("unknown selector")

    def _solana(self, method: str, params: list[Any], stale: bool) -> Any:
        if method != "getMultipleAccounts":
            raise _Revert(f"unsupported method {method}")
        keys, opts = params[0], params[1]
        assert opts["encoding"] == "base64"
        self.slot += -5 if stale else 3
        accounts = self.solana["accounts"]
        return {
            "context": {"apiVersion": self.solana["context"]["apiVersion"], "slot": self.slot},
            "value": [accounts.get(k) for k in keys],
        }


class _Revert(Exception):
    pass


def pin_solana_pools(fake: FakeUpstreams, raydium: bool = True) -> dict[str, str]:
    """Move the recorded Orca pool (and its tick arrays) to the pinned Whirlpool address and, with `raydium`,
    add the recorded pinned Raydium SOL/USDC pool (`pinned_raydium`: pool, AmmConfig, tick arrays and bitmap
    extension at their pinned PDAs). Returns the pool accounts a live config then names."""
    from routequote.core.actions import solana_swaps as sw
    from routequote.market.live_solana import tick_array_address

    old = fake.solana["pool_accounts"][sw.ORCA_USDG_USDC.pool_id]
    accounts = dict(fake.solana["accounts"])
    accounts[sw.ORCA_USDG_USDC.whirlpool] = accounts.pop(old)
    for start in range(-88 * 20, 88 * 20, 88):
        src = tick_array_address("orca_whirlpool", old, start)
        if src in accounts:
            accounts[tick_array_address("orca_whirlpool", sw.ORCA_USDG_USDC.whirlpool, start)] = accounts.pop(
                src
            )
    pools = dict(fake.solana["pool_accounts"])
    pools[sw.ORCA_USDG_USDC.pool_id] = sw.ORCA_USDG_USDC.whirlpool
    if raydium:
        accounts.update(fake.solana["pinned_raydium"]["accounts"])
        pools[sw.RAYDIUM_SOL_USDC.pool_id] = sw.RAYDIUM_SOL_USDC.pool
    fake.solana = {**fake.solana, "accounts": accounts}
    return pools


class WaveCountingUpstreams(FakeUpstreams):
    """The same upstreams, each answer held `delay_seconds` more (a network's latency, for the bench), and every
    request numbered by its wave: a request is in wave n+1 when the latest wave that had finished (some answer
    of it was back) before it was sent is n. Requests sent together are one wave (none is answered before all
    are sent: `settled`); a request that needed an earlier answer is a later one."""

    def __init__(self, clock: Any, delay_seconds: float = 0.05) -> None:
        super().__init__(clock)
        self.delay_seconds = delay_seconds
        self.waves = 0
        self.requests_by_wave: Counter[int] = Counter()
        self._finished = 0

    async def handler(self, request: httpx.Request) -> httpx.Response:
        wave = self._finished + 1
        self.waves = max(self.waves, wave)
        self.requests_by_wave[wave] += 1
        try:
            await asyncio.sleep(self.delay_seconds)
            return await super().handler(request)
        finally:
            self._finished = max(self._finished, wave)
