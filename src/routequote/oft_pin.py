"""The USDG OFT program on Solana, found and pinned from chain state.

The Robinhood USDG OFT names its Solana peer: `peers(30168)` is the OFT store account, and the owner of that
account is the OFT program whose `lz_receive` delivers USDG. Under a live market with Robinhood and Solana RPC
URLs, `OftPinResolver` reads both (through the chain ports), checks that the owner is an executable program,
and pins it at start and then every `interval_seconds`. A failed read never guesses: the pin stays what it was
(or `not_pinned` with the reason) and is retried on the next round.

`ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM` still overrides the chain. When the setting and the chain disagree, no OFT
arrival is accepted (`program` is None and `problem` says why) until an operator resolves it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import structlog
from eth_utils.crypto import keccak
from solders.pubkey import Pubkey

from routequote.errors import InvalidRequest
from routequote.ports import EvmStateReader, ObservationUnavailable, SolanaAccountInfoReader

LZ_EID_SOLANA = 30168
SETTING = "ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM"
SOURCE_SETTING, SOURCE_CHAIN, SOURCE_NOT_PINNED = "setting", "chain", "not_pinned"
PEERS_SELECTOR = keccak(text="peers(uint32)")[:4]
DEFAULT_INTERVAL_SECONDS = 600.0

log = structlog.get_logger("routequote.oft_pin")


def peers_call(eid: int = LZ_EID_SOLANA) -> str:
    """`peers(uint32 eid)` calldata (OAppCore: the peer OApp of `eid` as bytes32)."""
    return "0x" + (PEERS_SELECTOR + eid.to_bytes(32, "big")).hex()


@dataclass(frozen=True)
class ChainReading:
    """What the chain said in one round: the store and its owner program, or why none could be derived."""

    store: str | None = None
    program: str | None = None
    reason: str | None = None  # set when `program` is None
    failed_read: bool = False  # the reason is a read that failed (retried), not a chain answer


@dataclass(frozen=True)
class OftPin:
    """The pin in force: where it came from, the program arrivals are verified against (None: none accepted)."""

    source: str
    program: str | None
    reason: str | None = None
    setting: str | None = None
    chain: ChainReading | None = None
    problem: str | None = None  # setting and chain disagree: an error, no arrival accepted
    checked_at: str | None = None

    def report(self) -> dict[str, Any]:
        chain = self.chain
        return {
            "pinned": self.program is not None,
            "program": self.program,
            "source": self.source,
            "reason": self.reason,
            "setting": SETTING,
            "setting_value": self.setting,
            "chain_program": chain.program if chain else None,
            "chain_store": chain.store if chain else None,
            "chain_reason": chain.reason if chain else None,
            "error": self.problem,
            "checked_at": self.checked_at,
        }


def decide(setting: str | None, reading: ChainReading | None, previous: OftPin | None = None) -> OftPin:
    """The pin from the setting and one chain reading (None: chain derivation not configured). A failed read
    keeps a pin previously derived from the chain (the program does not move because a node is down)."""
    kept = previous.chain if previous is not None else None
    if reading is not None and reading.failed_read and kept is not None and kept.program is not None:
        reading = replace(kept, reason=f"last read failed ({reading.reason}); kept")
    chain_program = reading.program if reading else None
    if setting:
        if chain_program is not None and chain_program != setting:
            problem = (
                f"{SETTING} ({setting}) disagrees with the chain: the owner of the OFT store {reading.store if reading else ''} "
                f"is {chain_program}; no OFT arrival is accepted until an operator resolves it"
            )
            return OftPin(SOURCE_SETTING, None, problem, setting, reading, problem)
        return OftPin(SOURCE_SETTING, setting, None, setting, reading)
    if chain_program is not None and reading is not None:
        return OftPin(SOURCE_CHAIN, chain_program, None, None, reading)
    if reading is None:
        why = (
            f"{SETTING} is unset and the chain is not read (a live market with Robinhood and Solana RPC URLs "
            "derives it from the Robinhood OFT's peer for Solana)"
        )
    else:
        why = f"{SETTING} is unset and the chain did not name it: {reading.reason}"
    return OftPin(SOURCE_NOT_PINNED, None, why, None, reading)


class OftPinResolver:
    """Derives the OFT program from chain state and keeps the pin current (`refresh`, `running`)."""

    def __init__(
        self,
        setting: str | None,
        *,
        evm: EvmStateReader | None,
        solana: SolanaAccountInfoReader | None,
        robinhood_oft: str | None,
        now: Callable[[], str],
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        on_change: Callable[[OftPin], None] | None = None,
    ) -> None:
        self.setting = setting or None
        self.evm, self.solana, self.robinhood_oft = evm, solana, robinhood_oft
        self.now = now
        self.interval_seconds = interval_seconds
        self.on_change = on_change
        self.derives = evm is not None and solana is not None and bool(robinhood_oft)
        self.pin = (
            decide(self.setting, None)
            if not self.derives
            else decide(self.setting, ChainReading(reason="not read yet", failed_read=True))
        )

    async def read_chain(self) -> ChainReading:
        """One round: `peers(30168)` on the Robinhood OFT, the store's owner, and that owner's executable flag."""
        assert self.evm is not None and self.solana is not None and self.robinhood_oft
        try:
            raw = await self.evm.call("robinhood", self.robinhood_oft, peers_call())
            if len(raw) != 32:
                return ChainReading(reason="the Robinhood OFT's peer for Solana is not one bytes32")
            if raw == bytes(32):
                return ChainReading(reason="the Robinhood OFT has no peer for Solana (its peer is zero)")
            store = str(Pubkey.from_bytes(raw))
            account = await self.solana.account_info(store)
            if account is None:
                return ChainReading(store=store, reason=f"the OFT store {store} does not exist on Solana")
            owner = await self.solana.account_info(account.owner)
            if owner is None or not owner.executable:
                return ChainReading(
                    store=store,
                    reason=f"the owner of the OFT store ({account.owner}) is not an executable program",
                )
            return ChainReading(store=store, program=account.owner)
        except ObservationUnavailable as exc:
            return ChainReading(reason=f"read failed: {exc.reason}", failed_read=True)
        except InvalidRequest as exc:
            return ChainReading(reason=f"read failed: {exc}", failed_read=True)

    async def refresh(self) -> OftPin:
        if not self.derives:
            return self.pin
        reading = await self.read_chain()
        pin = replace(decide(self.setting, reading, self.pin), checked_at=self.now())
        old, self.pin = self.pin, pin
        if (old.source, old.program, old.problem) != (pin.source, pin.program, pin.problem):
            log.warning(
                "usdg_oft_pin_changed",
                source=pin.source,
                program=pin.program,
                previous_source=old.source,
                previous_program=old.program,
                error=pin.problem,
                reason=pin.reason,
            )
        if self.on_change is not None:
            self.on_change(pin)
        return pin

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_seconds)
            with contextlib.suppress(Exception):  # a round that fails keeps the pin; the next one retries
                await self.refresh()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The lifespan hook: one round at start, then one every `interval_seconds` until shutdown."""
        if not self.derives:
            yield
            return
        with contextlib.suppress(Exception):
            await self.refresh()
        task = asyncio.create_task(self._loop())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def apply_pin(pin: OftPin, *, sessions: Any, service: Any, discovery: Any = None) -> None:
    """Put `pin` in force: the session engine's arrival check and readiness, capabilities (`observation`,
    `solana_arrivals`, which /readyz shares) and the safety document (its cache dropped)."""
    config = sessions.config
    config.usdg_oft_solana_program = pin.program
    config.usdg_oft_pin_problem = pin.problem
    if config.observation is not None:
        config.observation = replace(
            config.observation,
            oft_program=pin.program,
            # the gap names the setting alone unless the chain was read (then it says what the chain said)
            oft_reason=pin.reason if pin.chain is not None else None,
            oft_source=pin.source,
        )
        sessions.refresh_readiness()
        service.config.session_unavailable_reasons = sessions.session_reasons()
        service.config.session_unavailable_details = sessions.session_gaps()
    report = pin.report()
    if isinstance(service.config.observation, dict):  # the same dict /readyz reports: updated in place
        service.config.observation["usdg_oft_solana_program"] = report
    oft = service.config.solana_arrivals.setdefault("oft", {})
    oft.update(
        {
            "usdg_oft_solana_program": pin.program,
            "program_source": pin.source,
            "verifiable": pin.program is not None,
            "pin": report,
            "pin_error": pin.problem,
            "note": None if pin.program else pin.reason,
        }
    )
    service.forget_availability()
    if discovery is not None:
        discovery.forget_documents()
