"""Uniswap v3 pool state over JSON-RPC, pinned to one block.

What is read, per pool (UniswapV3Pool, `@uniswap/v3-core` `contracts/UniswapV3Pool.sol` and
`contracts/interfaces/pool/IUniswapV3PoolState.sol`):

* `slot0() -> (uint160 sqrtPriceX96, int24 tick, uint16 observationIndex, uint16 observationCardinality,
  uint16 observationCardinalityNext, uint8 feeProtocol, bool unlocked)`
* `liquidity() -> uint128` (in-range liquidity)
* `tickSpacing() -> int24`, `fee() -> uint24`, `token0() -> address` (immutable: read once, then cached)
* `tickBitmap(int16 wordPosition) -> uint256` for the words around the current tick (`TickBitmap.sol`:
  compressed = floor(tick / tickSpacing), word = compressed >> 8, bit = compressed & 255)
* `ticks(int24) -> (uint128 liquidityGross, int128 liquidityNet, uint256 feeGrowthOutside0X128,
  uint256 feeGrowthOutside1X128, int56 tickCumulativeOutside,
  uint160 secondsPerLiquidityOutsideX128, uint32 secondsOutside, bool initialized)` for each set bit.

Round trips per refresh, one chain:

1. One batch: `eth_getBlockByNumber("latest")`, the per-pool calls at `latest` (plus the bitmap words and
   initialized ticks of the previous window; on a cold start, those of the snapshot's hint), and
   `eth_getBlockByNumber("latest")`
   again. When both brackets name the same block hash, every call in between read that block (the batch is
   pinned). If the head moved, the calls are repeated pinned to the first bracket's block number.
2. Only when the window moved (or on a cold start): the missing bitmap words, pinned to that block.
3. Only when new initialized ticks appeared: their `ticks(i)`, pinned to that block.

In the steady state, and on a cold start while the pools still hold the snapshot's ticks, a refresh therefore
costs one HTTP round trip per chain.

The tick window is `words_each_side` bitmap words either side of the current word (with spacing 10 and
2 words: +-5,120 ticks, a price move of about +-67 %). Liquidity beyond the window is not visible: a swap that
would leave the window is outside what a quote of at most USD 1,000 can do on these pools.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eth_abi.abi import decode
from eth_utils.abi import function_signature_to_4byte_selector
from eth_utils.address import to_checksum_address

from routequote.core.assets import Chain
from routequote.core.clmm import ClmmPool
from routequote.core.market import PoolState
from routequote.market.jsonrpc import JsonRpcClient, RpcCallError, SourceDataError

INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1


def selector(signature: str) -> str:
    return "0x" + function_signature_to_4byte_selector(signature).hex()


SEL_SLOT0 = selector("slot0()")
SEL_LIQUIDITY = selector("liquidity()")
SEL_TICK_SPACING = selector("tickSpacing()")
SEL_FEE = selector("fee()")
SEL_TOKEN0 = selector("token0()")
SEL_TICK_BITMAP = selector("tickBitmap(int16)")
SEL_TICKS = selector("ticks(int24)")


def eth_call(to: str, data: str, block: str) -> tuple[str, list[Any]]:
    return "eth_call", [{"to": to, "data": data}, block]


def _hexbytes(result: Any, what: str) -> bytes:
    if not isinstance(result, str) or not result.startswith("0x"):
        raise SourceDataError(f"{what}: eth_call result is not hex data")
    try:
        return bytes.fromhex(result[2:])
    except ValueError as exc:
        raise SourceDataError(f"{what}: eth_call result is not hex data") from exc


def abi_decode(types: Sequence[str], result: Any, what: str) -> tuple[Any, ...]:
    raw = _hexbytes(result, what)
    if not raw:
        raise SourceDataError(f"{what}: empty eth_call result (no contract at the address?)")
    try:
        return tuple(decode(list(types), raw))
    except Exception as exc:  # eth_abi raises several decoding error types
        raise SourceDataError(f"{what}: cannot ABI-decode the eth_call result") from exc


def static_words(result: Any, n: int, what: str) -> list[int]:
    """The first `n` 32-byte words of a result of static ABI types, as unsigned ints (fast path for the
    hot calls: slot0, liquidity, tickBitmap, ticks; eth_abi costs ~100 us per call)."""
    raw = _hexbytes(result, what)
    if len(raw) < 32 * n:
        raise SourceDataError(f"{what}: eth_call result is {len(raw)} bytes, expected at least {32 * n}")
    return [int.from_bytes(raw[32 * i : 32 * i + 32], "big") for i in range(n)]


def _signed(word: int, bits: int) -> int:
    """Two's-complement value of an ABI-encoded intN word, checked to be in range (as eth_abi does)."""
    v = word - (1 << 256) if word >> 255 else word
    if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
        raise SourceDataError(f"int{bits} value out of range")
    return v


def _unsigned(word: int, bits: int) -> int:
    if word >> bits:
        raise SourceDataError(f"uint{bits} value out of range")
    return word


def arg_word(value: int) -> str:
    """One ABI-encoded static int argument (two's complement), as hex without 0x."""
    return (value % (1 << 256)).to_bytes(32, "big").hex()


def compress(tick: int, spacing: int) -> int:
    return tick // spacing  # Python floor division == TickBitmap's round-towards-negative-infinity


def word_of(tick: int, spacing: int) -> int:
    return compress(tick, spacing) >> 8


def ticks_in_word(word: int, bitmap: int, spacing: int) -> list[int]:
    out = []
    while bitmap:
        low = bitmap & -bitmap
        bit = low.bit_length() - 1
        out.append((word * 256 + bit) * spacing)
        bitmap ^= low
    return out


@dataclass(frozen=True, slots=True)
class EvmPoolSpec:
    pool_id: str  # chain:uniswap_v3:TOKENA-TOKENB
    address: str
    token0: str  # asset key of the pool's token0
    token1: str
    token0_address: str | None = None  # when set, token0() must equal it
    hint: tuple[int, int] | None = (
        None  # (tick, tick spacing) expected on a cold start, e.g. from the snapshot
    )
    # initialized ticks expected near the hinted tick (the snapshot's): a cold read asks for them in its first
    # batch, so it needs no second round trip while the pool still has them
    hint_ticks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class BlockRef:
    number: int
    hash: str
    timestamp: int


@dataclass(frozen=True, slots=True)
class EvmPoolsState:
    chain: Chain
    block: BlockRef
    pools: dict[str, PoolState]
    round_trips: int


def parse_block(result: Any) -> BlockRef:
    if not isinstance(result, dict):
        raise SourceDataError("eth_getBlockByNumber: not a block object")
    try:
        return BlockRef(int(result["number"], 16), str(result["hash"]), int(result["timestamp"], 16))
    except (KeyError, TypeError, ValueError) as exc:
        raise SourceDataError("eth_getBlockByNumber: block lacks number / hash / timestamp") from exc


@dataclass
class _Static:
    spacing: int
    fee: int


@dataclass
class _Memory:
    words: tuple[int, ...] = ()
    ticks: tuple[int, ...] = ()


@dataclass
class UniswapV3PoolsSource:
    """All Uniswap v3 pools of one chain, read in one pinned batch (see the module docstring)."""

    chain: Chain
    rpc: JsonRpcClient
    specs: Sequence[EvmPoolSpec]
    words_each_side: int = 2
    _static: dict[str, _Static] = field(default_factory=dict)
    _memory: dict[str, _Memory] = field(default_factory=dict)

    def _window(self, tick: int, spacing: int) -> tuple[int, ...]:
        w = word_of(tick, spacing)
        lo, hi = max(INT16_MIN, w - self.words_each_side), min(INT16_MAX, w + self.words_each_side)
        return tuple(range(lo, hi + 1))

    def _first_memory(self, spec: EvmPoolSpec) -> _Memory:
        """Before the first read: the bitmap words around the hinted tick and the hinted initialized ticks in
        them (a cold refresh is then one round trip while the pool still has those ticks; a tick the bitmap
        shows that was not hinted costs the ticks round trip, never a wrong price)."""
        mem = self._memory.get(spec.pool_id)
        if mem is None:
            if spec.hint:
                words = self._window(*spec.hint)
                spacing = spec.hint[1]
                ticks = tuple(sorted({t for t in spec.hint_ticks if word_of(t, spacing) in words}))
                mem = _Memory(words, ticks)
            else:
                mem = _Memory()
            self._memory[spec.pool_id] = mem
        return mem

    def _state_calls(self, spec: EvmPoolSpec, block: str) -> list[tuple[str, list[Any]]]:
        calls = [eth_call(spec.address, SEL_SLOT0, block), eth_call(spec.address, SEL_LIQUIDITY, block)]
        if spec.pool_id not in self._static:
            calls += [
                eth_call(spec.address, SEL_TICK_SPACING, block),
                eth_call(spec.address, SEL_FEE, block),
                eth_call(spec.address, SEL_TOKEN0, block),
            ]
        mem = self._first_memory(spec)
        calls += [eth_call(spec.address, SEL_TICK_BITMAP + arg_word(w), block) for w in mem.words]
        calls += [eth_call(spec.address, SEL_TICKS + arg_word(t), block) for t in mem.ticks]
        return calls

    async def fetch(self) -> EvmPoolsState:
        trips0 = self.rpc.round_trips
        head = ("eth_getBlockByNumber", ["latest", False])
        plan: list[tuple[EvmPoolSpec, int]] = []
        calls: list[tuple[str, list[Any]]] = [head]
        for spec in self.specs:
            pc = self._state_calls(spec, "latest")
            plan.append((spec, len(pc)))
            calls += pc
        calls.append(head)
        results = await self.rpc.batch(calls, return_exceptions=True)
        first, last = parse_block(results[0]), parse_block(results[-1])
        block = first
        tag = hex(first.number)
        if first.hash != last.hash:
            # the head moved during the batch: repeat the pool calls pinned to the first block
            calls = [c for spec in self.specs for c in self._state_calls(spec, tag)]
            results = [None, *(await self.rpc.batch(calls, return_exceptions=True)), None]
        pos = 1
        words: dict[str, dict[int, int]] = {}
        ticks: dict[str, dict[int, int]] = {}
        base: dict[str, tuple[int, int, int]] = {}
        for spec, n in plan:
            chunk = results[pos : pos + n]
            pos += n
            base[spec.pool_id], words[spec.pool_id], ticks[spec.pool_id] = self._decode_state(spec, chunk)
        # round trip 2: bitmap words the previous window did not cover
        need_words: list[tuple[str, int]] = []
        for spec in self.specs:
            _, tick, _ = base[spec.pool_id]
            for w in self._window(tick, self._static[spec.pool_id].spacing):
                if w not in words[spec.pool_id]:
                    need_words.append((spec.pool_id, w))
        by_id = {s.pool_id: s for s in self.specs}
        if need_words:
            res = await self.rpc.batch(
                [eth_call(by_id[p].address, SEL_TICK_BITMAP + arg_word(w), tag) for p, w in need_words]
            )
            for (p, w), r in zip(need_words, res, strict=True):
                words[p][w] = static_words(r, 1, f"{p} tickBitmap({w})")[0]
        # round trip 3: initialized ticks not read yet
        need_ticks: list[tuple[str, int]] = []
        window_ticks: dict[str, list[int]] = {}
        for spec in self.specs:
            st = self._static[spec.pool_id]
            _, tick, _ = base[spec.pool_id]
            win = self._window(tick, st.spacing)
            found = sorted(t for w in win for t in ticks_in_word(w, words[spec.pool_id][w], st.spacing))
            window_ticks[spec.pool_id] = found
            need_ticks += [(spec.pool_id, t) for t in found if t not in ticks[spec.pool_id]]
        if need_ticks:
            res = await self.rpc.batch(
                [eth_call(by_id[p].address, SEL_TICKS + arg_word(t), tag) for p, t in need_ticks]
            )
            for (p, t), r in zip(need_ticks, res, strict=True):
                ticks[p][t] = self._decode_tick(p, t, r)
        pools: dict[str, PoolState] = {}
        for spec in self.specs:
            st = self._static[spec.pool_id]
            sqrt_price, tick, liquidity = base[spec.pool_id]
            found = window_ticks[spec.pool_id]
            nets = tuple((t, ticks[spec.pool_id][t]) for t in found if ticks[spec.pool_id][t] != 0)
            try:
                clmm = ClmmPool(
                    venue="uniswap_v3",
                    fee_pips=st.fee,
                    tick_spacing=st.spacing,
                    sqrt_price=sqrt_price,
                    tick_current=tick,
                    liquidity=liquidity,
                    ticks=nets,
                )
            except ValueError as exc:
                raise SourceDataError(f"{spec.pool_id}: inconsistent pool state: {exc}") from exc
            pools[spec.pool_id] = PoolState(spec.pool_id, spec.address, spec.token0, spec.token1, clmm)
            self._memory[spec.pool_id] = _Memory(self._window(tick, st.spacing), tuple(found))
        return EvmPoolsState(self.chain, block, pools, self.rpc.round_trips - trips0)

    def _decode_state(
        self, spec: EvmPoolSpec, chunk: Sequence[Any]
    ) -> tuple[tuple[int, int, int], dict[int, int], dict[int, int]]:
        for r in chunk:
            if isinstance(r, RpcCallError):
                raise SourceDataError(f"{spec.pool_id}: {r}")
        w0 = static_words(chunk[0], 7, f"{spec.pool_id} slot0")
        slot0 = (_unsigned(w0[0], 160), _signed(w0[1], 24))
        liquidity = _unsigned(static_words(chunk[1], 1, f"{spec.pool_id} liquidity")[0], 128)
        i = 2
        if spec.pool_id not in self._static:
            (spacing,) = abi_decode(["int24"], chunk[2], "tickSpacing")
            (fee,) = abi_decode(["uint24"], chunk[3], "fee")
            (token0,) = abi_decode(["address"], chunk[4], "token0")
            if spec.token0_address and to_checksum_address(token0) != to_checksum_address(
                spec.token0_address
            ):
                raise SourceDataError(f"{spec.pool_id}: token0() is {token0}, expected {spec.token0_address}")
            if spacing <= 0:
                raise SourceDataError(f"{spec.pool_id}: tickSpacing {spacing} is not positive")
            self._static[spec.pool_id] = _Static(int(spacing), int(fee))
            i = 5
        mem = self._first_memory(spec)
        words: dict[int, int] = {}
        for w in mem.words:
            words[w] = static_words(chunk[i], 1, f"tickBitmap({w})")[0]
            i += 1
        ticks: dict[int, int] = {}
        for t in mem.ticks:
            ticks[t] = self._decode_tick(spec.pool_id, t, chunk[i])
            i += 1
        sqrt_price, tick = int(slot0[0]), int(slot0[1])
        if sqrt_price == 0:
            raise SourceDataError(f"{spec.pool_id}: pool is not initialized (sqrtPriceX96 = 0)")
        return (sqrt_price, tick, int(liquidity)), words, ticks

    @staticmethod
    def _decode_tick(pool_id: str, tick: int, result: Any) -> int:
        if isinstance(result, RpcCallError):
            raise SourceDataError(f"{pool_id}: ticks({tick}): {result}")
        # (uint128 liquidityGross, int128 liquidityNet, uint256, uint256, int56, uint160, uint32, bool initialized)
        w = static_words(result, 8, f"{pool_id} ticks({tick})")
        if w[7] > 1:
            raise SourceDataError(f"{pool_id} ticks({tick}): initialized is not a bool")
        _unsigned(w[0], 128)
        return _signed(w[1], 128) if w[7] else 0
